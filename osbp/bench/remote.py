"""`osbp bench remote`: MCP over Streamable HTTP beside stdio, and replicas under concurrent clients.

Two measures against one platform process (``osbp backend``: ephemeral loopback port, in-memory SQLite,
clock frozen at 2030-05-01, limits lifted, the conformance organization):

* **per tool, HTTP vs stdio**: the per-tool round trips of ``osbp bench mcp`` (same calls, same warm-up),
  once through the SDK's stdio client and once through its Streamable HTTP client against
  ``osbp mcp --transport streamable-http`` with bearer authorization (the development issuer's token:
  every call verifies the JWT), in one run, so the two columns share the machine's state;
* **canonical-loop throughput**: C concurrent clients (16 by default) each run L canonical loops
  (describe → find → explain → gated create → approved create → status), every loop on its own slot,
  against 1 and then 2 replicas sharing one state file (each with its own audit log), every call of a
  client going to the next replica in turn, so a challenge issued by one replica is redeemed on the other.
  Reported: loops per second and loop p50/p99; checked: every loop booked, and the platform holds exactly
  one appointment per loop (0 double bookings).

Figures are reported (``bench-results/remote.json``), never asserted; the status is non-zero only when
a check (every loop booked, no double booking) fails.
"""

from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, ExitStack, asynccontextmanager, contextmanager
from pathlib import Path
from typing import Any

import anyio
import httpx2
from mcp import Client
from mcp.client.stdio import stdio_client
from mcp.client.streamable_http import streamable_http_client
from rich.table import Table

from osbp.backend.process import PlatformProcess
from osbp.bench.latency import latency_ms
from osbp.bench.loop_driver import (
    NOW,
    ORGANIZATION,
    PROVIDER,
    SCHEDULE,
    SERVICE,
    server_params,
    server_settings,
)
from osbp.bench.mcp import per_tool
from osbp.bench.options import Options, count
from osbp.bench.results import publish
from osbp.protocol.approval import APPROVAL_TOKEN_PATTERN
from osbp.server.issuer import DevIssuer
from osbp.server.remote_settings import HttpSettings, OAuthSettings
from osbp.server.settings import environment

__all__ = ["add_arguments", "replica", "report", "run"]

ISSUER = "http://127.0.0.1:8600"
SCOPES = ("osbp:read", "osbp:verify", "osbp:book")
#: Days the throughput loops book on (each loop its own slot on one of them).
DAYS = tuple(f"2030-05-{day:02d}" for day in range(2, 16))


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@contextmanager
def _platform() -> Iterator[PlatformProcess]:
    limits = {"rate_limit_quota": 1_000_000, "verification_send_limit": 1_000_000}
    with PlatformProcess(db=":memory:", now=NOW, enable_testing=True, **limits) as process:
        yield process


@contextmanager
def replica(
    base_url: str, workdir: Path, state: Path, jwks: Path, name: str, *, max_connections: int = 1000
) -> Iterator[str]:
    """One ``osbp mcp --transport streamable-http`` process; its URL once it listens."""
    port = _free_port()
    settings = server_settings(
        base_url,
        workdir,
        state_path=state,
        transport="streamable-http",
        audit_log_path=workdir / f"{name}-audit.jsonl",
        http=HttpSettings.model_construct(port=port, max_connections=max_connections),
        auth=OAuthSettings.model_construct(
            issuer=ISSUER, jwks=str(jwks), resource_url="http://127.0.0.1:8500/mcp"
        ),
    )
    env = environment(settings) | {"PATH": os.environ.get("PATH", "")}
    process = subprocess.Popen(
        [sys.executable, "-P", "-m", "osbp", "mcp"], env=env, cwd=workdir, stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:  # poll the port until the deadline
            if process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"replica {name} did not start")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.02)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(15)


@asynccontextmanager
async def _http_client(url: str, token: str) -> AsyncIterator[Client]:
    timeout = httpx2.Timeout(60.0)
    async with (
        httpx2.AsyncClient(
            headers={"Authorization": f"Bearer {token}"}, timeout=timeout, trust_env=False
        ) as http,
        Client(streamable_http_client(url, http_client=http)) as client,
    ):
        yield client


def _mandate(day: str) -> dict[str, Any]:
    return {
        "id": "mnd_bench_remote",
        "expires_at": "2030-05-31T23:59:59-04:00",
        "allowed_actions": ["booking.create"],
        "organization_id": ORGANIZATION,
        "earliest_start": f"{day}T00:00:00",
        "latest_end": f"{day}T23:59:59",
        "max_price": {"amount_minor": 10000, "currency": "USD"},
    }


