"""`osbp bench state`: idempotency claim throughput of the OSBP state store across processes, per engine.

P processes (``--state-processes``, default 4, spawned) open one shared state, are released together,
and each runs ``--claims`` create attempts' state work (claim, then settle with a receipt, as one approved
create does). Two workloads per engine: *distinct keys* (every attempt its own key: the throughput of
independent creates) and *same keys* (every process the same keys, as replicas receiving the same
retried creates: each key must be claimed exactly once, the others waiting and replaying). The engines:
a SQLite file, and a PostgreSQL database (``--postgres-url``, else a throwaway cluster started for the
run from the machine's ``initdb``/``pg_ctl``; skipped with the reason where none can run).

Reported per engine and workload: claims per second over all processes (wall time from the release to
the last finish), p50/p99 of one claim-and-settle, and the outcome counts (0 double claims is the
check: the run fails if a key was claimed twice). ``bench-results/state.json``; figures are reported,
never asserted.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from rich.table import Table

from osbp.bench.latency import latency_ms
from osbp.bench.options import Options, count
from osbp.bench.results import console, publish
from osbp.protocol.clock import FixedClock
from osbp.protocol.idempotency import Claimed, IdempotencyStore, Replay
from osbp.protocol.models import Receipt
from osbp.protocol.state import open_state_store

__all__ = ["add_arguments", "report", "run"]

WORKLOADS = {"distinct": "distinct keys", "same": "same keys"}
_NOW = datetime(2030, 5, 1, 12, 0, tzinfo=UTC)
_RECEIPT = Receipt(id="receipt_bench", booking_id="appt_bench", text="Booked.")
_TIMEOUT_S = 600


def add_arguments(options: Options) -> list[argparse.Action]:
    """``--claims`` and ``--state-processes`` (the PostgreSQL server is the shared ``--postgres-url``)."""
    return [
        count(options, "--claims", default=300, text="claim-and-settle rounds per process"),
        count(options, "--state-processes", default=4, text="processes sharing the state"),
    ]


def _worker(location: str, workload: str, index: int, claims: int, start: Any, results: Any) -> None:
    """One process: open the shared state, wait for the release, claim and settle ``claims`` keys."""
    store = IdempotencyStore(open_state_store(location), clock=FixedClock(_NOW), wait_timeout_s=60)
    outcomes: Counter[str] = Counter()
    seconds: list[float] = []
    start.wait(_TIMEOUT_S)
    began = time.perf_counter()
    for number in range(claims):
        key = f"{workload}-{index}-{number}" if workload == "distinct" else f"{workload}-{number}"
        tick = time.perf_counter()
        outcome = store.claim(key, "payload")
        if isinstance(outcome, Claimed):
            store.complete(outcome.lease, _RECEIPT)
        seconds.append(time.perf_counter() - tick)
        outcomes[type(outcome).__name__ if not isinstance(outcome, Replay) else "Replay"] += 1
    results.put({"began": began, "ended": time.perf_counter(), "seconds": seconds, "outcomes": outcomes})


def _measure(location: str, workload: str, processes: int, claims: int) -> dict[str, Any]:
    open_state_store(location).close()  # the schema exists before the release, as a running server's would
    context = multiprocessing.get_context("spawn")
    start, results = context.Event(), context.Queue()
    workers = [
        context.Process(target=_worker, args=(location, workload, index, claims, start, results))
        for index in range(processes)
    ]
    for worker in workers:
        worker.start()
    start.set()
    parts = [results.get(timeout=_TIMEOUT_S) for _ in workers]
    for worker in workers:
        worker.join(_TIMEOUT_S)
    wall = max(part["ended"] for part in parts) - min(part["began"] for part in parts)
    outcomes = sum((Counter(part["outcomes"]) for part in parts), Counter[str]())
    keys = claims * (processes if workload == "distinct" else 1)
    return {
        "claims_per_s": round(processes * claims / wall, 1),
        "claim_and_settle": latency_ms([value for part in parts for value in part["seconds"]]),
        "outcomes": dict(sorted(outcomes.items())),
        "keys": keys,
        "double_claims": max(0, outcomes["Claimed"] - keys),
    }


@contextmanager
def _postgres(url: str | None) -> Iterator[tuple[list[str], str | None]]:
    """Empty PostgreSQL database URLs (one per workload), or why there are none."""
    from osbp.bench import postgres  # psycopg and the cluster only when measuring

    with postgres.bench_server(url) as (server, reason):
        if server is None:
            yield [], reason
            return
        with postgres.fresh_database(server) as one, postgres.fresh_database(server) as two:
            yield [one, two], None


def run(claims: int, processes: int, postgres_url: str | None = None) -> dict[str, Any]:
    """Both workloads on a SQLite file, then on PostgreSQL; the figures for ``state.json``."""
    engines: dict[str, Any] = {}
    with tempfile.TemporaryDirectory(prefix="osbp-bench-state-") as folder:
        engines["sqlite"] = {
            workload: _measure(str(Path(folder) / f"{workload}.sqlite3"), workload, processes, claims)
            for workload in WORKLOADS
        }
    with _postgres(postgres_url) as (urls, reason):
        if reason is None:
            engines["postgresql"] = {
                workload: _measure(url, workload, processes, claims)
                for workload, url in zip(WORKLOADS, urls, strict=True)
            }
        else:
            engines["postgresql"] = {"skipped": reason}
    return {
        "benchmark": "state",
        "target": "idempotency claim + settle across processes sharing one state, SQLite vs PostgreSQL",
        "cpus": os.cpu_count(),
        "processes": processes,
        "claims_per_process": claims,
        "engines": engines,
    }


def _table(results: dict[str, Any]) -> Table:
    table = Table(
        title=f"state store: {results['processes']} processes × {results['claims_per_process']} claims"
    )
    for column in ("engine", "workload", "claims/s", "p50", "p99", "claimed / keys"):
        table.add_column(column, justify="left" if column in ("engine", "workload") else "right")
    for engine, workloads in results["engines"].items():
        if "skipped" in workloads:
            table.add_row(engine, f"skipped: {workloads['skipped']}")
            continue
        for workload, figures in workloads.items():
            latency = figures["claim_and_settle"]
            table.add_row(
                engine,
                WORKLOADS[workload],
                f"{figures['claims_per_s']:,.0f}",
                f"{latency['p50_ms']:.2f} ms",
                f"{latency['p99_ms']:.2f} ms",
                f"{figures['outcomes'].get('Claimed', 0)} / {figures['keys']}",
            )
    return table


def report(args: argparse.Namespace) -> int:
    """Run, print the table, write ``state.json``; 1 if any key was claimed twice."""
    results = run(args.claims, args.state_processes, args.postgres_url)
    publish(args.out, "state", results, _table(results))
    doubles = sum(
        figures["double_claims"]
        for workloads in results["engines"].values()
        if "skipped" not in workloads
        for figures in workloads.values()
    )
    if doubles:
        console(stderr=True).print(f"osbp bench state: {doubles} keys claimed twice")
    return int(doubles > 0)
