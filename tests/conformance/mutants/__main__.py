"""``python -m tests.conformance.mutants --matrix [--write] [NAME ...]``: run the kill matrix.

Prints the markdown table (``--write`` puts it into docs/conformance.md) and, on stderr, the wall time
and each run's failing checks. Exit status 1 when a mutant survives that awaits nothing, or the right
server failed a check.
"""

from __future__ import annotations

import argparse
import sys

import anyio

from tests.conformance.mutants.catalog import MUTANTS, MUTANTS_BY_NAME
from tests.conformance.mutants.harness import run_matrix
from tests.conformance.mutants.matrix import render, write


def main(argv: list[str] | None = None) -> int:
    """Run the matrix and report it."""
    parser = argparse.ArgumentParser(prog="python -m tests.conformance.mutants")
    parser.add_argument("--matrix", action="store_true", help="run every mutant and print the kill matrix")
    parser.add_argument("--write", action="store_true", help="write the table into docs/conformance.md")
    parser.add_argument("--workers", type=int, default=2, help="battery runs at a time (default 2)")
    parser.add_argument("names", nargs="*", help="run only these mutants (prints their outcomes)")
    args = parser.parse_args(argv)
    unknown = [name for name in args.names if name not in MUTANTS_BY_NAME]
    if unknown or not (args.matrix or args.names) or (args.write and args.names):
        parser.error(f"unknown mutants {unknown}" if unknown else "give --matrix, or mutant names")
    chosen = [MUTANTS_BY_NAME[name] for name in args.names] if args.names else list(MUTANTS)
    run = anyio.run(lambda: run_matrix(chosen, workers=args.workers))
    for name, outcome in [("right_server", run.right), *run.mutants.items()]:
        sys.stderr.write(
            f"{name} ({outcome.duration:.1f} s): fails {', '.join(outcome.failed) or 'nothing'}\n"
        )
    sys.stderr.write(f"wall time {run.wall_seconds} s for {len(chosen) + 1} battery runs\n")
    if args.names:
        return 0
    table = render(run)
    sys.stdout.write(table + "\n")
    if args.write:
        write(table)
    survivors = [m.name for m in chosen if not run.killed(m) and not m.awaits]
    return 1 if survivors or run.right.failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
