"""The platform side of the demo stack: a fresh platform on loopback and a client for its test surface.

:func:`running_platform` starts the real platform (``osbp.backend``) under uvicorn on an ephemeral
127.0.0.1 port with a fresh temporary SQLite file, the test-only surface on and, when asked, a frozen
clock; it stops the server and deletes the database on exit. :func:`starting_platform` is the same with
the start left running: its port is bound and its URL known at once, while the platform (its imports,
migrations and seed) starts in a worker thread, so the caller starts its MCP servers meanwhile and awaits
:meth:`StartingPlatform.started` before the first request. The web stack is imported only then: this
module costs the caller nothing of it. :class:`PlatformControl` speaks the
platform's ``/_testing`` surface: counters that prove whether a write happened, the outbox that plays the
customer's phone, arming a runtime failure, and resetting to seed data between recorded traces.
"""

from __future__ import annotations

import socket
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import anyio
import anyio.to_thread
import httpx2

from osbp.backend.listening import bind_socket, http_url
from osbp.collector import collector_paused

if TYPE_CHECKING:
    from osbp.backend.serving import PlatformServer
    from osbp.demo.platform_process import PlatformProcess

__all__ = [
    "ArmableOutcome",
    "OutboxMessage",
    "PlatformControl",
    "PlatformStats",
    "RunningPlatform",
    "SpawnedPlatform",
    "StartingPlatform",
    "running_platform",
    "starting_platform",
]

ArmableOutcome = Literal["slot_taken", "rate_limited", "requires_verification"]


@dataclass(frozen=True, slots=True)
class PlatformStats:
    """Appointment rows, appointment-create requests and outbox messages the platform has seen."""

    appointments: int
    active_appointments: int
    create_requests: int
    messages: int


@dataclass(frozen=True, slots=True)
class OutboxMessage:
    """A message the platform's simulated SMS/email gateway sent (the customer's phone)."""

    organization_id: str
    channel: str
    purpose: str
    code: str


class PlatformControl:
    """A small async client for the platform's ``/_testing`` surface.

    :attr:`writes` counts what may have changed the platform's data since this client was made: its own
    test-surface writes (every request but a ``GET``), and each tool call the caller announces with
    :meth:`writing` before making it (a tool call is the only other way a demo or trace writes to its
    platform). Equal counts around two reads of the same counters mean the second read may be skipped.
    """

    def __init__(self, base_url: str, *, timeout: float = 10.0) -> None:
        self._client = httpx2.AsyncClient(base_url=base_url, timeout=timeout)
        self.writes = 0

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._client.aclose()

    def writing(self) -> None:
        """Note that the platform's data may change now (a tool call is about to be made)."""
        self.writes += 1

    async def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        if method != "GET":
            self.writing()
        response = await self._client.request(method, path, **kwargs)
        response.raise_for_status()
        return response.json()

    async def stats(self, organization_id: str | None = None) -> PlatformStats:
        """Counters for one organization, or for the whole platform."""
        params = {"organization_id": organization_id} if organization_id else None
        body = await self._json("GET", "/_testing/stats", params=params)
        return PlatformStats(
            appointments=int(body["appointments"]),
            active_appointments=int(body["active_appointments"]),
            create_requests=int(body["create_requests"]),
            messages=int(body["messages"]),
        )

    async def outbox(self, organization_id: str | None = None) -> list[OutboxMessage]:
        """Messages sent so far, oldest first."""
        params = {"organization_id": organization_id} if organization_id else None
        body = await self._json("GET", "/_testing/outbox", params=params)
        return [
            OutboxMessage(
                organization_id=item["organization_id"],
                channel=item["channel"],
                purpose=item["purpose"],
                code=item["code"],
            )
            for item in body["messages"]
        ]

    async def arm(self, organization_id: str, outcome: ArmableOutcome) -> None:
        """Make the organization's next appointment create fail with ``outcome`` (once, no write)."""
        await self._json(
            "POST", "/_testing/arm", json={"organization_id": organization_id, "outcome": outcome}
        )

    async def reset(self) -> None:
        """Back to seed data: appointments, outbox, arms, counters, rate-limit windows and the clock."""
        await self._json("POST", "/_testing/reset")

    async def set_now(self, now: datetime) -> None:
        """Move the platform clock to ``now``."""
        await self._json("POST", "/_testing/clock", json={"now": now.isoformat()})

    async def now(self) -> datetime:
        """The platform clock's current instant."""
        body = await self._json("GET", "/_testing/clock")
        return datetime.fromisoformat(str(body["now"]).replace("Z", "+00:00"))


