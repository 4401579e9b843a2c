"""The Streamable HTTP server's edge: connection limits under uvicorn that idle or slow clients cannot use up.

uvicorn gives a connection no time limit before its request's headers are complete, and counts every
open socket, idle ones included, against ``limit_concurrency``: a few hundred connections that send
nothing made every request ``503``. :func:`edge_protocol` is uvicorn's h11 protocol with three more
rules, all on the TCP connection itself (the peer address the socket reports, never a forwarded header):

* **headers in time**: a connection waiting for a request (just opened, or after its last response) has
  ``header_timeout_s`` to send the request's complete headers; then it is closed (``408`` first when it
  had sent part of them). Idle keep-alive connections are closed by uvicorn after ``keep_alive_s``.
* **a budget per client**: at most ``max_connections_per_client`` open connections from one address; a
  connection beyond it is closed at once.
* **a cap on open connections**: at most ``max_open_connections``; when a new one would pass it, the
  connection that has waited longest for a request is closed to make room (the new one is refused only
  when every open connection has a request in flight).

:class:`RequestLimit` then bounds what costs work: at most ``max_connections`` requests in flight
(``503`` beyond), wherever the idle sockets are.
"""

from __future__ import annotations

import asyncio
import logging
import resource
from typing import Any, ClassVar

import h11
from starlette.types import ASGIApp, Receive, Scope, Send
from uvicorn.config import Config
from uvicorn.protocols.http.flow_control import service_unavailable
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn.server import ServerState

from osbp.server.remote_settings import HttpSettings

__all__ = ["Connections", "RequestLimit", "edge_protocol", "raise_file_limit"]

logger = logging.getLogger("osbp.server")

#: Written to a connection whose request headers were cut off by the timeout (h11 cannot: no request).
_TIMED_OUT = b"HTTP/1.1 408 Request Timeout\r\ncontent-length: 0\r\nconnection: close\r\n\r\n"
#: Descriptors kept beyond the open connections: the state store, the audit log, the adapter's upstream.
_RESERVED_FILES = 256


class Connections:
    """One server's open connections: how many per client, and which wait for a request, oldest first."""

    def __init__(self, *, max_open: int, per_client: int) -> None:
        self.max_open = max_open
        self.per_client = per_client
        self._open = 0
        self._per_client: dict[str, int] = {}
        self._waiting: dict[_EdgeProtocol, None] = {}  # insertion-ordered: the oldest waiter first

    @property
    def open(self) -> int:
        """How many connections are admitted and not yet released."""
        return self._open

    def admit(self, connection: _EdgeProtocol) -> str | None:
        """Count ``connection`` in, or say why it must be closed (``client_budget``, ``server_full``)."""
        if self._per_client.get(connection.peer, 0) >= self.per_client:
            return "client_budget"
        if self._open >= self.max_open:
            oldest = next(iter(self._waiting), None)
            if oldest is None:
                return "server_full"
            oldest.close_waiting("evicted")
        self._open += 1
        self._per_client[connection.peer] = self._per_client.get(connection.peer, 0) + 1
        return None

    def release(self, connection: _EdgeProtocol) -> None:
        """Count an admitted ``connection`` out (it is closing)."""
        self._waiting.pop(connection, None)
        self._open -= 1
        left = self._per_client[connection.peer] - 1
        if left:
            self._per_client[connection.peer] = left
        else:
            del self._per_client[connection.peer]

    def waiting(self, connection: _EdgeProtocol, waits: bool) -> None:
        """Mark ``connection`` as waiting for a request (newest waiter last), or as having one."""
        self._waiting.pop(connection, None)
        if waits:
            self._waiting[connection] = None


