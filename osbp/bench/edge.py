"""`osbp bench edge`: legitimate requests to the Streamable HTTP server while others hold its connections.

One ``osbp mcp --transport streamable-http`` (bearer authorization, the default connection settings);
``--edge-held`` connections (500 by default) opened from other loopback addresses (127.0.0.2 and up, one
client per address, ``--edge-sources`` of them) and held, each reconnecting 0.1 s after the server closes
it: first idle (nothing sent), then slow (a request's headers a line per second, never finished). Meanwhile
``--edge-requests`` authenticated ``tools/list`` requests from 127.0.0.1, each on a new connection, one
after another. Reported per mode: the requests' statuses and latency p50/p99, and what became of the held
connections (opened, closed by the server). Figures are reported, never asserted; the status is non-zero
when a request failed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from collections import Counter
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
import anyio.abc
import httpx2
from rich.table import Table

from osbp.bench.latency import latency_ms
from osbp.bench.options import Options, count
from osbp.bench.remote import ISSUER, SCOPES, replica
from osbp.bench.results import publish
from osbp.server.issuer import DevIssuer

__all__ = ["Siege", "add_arguments", "legitimate", "report", "run", "siege"]

MODES = ("idle", "slow")
LIST_TOOLS = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
#: How long a held connection's client waits before it connects again once the server closed it.
RECONNECT_S = 0.1


@dataclass
class Siege:
    """What became of the held connections: how many were opened, and how many the server closed."""

    opened: int = 0
    closed_by_server: int = 0
    refused: int = 0


def _sources(count: int) -> list[str]:
    """``count`` loopback source addresses other than 127.0.0.1 (Linux routes all of 127/8 to lo)."""
    return [f"127.0.0.{2 + index}" for index in range(count)]


def enough_files(needed: int) -> None:
    """Raise this process's soft descriptor limit to ``needed`` (within the hard limit) if it is lower."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < needed:
        top = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
        resource.setrlimit(resource.RLIMIT_NOFILE, (top, hard))