@dataclass(frozen=True, slots=True)
class RunningPlatform:
    """A started platform: where it listens and how to steer it."""

    base_url: str
    control: PlatformControl


#: Where the demo's platform listens.
_HOST = "127.0.0.1"


def _start(workdir: Path, now: datetime | None, sock: socket.socket) -> PlatformServer:
    """Import, build (migrate, seed) and start the platform on ``sock`` (in a worker thread)."""
    with collector_paused():
        from osbp.backend.serving import PlatformServer  # deferred on purpose, see the module docstring
        from osbp.backend.settings import BackendSettings

        settings = BackendSettings(
            db=str(workdir / "platform.db"),
            host=_HOST,
            port=0,
            now=now,
            enable_testing=True,
            log_level="WARNING",
        )
        server = PlatformServer(settings, sock=sock)
    return server.__enter__()


class StartingPlatform:
    """A platform whose address is known while it is still starting (in a worker thread)."""

    def __init__(self, workdir: Path, now: datetime | None) -> None:
        self._workdir = workdir
        self._now = now
        self._socket = bind_socket(_HOST, 0)
        self.base_url = http_url(_HOST, self._socket.getsockname()[1])
        self.control = PlatformControl(self.base_url)
        self._done = anyio.Event()
        self._server: PlatformServer | None = None
        self._error: BaseException | None = None

    async def started(self) -> None:
        """Wait until the platform serves; raises what kept it from starting."""
        await self._done.wait()
        if self._error is not None:
            raise RuntimeError(f"the platform did not start: {self._error}") from self._error

    async def start(self) -> None:
        """Start the platform on the bound socket; what fails is kept for :meth:`started` to raise."""
        try:
            self._server = await anyio.to_thread.run_sync(_start, self._workdir, self._now, self._socket)
        except Exception as error:
            self._error = error
            self._socket.close()
        finally:
            self._done.set()

    async def stop(self) -> None:
        """Let a start in progress finish, then stop the platform and close the control client."""
        with anyio.CancelScope(shield=True):
            await self._done.wait()
            await self.control.aclose()
            if self._server is not None:
                await anyio.to_thread.run_sync(self._server.stop)


class SpawnedPlatform:
    """A platform process (:class:`osbp.demo.platform_process.PlatformProcess`) spawned earlier, with the
    same face as :class:`StartingPlatform`; the caller that spawned it stops it."""

    def __init__(self, process: PlatformProcess) -> None:
        self._process = process
        self.base_url = process.base_url
        self.control = PlatformControl(self.base_url)

    async def started(self) -> None:
        """Wait until the platform serves; raises :class:`~osbp.demo.platform_process.PlatformStartError`
        when it cannot."""
        await anyio.to_thread.run_sync(self._process.wait_ready)

    async def close(self) -> None:
        """Close the control client and let the platform start stopping (its spawner waits for it).

        Asked once its last client is gone, uvicorn has no open connection to wait for as it stops.
        """
        with anyio.CancelScope(shield=True):
            await self.control.aclose()
        self._process.terminate()


@asynccontextmanager
async def starting_platform(now: datetime | None = None) -> AsyncIterator[StartingPlatform]:
    """The real platform starting on 127.0.0.1:<ephemeral> (fresh temporary database), stopped on exit."""
    with tempfile.TemporaryDirectory(prefix="osbp-platform-") as workdir:
        platform = StartingPlatform(Path(workdir), now)
        async with anyio.create_task_group() as group:
            group.start_soon(platform.start)
            try:
                yield platform
            finally:
                await platform.stop()


@asynccontextmanager
async def running_platform(now: datetime | None = None) -> AsyncIterator[RunningPlatform]:
    """The real platform on 127.0.0.1:<ephemeral> with a fresh temporary database, stopped on exit."""
    async with starting_platform(now) as platform:
        await platform.started()
        yield RunningPlatform(base_url=platform.base_url, control=platform.control)
