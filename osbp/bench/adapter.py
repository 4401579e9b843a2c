"""`osbp bench adapter`: the reference adapter against the real platform over loopback.

Starts the platform as its own process (``osbp backend``: uvicorn on an ephemeral 127.0.0.1 port,
in-memory database, frozen clock), builds the adapter on a throwaway state file, and runs N booking
attempts through the canonical two calls:
the preflight (validated, challenged, nothing created) and the approved create. It reports p50/p99
latency of both and the upstream requests each approved create made (target: at most 2, nothing
fetched twice within one call), prints a table and writes ``bench-results/adapter.json``. Figures are
reported, never asserted; the run stops by itself.

The bookings go to the platform's conformance organization, which allows parallel bookings, so every
attempt books the same real slot under a fresh idempotency key and the work measured stays the same.
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from rich.table import Table

from osbp.adapter.reference import build_adapter
from osbp.adapter.settings import AdapterSettings
from osbp.backend.process import PlatformProcess
from osbp.bench.latency import latency_ms
from osbp.bench.options import Options, count
from osbp.bench.results import console
from osbp.protocol.approval import APPROVAL_TOKEN_PATTERN
from osbp.protocol.clock import FixedClock
from osbp.protocol.contract import Failure, Success
from osbp.protocol.core import OsbpCore
from osbp.protocol.models import Approval, BookingCreateInput, BookingMandate, Customer, Money
from osbp.protocol.problems import ProblemCode
from osbp.protocol.upstream import capture_upstream

__all__ = ["add_arguments", "report", "run"]

#: The platform's and the adapter's frozen "now": Monday 2026-05-04 08:00 in New York.
NOW = datetime(2026, 5, 4, 12, 0, tzinfo=UTC)
ORGANIZATION = "conformance_co"
TARGET_UPSTREAM_PER_CREATE = 2


def _input(key: str) -> BookingCreateInput:
    mandate = BookingMandate(
        id="mnd_bench",
        expires_at="2026-05-05T23:59:59-04:00",
        allowed_actions=["booking.create"],
        organization_id=ORGANIZATION,
        earliest_start="2026-05-05T08:00:00",
        latest_end="2026-05-05T18:00:00",
        max_price=Money(amount_minor=10000, currency="USD"),
    )
    return BookingCreateInput(
        mandate=mandate,
        idempotency_key=key,
        service_id="conformance_fixed_usd",
        schedule_id="conformance_main",
        provider_id="conformance_provider_ada",
        date="2026-05-05",
        time="10:30",
        customer=Customer(display_name="Bench Customer", phone="+12125550100"),
    )


async def _attempt(adapter: OsbpCore, key: str) -> tuple[float, float, list[str]]:
    inp = _input(key)
    started = time.perf_counter()
    challenge = await adapter.create_booking(inp)
    preflight = time.perf_counter() - started
    if not isinstance(challenge, Failure) or challenge.problem.code != ProblemCode.REQUIRES_USER_CONFIRMATION:
        raise RuntimeError(f"preflight did not challenge: {challenge!r}")
    match = APPROVAL_TOKEN_PATTERN.search(challenge.problem.message)
    if match is None:
        raise RuntimeError("the challenge carries no approval token")
    approved = inp.model_copy(update={"approval": Approval(confirmed=True, token=match.group(1))})
    with capture_upstream() as capture:
        started = time.perf_counter()
        created = await adapter.create_booking(approved)
        create = time.perf_counter() - started
    if not isinstance(created, Success):
        raise RuntimeError(f"approved create failed: {created!r}")
    return preflight, create, [meta.call for meta in capture.calls]


async def run(iterations: int, warmup: int = 10) -> dict[str, Any]:
    """Run the benchmark and return its figures (the JSON written to ``bench-results/adapter.json``)."""
    preflights: list[float] = []
    creates: list[float] = []
    upstream_counts: list[int] = []
    duplicated = 0
    # The platform runs as its own process: in this interpreter it would share the adapter's GIL.
    with (
        tempfile.TemporaryDirectory(prefix="osbp-bench-adapter-") as state_dir,
        PlatformProcess(db=":memory:", now=NOW, rate_limit_quota=1_000_000) as server,
    ):
        settings = AdapterSettings(
            platform_base_url=server.base_url,
            organization_id=ORGANIZATION,
            state_path=Path(state_dir) / "osbp.sqlite3",
        )
        adapter = build_adapter(settings, clock=FixedClock(NOW))
        try:
            for index in range(warmup + iterations):
                preflight, create, calls = await _attempt(adapter, f"bench-{index:06d}")
                if index < warmup:
                    continue
                preflights.append(preflight)
                creates.append(create)
                upstream_counts.append(len(calls))
                duplicated += sum(count - 1 for count in Counter(calls).values() if count > 1)
        finally:
            await adapter.aclose()
    return {
        "benchmark": "adapter",
        "target": "reference adapter -> Bookwell platform process over loopback (uvicorn, in-memory SQLite)",
        "iterations": iterations,
        "warmup": warmup,
        "preflight": latency_ms(preflights),
        "approved_create": latency_ms(creates),
        "upstream_requests_per_approved_create": {
            "max": max(upstream_counts),
            "mean": round(statistics.fmean(upstream_counts), 3),
            "target_max": TARGET_UPSTREAM_PER_CREATE,
            "duplicated_fetches": duplicated,
        },
    }


def _table(results: dict[str, Any]) -> Table:
    table = Table(title=f"adapter → platform over loopback ({results['iterations']} bookings)")
    table.add_column("measure")
    table.add_column("p50", justify="right")
    table.add_column("p99", justify="right")
    table.add_column("mean", justify="right")
    for name, key in (
        ("booking.create preflight", "preflight"),
        ("booking.create approved", "approved_create"),
    ):
        figures = results[key]
        table.add_row(
            name, f"{figures['p50_ms']:.2f} ms", f"{figures['p99_ms']:.2f} ms", f"{figures['mean_ms']:.2f} ms"
        )
    upstream = results["upstream_requests_per_approved_create"]
    table.add_row(
        f"upstream requests per approved create (target ≤ {upstream['target_max']})",
        "",
        f"max {upstream['max']}",
        f"{upstream['mean']:.2f}",
    )
    table.add_row("duplicated fetches within one call", "", "", str(upstream["duplicated_fetches"]))
    return table


def add_arguments(options: Options) -> list[argparse.Action]:
    """The adapter benchmark's own flags."""
    return [count(options, "--iterations", default=100, text="measured bookings")]


def report(args: argparse.Namespace) -> int:
    """Run the adapter benchmark, print the table, write ``<out>/adapter.json``; 0 on success."""
    results = anyio.run(run, args.iterations)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "adapter.json").write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    out = console()
    out.print(_table(results))
    out.print(f"wrote {args.out / 'adapter.json'}")
    upstream = results["upstream_requests_per_approved_create"]
    within_target = upstream["max"] <= TARGET_UPSTREAM_PER_CREATE and upstream["duplicated_fetches"] == 0
    return 0 if within_target else 1
