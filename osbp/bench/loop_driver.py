"""The canonical booking loop, driven in one interpreter: the half of `osbp bench loop` that is measured.

One loop is what an agent does to book: service.describe → availability.find → policy.explain →
booking.create without approval (the ``requires_user_confirmation`` challenge) → booking.create with the
challenge's approval token (books) → booking.status. This module runs N loops (after W unmeasured ones)
two ways against one platform process (``osbp backend``: ephemeral loopback port, in-memory SQLite, frozen
clock, rate limits lifted, the conformance organization, which allows parallel bookings, so every loop
books the same real slot under a fresh idempotency key):

* **in process**: ``build_adapter(AdapterSettings(...))``, the seven-method OsbpCore, called directly;
* **stdio**: the SDK's stdio client against a spawned ``python -m osbp.server``.

It prints one JSON object of raw samples on stdout: seconds per step and per loop, the answer bytes of
every step (the JSON text an agent reads), platform requests per loop (counted black-box by an
``httpx2`` transport that wraps the adapter's, in process) and CPU seconds of each process over the
measured loops (``/proc/<pid>/stat`` utime + stime). ``osbp.bench.loop`` runs it and summarizes.

It is run by path (``python -P loop_driver.py``) in *any* checkout's interpreter, which then spawns that
checkout's platform and server: so it uses only what the baseline commit already had (the platform
process, ``build_adapter``, the protocol models, the SDK client) and nothing newer. It is also the one
home of the benchmark scenario (mandate, create arguments, server parameters) that ``osbp bench mcp``
reuses.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

import anyio
import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult, TextContent

from osbp.adapter.reference import build_adapter
from osbp.adapter.settings import AdapterSettings
from osbp.backend.process import PlatformProcess
from osbp.protocol.approval import APPROVAL_TOKEN_PATTERN
from osbp.protocol.clock import FixedClock
from osbp.protocol.contract import Failure, Success
from osbp.protocol.models import (
    AvailabilityFindInput,
    BookingCreateInput,
    BookingStatusInput,
    PolicyExplainInput,
    ServiceDescribeInput,
)
from osbp.protocol.problems import ProblemCode
from osbp.server.settings import ServerSettings, environment

__all__ = [
    "DAY",
    "NOW",
    "ORGANIZATION",
    "PROVIDER",
    "SCHEDULE",
    "SERVICE",
    "STEPS",
    "create_args",
    "main",
    "platform",
    "server_params",
]

NOW = datetime(2030, 5, 1, 12, 0, tzinfo=UTC)
ORGANIZATION = "conformance_co"
SERVICE = "conformance_fixed_usd"
SCHEDULE = "conformance_main"
PROVIDER = "conformance_provider_ada"
DAY = "2030-05-02"
#: The loop's steps, in order.
STEPS = ("describe", "find", "explain", "create_gated", "create_approved", "status")
_FIND = {"service_id": SERVICE, "schedule_id": SCHEDULE, "date": DAY, "provider_id": PROVIDER}


def _mandate() -> dict[str, Any]:
    return {
        "id": "mnd_bench",
        "expires_at": "2030-05-31T23:59:59-04:00",
        "allowed_actions": ["booking.create"],
        "organization_id": ORGANIZATION,
        "earliest_start": f"{DAY}T08:00:00",
        "latest_end": f"{DAY}T18:00:00",
        "max_price": {"amount_minor": 10000, "currency": "USD"},
    }


def create_args(key: str) -> dict[str, Any]:
    """booking.create's arguments for the bench slot under idempotency key ``key`` (no approval yet)."""
    return {
        "mandate": _mandate(),
        "idempotency_key": key,
        "service_id": SERVICE,
        "schedule_id": SCHEDULE,
        "provider_id": PROVIDER,
        "date": DAY,
        "time": "10:30",
        "customer": {"display_name": "Bench Customer", "phone": "+12125550100"},
    }


