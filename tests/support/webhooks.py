"""A real webhook receiver for tests: a tiny Starlette app under uvicorn on a loopback port, in a thread.

It records every request (headers and exact body bytes), answers the scripted status codes in turn (then
200), can hold requests open until released (to kill a platform mid-delivery), and lets a test wait for a
condition on what arrived, with a deadline instead of a sleep.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from types import TracebackType
from typing import Any, TypeVar

import anyio.to_thread
import uvicorn
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from osbp.backend.serving import ReadyServer, bind_socket

__all__ = ["Received", "Receiver", "eventually"]

T = TypeVar("T")


@dataclass(frozen=True)
class Received:
    """One request as the receiver got it."""

    headers: dict[str, str]
    body: bytes
    status: int

    @property
    def webhook_id(self) -> str:
        """The `webhook-id` header (the event's id, the same on every retry)."""
        return self.headers["webhook-id"]

    @property
    def event(self) -> dict[str, Any]:
        """The parsed body."""
        parsed: dict[str, Any] = json.loads(self.body)
        return parsed


class Receiver:
    """``with Receiver([500]) as receiver: receiver.url``: records requests, answers scripted statuses."""

    def __init__(self, statuses: Iterable[int] = ()) -> None:
        self.requests: list[Received] = []
        self._script = list(statuses)
        #: Headers on every answer (a `location` with a scripted 3xx, say).
        self.answer_headers: dict[str, str] = {}
        self._changed = threading.Condition()
        self._holding = False
        self._release = threading.Event()
        self._ready = threading.Event()
        app = Starlette(routes=[Route("/hook", self._hook, methods=["POST"])])
        self._socket = bind_socket("127.0.0.1", 0)
        config = uvicorn.Config(app, log_config=None, lifespan="off", timeout_graceful_shutdown=1)
        self._server = ReadyServer(config, on_ready=self._ready.set)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [self._socket]}, daemon=True
        )

    @property
    def url(self) -> str:
        """The hook's URL."""
        return f"http://127.0.0.1:{self._socket.getsockname()[1]}/hook"

    def hold(self) -> None:
        """From now on, keep each request open (unanswered) until `release`."""
        self._release.clear()
        self._holding = True

    def release(self) -> None:
        """Answer the held requests and stop holding."""
        self._holding = False
        self._release.set()

    def wait_for(self, done: Callable[[list[Received]], bool], timeout: float = 30.0) -> list[Received]:
        """Wait until ``done(requests)`` holds (at most ``timeout`` seconds); the requests so far."""
        with self._changed:
            if not self._changed.wait_for(lambda: done(self.requests), timeout):
                seen = [(item.webhook_id, item.event["type"], item.status) for item in self.requests]
                raise AssertionError(f"the receiver did not get what was expected in {timeout} s: {seen}")
            return list(self.requests)

    async def _hook(self, request: Request) -> Response:
        body = await request.body()
        with self._changed:
            status = self._script.pop(0) if self._script else 200
            self.requests.append(Received(dict(request.headers), body, status))
            self._changed.notify_all()
        if self._holding:
            await anyio.to_thread.run_sync(self._release.wait)
        return Response(status_code=status, headers=self.answer_headers)

    def __enter__(self) -> Receiver:
        self._thread.start()
        if not self._ready.wait(15):
            raise RuntimeError("the webhook receiver did not start")
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.release()
        self._server.should_exit = True
        self._thread.join(30)
        self._socket.close()


def eventually(probe: Callable[[], T | None], timeout: float = 30.0, what: str = "the condition") -> T:
    """Call ``probe`` until it returns something other than None or False, within ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        found = probe()
        if found is not None and found is not False:
            return found
        if time.monotonic() >= deadline:
            raise AssertionError(f"{what} did not happen within {timeout} s")
        time.sleep(0.02)  # a poll interval under a deadline, not a wait for something to happen
