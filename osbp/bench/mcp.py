"""`osbp bench mcp`: the MCP server over real stdio against the real platform on loopback.

Two measures, both through the SDK's stdio client and a spawned ``python -m osbp.server``:

* **cold start**: from spawn to the first successful tool result (``osbp_service_describe``), median of
  N fresh processes (target ≤ 0.8 s);
* **per tool**: p50/p99 round-trip latency of C calls of each tool on one long-lived server, after W
  unmeasured warm-up calls of each (targets: reads p50 ≤ 5 ms, approved create p50 ≤ 15 ms). Every call
  is audited (fsynced) as in production. The round trip includes the SDK client's own re-validation of
  each result against the tool's output schema (jsonschema, host-side work); the same calls are also
  reported without it. Verdicts use the full round trip.

The platform runs as its own process (``osbp backend``: uvicorn on an ephemeral 127.0.0.1 port, in-memory
SQLite, clock frozen at 2030-05-01, rate limits lifted), so it shares neither the client's nor the
server's interpreter. Bookings go to its conformance organization, which allows parallel
bookings, so every approved create books the same real slot under a fresh idempotency key, and the
bookings never shrink the day the reads then search (every find answers the same 30 slots). The results
are printed as a table and written to ``bench-results/mcp.json``; figures are reported, never asserted,
and the run stops by itself.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import anyio
from mcp import Client
from mcp.client.stdio import stdio_client
from mcp.types import CallToolResult
from rich.table import Table

from osbp.bench.latency import latency_ms, percentile_ms
from osbp.bench.loop_driver import (
    DAY,
    ORGANIZATION,
    PROVIDER,
    SCHEDULE,
    SERVICE,
    create_args,
    platform,
    server_params,
)
from osbp.bench.options import Options, count
from osbp.bench.results import publish
from osbp.protocol.approval import APPROVAL_TOKEN_PATTERN

__all__ = ["add_arguments", "per_tool", "report", "run"]

COLD_START_TARGET_S = 0.8
READ_P50_TARGET_MS = 5.0
CREATE_P50_TARGET_MS = 15.0
READS = ("osbp_service_describe", "osbp_availability_find", "osbp_policy_explain", "osbp_booking_status")


def _envelope(result: CallToolResult) -> dict[str, Any]:
    envelope = result.structured_content
    if not isinstance(envelope, dict):
        raise RuntimeError(f"not an OSBP envelope: {result!r}")
    return envelope


async def _cold_start(base_url: str, workdir: Path, errlog: TextIO) -> float:
    started = time.perf_counter()
    async with Client(stdio_client(server_params(base_url, workdir), errlog=errlog)) as client:
        result = await client.call_tool("osbp_service_describe", {"service_id": SERVICE})
        elapsed = time.perf_counter() - started
    if result.is_error:
        raise RuntimeError(f"the first tool call failed: {result.content!r}")
    return elapsed


class _ClientCheckClock:
    """Times the SDK client's own output-schema check of each result (jsonschema, in the client).

    ``ClientSession.call_tool`` re-validates every successful result against the tool's output schema
    before returning it; that is the host's work, not the server's, and for a day of slots it costs
    more than the server's whole answer. It stays in the round trip and is also reported apart.
    """

    def __init__(self, client: Client) -> None:
        session = client.session
        self._check = session.validate_tool_result
        self.spent = 0.0

        async def timed_check(name: str, result: CallToolResult) -> None:
            started = time.perf_counter()
            try:
                await self._check(name, result)
            finally:
                self.spent += time.perf_counter() - started

        session.validate_tool_result = timed_check  # type: ignore[method-assign]  # instrumentation only


@dataclass
class _Samples:
    """Per tool: full round trips, and the same calls without the client's output-schema check."""

    round_trip: dict[str, list[float]] = field(default_factory=dict)
    without_check: dict[str, list[float]] = field(default_factory=dict)

    def drop(self, warmup: int) -> _Samples:
        """The samples after each tool's first ``warmup`` calls."""
        return _Samples(
            {label: values[warmup:] for label, values in self.round_trip.items()},
            {label: values[warmup:] for label, values in self.without_check.items()},
        )


