"""One platform process shared by every battery run of the matrix, each run seeing a platform of its own.

:func:`shared_platform` serves this project's real platform (in-memory, testing surface on, with rate
limits raised for ~50 back-to-back runs) behind :class:`RunRouter`, a small ASGI layer: a run's server
talks to ``<base>/runs/<run>/…`` and the router strips the prefix. Runs share one organization, so what
one run arms or counts must not leak into another running at the same time:

* ``POST …/_testing/arm`` makes the arming run the platform's only creator until its next appointment
  create finished (other runs' creates wait, and arming waits for creates already in flight), so an armed
  outcome is consumed by the run that armed it;
* a verification send does the same until the run's next *successful* create: a send supersedes the
  contact's open challenge and a create consumes it, and every run verifies the same fixture customer;
* either hold ends after a few seconds if that create never comes;
* ``GET …/_testing/stats`` answers the run's own counters (create requests it sent, appointments made);
* ``POST …/_testing/arm`` with ``"outcome": "unreachable"`` (or ``"reachable"``) cuts off (or restores) the
  run's own prefix, answering its native requests 503 as the platform's fault rule would: the
  organization is shared, so the platform's own organization-wide rule would cut off every other run;
  likewise ``"lost_response"`` (the run's creates are served, then their connection is dropped before
  the answer, until ``"reachable"``) and ``"slow"`` (the run's next create is held two seconds);
* ``POST …/_testing/reset`` is a no-op: one run must never reset another's platform.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import re
import subprocess
import sys
from collections import Counter, defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from osbp.backend.app import create_app
from osbp.backend.fault_profile import SLOW_CREATE_MS
from osbp.backend.faults import ABORT_STATE
from osbp.backend.serving import PlatformServer
from osbp.backend.settings import BackendSettings

__all__ = ["RunRouter", "run_base_url", "shared_platform"]

_PREFIX = re.compile(r"^/runs/(?P<run>[A-Za-z0-9_]+)(?P<rest>/.*)$")
_CREATE = re.compile(r"^/api/organizations/[^/]+/appointments$")
_SEND = re.compile(r"^/api/organizations/[^/]+/verifications$")
#: How long an armed run keeps the platform to itself if its create never comes.
_ARM_HOLD_SECONDS = 3.0


def run_base_url(base_url: str, run: str) -> str:
    """The platform base URL one run's server uses."""
    return f"{base_url.rstrip('/')}/runs/{run}"