def _approved(key: str, challenge_message: str) -> dict[str, Any]:
    match = APPROVAL_TOKEN_PATTERN.search(challenge_message)
    if match is None:
        raise RuntimeError(f"the gated create did not challenge: {challenge_message!r}")
    return create_args(key) | {"approval": {"confirmed": True, "token": match.group(1)}}


def server_params(base_url: str, workdir: Path) -> StdioServerParameters:
    """The stdio client's ``python -m osbp.server`` (this interpreter's checkout), state in ``workdir``."""
    env = environment(server_settings(base_url, workdir))
    return StdioServerParameters(
        command=sys.executable, args=["-P", "-m", "osbp.server"], env=env, cwd=workdir
    )


def server_settings(
    base_url: str, workdir: Path, *, state_path: Path | None = None, **fields: Any
) -> ServerSettings:
    """The bench server's settings (``fields``: more of them), as :func:`environment` passes them on."""
    adapter = AdapterSettings.model_construct(
        platform_base_url=base_url,
        organization_id=ORGANIZATION,
        state_path=state_path or workdir / "state.sqlite3",
    )
    # ``now``: the platform's frozen instant, so the bench mandate does not expire when the date passes it.
    given: dict[str, Any] = {"audit_log_path": workdir / "audit" / "events.jsonl", "now": NOW} | fields
    return ServerSettings.model_construct(adapter=adapter, **given)


@contextmanager
def platform() -> Iterator[PlatformProcess]:
    """``osbp backend`` (this interpreter's checkout) in a child process on an ephemeral loopback port."""
    # Limits lifted: the benchmarks send thousands of requests and codes from one client.
    limits = {"rate_limit_quota": 1_000_000, "verification_send_limit": 1_000_000}
    with PlatformProcess(db=":memory:", now=NOW, **limits) as process:
        yield process


def cpu_seconds(pid: int) -> float:
    """User + system CPU time of process ``pid`` so far (``/proc/<pid>/stat`` utime + stime)."""
    stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    fields = stat.rpartition(")")[2].split()  # after "pid (comm)": fields 3.. of proc(5)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _child_pid(command_part: str) -> int:
    """The pid of this process's one child whose command line contains ``command_part``."""
    mine = str(os.getpid())
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text(encoding="ascii")
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:  # gone meanwhile
            continue
        if stat.rpartition(")")[2].split()[1] == mine and command_part in cmdline:
            return int(entry.name)
    raise RuntimeError(f"no child process running {command_part!r}")


def _default_transport() -> httpx2.AsyncBaseTransport:
    """The transport the checkout's adapter uses on its own for an ``http://`` platform.

    ``osbp.adapter.http11`` where the checkout has it (an older one, such as a baseline, has not), else
    httpx2's default: each checkout is measured with the transport it ships.
    """
    try:
        from osbp.adapter.http11 import Http11Transport  # absent from older checkouts
    except ImportError:
        return httpx2.AsyncHTTPTransport()
    return Http11Transport()


