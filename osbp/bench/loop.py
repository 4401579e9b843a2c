"""`osbp bench loop`: the canonical booking loop over MCP stdio and in process, optionally against a baseline.

One loop is service.describe → availability.find → policy.explain → booking.create without approval (the
challenge) → booking.create with the approval token (books) → booking.status, against the real platform
in its own process (:mod:`osbp.bench.loop_driver` says how). Reported per mode (MCP stdio, adapter in
process): p50/p90 of each step and of the whole loop, platform requests per loop (counted by a transport
wrapped around the adapter's, in process: the stdio server runs the same adapter code), bytes of each
answer and of the loop's answers together, and CPU milliseconds per loop of each process (the platform,
the MCP server; in process the adapter's own interpreter).

``--against DIR`` measures another checkout on the same machine in the same run: rounds alternate
(this, DIR, this, DIR, ...), each round a fresh driver process in that checkout's interpreter
(``DIR/.venv/bin/python``) spawning that checkout's platform and server, and every figure is printed for
both with the ratio this ÷ DIR. Absolute times on a shared machine move by ±20 %; ratios from one
interleaved run do not. Figures and ratios are reported, never asserted; ``bench-results/loop.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from rich.table import Table

from osbp.bench import loop_driver
from osbp.bench.latency import percentile_ms
from osbp.bench.options import Options, count
from osbp.bench.results import publish

__all__ = ["add_arguments", "report", "run"]

MODES = {"stdio": "MCP stdio", "in_process": "in process"}
#: The issue's targets, as ratios this ÷ the checkout before the work (reported, never asserted).
TARGETS = {"stdio.loop.p50_ms": 0.4, "in_process.loop.p50_ms": 0.4, "stdio.cpu_ms_per_loop.total": 0.5}
#: The process whose CPU counts as the server's in each mode.
SERVER = {"stdio": "server", "in_process": "adapter"}
DRIVER_TIMEOUT_S = 1800


def _checkout(text: str) -> Path:
    """An ``argparse`` type: a checkout folder with its own ``.venv/bin/python``."""
    folder = Path(text).expanduser()
    if not os.access(folder / ".venv" / "bin" / "python", os.X_OK):
        raise argparse.ArgumentTypeError(
            f"{text!r} has no .venv/bin/python: give a checkout of osbp and run `make install` in it"
        )
    return folder.resolve()


def _drive(python: str, loops: int, warmup: int) -> dict[str, Any]:
    """One round: the driver in interpreter ``python``, from a neutral folder; its raw samples."""
    # -P and a neutral working directory: neither this checkout's folders nor the script's own (which holds
    # modules named like the SDK's) may shadow the packages of the interpreter's own checkout.
    env = {name: value for name, value in os.environ.items() if name != "PYTHONPATH"}
    command = [python, "-P", loop_driver.__file__, "--loops", str(loops), "--warmup", str(warmup)]
    with tempfile.TemporaryDirectory(prefix="osbp-bench-loop-round-") as cwd:
        done = subprocess.run(  # noqa: S603  an osbp checkout's interpreter running our own driver
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=DRIVER_TIMEOUT_S, check=False
        )
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        raise RuntimeError(f"the loop driver in {python} failed: {last}")
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def _pooled(rounds: list[dict[str, Any]], mode: str) -> dict[str, Any]:
    """The figures of one mode over every round of one checkout."""
    parts = [round_[mode] for round_ in rounds]
    steps = [*loop_driver.STEPS, "loop"]
    seconds = {step: [value for part in parts for value in part["seconds"][step]] for step in steps}
    sizes = {step: [value for part in parts for value in part["bytes"][step]] for step in steps}
    loops = len(seconds["loop"])
    processes = parts[0]["cpu_seconds"].keys()
    figures: dict[str, Any] = {
        step: {
            "p50_ms": percentile_ms(seconds[step], 50),
            "p90_ms": percentile_ms(seconds[step], 90),
            "answer_bytes": statistics.median(sizes[step]),
        }
        for step in steps
    }
    figures["cpu_ms_per_loop"] = {
        process: round(sum(part["cpu_seconds"][process] for part in parts) * 1000 / loops, 2)
        for process in processes
    }
    # "total": the server's (in process, the adapter's interpreter's) and the platform's; not the client's.
    figures["cpu_ms_per_loop"]["total"] = round(
        figures["cpu_ms_per_loop"][SERVER[mode]] + figures["cpu_ms_per_loop"]["platform"], 2
    )
    figures["loops"] = loops
    return figures


def _figures(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    requests = [count for round_ in rounds for count in round_["in_process"]["requests_per_loop"]]
    return {
        "python": rounds[0]["python"],
        # Counted in process; the stdio server runs the same adapter code, so it makes the same requests.
        "platform_requests_per_loop": {
            "median": statistics.median_low(requests),
            "min": min(requests),
            "max": max(requests),
        },
    } | {mode: _pooled(rounds, mode) for mode in MODES}


def _flat(figures: dict[str, Any], prefix: str = "") -> dict[str, float]:
    flat: dict[str, float] = {}
    for key, value in figures.items():
        if isinstance(value, dict):
            flat |= _flat(value, f"{prefix}{key}.")
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            flat[f"{prefix}{key}"] = value
    return flat


def _ratios(this: dict[str, Any], other: dict[str, Any]) -> dict[str, float | None]:
    """Every numeric figure as this ÷ other (``None`` where the other is zero)."""
    mine, theirs = _flat(this), _flat(other)
    ratios: dict[str, float | None] = {
        key: round(mine[key] / theirs[key], 3) if theirs.get(key) else None
        for key in mine
        if key in theirs and key != "loops" and not key.endswith(".loops")
    }
    return ratios


def run(rounds: int, loops: int, warmup: int, against: Path | None = None) -> dict[str, Any]:
    """Alternate rounds of this checkout and ``against`` (if given); the figures for ``loop.json``."""
    sides = {"this": sys.executable} | (
        {"against": str(against / ".venv" / "bin" / "python")} if against else {}
    )
    samples: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
    for _ in range(rounds):
        for side, python in sides.items():
            samples[side].append(_drive(python, loops, warmup))
    results: dict[str, Any] = {
        "benchmark": "loop",
        "target": "describe → find → explain → gated create → approved create → status, stdio and in process",
        "cpus": os.cpu_count(),
        "rounds": rounds,
        "loops_per_round": loops,
        "warmup_loops_per_round": warmup,
        "this": _figures(samples["this"]),
    }
    if against is not None:
        results["against"] = {"checkout": against.name} | _figures(samples["against"])
        results["ratios"] = _ratios(results["this"], results["against"])
        results["targets"] = TARGETS
    return results


def _cell(value: float | None, unit: str) -> str:
    if value is None:
        return ""
    return f"{value:.2f} {unit}" if unit == "ms" else f"{value:,.0f} {unit}".rstrip()


def _rows(results: dict[str, Any]) -> list[tuple[str, str, str]]:
    """(label, dotted figure key, unit) of every row the table shows (``loop.json`` has every figure)."""
    rows = [("platform requests / loop", "platform_requests_per_loop.median", "")]
    for mode, name in MODES.items():
        rows += [(f"{name} · {step} p50", f"{mode}.{step}.p50_ms", "ms") for step in loop_driver.STEPS]
        rows += [
            (f"{name} · loop p50", f"{mode}.loop.p50_ms", "ms"),
            (f"{name} · loop p90", f"{mode}.loop.p90_ms", "ms"),
        ]
        if mode == "stdio":  # the bytes an agent reads: the tool results' text
            rows += [
                (f"{name} · {step} bytes", f"{mode}.{step}.answer_bytes", "B") for step in loop_driver.STEPS
            ]
        rows.append((f"{name} · bytes / loop", f"{mode}.loop.answer_bytes", "B"))
        rows += [
            (f"{name} · CPU / loop, {process}", f"{mode}.cpu_ms_per_loop.{process}", "ms")
            for process in results["this"][mode]["cpu_ms_per_loop"]
        ]
    return rows


def _table(results: dict[str, Any]) -> Table:
    against = results.get("against")
    title = f"canonical loop ({results['rounds']} round(s) × {results['loops_per_round']} loops" + (
        f", alternating with {against['checkout']})" if against else ")"
    )
    table = Table(title=title)
    table.add_column("measure")
    table.add_column("this", justify="right")
    if against:
        table.add_column("against", justify="right")
        table.add_column("ratio", justify="right")
        table.add_column("target", justify="right")
    this = _flat(results["this"])
    theirs = _flat(against) if against else {}
    for label, key, unit in _rows(results):
        cells = [label, _cell(this.get(key), unit)]
        if against:
            ratio = results["ratios"].get(key)
            target = TARGETS.get(key)
            cells += [_cell(theirs.get(key), unit), "" if ratio is None else f"{ratio:.2f}×"]
            cells.append(f"≤ {target}×" if target else "")
        table.add_row(*cells)
    return table


def add_arguments(options: Options) -> list[argparse.Action]:
    """The loop benchmark's own flags."""
    return [
        count(options, "--rounds", default=3, text="rounds per checkout (alternating with --against)"),
        count(options, "--loops", default=30, text="measured loops per round and mode"),
        count(
            options, "--loop-warmup", default=3, minimum=0, text="unmeasured loops per round and mode first"
        ),
        options.add_argument(
            "--against",
            type=_checkout,
            default=None,
            metavar="DIR",
            help="another osbp checkout (with its own .venv) to measure in alternating rounds",
        ),
    ]


def report(args: argparse.Namespace) -> int:
    """Run the loop benchmark, print the table, write ``<out>/loop.json``; 0 when it ran to the end."""
    try:
        results = run(args.rounds, args.loops, args.loop_warmup, args.against)
    except (RuntimeError, subprocess.TimeoutExpired, ValueError) as exc:
        sys.stderr.write(f"osbp bench loop: {exc}\n")
        return 1
    publish(args.out, "loop", results, _table(results))
    return 0