class RunRouter:
    """ASGI middleware: per-run prefixes, arm-exclusive creates, per-run stats."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self._owner: str | None = None
        #: Whether the owner keeps the platform until a successful create (a verification) or any create.
        self._until_success = False
        self._generation = 0
        self._in_flight = 0
        self._changed: asyncio.Condition | None = None
        #: Creates waiting for another run's hold to end, by run.
        self.parked: Counter[str] = Counter()
        self.create_requests: Counter[str] = Counter()
        self.appointments: defaultdict[str, set[str]] = defaultdict(set)
        #: The runs whose platform is unreachable (the scenario hook's "unreachable" outcome).
        self.unreachable: set[str] = set()
        #: The runs whose creates lose their answers ("lost_response"), and whose next create is slow.
        self.lost: set[str] = set()
        self.slow: set[str] = set()

    @property
    def _condition(self) -> asyncio.Condition:
        if self._changed is None:
            self._changed = asyncio.Condition()
        return self._changed

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Route one request."""
        match = _PREFIX.match(scope.get("path", "")) if scope["type"] == "http" else None
        if match is None:
            await self.app(scope, receive, send)
            return
        run, rest = match["run"], match["rest"]
        scope = {**scope, "path": rest, "raw_path": rest.encode()}
        method = scope["method"]
        if run in self.unreachable and rest.startswith("/api/"):
            problem = {"type": "about:blank", "title": "Service Unavailable", "status": 503}
            await _json(send, 503, problem)
        elif method == "POST" and rest == "/_testing/reset":
            await _json(send, 200, {"reset": True})
        elif method == "GET" and rest == "/_testing/stats":
            await self._stats(run, scope, send)
        elif method == "POST" and rest == "/_testing/arm":
            body = await _body(receive)
            outcome = _outcome(body)
            if outcome in ("unreachable", "reachable", "lost_response", "slow"):
                self._scenario(run, outcome)
                await _json(send, 200, {"armed": outcome})
                return
            await self._take(run, until_success=False)
            await self.app(scope, _replayed(body, receive), send)
        elif method == "POST" and _SEND.match(rest):
            await self._take(run, until_success=True)
            await self.app(scope, receive, send)
        elif method == "POST" and _CREATE.match(rest):
            await self._create(run, scope, receive, send)
        else:
            await self.app(scope, receive, send)

    def _scenario(self, run: str, outcome: object) -> None:
        """The run's own outage, lost answers or slow create (``reachable`` lifts all three)."""
        if outcome == "unreachable":
            self.unreachable.add(run)
        elif outcome == "lost_response":
            self.lost.add(run)
        elif outcome == "slow":
            self.slow.add(run)
        else:
            for runs in (self.unreachable, self.lost, self.slow):
                runs.discard(run)

    async def until_parked(self, run: str) -> None:
        """Wait until a create of ``run`` waits behind another run's hold."""
        async with self._condition:
            await self._condition.wait_for(lambda: self.parked[run] > 0)

    async def _take(self, run: str, *, until_success: bool) -> None:
        async with self._condition:
            await self._condition.wait_for(lambda: self._owner in (None, run))
            self._owner = run
            self._until_success = until_success
            self._generation += 1
            generation = self._generation
            await self._condition.wait_for(lambda: self._in_flight == 0)
        asyncio.get_running_loop().call_later(
            _ARM_HOLD_SECONDS, lambda: asyncio.ensure_future(self._release(run, generation))
        )

    async def _release(self, run: str, generation: int | None = None) -> None:
        async with self._condition:
            if self._owner == run and generation in (None, self._generation):
                self._owner = None
                self._condition.notify_all()

    async def _create(self, run: str, scope: Scope, receive: Receive, send: Send) -> None:
        async with self._condition:
            if self._owner not in (None, run):
                self.parked[run] += 1
                self._condition.notify_all()
                await self._condition.wait_for(lambda: self._owner in (None, run))
                self.parked[run] -= 1
            if self._owner == run and not self._until_success:
                # The armed run's create has come: the arm's timer no longer ends the hold (a slow create
                # may outlast it), the create's own end does.
                self._generation += 1
            self._in_flight += 1
        self.create_requests[run] += 1
        status, chunks = 0, []
        lost = run in self.lost
        if run in self.slow:
            self.slow.discard(run)
            await asyncio.sleep(SLOW_CREATE_MS / 1000)

        async def recording(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                chunks.append(message.get("body", b""))
            if not lost:
                await send(message)

        try:
            await self.app(scope, receive, recording)
            if lost:
                # Served, then the connection is dropped before the answer (the platform's lost_response).
                scope["state"][ABORT_STATE]()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout(5):  # until the server saw the connection close
                        while (await receive())["type"] != "http.disconnect":
                            pass
        finally:
            async with self._condition:
                self._in_flight -= 1
                self._condition.notify_all()
            if not self._until_success or 200 <= status < 300:
                await self._release(run)
        if 200 <= status < 300:
            created = _id_of(b"".join(chunks))
            if created:
                self.appointments[run].add(created)

    async def _stats(self, run: str, scope: Scope, send: Send) -> None:
        made = len(self.appointments[run])
        query = dict(
            part.split("=", 1) for part in scope.get("query_string", b"").decode().split("&") if "=" in part
        )
        await _json(
            send,
            200,
            {
                "organization_id": query.get("organization_id"),
                "appointments": made,
                "active_appointments": made,
                "create_requests": self.create_requests[run],
            },
        )


async def _body(receive: Receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        chunks.append(message.get("body", b""))
        if not message.get("more_body"):
            return b"".join(chunks)


def _replayed(body: bytes, receive: Receive) -> Receive:
    """A receive that hands the app the body already read, then the connection's own messages."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if sent:
            return await receive()
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replayed


def _outcome(body: bytes) -> object:
    try:
        parsed = json.loads(body)
    except ValueError:
        return None
    return parsed.get("outcome") if isinstance(parsed, dict) else None


def _id_of(body: bytes) -> str | None:
    try:
        parsed = json.loads(body)
    except ValueError:
        return None
    found = parsed.get("id") if isinstance(parsed, dict) else None
    return found if isinstance(found, str) else None


async def _json(send: Send, status: int, body: dict[str, Any]) -> None:
    content = json.dumps(body).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(content)).encode())]
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": content})


def _serve() -> int:
    """Serve the routed platform until stdin closes; the first stdout line is its base URL."""
    settings = BackendSettings(
        db=":memory:",
        port=0,
        enable_testing=True,
        # ~50 battery runs back to back from one loopback client: the limits are not under test here.
        rate_limit_quota=1_000_000,
        verification_send_limit=1_000_000,
    )
    app = create_app(settings)
    app.add_middleware(RunRouter)
    with PlatformServer(settings, app=app) as platform:
        sys.stdout.write(platform.base_url + "\n")
        sys.stdout.flush()
        sys.stdin.read()
    return 0


@contextmanager
def shared_platform() -> Iterator[str]:
    """Run the routed platform in its own process for the duration; yields its base URL."""
    command = [sys.executable, "-m", "tests.conformance.mutants.platform"]
    with subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True) as process:
        assert process.stdin is not None
        assert process.stdout is not None
        try:
            base_url = process.stdout.readline().strip()
            if not base_url:
                raise RuntimeError("the shared platform did not start (see its stderr)")
            yield base_url
        finally:
            process.stdin.close()
            process.wait(timeout=30)


if __name__ == "__main__":
    raise SystemExit(_serve())
