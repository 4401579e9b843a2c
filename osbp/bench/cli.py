"""`osbp bench`: every component's benchmark, run against real servers on loopback.

``osbp bench [NAME ...] [options]`` runs the named benchmarks (all of them by default) in the order given.
One parser holds every benchmark's own flags, each in its benchmark's group, so ``osbp bench --help`` lists
them all and ``osbp bench NAME --help`` the named ones; flags and names mix in any order
(``osbp bench --iterations 5`` runs everything with 5 adapter iterations). A flag of a benchmark the run
leaves out is a mistake, reported as such. Every benchmark writes ``<--out>/<name>.json``.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple, NoReturn

from osbp.bench import adapter, backend, demo, edge, loop, mcp, remote, state
from osbp.bench.options import POSTGRES_URL_ENV, Benchmark
from osbp.bench.results import working

__all__ = ["BENCHES", "Plan", "build_parser", "main", "plan"]

PROG = "osbp bench"
#: In dependency order: the platform and the protocol's state store first, the whole demo last.
BENCHES: dict[str, Benchmark] = {
    "backend": backend,
    "state": state,
    "adapter": adapter,
    "mcp": mcp,
    "loop": loop,
    "remote": remote,
    "edge": edge,
    "demo": demo,
}
#: Benchmark name -> the flags it added to the parser.
Owned = dict[str, list[argparse.Action]]


class _Parser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr (exit status 2)."""

    def error(self, message: str) -> NoReturn:
        """Report a usage error in one line and exit with status 2."""
        self.exit(2, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def _summary(bench: Benchmark) -> str:
    """The part of the benchmark's first docstring line after its command: what it measures."""
    first = (bench.__doc__ or "").strip().splitlines()[0]
    return first.partition(": ")[2] or first


def build_parser(names: Sequence[str] = ()) -> tuple[argparse.ArgumentParser, Owned]:
    """The parser: shared flags and the named benchmarks' own (all by default), with which one owns which."""
    parser = _Parser(
        prog=PROG,
        usage=f"{PROG} [NAME ...] [options]",
        description="Every component's benchmark, run against real servers on loopback.",
        allow_abbrev=False,
    )
    every = ", ".join(BENCHES)
    parser.add_argument("names", nargs="*", metavar="NAME", help=f"benchmarks to run (default all): {every}")
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("bench-results"),
        metavar="DIR",
        help="folder for the NAME.json results (default bench-results)",
    )
    parser.add_argument(
        "--postgres-url",
        default=os.environ.get(POSTGRES_URL_ENV),
        metavar="URL",
        help="a PostgreSQL server the benchmarks may create and drop databases on, for their PostgreSQL "
        f"rows (default ${POSTGRES_URL_ENV}; else a throwaway cluster when PostgreSQL is installed)",
    )
    owned: Owned = {}
    for name in names or BENCHES:
        bench = BENCHES[name]
        owned[name] = bench.add_arguments(parser.add_argument_group(f"{name} benchmark", _summary(bench)))
    return parser, owned


def _given(action: argparse.Action, argv: Sequence[str]) -> str | None:
    """The flag of ``action`` as spelled on the command line, if it was given."""
    for token in argv:
        for flag in action.option_strings:
            if token == flag or token.startswith(flag + "="):
                return flag
    return None


class Plan(NamedTuple):
    """What one ``osbp bench`` run does: these benchmarks, in this order, with these flags."""

    names: list[str]
    args: argparse.Namespace


def plan(argv: Sequence[str]) -> Plan | str:
    """The run the command line asks for, or the one-line reason it is a mistake.

    ``--help`` (and an argparse usage error, already reported on stderr) raises ``SystemExit``.
    """
    argv = list(argv)
    # `osbp bench NAME --help` shows the named benchmarks' flags; every other parse knows them all.
    asked_help = any(token in {"-h", "--help"} for token in argv)
    parser, owned = build_parser([token for token in argv if token in BENCHES] if asked_help else ())
    args = parser.parse_intermixed_args(argv)
    unknown = [name for name in args.names if name not in BENCHES]
    if unknown:
        return f"unknown benchmark {unknown[0]!r}: choose from {', '.join(BENCHES)}"
    names = list(dict.fromkeys(args.names)) or list(BENCHES)
    for name, actions in owned.items():
        for action in actions:
            flag = _given(action, argv)
            if flag is not None and name not in names:
                return (
                    f"{flag} is an option of the {name} benchmark, which this run leaves out: "
                    f"add `{name}` to the names, or drop {flag}"
                )
    return Plan(names, args)


def main(argv: Sequence[str]) -> int:
    """Run the named benchmarks (all of them by default); a non-zero status if one missed its checks."""
    try:
        planned = plan(argv)
    except SystemExit as exc:  # --help (0) or a usage error (2, already explained on stderr)
        return int(exc.code or 0)
    if isinstance(planned, str):
        sys.stderr.write(f"{PROG}: {planned}\n")
        return 2
    status = 0
    with working(PROG) as running:
        for number, name in enumerate(planned.names, start=1):
            running(f"{PROG}: {name} ({number} of {len(planned.names)})")
            status |= int(BENCHES[name].report(planned.args))
    return status
