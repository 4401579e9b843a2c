"""`osbp bench demo`: how long `make demo` and a full gallery replay take, as a user runs them.

Both are measured end to end as subprocesses (`python -m osbp demo --now …` and `python -m osbp traces
replay`), interpreter start-up included, because that is what a user waits for: the demo's wall time is
the median of N runs (default 5), the replay time the median of M runs (default 1) of every checked-in
trace. Each run starts its own platform and MCP servers and stops them. The CPU a run costs (the demo
process, its platform, a process of its own where possible, and its MCP server subprocess: user +
system) is reported beside its wall time. ``--demo-against DIR`` runs another checkout's demo (its own
``.venv``) in alternating runs of the same invocation, with this ÷ that ratios: on a shared machine
only ratios from one interleaved run count. Figures are printed as a table and written to
``bench-results/demo.json``; they are reported, never asserted.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from rich.table import Table

from osbp.bench.options import Options, count
from osbp.bench.results import console
from osbp.demo.gallery import GALLERY_NOW
from osbp.demo.traces_cli import DEFAULT_GALLERY
from osbp.protocol.timeutil import format_instant

__all__ = ["add_arguments", "report", "run"]


def _cpu_of_children() -> float:
    """User + system seconds of every finished child process (and theirs) so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _checkout(text: str) -> Path:
    """An ``argparse`` type: a checkout folder with its own ``.venv/bin/python``."""
    folder = Path(text).expanduser()
    if not os.access(folder / ".venv" / "bin" / "python", os.X_OK):
        raise argparse.ArgumentTypeError(f"{text!r} has no .venv/bin/python (run `make install` in it)")
    return folder.resolve()


def _timed_cpu(command: list[str], cwd: Path | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of ``command`` (CPU: it and every process it waited for)."""
    cpu = _cpu_of_children()
    started = time.perf_counter()
    # The command is an osbp checkout's own CLI under its own interpreter; nothing from outside.
    completed = subprocess.run(  # noqa: S603
        command, capture_output=True, text=True, timeout=600, check=False, cwd=cwd
    )
    elapsed = time.perf_counter() - started
    if completed.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command[2:])} failed ({completed.returncode}): {completed.stderr[-2000:]}"
        )
    return elapsed, _cpu_of_children() - cpu


def _timed(command: list[str]) -> float:
    return _timed_cpu(command)[0]


def _summary_of(samples: list[tuple[float, float]]) -> dict[str, Any]:
    walls = [wall for wall, _ in samples]
    return {
        "runs": len(samples),
        "median_s": round(statistics.median(walls), 3),
        "min_s": round(min(walls), 3),
        "max_s": round(max(walls), 3),
        "cpu_median_s": round(statistics.median(cpu for _, cpu in samples), 3),
        "verticals": 4,
    }


def run(*, demo_runs: int, replay_runs: int, against: Path | None = None) -> dict[str, Any]:
    """Time the demo (alternating with ``against``'s, if given) and the gallery replay."""
    traces = sorted(DEFAULT_GALLERY.glob("*.json"))
    samples: dict[str, list[tuple[float, float]]] = {"this": [], "against": []}
    with tempfile.TemporaryDirectory(prefix="osbp-bench-demo-") as workdir:
        arguments = [
            "-P", "-m", "osbp", "demo", "--now", format_instant(GALLERY_NOW),
            "--audit-log", str(Path(workdir) / "audit.jsonl"),
        ]  # fmt: skip
        for _ in range(demo_runs):
            samples["this"].append(_timed_cpu([sys.executable, *arguments]))
            if against is not None:
                # From its own folder, so its interpreter imports its own osbp.
                python = str(against / ".venv" / "bin" / "python")
                samples["against"].append(_timed_cpu([python, *arguments], cwd=against))
    replay_times = (
        [
            _timed([sys.executable, "-P", "-m", "osbp", "traces", "replay", *map(str, traces)])
            for _ in range(replay_runs)
        ]
        if traces
        else []
    )
    results: dict[str, Any] = {"demo": _summary_of(samples["this"])}
    if against is not None:
        theirs = _summary_of(samples["against"])
        results["against"] = {"checkout": against.name} | theirs
        results["ratios"] = {
            key: round(results["demo"][key] / theirs[key], 3) for key in ("median_s", "cpu_median_s")
        }
    return results | {
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
        f"min {demo['min_s']:.2f} s, max {demo['max_s']:.2f} s, CPU {demo['cpu_median_s']:.2f} s",
    )
    against = results.get("against")
    if against is not None:
        ratios = results["ratios"]
        table.add_row(
            f"osbp demo at {against['checkout']} (alternating)",
            str(against["runs"]),
            f"{against['median_s']:.2f} s",
            f"CPU {against['cpu_median_s']:.2f} s; ratio wall {ratios['median_s']:.2f}×, "
            f"CPU {ratios['cpu_median_s']:.2f}×",
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
        options.add_argument(
            "--demo-against",
            type=_checkout,
            default=None,
            metavar="DIR",
            help="another osbp checkout (with its own .venv) whose demo runs alternate with this one's",
        ),
    ]


def report(args: argparse.Namespace) -> int:
    """Run the benchmark, print the table and write ``<out>/demo.json``."""
    results = run(demo_runs=args.demo_runs, replay_runs=args.replay_runs, against=args.demo_against)
    console().print(_table(results))
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "demo.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0
