"""The adapter's HTTP/1.1 transport for a plain-``http`` platform: h11 on keep-alive loopback connections.

``httpx2``'s own transport (``httpcore2``) is general: a pool shared across origins and protocols, HTTP/2,
proxies, tracing, a response stream released through the pool. Talking to one ``http://`` platform, the
adapter needs none of that, and those layers cost about three times the HTTP/1.1 work itself: on the
canonical booking loop they were the largest single part of the adapter's CPU (``osbp bench loop``).
:class:`Http11Transport` is an ``httpx2`` transport, so :class:`~osbp.adapter.upstream.Upstream` keeps its
``httpx2.AsyncClient`` (and tests keep plugging in their own transports), but each request is just:

* an idle keep-alive connection of the request's origin (one the server has closed meanwhile is dropped
  before use), or a new one (``TCP_NODELAY``, the request's ``connect`` timeout);
* the request's head and body framed by ``h11`` (the HTTP/1.1 state machine ``httpcore2`` also uses) and
  written at once;
* the response read whole under the request's ``read`` timeout, and the connection kept for the next
  request only when both sides finished cleanly and neither asked to close.

Failures are ``httpx2``'s own exceptions (``ConnectError``, ``ConnectTimeout``, ``ReadTimeout``,
``WriteError``, ``ReadError``, ``RemoteProtocolError``), so the caller's mapping and retry policy see
exactly what ``httpcore2`` would raise; a connection that failed, or a request cancelled half-way, is
closed, never reused. An ``https`` platform keeps ``httpx2``'s default transport (TLS, certificate
verification): this one refuses any other scheme.
"""

from __future__ import annotations

import select
import socket
from typing import Any

import anyio
import anyio.abc
import h11
import httpx2

__all__ = ["Http11Transport"]

#: Idle connections kept per origin (more only while requests run concurrently).
MAX_IDLE = 16
_READ_SIZE = 64 * 1024
_BROKEN = (OSError, anyio.BrokenResourceError, anyio.ClosedResourceError)


class _Connection:
    """One TCP connection with its HTTP/1.1 state."""

    def __init__(self, stream: anyio.abc.SocketStream) -> None:
        self.stream = stream
        self.h11 = h11.Connection(h11.CLIENT)
        # anyio's typed attribute, not Django's QuerySet.extra.
        self.socket: socket.socket = stream.extra(anyio.abc.SocketAttribute.raw_socket)  # noqa: S610

    def closed_by_peer(self) -> bool:
        """Whether the server closed (or wrote to) this idle connection since its last response.

        An idle connection has nothing to read: end of stream (the server's keep-alive timeout closed
        it) or stray bytes both make it unusable for the next request.
        """
        try:
            return _readable(self.socket.fileno())
        except (OSError, ValueError):  # closed meanwhile
            return True

    async def aclose(self) -> None:
        await self.stream.aclose()