async def _slots(client: Client, needed: int) -> list[tuple[str, str]]:
    """``needed`` distinct (date, HH:MM) slots of the bench provider, day after day."""
    found: list[tuple[str, str]] = []
    for day in DAYS:
        earliest: str | None = None
        while len(found) < needed:
            arguments = {"service_id": SERVICE, "schedule_id": SCHEDULE, "date": day, "provider_id": PROVIDER}
            if earliest is not None:
                arguments["earliest_start"] = earliest
            answer = (await client.call_tool("osbp_availability_find", arguments)).structured_content or {}
            page = [slot["starts_at_local"] for slot in answer.get("value", [])]
            fresh = [start for start in page if start != earliest]
            if not fresh:
                break
            found += [(start[:10], start[11:16]) for start in fresh]
            earliest = page[-1]
        if len(found) >= needed:
            return found[:needed]
    raise RuntimeError(f"only {len(found)} slots on the bench days, {needed} needed")


class _Loops:
    """The concurrent clients' canonical loops against a set of replicas (calls rotate over them)."""

    def __init__(self, clients: list[list[Client]], slots: list[tuple[str, str]], prefix: str) -> None:
        self._clients = clients
        self._slots = slots
        self._prefix = prefix
        self.seconds: list[float] = []
        self.booked: list[str] = []
        self.failures: list[str] = []

    async def _client_loops(self, index: int, loops: int) -> None:
        replicas = self._clients[index]
        turn = 0

        async def call(tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
            nonlocal turn
            client = replicas[turn % len(replicas)]
            turn += 1
            result = await client.call_tool(tool, arguments)
            envelope = result.structured_content
            return envelope if isinstance(envelope, dict) else {}

        for loop in range(loops):
            day, hhmm = self._slots[index * loops + loop]
            key = f"{self._prefix}-{index:02d}-{loop:04d}"
            started = time.perf_counter()
            await call("osbp_service_describe", {"service_id": SERVICE})
            find = {"service_id": SERVICE, "schedule_id": SCHEDULE, "date": day, "provider_id": PROVIDER}
            await call("osbp_availability_find", find)
            await call("osbp_policy_explain", {"service_id": SERVICE})
            create = {
                "mandate": _mandate(day),
                "idempotency_key": key,
                "service_id": SERVICE,
                "schedule_id": SCHEDULE,
                "provider_id": PROVIDER,
                "date": day,
                "time": hhmm,
                "customer": {"display_name": "Bench Customer", "phone": "+12125550100"},
            }
            challenge = await call("osbp_booking_create", create)
            match = APPROVAL_TOKEN_PATTERN.search(challenge.get("problem", {}).get("message", ""))
            if match is None:
                self.failures.append(f"{key}: no challenge: {challenge.get('problem')}")
                continue
            receipt = await call(
                "osbp_booking_create", create | {"approval": {"confirmed": True, "token": match.group(1)}}
            )
            if receipt.get("ok") is not True:
                self.failures.append(f"{key}: not booked: {receipt.get('problem')}")
                continue
            await call("osbp_booking_status", {"booking_id": receipt["value"]["booking_id"]})
            self.seconds.append(time.perf_counter() - started)
            self.booked.append(receipt["value"]["booking_id"])

    async def run(self, loops: int) -> float:
        """Every client's ``loops`` loops at once; the wall-clock seconds."""
        started = time.perf_counter()
        async with anyio.create_task_group() as group:
            for index in range(len(self._clients)):
                group.start_soon(self._client_loops, index, loops)
        return time.perf_counter() - started


def _appointments(base_url: str) -> int:
    answer = httpx2.get(
        f"{base_url}/_testing/stats", params={"organization_id": ORGANIZATION}, trust_env=False
    )
    return int(answer.json()["appointments"])


async def _throughput(
    base_url: str,
    urls: list[str],
    token: str,
    slots: list[tuple[str, str]],
    clients: int,
    loops: int,
    name: str,
) -> dict[str, Any]:
    before = _appointments(base_url)
    async with AsyncExitStack() as stack:
        connected = [
            [await stack.enter_async_context(_http_client(url, token)) for url in urls]
            for _ in range(clients)
        ]
        runner = _Loops(connected, slots, name)
        wall = await runner.run(loops)
    made = _appointments(base_url) - before
    expected = clients * loops
    return {
        "replicas": len(urls),
        "clients": clients,
        "loops": expected,
        "booked": len(runner.booked),
        "distinct_bookings": len(set(runner.booked)),
        "platform_appointments": made,
        "double_bookings": made - len(set(runner.booked)),
        "failures": runner.failures[:5],
        "wall_s": round(wall, 3),
        "loops_per_s": round(len(runner.booked) / wall, 2) if wall else 0.0,
        "loop": latency_ms(runner.seconds) if runner.seconds else {},
    }


async def run(calls: int, warmup: int, clients: int, loops: int) -> dict[str, Any]:
    """Run the benchmark and return its figures (the JSON written to ``bench-results/remote.json``)."""
    with tempfile.TemporaryDirectory(prefix="osbp-bench-remote-") as tmp, _platform() as platform:
        root = Path(tmp)
        issuer = DevIssuer(root / "issuer", ISSUER)
        jwks = root / "jwks.json"
        jwks.write_text(json.dumps(issuer.jwks()), encoding="utf-8")
        token = issuer.token(
            subject="bench",
            audience="http://127.0.0.1:8500/mcp",
            scopes=SCOPES,
            organizations=["*"],
            ttl_s=86_400,
        )
        per: dict[str, dict[str, Any]] = {}
        for transport in ("stdio", "streamable-http"):
            workdir = root / transport
            workdir.mkdir()
            async with AsyncExitStack() as stack:
                if transport == "stdio":
                    with open(os.devnull, "w", encoding="utf-8") as errlog:  # noqa: ASYNC230  before any call
                        client = await stack.enter_async_context(
                            Client(stdio_client(server_params(platform.base_url, workdir), errlog=errlog))
                        )
                        samples = await per_tool(client, calls, warmup)
                else:
                    url = stack.enter_context(
                        replica(platform.base_url, workdir, workdir / "s.db", jwks, "one")
                    )
                    client = await stack.enter_async_context(_http_client(url, token))
                    samples = await per_tool(client, calls, warmup)
            per[transport] = {label: latency_ms(values) for label, values in samples.round_trip.items()}
        loop_dir = root / "loops"
        loop_dir.mkdir()
        throughput = []
        with replica(platform.base_url, loop_dir, loop_dir / "state.db", jwks, "probe") as probe:
            async with _http_client(probe, token) as client:
                slots = await _slots(client, 2 * clients * loops)
        for replicas in (1, 2):
            workdir = loop_dir / f"x{replicas}"
            workdir.mkdir()
            state = workdir / "shared-state.db"
            with ExitStack() as stack:
                urls = [
                    stack.enter_context(replica(platform.base_url, workdir, state, jwks, f"r{index}"))
                    for index in range(replicas)
                ]
                part = slots[(replicas - 1) * clients * loops : replicas * clients * loops]
                throughput.append(
                    await _throughput(platform.base_url, urls, token, part, clients, loops, f"x{replicas}")
                )
    return {
        "benchmark": "remote",
        "target": "osbp mcp over stdio and Streamable HTTP (bearer JWT) -> reference adapter -> platform",
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "calls_per_tool": calls,
        "warmup_calls_per_tool": warmup,
        "per_tool_p50_ms": {
            label: {
                "stdio": per["stdio"][label]["p50_ms"],
                "streamable_http": per["streamable-http"][label]["p50_ms"],
            }
            for label in per["stdio"]
        },
        "per_tool": per,
        "throughput": throughput,
    }


def _table(results: dict[str, Any]) -> Table:
    table = Table(title=f"Remote MCP: per-tool p50 ({results['calls_per_tool']} calls) and loop throughput")
    table.add_column("measure")
    table.add_column("stdio", justify="right")
    table.add_column("Streamable HTTP", justify="right")
    for label, figures in results["per_tool_p50_ms"].items():
        table.add_row(f"{label} p50", f"{figures['stdio']:.2f} ms", f"{figures['streamable_http']:.2f} ms")
    for run in results["throughput"]:
        loop = run["loop"]
        table.add_row(
            f"{run['clients']} clients, {run['replicas']} replica(s): loops/s (p50/p99), double bookings",
            "",
            f"{run['loops_per_s']:.1f}/s ({loop.get('p50_ms', 0):.0f}/{loop.get('p99_ms', 0):.0f} ms), "
            f"{run['double_bookings']}",
        )
    return table


def add_arguments(options: Options) -> list[argparse.Action]:
    """The remote benchmark's own flags."""
    return [
        count(options, "--remote-calls", default=100, text="measured calls per tool and transport"),
        count(options, "--remote-warmup", default=10, minimum=0, text="unmeasured calls per tool first"),
        count(options, "--remote-clients", default=16, text="concurrent clients of the throughput runs"),
        count(options, "--remote-loops", default=3, text="canonical loops per client and run"),
    ]


def report(args: argparse.Namespace) -> int:
    """Run the remote benchmark, print the table, write ``<out>/remote.json``; 1 if a loop check failed."""
    results = anyio.run(run, args.remote_calls, args.remote_warmup, args.remote_clients, args.remote_loops)
    publish(args.out, "remote", results, _table(results))
    bad = [
        run
        for run in results["throughput"]
        if run["double_bookings"] != 0
        or run["booked"] != run["loops"]
        or run["platform_appointments"] != run["loops"]
    ]
    return 1 if bad else 0