async def _hold(port: int, source: str, slow: bool, siege: Siege, stop: anyio.Event) -> None:
    """One held connection, opened again after the server closes it, until ``stop``."""
    while not stop.is_set():
        try:
            stream = await anyio.connect_tcp("127.0.0.1", port, local_host=source)
        except OSError:
            siege.refused += 1
            await anyio.sleep(RECONNECT_S)
            continue
        siege.opened += 1
        async with stream, anyio.create_task_group() as group:

            async def trickle(connection: anyio.abc.SocketStream = stream) -> None:
                await connection.send(b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                while True:
                    await anyio.sleep(1)
                    await connection.send(b"X-Slow: 1\r\n")

            async def until_closed(connection: anyio.abc.SocketStream = stream) -> None:
                try:
                    while await connection.receive():
                        pass
                except (anyio.EndOfStream, anyio.BrokenResourceError, OSError):
                    pass
                siege.closed_by_server += 1
                group.cancel_scope.cancel()

            async def until_stopped() -> None:
                await stop.wait()
                group.cancel_scope.cancel()

            if slow:
                group.start_soon(trickle)
            group.start_soon(until_closed)
            group.start_soon(until_stopped)
        if not stop.is_set():
            await anyio.sleep(RECONNECT_S)


@asynccontextmanager
async def siege(port: int, held: int, sources: list[str], *, slow: bool) -> AsyncIterator[Siege]:
    """``held`` connections to ``port`` spread over ``sources``, held (idle or slow) while the block runs;
    the block starts once each has connected once."""
    enough_files(held + 256)
    stop = anyio.Event()
    figures = Siege()
    async with anyio.create_task_group() as group:
        for index in range(held):
            group.start_soon(_hold, port, sources[index % len(sources)], slow, figures, stop)
        with anyio.fail_after(60):
            while figures.opened + figures.refused < held:  # noqa: ASYNC110 - counters polled with a deadline
                await anyio.sleep(0.01)
        try:
            yield figures
        finally:
            stop.set()


async def legitimate(url: str, token: str, requests: int) -> list[tuple[int, float]]:
    """``requests`` authenticated ``tools/list`` POSTs one after another, each on a new connection: their
    statuses (0: no answer) and seconds."""
    limits = httpx2.Limits(max_keepalive_connections=0)
    sent = HEADERS | {"Authorization": f"Bearer {token}"}
    results = []
    async with httpx2.AsyncClient(limits=limits, timeout=30, trust_env=False) as client:
        for _ in range(requests):
            started = time.perf_counter()
            try:
                status = (await client.post(url, content=LIST_TOOLS, headers=sent)).status_code
            except httpx2.HTTPError:
                status = 0
            results.append((status, time.perf_counter() - started))
    return results


def _summary(results: list[tuple[int, float]], figures: Siege) -> dict[str, Any]:
    statuses = Counter(str(status) for status, _ in results)
    return {
        "statuses": dict(sorted(statuses.items())),
        "latency": latency_ms([seconds for _, seconds in results]),
        "held": {
            "opened": figures.opened,
            "closed_by_server": figures.closed_by_server,
            "refused": figures.refused,
        },
    }


async def run(held: int, requests: int, sources: int) -> dict[str, Any]:
    """Both modes against one server; the figures as a dict."""
    with tempfile.TemporaryDirectory(prefix="osbp-bench-edge-") as scratch:
        root = Path(scratch)
        issuer = DevIssuer(root / "issuer", ISSUER)
        jwks = root / "jwks.json"
        jwks.write_text(json.dumps(issuer.jwks()), encoding="utf-8")
        # tools/list never reaches the platform: a closed port stands in for it.
        with replica("http://127.0.0.1:9", root, root / "state.db", jwks, "edge", max_connections=200) as url:
            audience = "http://127.0.0.1:8500/mcp"  # the replica's resource URL
            token = issuer.token(
                subject="bench", audience=audience, scopes=SCOPES, organizations=["*"], ttl_s=3600
            )
            port = int(url.rsplit(":", 1)[1].split("/")[0])
            await legitimate(url, token, 10)  # warm-up
            modes = {}
            for mode in MODES:
                async with siege(port, held, _sources(sources), slow=mode == "slow") as figures:
                    results = await legitimate(url, token, requests)
                modes[mode] = _summary(results, figures)
    return {
        "benchmark": "edge",
        "target": "osbp mcp over Streamable HTTP (bearer JWT), tools/list while connections are held",
        "python": sys.version.split()[0],
        "cpus": os.cpu_count(),
        "held_connections": held,
        "held_from_addresses": sources,
        "requests": requests,
        "modes": modes,
    }


def _table(results: dict[str, Any]) -> Table:
    title = f"tools/list while {results['held_connections']} connections are held"
    table = Table(title=f"{title} ({results['requests']} requests, each on a new connection)")
    for column in ("held connections", "statuses", "p50", "p99", "held: opened / closed by server"):
        table.add_column(column, justify="left" if column.startswith("held c") else "right")
    for mode, figures in results["modes"].items():
        held = figures["held"]
        table.add_row(
            mode,
            ", ".join(f"{status}: {n}" for status, n in figures["statuses"].items()),
            f"{figures['latency']['p50_ms']:.1f} ms",
            f"{figures['latency']['p99_ms']:.1f} ms",
            f"{held['opened']} / {held['closed_by_server']}",
        )
    return table


def add_arguments(options: Options) -> list[argparse.Action]:
    """The edge benchmark's own flags."""
    return [
        count(options, "--edge-held", default=500, text="connections held open while the requests run"),
        count(options, "--edge-sources", default=10, text="loopback addresses holding the connections"),
        count(options, "--edge-requests", default=200, text="legitimate requests per mode"),
    ]


def report(args: argparse.Namespace) -> int:
    """Run the edge benchmark, print the table, write ``<out>/edge.json``; 1 if a request failed."""
    results = anyio.run(run, args.edge_held, args.edge_requests, args.edge_sources)
    publish(args.out, "edge", results, _table(results))
    failed = [mode for mode, figures in results["modes"].items() if set(figures["statuses"]) != {"200"}]
    return 1 if failed else 0
