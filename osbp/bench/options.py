"""How a benchmark declares its own flags for ``osbp bench``: an argument group and counted values."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["POSTGRES_URL_ENV", "Benchmark", "Options", "at_least", "count"]

#: Names a PostgreSQL server the benchmarks may create (and drop) their databases on (`--postgres-url`).
POSTGRES_URL_ENV = "OSBP_BENCH_POSTGRES_URL"


class Options(Protocol):
    """Where a benchmark adds its flags: the argument group ``osbp bench`` gives it."""

    def add_argument(self, *name_or_flags: str, **kwargs: Any) -> argparse.Action:
        """Add one flag (``argparse`` semantics) and return its action."""
        ...


class Benchmark(Protocol):
    """A benchmark module: its flags, and a run that prints its table and writes ``<out>/<name>.json``."""

    def add_arguments(self, options: Options) -> list[argparse.Action]:
        """Add this benchmark's own flags and return them."""
        ...

    def report(self, args: argparse.Namespace) -> int:
        """Run with the parsed flags (``args.out`` is the results folder); 0 when the run met its checks."""
        ...


def at_least(minimum: int) -> Callable[[str], int]:
    """An ``argparse`` type: a whole number no smaller than ``minimum``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            value = minimum - 1
        if value < minimum:
            raise argparse.ArgumentTypeError(f"expected a whole number ≥ {minimum}, got {text!r}")
        return value

    parse.__name__ = f"whole number ≥ {minimum}"  # argparse names the type in some messages
    return parse


def count(options: Options, flag: str, *, default: int, minimum: int = 1, text: str) -> argparse.Action:
    """Add a whole-number flag (at least ``minimum``) whose help names its default."""
    return options.add_argument(
        flag, type=at_least(minimum), default=default, metavar="N", help=f"{text} (default {default})"
    )