class CountingTransport(httpx2.AsyncBaseTransport):
    """The adapter's own transport, counting every request it sends to the platform."""

    def __init__(self) -> None:
        self._inner = _default_transport()
        self.requests = 0

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Count the request and send it on."""
        self.requests += 1
        return await self._inner.handle_async_request(request)

    async def aclose(self) -> None:
        """Close the wrapped transport."""
        await self._inner.aclose()


class _Samples:
    """Seconds and answer bytes of every step and loop, and requests per loop."""

    def __init__(self) -> None:
        self.seconds: dict[str, list[float]] = {step: [] for step in (*STEPS, "loop")}
        self.bytes: dict[str, list[int]] = {step: [] for step in (*STEPS, "loop")}
        self.requests: list[int] = []

    def as_json(self) -> dict[str, Any]:
        return {"seconds": self.seconds, "bytes": self.bytes, "requests_per_loop": self.requests}


RunStep = Callable[[str, dict[str, Any]], Awaitable[tuple[str, str]]]


class _Loop:
    """One loop's seconds and answer bytes per step; ``run_step(step, arguments) -> (answer, next_text)``."""

    def __init__(self, run_step: RunStep) -> None:
        self._run_step = run_step
        self.seconds: dict[str, float] = {}
        self.bytes: dict[str, int] = {}

    async def step(self, name: str, arguments: dict[str, Any]) -> str:
        """Run and time one step; the text the next step needs (the challenge message, the booking id)."""
        begun = time.perf_counter()
        answer, text = await self._run_step(name, arguments)
        self.seconds[name] = time.perf_counter() - begun
        self.bytes[name] = len(answer.encode())
        return text

    async def run(self, key: str) -> float:
        """The six steps under idempotency key ``key``; the loop's seconds."""
        started = time.perf_counter()
        await self.step("describe", {"service_id": SERVICE})
        await self.step("find", dict(_FIND))
        await self.step("explain", {"service_id": SERVICE})
        message = await self.step("create_gated", create_args(key))
        booking_id = await self.step("create_approved", _approved(key, message))
        await self.step("status", {"booking_id": booking_id})
        return time.perf_counter() - started


async def _loops(
    samples: _Samples, loops: int, run_step: RunStep, requests: Callable[[], int] | None, prefix: str
) -> None:
    """Run ``loops`` loops into ``samples`` (platform requests counted when ``requests`` reads a count)."""
    for index in range(loops):
        before = requests() if requests is not None else 0
        loop = _Loop(run_step)
        elapsed = await loop.run(f"{prefix}-{index:06d}")
        for name in STEPS:
            samples.seconds[name].append(loop.seconds[name])
            samples.bytes[name].append(loop.bytes[name])
        samples.seconds["loop"].append(elapsed)
        samples.bytes["loop"].append(sum(loop.bytes.values()))
        if requests is not None:
            samples.requests.append(requests() - before)


async def _in_process(base_url: str, platform_pid: int, loops: int, warmup: int, tmp: Path) -> dict[str, Any]:
    transport = CountingTransport()
    settings = AdapterSettings(
        platform_base_url=base_url, organization_id=ORGANIZATION, state_path=tmp / "in-process.sqlite3"
    )
    core = build_adapter(settings, clock=FixedClock(NOW), transport=transport)
    calls: dict[str, Callable[[dict[str, Any]], Awaitable[Any]]] = {
        "describe": lambda args: core.describe_service(ServiceDescribeInput.model_validate(args)),
        "find": lambda args: core.find_availability(AvailabilityFindInput.model_validate(args)),
        "explain": lambda args: core.explain_policy(PolicyExplainInput.model_validate(args)),
        "create_gated": lambda args: core.create_booking(BookingCreateInput.model_validate(args)),
        "create_approved": lambda args: core.create_booking(BookingCreateInput.model_validate(args)),
        "status": lambda args: core.get_booking(BookingStatusInput.model_validate(args)),
    }

    async def run_step(name: str, arguments: dict[str, Any]) -> tuple[str, str]:
        result = await calls[name](arguments)
        if isinstance(result, Failure):
            if name != "create_gated" or result.problem.code != ProblemCode.REQUIRES_USER_CONFIRMATION:
                raise RuntimeError(f"{name} failed: {result.problem!r}")
            return result.problem.model_dump_json(exclude_none=True), result.problem.message
        if not isinstance(result, Success):
            raise RuntimeError(f"{name} answered {result!r}")
        value = result.value
        answer = (
            json.dumps(
                [item.model_dump(mode="json", exclude_none=True) for item in value], separators=(",", ":")
            )
            if isinstance(value, list)
            else value.model_dump_json(exclude_none=True)
        )
        return answer, str(getattr(value, "booking_id", ""))

    samples = _Samples()
    try:
        await _loops(_Samples(), warmup, run_step, None, "warm-in")
        cpu_self, cpu_platform = time.process_time(), cpu_seconds(platform_pid)
        await _loops(samples, loops, run_step, lambda: transport.requests, "in")
        cpu = {
            "adapter": time.process_time() - cpu_self,
            "platform": cpu_seconds(platform_pid) - cpu_platform,
        }
    finally:
        await core.aclose()
    return samples.as_json() | {"cpu_seconds": cpu, "answer_bytes_measure": "result value JSON"}


