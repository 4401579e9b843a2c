"""How a benchmark publishes its figures: ``<out>/<name>.json`` and its table on stdout, and, on a terminal,
a spinner saying which benchmark is running while it measures."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from pathlib import Path
from typing import Any, NamedTuple

from rich.console import Console
from rich.table import Table

__all__ = ["console", "publish", "working"]

#: A piped table's width: wide enough that no column is cut (rich assumes 80 columns off a terminal).
_PIPED_WIDTH = 240


class _Spinner(NamedTuple):
    """The spinner turning now: the console it draws on, and whether stdout is that terminal too."""

    console: Console
    stdout_shared: bool


_SPINNER: ContextVar[_Spinner | None] = ContextVar("osbp_bench_spinner", default=None)


def console(*, stderr: bool = False) -> Console:
    """The console a benchmark prints on: the terminal's width, or, piped or captured, a width wide enough
    that tool names are never cut to one shared prefix. While the spinner turns, what would reach its
    terminal goes through the spinner's console, which draws it above the spinner's line."""
    spinner = _SPINNER.get()
    if spinner is not None and (stderr or spinner.stdout_shared):
        return spinner.console
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, width=None if stream.isatty() else _PIPED_WIDTH)


@contextmanager
def working(what: str) -> Iterator[Callable[[str], None]]:
    """A spinner, ``what`` and the time elapsed on stderr, on a terminal only; yields the function that
    says what is running now. Piped or captured output stays exactly the tables."""
    if not sys.stderr.isatty():
        yield lambda _what: None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    shared = sys.stdout.isatty()
    # Plain writes to sys.stdout are drawn above the spinner only when stdout is this terminal: a stdout
    # piped elsewhere is left alone, byte for byte.
    with Progress(*columns, console=Console(stderr=True), transient=True, redirect_stdout=shared) as progress:
        task = progress.add_task(what, total=None)
        token = _SPINNER.set(_Spinner(progress.console, shared))
        try:
            yield lambda now: progress.update(task, description=now)
        finally:
            _SPINNER.reset(token)


def publish(out: Path, name: str, results: dict[str, Any], table: Table) -> None:
    """Write ``results`` to ``<out>/<name>.json`` and print ``table`` and where the figures went."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.json"
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    out_console = console()
    out_console.print(table)
    out_console.print(f"wrote {path}")
