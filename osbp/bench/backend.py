"""`osbp bench backend`: availability latency against history size, and concurrent create throughput.

Runs the real platform as its own process (`osbp backend`, uvicorn on 127.0.0.1), drives it over HTTP,
prints a table and writes `bench-results/backend.json`. Figures are reported, not asserted. Every
measure runs on SQLite (a file in a temporary folder) and, given a PostgreSQL server (`--postgres-url`,
or `OSBP_BENCH_POSTGRES_URL`; the bench creates and drops its own databases there), on PostgreSQL with
one platform process and with two processes sharing the database.

- Availability p50/p99 for one day with 0, 10,000 and 100,000 existing appointments in the organization
  (history bulk-inserted with direct SQL). The overlap query is an index range scan, so the 100,000 figure
  should stay within 1.5× the empty one on each engine.
- Create throughput: 8 and 32 concurrent clients booking distinct (non-overlapping) slots, then a count
  of double bookings (overlapping active appointments of one provider) in the database: 0.
"""

from __future__ import annotations

import argparse
import json
import platform
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
from rich.console import Console
from rich.table import Table
from sqlalchemy import insert, text

from osbp.backend.db import Database
from osbp.backend.models import Appointment
from osbp.backend.process import PlatformProcess
from osbp.backend.schema import upgrade
from osbp.bench.latency import percentile_ms
from osbp.bench.options import Options, at_least, count
from osbp.bench.results import console as bench_console

__all__ = ["add_arguments", "distinct_slots", "report"]

ORG = "carolyns_dental"
SERVICE = "carolyns_dental_cleaning"
PROVIDERS = ("carolyns_dental_dr_reyes", "carolyns_dental_dr_okafor")
NOW = datetime(2026, 5, 4, 12, 0, tzinfo=UTC)
PROBE_DAY = date(2026, 6, 2)  # a Tuesday
CREATE_DAYS = [date(2026, 6, 8) + timedelta(days=offset) for offset in range(0, 120)]
HISTORY_LEVELS = (0, 10_000, 100_000)


@dataclass(frozen=True)
class Setup:
    """One way of running the platform: an engine and how many processes share its database."""

    label: str
    engine: str
    processes: int


