"""`osbp bench demo`: how long `make demo` and a full gallery replay take, as a user runs them.

Both are measured end to end as subprocesses (`python -m osbp demo --now …` and `python -m osbp traces
replay`), interpreter start-up included, because that is what a user waits for: the demo's wall time is
the median of N runs (default 5), the replay time the median of M runs (default 1) of every checked-in
trace. Each run starts its own platform and MCP servers and stops them. Figures are printed as a table
and written to ``bench-results/demo.json``; they are reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from osbp.bench.options import Options, count
from osbp.demo.gallery import GALLERY_NOW
from osbp.demo.traces_cli import DEFAULT_GALLERY
from osbp.protocol.timeutil import format_instant

__all__ = ["add_arguments", "report", "run"]


def _timed(command: list[str]) -> float:
    started = time.perf_counter()
    # The command is this project's own CLI under the current interpreter; nothing from outside.
    completed = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)  # noqa: S603
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command[2:])} failed ({completed.returncode}): {completed.stderr[-2000:]}"
        )
    return elapsed


def run(*, demo_runs: int, replay_runs: int) -> dict[str, Any]:
    """Time the demo and the gallery replay; the figures written to ``bench-results/demo.json``."""
    traces = sorted(DEFAULT_GALLERY.glob("*.json"))
    with tempfile.TemporaryDirectory(prefix="osbp-bench-demo-") as workdir:
        demo = [
            sys.executable, "-m", "osbp", "demo", "--now", format_instant(GALLERY_NOW),
            "--audit-log", str(Path(workdir) / "audit.jsonl"),
        ]  # fmt: skip
        demo_times = [_timed(demo) for _ in range(demo_runs)]
    replay_times = (
        [
            _timed([sys.executable, "-m", "osbp", "traces", "replay", *map(str, traces)])
            for _ in range(replay_runs)
        ]
        if traces
        else []
    )
    return {
        "demo": {
            "runs": demo_runs,
            "median_s": round(statistics.median(demo_times), 3),
            "min_s": round(min(demo_times), 3),
            "max_s": round(max(demo_times), 3),
            "verticals": 4,
        },
        "replay": {
            "runs": replay_runs,
            "traces": len(traces),
            "steps": sum(len(json.loads(path.read_text(encoding="utf-8"))["steps"]) for path in traces),
            "median_s": round(statistics.median(replay_times), 3) if replay_times else None,
        },
    }


def _table(results: dict[str, Any]) -> Table:
    table = Table(title="make demo and the trace gallery (wall time, subprocess, start-up included)")
    table.add_column("measure")
    table.add_column("runs", justify="right")
    table.add_column("median", justify="right")
    table.add_column("detail")
    demo, replay = results["demo"], results["replay"]
    table.add_row(
        "osbp demo (4 verticals + coda)",
        str(demo["runs"]),
        f"{demo['median_s']:.2f} s",
        f"min {demo['min_s']:.2f} s, max {demo['max_s']:.2f} s",
    )
    median = "—" if replay["median_s"] is None else f"{replay['median_s']:.2f} s"
    table.add_row(
        "osbp traces replay (whole gallery)",
        str(replay["runs"]),
        median,
        f"{replay['traces']} traces, {replay['steps']} tool calls",
    )
    return table


def add_arguments(options: Options) -> list[argparse.Action]:
    """The demo benchmark's own flags."""
    return [
        count(options, "--demo-runs", default=5, text="demo runs, median reported"),
        count(options, "--replay-runs", default=1, minimum=0, text="gallery replays"),
    ]


def report(args: argparse.Namespace) -> int:
    """Run the benchmark, print the table and write ``<out>/demo.json``."""
    results = run(demo_runs=args.demo_runs, replay_runs=args.replay_runs)
    Console().print(_table(results))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "demo.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0