_TOOLS = {
    "describe": "osbp_service_describe",
    "find": "osbp_availability_find",
    "explain": "osbp_policy_explain",
    "create_gated": "osbp_booking_create",
    "create_approved": "osbp_booking_create",
    "status": "osbp_booking_status",
}


def _text(result: CallToolResult) -> str:
    return "".join(block.text for block in result.content if isinstance(block, TextContent))


async def _stdio(
    base_url: str, platform_pid: int, loops: int, warmup: int, tmp: Path, errlog: TextIO
) -> dict[str, Any]:
    workdir = tmp / "stdio"
    workdir.mkdir()
    samples = _Samples()
    async with Client(stdio_client(server_params(base_url, workdir), errlog=errlog)) as client:
        server_pid = _child_pid("osbp.server")

        async def run_step(name: str, arguments: dict[str, Any]) -> tuple[str, str]:
            result = await client.call_tool(_TOOLS[name], arguments)
            envelope = result.structured_content
            if not isinstance(envelope, dict):
                raise RuntimeError(f"{name}: not an OSBP envelope: {result!r}")
            if name == "create_gated":
                return _text(result), str(envelope.get("problem", {}).get("message", ""))
            if envelope.get("ok") is not True:
                raise RuntimeError(f"{name} failed: {envelope!r}")
            return _text(result), str(
                envelope["value"].get("booking_id", "")
            ) if name == "create_approved" else ""

        await _loops(_Samples(), warmup, run_step, None, "warm-stdio")
        cpu_server, cpu_platform = cpu_seconds(server_pid), cpu_seconds(platform_pid)
        client_cpu = time.process_time()
        await _loops(samples, loops, run_step, None, "stdio")
        cpu = {
            "server": cpu_seconds(server_pid) - cpu_server,
            "platform": cpu_seconds(platform_pid) - cpu_platform,
            "client": time.process_time() - client_cpu,
        }
    return samples.as_json() | {"cpu_seconds": cpu, "answer_bytes_measure": "tool result text"}


async def run(loops: int, warmup: int, modes: list[str]) -> dict[str, Any]:
    """Run the loops in each mode against one fresh platform; the raw samples."""
    results: dict[str, Any] = {"python": sys.version.split()[0], "loops": loops, "warmup": warmup}
    with (
        tempfile.TemporaryDirectory(prefix="osbp-bench-loop-") as folder,
        open(os.devnull, "w", encoding="utf-8") as errlog,  # noqa: ASYNC230  opened once, before any call
        platform() as process,
    ):
        tmp = Path(folder)
        if "in_process" in modes:
            results["in_process"] = await _in_process(process.base_url, process.pid, loops, warmup, tmp)
        if "stdio" in modes:
            results["stdio"] = await _stdio(process.base_url, process.pid, loops, warmup, tmp, errlog)
    return results


def main(argv: list[str] | None = None) -> int:
    """``loop_driver.py --loops N --warmup W [--modes in_process,stdio]``: raw samples as JSON on stdout."""
    parser = argparse.ArgumentParser(prog="loop_driver")
    parser.add_argument("--loops", type=int, required=True)
    parser.add_argument("--warmup", type=int, default=0)
    parser.add_argument("--modes", default="in_process,stdio")
    args = parser.parse_args(argv)
    results = anyio.run(run, args.loops, args.warmup, args.modes.split(","))
    sys.stdout.write(json.dumps(results) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