async def per_tool(client: Client, calls: int, warmup: int) -> _Samples:
    """Every tool's round trips on one connected client (``warmup`` unmeasured calls of each first)."""
    samples = _Samples()
    check = _ClientCheckClock(client)

    async def measure(label: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        check.spent = 0.0
        started = time.perf_counter()
        result = await client.call_tool(tool, arguments)
        elapsed = time.perf_counter() - started
        samples.round_trip.setdefault(label, []).append(elapsed)
        samples.without_check.setdefault(label, []).append(elapsed - check.spent)
        return _envelope(result)

    booking_id = ""
    for index in range(warmup + calls):
        key = f"bench-{index:06d}"
        preflight = await measure("osbp_booking_create (preflight)", "osbp_booking_create", create_args(key))
        match = APPROVAL_TOKEN_PATTERN.search(preflight.get("problem", {}).get("message", ""))
        if match is None:
            raise RuntimeError(f"the preflight did not challenge: {preflight!r}")
        approved = create_args(key) | {"approval": {"confirmed": True, "token": match.group(1)}}
        created = await measure("osbp_booking_create (approved)", "osbp_booking_create", approved)
        if created.get("ok") is not True:
            raise RuntimeError(f"the approved create failed: {created!r}")
        booking_id = created["value"]["booking_id"]
        await measure("osbp_booking_create (replay)", "osbp_booking_create", approved)
    for index in range(warmup + calls):
        await measure("osbp_service_describe", "osbp_service_describe", {"service_id": SERVICE})
        await measure(
            "osbp_availability_find",
            "osbp_availability_find",
            {"service_id": SERVICE, "schedule_id": SCHEDULE, "date": DAY, "provider_id": PROVIDER},
        )
        await measure("osbp_policy_explain", "osbp_policy_explain", {"service_id": SERVICE})
        await measure("osbp_booking_status", "osbp_booking_status", {"booking_id": booking_id})
        # A fresh contact per send: the platform limits sends per contact, and OSBP never evades limits.
        contact = {"phone": f"+1212555{index:04d}"}
        await measure(
            "osbp_verification_send",
            "osbp_verification_send",
            {"customer": contact, "purpose": f"booking:{ORGANIZATION}"},
        )
        await measure(
            "osbp_handoff_request",
            "osbp_handoff_request",
            {"reason": "slot_taken", "message": "The slot is gone; please pick another time."},
        )
    # Drop the warm-up calls of every tool.
    return samples.drop(warmup)


async def run(cold_runs: int, calls: int, warmup: int = 20) -> dict[str, Any]:
    """Run the benchmark and return its figures (the JSON written to ``bench-results/mcp.json``)."""
    # The spawned servers' stderr logs are not part of the measurement.
    with (
        tempfile.TemporaryDirectory(prefix="osbp-bench-mcp-") as tmp,
        open(os.devnull, "w", encoding="utf-8") as errlog,  # noqa: ASYNC230  opened once, before any call
        platform() as process,
    ):
        base_url = process.base_url
        root = Path(tmp)
        cold: list[float] = []
        for index in range(cold_runs):
            workdir = root / f"cold-{index}"
            workdir.mkdir()
            cold.append(await _cold_start(base_url, workdir, errlog))
        workdir = root / "warm"
        workdir.mkdir()
        async with AsyncExitStack() as stack:
            transport = stdio_client(server_params(base_url, workdir), errlog=errlog)
            client = await stack.enter_async_context(Client(transport))
            per_tool_samples = await per_tool(client, calls, warmup)
    tools = {
        label: latency_ms(values)
        | {
            "p50_ms_without_client_check": percentile_ms(per_tool_samples.without_check[label], 50),
            "p99_ms_without_client_check": percentile_ms(per_tool_samples.without_check[label], 99),
        }
        for label, values in per_tool_samples.round_trip.items()
    }
    return {
        "benchmark": "mcp",
        "target": "python -m osbp.server over stdio -> reference adapter -> platform on loopback",
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "cold_start": {
            "runs": cold_runs,
            "median_s": round(statistics.median(cold), 3),
            "min_s": round(min(cold), 3),
            "max_s": round(max(cold), 3),
            "target_s": COLD_START_TARGET_S,
        },
        "calls_per_tool": calls,
        "warmup_calls_per_tool": warmup,
        "tools": tools,
        "targets": {"read_p50_ms": READ_P50_TARGET_MS, "approved_create_p50_ms": CREATE_P50_TARGET_MS},
    }


def _verdict(value: float, target: float | None) -> str:
    if target is None:
        return ""
    return "met" if value <= target else "missed"


def _table(results: dict[str, Any]) -> Table:
    cold = results["cold_start"]
    table = Table(title=f"MCP server over stdio ({results['calls_per_tool']} calls per tool)")
    table.add_column("measure")
    table.add_column("p50", justify="right")
    table.add_column("p99", justify="right")
    table.add_column("p50 w/o client check", justify="right")
    table.add_column("target (p50)", justify="right")
    table.add_column("", justify="left")
    table.add_row(
        f"cold start, spawn → first result (median of {cold['runs']})",
        f"{cold['median_s'] * 1000:.0f} ms",
        f"max {cold['max_s'] * 1000:.0f} ms",
        "",
        f"{cold['target_s'] * 1000:.0f} ms",
        _verdict(cold["median_s"], cold["target_s"]),
    )
    for label, figures in results["tools"].items():
        target = (
            READ_P50_TARGET_MS
            if label in READS
            else CREATE_P50_TARGET_MS
            if label == "osbp_booking_create (approved)"
            else None
        )
        table.add_row(
            label,
            f"{figures['p50_ms']:.2f} ms",
            f"{figures['p99_ms']:.2f} ms",
            f"{figures['p50_ms_without_client_check']:.2f} ms",
            f"{target:.0f} ms" if target else "",
            # Judged on the full round trip, the client's own check included.
            _verdict(figures["p50_ms"], target),
        )
    return table


def add_arguments(options: Options) -> list[argparse.Action]:
    """The MCP benchmark's own flags."""
    return [
        count(options, "--cold-runs", default=10, text="fresh processes for the cold start"),
        count(options, "--calls", default=200, text="measured calls per tool"),
        count(options, "--warmup", default=20, minimum=0, text="unmeasured calls per tool first"),
    ]


def report(args: argparse.Namespace) -> int:
    """Run the MCP benchmark, print the table, write ``<out>/mcp.json``; 0 when it ran to the end."""
    results = anyio.run(run, args.cold_runs, args.calls, args.warmup)
    publish(args.out, "mcp", results, _table(results))
    return 0