class _EdgeProtocol(H11Protocol):
    """uvicorn's h11 protocol with the header timeout, the per-client budget and the open-connection cap."""

    connections_of: ClassVar[Connections]
    header_timeout_s: ClassVar[float]

    def __init__(
        self,
        config: Config,
        server_state: ServerState,
        app_state: dict[str, Any],
        _loop: asyncio.AbstractEventLoop | None = None,
    ) -> None:
        super().__init__(config, server_state, app_state, _loop)
        # uvicorn's own limit counts idle sockets: RequestLimit bounds requests in flight instead.
        self.limit_concurrency = None
        self.peer = ""
        self._admitted = False
        self._deadline: asyncio.TimerHandle | None = None
        self._partial = False  # bytes of a next request arrived while waiting

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Admit the connection within the budget and the cap, or close it at once; start its clock."""
        super().connection_made(transport)
        peername = transport.get_extra_info("peername")
        self.peer = str(peername[0]) if isinstance(peername, tuple) and peername else "?"
        refused = self.connections_of.admit(self)
        if refused is not None:
            logger.info("http_connection_refused", extra={"reason": refused})
            self.transport.close()
            return
        self._admitted = True
        self._wait()

    def data_received(self, data: bytes) -> None:
        """Feed uvicorn; once a request is under way the connection no longer waits."""
        if self._deadline is not None:
            self._partial = True
        super().data_received(data)
        if self._deadline is not None and self.cycle is not None and not self.cycle.response_complete:
            self._stop_waiting()

    def on_response_complete(self) -> None:
        """After a response: waiting again, for the next request (unless one is already under way)."""
        super().on_response_complete()
        if self._admitted and not self.transport.is_closing() and self.cycle.response_complete:
            self._wait()

    def connection_lost(self, exc: Exception | None) -> None:
        """Release the connection's place."""
        self._stop_waiting()
        if self._admitted:
            self._admitted = False
            self.connections_of.release(self)
        super().connection_lost(exc)

    def close_waiting(self, reason: str) -> None:
        """Close a connection that waits for a request (timed out, or evicted for a new one)."""
        logger.info("http_connection_closed", extra={"reason": reason})
        if self._partial and self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            self.transport.write(_TIMED_OUT)
        self._stop_waiting()
        if self._admitted:  # released now, so the place is free for the connection that evicted this one
            self._admitted = False
            self.connections_of.release(self)
        self.transport.close()

    def _wait(self) -> None:
        self._stop_waiting()
        self._partial = False
        self._deadline = self.loop.call_later(self.header_timeout_s, self.close_waiting, "header_timeout")
        self.connections_of.waiting(self, True)

    def _stop_waiting(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if self._admitted:
            self.connections_of.waiting(self, False)


def edge_protocol(http: HttpSettings) -> type[H11Protocol]:
    """A protocol class for ``uvicorn.Config(http=...)`` with this server's limits and its own counts."""
    return type(
        "EdgeProtocol",
        (_EdgeProtocol,),
        {
            "connections_of": Connections(
                max_open=http.max_open_connections, per_client=http.max_connections_per_client
            ),
            "header_timeout_s": http.header_timeout_s,
        },
    )


class RequestLimit:
    """At most ``limit`` HTTP requests in flight; beyond it uvicorn's own ``503`` (``connection: close``)."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self._app = app
        self._limit = limit
        self._active = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the request, or answer ``503`` when ``limit`` are already being served."""
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        if self._active >= self._limit:
            logger.warning("http_request_limit_reached", extra={"limit": self._limit})
            await service_unavailable(scope, receive, send)  # type: ignore[arg-type]
            return
        self._active += 1
        try:
            await self._app(scope, receive, send)
        finally:
            self._active -= 1


def raise_file_limit(open_connections: int) -> int:
    """Raise the soft descriptor limit toward what ``open_connections`` need (within the hard limit); the
    connections the limit leaves room for, which is ``open_connections`` unless the hard limit is lower."""
    needed = open_connections + _RESERVED_FILES
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft == resource.RLIM_INFINITY or soft >= needed:
        return open_connections
    top = needed if hard == resource.RLIM_INFINITY else min(needed, hard)
    resource.setrlimit(resource.RLIMIT_NOFILE, (top, hard))
    room = max(top - _RESERVED_FILES, 1)
    if room < open_connections:
        logger.warning(
            "http_open_connections_lowered",
            extra={"configured": open_connections, "file_limit": top, "open_connections": room},
        )
    return min(room, open_connections)