class Http11Transport(httpx2.AsyncBaseTransport):
    """HTTP/1.1 over keep-alive TCP connections, per origin, for plain ``http://`` URLs."""

    def __init__(self) -> None:
        self._idle: dict[tuple[str, int], list[_Connection]] = {}

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send ``request`` and read its whole response."""
        url = request.url
        if url.scheme != "http":
            raise httpx2.UnsupportedProtocol(f"Http11Transport speaks plain http, not {url.scheme!r}")
        origin = (url.host, url.port or 80)
        timeouts: dict[str, Any] = request.extensions.get("timeout", {})
        body = await request.aread()
        connection = await self._connection(origin, timeouts.get("connect"), request)
        try:
            response = await self._exchange(connection, request, body, timeouts)
        except BaseException:
            # Failed or cancelled half-way: the connection's state is unknown, so it is never reused.
            with anyio.CancelScope(shield=True):
                await connection.aclose()
            raise
        state = connection.h11
        if state.our_state is h11.DONE and state.their_state is h11.DONE:
            state.start_next_cycle()
            idle = self._idle.setdefault(origin, [])
            if len(idle) < MAX_IDLE:
                idle.append(connection)
                return response
        await connection.aclose()
        return response

    async def _connection(
        self, origin: tuple[str, int], connect_within: float | None, request: httpx2.Request
    ) -> _Connection:
        idle = self._idle.get(origin, [])
        while idle:
            connection = idle.pop()
            if not connection.closed_by_peer():
                return connection
            await connection.aclose()
        host, port = origin
        try:
            with anyio.fail_after(connect_within):
                stream = await anyio.connect_tcp(host, port)
        except TimeoutError as error:
            raise httpx2.ConnectTimeout(f"no connection to {host}:{port} in time", request=request) from error
        except OSError as error:
            raise httpx2.ConnectError(f"cannot connect to {host}:{port}: {error}", request=request) from error
        connection = _Connection(stream)
        connection.socket.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        return connection

    async def _exchange(
        self, connection: _Connection, request: httpx2.Request, body: bytes, timeouts: dict[str, Any]
    ) -> httpx2.Response:
        state = connection.h11
        try:
            head = state.send(
                h11.Request(method=request.method, target=request.url.raw_path, headers=request.headers.raw)
            )
            data = head or b""
            if body:
                data += state.send(h11.Data(data=body)) or b""
            data += state.send(h11.EndOfMessage()) or b""
        except h11.LocalProtocolError as error:
            raise httpx2.LocalProtocolError(str(error), request=request) from error
        try:
            with anyio.fail_after(timeouts.get("write")):
                await connection.stream.send(data)
        except TimeoutError as error:
            raise httpx2.WriteTimeout("the request could not be sent in time", request=request) from error
        except _BROKEN as error:
            raise httpx2.WriteError(f"the request could not be sent: {error!r}", request=request) from error
        try:
            with anyio.fail_after(timeouts.get("read")):
                return await _response(connection, request)
        except TimeoutError as error:
            raise httpx2.ReadTimeout("no complete response in time", request=request) from error

    async def aclose(self) -> None:
        """Close every idle connection."""
        idle, self._idle = self._idle, {}
        for connections in idle.values():
            for connection in connections:
                await connection.aclose()


def _readable(fd: int) -> bool:
    """Whether ``fd`` has something to read (or its end) right now, without waiting."""
    if hasattr(select, "poll"):  # any descriptor number (select stops at FD_SETSIZE)
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        return bool(poller.poll(0))
    readable, _, _ = select.select([fd], [], [], 0)
    return bool(readable)


async def _response(connection: _Connection, request: httpx2.Request) -> httpx2.Response:
    """Read one whole response from ``connection``."""
    state = connection.h11
    head: h11.Response | None = None
    chunks: list[bytes] = []
    while True:
        try:
            event = state.next_event()
        except h11.RemoteProtocolError as error:
            raise httpx2.RemoteProtocolError(str(error), request=request) from error
        if event is h11.NEED_DATA:
            try:
                data = await connection.stream.receive(_READ_SIZE)
            except anyio.EndOfStream:
                data = b""
            except _BROKEN as error:
                raise httpx2.ReadError(
                    f"the response could not be read: {error!r}", request=request
                ) from error
            state.receive_data(data)
        elif isinstance(event, h11.Response):
            head = event
        elif isinstance(event, h11.Data):
            chunks.append(bytes(event.data))
        elif isinstance(event, h11.EndOfMessage) and head is not None:
            break
        elif isinstance(event, h11.ConnectionClosed):
            raise httpx2.RemoteProtocolError("the server closed the connection mid-response", request=request)
        # An informational (1xx) response precedes the real one: nothing to keep.
    return httpx2.Response(
        head.status_code,
        headers=head.headers.raw_items(),
        content=b"".join(chunks),
        request=request,
        extensions={"http_version": b"HTTP/1.1", "reason_phrase": head.reason},
    )