def _insert_history(db: Database, start_index: int, count: int) -> None:
    """Bulk-insert `count` past, non-overlapping appointments (direct SQL, one transaction)."""
    if count <= 0:
        return
    base = int(datetime(2026, 5, 1, 13, 0, tzinfo=UTC).timestamp())
    rows: list[dict[str, Any]] = []
    for index in range(start_index, start_index + count):
        provider = PROVIDERS[index % 2]
        slot = index // 2  # 8 appointments per provider per day, one hour apart, going back in time
        starts = base - (slot // 8) * 86400 + (slot % 8) * 3600
        when = datetime.fromtimestamp(starts, UTC)
        rows.append(
            {
                "id": f"apt_hist_{index:07d}",
                "organization_id": ORG,
                "service_id": SERVICE,
                "location_id": "carolyns_dental_midtown",
                "provider_id": provider,
                "customer_id": "cus_history",
                "customer_display_name": "History",
                "customer_given_name": None,
                "customer_family_name": None,
                "customer_phone": "+12125550100",
                "customer_email": None,
                "local_date": when.date().isoformat(),
                "local_time": when.strftime("%H:%M"),
                "end_date": when.date().isoformat(),
                "end_time": (when + timedelta(minutes=45)).strftime("%H:%M"),
                "time_zone": "America/New_York",
                "duration_minutes": 45,
                "price_kind": "fixed",
                "price_amount": "120.00",
                "currency": "USD",
                "starts_utc": starts - 86400 * 2,
                "ends_utc": starts - 86400 * 2 + 2700,
                "status": "confirmed" if index % 10 else "cancelled",
                "exclusive": True,
                "verified_by": None,
                "client_metadata": {},
                "created_utc": starts - 86400 * 30,
            }
        )
    with db.write() as session:
        session.execute(insert(Appointment), rows)
    with db.write() as session:
        session.execute(text("ANALYZE"))  # both engines: fresh planner statistics for the new history


def _availability(client: httpx2.Client, requests: int) -> tuple[float, float]:
    params = {"service_id": SERVICE, "date": PROBE_DAY.isoformat()}
    path = f"/api/organizations/{ORG}/availability"
    for _ in range(50):  # warm-up: connection, statement cache, page cache
        client.get(path, params=params).raise_for_status()
    samples = []
    for _ in range(requests):
        started = time.perf_counter()
        response = client.get(path, params=params)
        samples.append(time.perf_counter() - started)
        response.raise_for_status()
    return percentile_ms(samples, 50), percentile_ms(samples, 99)


def distinct_slots(client: httpx2.Client, wanted: int) -> list[dict[str, Any]]:
    """Non-overlapping slots per provider, from the platform's own availability."""
    chosen: list[dict[str, Any]] = []
    for day in CREATE_DAYS:
        slots = client.get(
            f"/api/organizations/{ORG}/availability", params={"service_id": SERVICE, "date": day.isoformat()}
        ).json()["slots"]
        last_end: dict[str, str] = {}
        for slot in slots:
            if slot["time"] >= last_end.get(slot["provider_id"], ""):
                chosen.append(slot)
                last_end[slot["provider_id"]] = slot["end_time"]
        if len(chosen) >= wanted:
            break
    return chosen[:wanted]


def _throughput(
    base_urls: list[str], slots: list[dict[str, Any]], clients: int, tag: str
) -> tuple[float, Counter[int]]:
    statuses: Counter[int] = Counter()
    lock = threading.Lock()
    barrier = threading.Barrier(clients + 1)
    shares = [slots[index::clients] for index in range(clients)]

    def run(share: list[dict[str, Any]], worker: int) -> None:
        with httpx2.Client(base_url=base_urls[worker % len(base_urls)], timeout=60) as client:
            barrier.wait()
            for number, slot in enumerate(share):
                body = {
                    "service_id": SERVICE,
                    "location_id": slot["location_id"],
                    "provider_id": slot["provider_id"],
                    "date": slot["date"],
                    "time": slot["time"],
                    "customer": {
                        "display_name": f"Bench {worker}",
                        "phone": f"+1212{worker:03d}{number:04d}",
                    },
                }
                response = client.post(
                    f"/api/organizations/{ORG}/appointments",
                    json=body,
                    headers={"Idempotency-Key": f"bench-{tag}-{worker}-{number}"},
                )
                with lock:
                    statuses[response.status_code] += 1

    threads = [threading.Thread(target=run, args=(share, worker)) for worker, share in enumerate(shares)]
    for thread in threads:
        thread.start()
    barrier.wait()
    started = time.perf_counter()
    for thread in threads:
        thread.join()
    return time.perf_counter() - started, statuses


def _double_bookings(db: Database) -> int:
    query = text(
        "SELECT COUNT(*) FROM appointment a JOIN appointment b ON a.provider_id = b.provider_id "
        "AND a.id < b.id AND a.starts_utc < b.ends_utc AND b.starts_utc < a.ends_utc "
        "WHERE a.status IN ('pending','confirmed') AND b.status IN ('pending','confirmed') "
        "AND a.starts_utc >= :since AND b.starts_utc >= :since"
    )
    with db.read() as session:
        return int(session.execute(query, {"since": int(NOW.timestamp())}).scalar_one())


def _client_counts(text: str) -> tuple[int, ...]:
    """``--clients 8,32``: concurrent create clients, one throughput run each."""
    parse = at_least(1)
    return tuple(parse(part.strip()) for part in text.split(","))


def add_arguments(options: Options) -> list[argparse.Action]:
    """The backend benchmark's own flags."""
    return [
        count(options, "--requests", default=300, text="availability requests per history level"),
        count(options, "--creates", default=240, text="appointments to create on distinct slots, per run"),
        options.add_argument(
            "--clients",
            type=_client_counts,
            default=(8, 32),
            metavar="N[,N...]",
            help="concurrent create clients, one run each (default 8,32)",
        ),
    ]


@contextmanager
def _database(setup: Setup, folder: str, server: str | None) -> Iterator[str]:
    """A fresh database for one setup: a SQLite file, or a PostgreSQL database dropped afterwards."""
    if setup.engine == "sqlite":
        yield str(Path(folder) / f"{setup.label}.db")
        return
    from osbp.bench import postgres  # the optional driver: only a PostgreSQL run needs it

    assert server is not None
    with postgres.fresh_database(server) as url:
        yield url


@contextmanager
def _postgres_server(url: str | None) -> Iterator[tuple[str | None, str | None]]:
    """The PostgreSQL server for the PostgreSQL rows (given, or a throwaway cluster), or why there is none."""
    try:
        from osbp.bench import postgres
    except ImportError:
        yield None, "the PostgreSQL driver is not installed (pip install 'osbp[postgres]')"
        return
    with postgres.bench_server(url) as found:
        yield found


def _run_setup(setup: Setup, url: str, args: argparse.Namespace, console: Console) -> dict[str, Any]:
    """Availability at each history level (one process), then the create runs, on one fresh database."""
    result: dict[str, Any] = {"setup": setup.label, "engine": setup.engine, "processes": setup.processes}
    db = Database(url)
    upgrade(db)
    settings = {"db": url, "now": NOW, "rate_limit_quota": 10_000_000}
    with ExitStack() as stack:
        servers = [stack.enter_context(PlatformProcess(**settings)) for _ in range(setup.processes)]
        base_urls = [server.base_url for server in servers]
        with httpx2.Client(base_url=base_urls[0], timeout=60) as client:
            if setup.processes == 1:
                result["availability"] = []
                inserted = 0
                for level in HISTORY_LEVELS:
                    console.log(f"{setup.label}: history {level:,}: inserting and measuring availability")
                    _insert_history(db, inserted, level - inserted)
                    inserted = level
                    p50, p99 = _availability(client, args.requests)
                    result["availability"].append(
                        {
                            "existing_appointments": level,
                            "requests": args.requests,
                            "p50_ms": p50,
                            "p99_ms": p99,
                        }
                    )
                empty, largest = result["availability"][0], result["availability"][-1]
                result["availability_p50_ratio_100k_vs_empty"] = round(largest["p50_ms"] / empty["p50_ms"], 3)
            result["create"] = []
            for clients in args.clients:
                console.log(f"{setup.label}: {clients} clients creating {args.creates} appointments")
                slots = distinct_slots(client, args.creates)
                seconds, statuses = _throughput(base_urls, slots, clients, f"{clients}")
                result["create"].append(
                    {
                        "clients": clients,
                        "attempted": len(slots),
                        "seconds": round(seconds, 3),
                        "created": statuses[201],
                        "creates_per_second": round(statuses[201] / seconds, 1),
                        "statuses": {str(status): count for status, count in sorted(statuses.items())},
                    }
                )
    result["double_bookings"] = _double_bookings(db)
    db.dispose()
    return result


def report(args: argparse.Namespace) -> int:
    """Run the backend benchmark, print the table, write ``<out>/backend.json``; 0 on no double booking."""
    output = args.out / "backend.json"
    console = bench_console()
    results: dict[str, Any] = {"benchmark": "backend", "python": platform.python_version(), "setups": []}
    with (
        tempfile.TemporaryDirectory(prefix="osbp-bench-") as folder,
        _postgres_server(args.postgres_url) as (server, reason),
    ):
        setups = [Setup("sqlite", "sqlite", 1)]
        if server is not None:
            setups += [Setup("postgresql", "postgresql", 1), Setup("postgresql-2-processes", "postgresql", 2)]
        else:
            console.print(f"PostgreSQL rows skipped: {reason}")
        for setup in setups:
            # The platform runs as its own process(es) (in this interpreter it would share the measuring
            # client's GIL); this process reaches the same database directly to add history and count
            # overlaps.
            with _database(setup, folder, server) as url:
                results["setups"].append(_run_setup(setup, url, args, console))
    _print_table(console, results)
    output.parent.mkdir(parents=True, exist_ok=True)
    output.write_text(json.dumps(results, indent=2) + "\n")
    console.print(f"wrote {output}")
    complete = all(
        run["created"] == run["attempted"] for setup in results["setups"] for run in setup["create"]
    )
    clean = all(setup["double_bookings"] == 0 for setup in results["setups"])
    return 0 if complete and clean else 1


def _print_table(console: Console, results: dict[str, Any]) -> None:
    table = Table(title="osbp backend benchmark (Bookwell on 127.0.0.1: SQLite WAL, PostgreSQL)")
    table.add_column("setup")
    table.add_column("measure")
    table.add_column("value", justify="right")
    for setup in results["setups"]:
        label = setup["setup"]
        for row in setup.get("availability", []):
            measure = f"availability, {row['existing_appointments']:,} existing appointments"
            table.add_row(label, measure, f"p50 {row['p50_ms']:.2f} ms · p99 {row['p99_ms']:.2f} ms")
        if "availability_p50_ratio_100k_vs_empty" in setup:
            ratio = setup["availability_p50_ratio_100k_vs_empty"]
            table.add_row(label, "availability p50, 100k ÷ empty", f"{ratio:.2f}×")
        for run in setup["create"]:
            table.add_row(
                label,
                f"creates, {run['clients']} concurrent clients, distinct slots",
                f"{run['creates_per_second']:.1f} /s ({run['created']} in {run['seconds']:.2f} s)",
            )
        table.add_row(label, "double bookings", str(setup["double_bookings"]))
    console.print(table)
