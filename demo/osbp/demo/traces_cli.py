"""`osbp traces record|replay`: regenerate the trace gallery from real runs, or replay it and check it.

``osbp traces record [--out DIR]`` (what ``make traces`` runs) records every gallery scenario through the
real stack and rewrites ``DIR`` (default ``traces/``): one JSON trace per scenario plus ``README.md``.
``osbp traces replay [FILE...]`` replays traces (default: every ``traces/*.json``) against a fresh
platform through the MCP server and exits 1 if any recorded result is not a subset of the actual one.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import anyio
from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

from osbp.demo.replay import replay_traces
from osbp.demo.traces import RecordingError, gallery_files, read_gallery, record_gallery, write_gallery

__all__ = ["DEFAULT_GALLERY", "build_parser", "main"]

#: The gallery folder, relative to the working directory (the repository root under `make`).
DEFAULT_GALLERY = Path("traces")


def build_parser() -> argparse.ArgumentParser:
    """The `osbp traces` command line."""
    parser = argparse.ArgumentParser(
        prog="osbp traces", description="Record or replay the OSBP trace gallery."
    )
    commands = parser.add_subparsers(dest="command", required=True)
    record = commands.add_parser("record", help="regenerate the gallery from real runs")
    record.add_argument(
        "--out", type=Path, default=DEFAULT_GALLERY, help=f"output folder (default {DEFAULT_GALLERY})"
    )
    replay = commands.add_parser("replay", help="replay traces against a fresh platform and check them")
    replay.add_argument(
        "files", nargs="*", type=Path, help=f"trace files (default: {DEFAULT_GALLERY}/*.json)"
    )
    return parser


@contextmanager
def _working(what: str) -> Iterator[None]:
    """A spinner and the time elapsed on stderr while ``what`` runs, on a terminal only: piped output stays
    the list of files (conformance's CLI has its own: the battery imports nothing of the demo's)."""
    if not sys.stderr.isatty():
        yield
        return
    columns = (SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn())
    with Progress(*columns, console=Console(stderr=True), transient=True) as progress:
        progress.add_task(what, total=None)
        yield


def _record(out: Path) -> int:
    try:
        with _working("osbp traces record: recording the gallery through the real stack"):
            traces = anyio.run(record_gallery)
    except RecordingError as error:
        print(f"osbp traces record: {error}", file=sys.stderr)
        return 1
    written = write_gallery(gallery_files(list(traces.values())), out)
    for path in written:
        print(f"wrote {path}")
    return 0


def _replay(files: Sequence[Path]) -> int:
    paths = list(files) or sorted(DEFAULT_GALLERY.glob("*.json"))
    if not paths:
        print("osbp traces replay: no trace files found", file=sys.stderr)
        return 2
    with _working(f"osbp traces replay: replaying {len(paths)} traces against a fresh platform"):
        reports = anyio.run(replay_traces, read_gallery(paths))
    for report in reports:
        print(f"{'ok  ' if report.ok else 'FAIL'} {report.trace} ({report.steps} steps)")
        for mismatch in report.mismatches[:10]:
            where = f"step {mismatch.step} {mismatch.path}"
            print(f"     {where}: expected {mismatch.expected!r}, got {mismatch.actual!r}")
    failed = [report.trace for report in reports if not report.ok]
    print(f"{len(reports) - len(failed)}/{len(reports)} traces replayed as recorded")
    return 1 if failed else 0


def main(argv: Sequence[str]) -> int:
    """Dispatch `record` or `replay`."""
    args = build_parser().parse_args(list(argv))
    if args.command == "record":
        return _record(args.out)
    return _replay(args.files)
