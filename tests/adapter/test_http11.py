"""The lean HTTP/1.1 transport against real loopback servers: reuse, a server's close, failures, timeouts."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, suppress

import anyio
import anyio.abc
import httpx2
import pytest
from anyio.streams.buffered import BufferedByteReceiveStream

from osbp.adapter import AdapterSettings
from osbp.adapter.bookwell import PLATFORM, VERSION_HEADER
from osbp.adapter.http11 import Http11Transport
from osbp.adapter.upstream import Upstream, UpstreamResponse, UpstreamUnavailable
from tests.support.reference import Platform

pytestmark = pytest.mark.anyio

Serve = Callable[[anyio.abc.SocketStream, BufferedByteReceiveStream, "Server"], Awaitable[None]]


class Server:
    """A raw TCP server on 127.0.0.1 running ``serve`` for each connection; counts the connections."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.connections = 0

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


@asynccontextmanager
async def serving(serve: Serve) -> AsyncIterator[Server]:
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    server = Server(port_of(listener))

    async def handle(stream: anyio.abc.SocketStream) -> None:
        server.connections += 1
        async with stream:
            with suppress(anyio.EndOfStream, anyio.BrokenResourceError, anyio.IncompleteRead):
                await serve(stream, BufferedByteReceiveStream(stream), server)

    async with listener, anyio.create_task_group() as group:
        group.start_soon(listener.serve, handle)
        try:
            yield server
        finally:
            group.cancel_scope.cancel()


def port_of(listener: anyio.TypedAttributeProvider) -> int:
    port: int = listener.extra(anyio.abc.SocketAttribute.local_port)  # noqa: S610  anyio, not Django
    return port


async def read_request(receive: BufferedByteReceiveStream) -> tuple[bytes, bytes]:
    """One request's head and body (by Content-Length)."""
    head = await receive.receive_until(b"\r\n\r\n", 65536)
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    body = await receive.receive_exactly(length) if length else b""
    return head, body


def response(body: bytes, *extra: bytes) -> bytes:
    headers = b"".join(header + b"\r\n" for header in extra)
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n%s\r\n%s" % (len(body), headers, body)


async def keep_alive(stream: anyio.abc.SocketStream, receive: BufferedByteReceiveStream, _: Server) -> None:
    """Answer every request on the connection with its own method, target and body."""
    while True:
        head, body = await read_request(receive)
        method, target, _version = head.split(b"\r\n", 1)[0].split(b" ")
        echo = {"method": method.decode(), "target": target.decode(), "body": body.decode()}
        await stream.send(response(json.dumps(echo).encode(), b"Content-Type: application/json"))


async def test_requests_reuse_one_keep_alive_connection_and_carry_their_body() -> None:
    """Platform choice: consecutive requests to the platform share one connection."""
    async with serving(keep_alive) as server, httpx2.AsyncClient(transport=Http11Transport()) as client:
        first = await client.get(f"{server.url}/a?b=c")
        second = await client.post(f"{server.url}/items", json={"n": 1})
        third = await client.get(f"{server.url}/a")
    assert first.json() == {"method": "GET", "target": "/a?b=c", "body": ""}
    assert second.json() == {"method": "POST", "target": "/items", "body": '{"n":1}'}
    assert third.status_code == 200
    assert server.connections == 1


async def test_a_connection_the_server_closed_while_idle_is_replaced_not_used() -> None:
    """Platform choice: a keep-alive connection the server timed out is never sent a request."""

    async def one_each(stream: anyio.abc.SocketStream, receive: BufferedByteReceiveStream, _: Server) -> None:
        await read_request(receive)
        await stream.send(response(b"{}"))  # keep-alive by HTTP/1.1 default, then closed while idle

    async with serving(one_each) as server, httpx2.AsyncClient(transport=Http11Transport()) as client:
        for _ in range(3):
            answer = await client.get(f"{server.url}/x")
            assert answer.status_code == 200
            await anyio.sleep(0.05)  # the close reaches the client before the next request
    assert server.connections == 3


async def test_connection_close_answers_are_not_kept() -> None:
    """HTTP/1.1: a response saying ``Connection: close`` ends its connection."""

    async def closing(stream: anyio.abc.SocketStream, receive: BufferedByteReceiveStream, _: Server) -> None:
        await read_request(receive)
        await stream.send(response(b"{}", b"Connection: close"))

    async with serving(closing) as server, httpx2.AsyncClient(transport=Http11Transport()) as client:
        statuses = [(await client.get(f"{server.url}/x")).status_code for _ in range(2)]
    assert (statuses, server.connections) == ([200, 200], 2)


async def test_a_response_cut_off_is_a_protocol_error_and_the_next_request_reconnects() -> None:
    """Platform choice: a broken response is httpx2's RemoteProtocolError; its connection is dropped."""

    async def cut(stream: anyio.abc.SocketStream, receive: BufferedByteReceiveStream, server: Server) -> None:
        await read_request(receive)
        if server.connections == 1:
            await stream.send(b'HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n{"par')
            return  # closed mid-body
        await stream.send(response(b"{}"))

    async with serving(cut) as server, httpx2.AsyncClient(transport=Http11Transport()) as client:
        with pytest.raises(httpx2.RemoteProtocolError):
            await client.get(f"{server.url}/x")
        assert (await client.get(f"{server.url}/x")).status_code == 200
    assert server.connections == 2


async def test_no_response_in_time_is_a_read_timeout_within_the_limit() -> None:
    """Platform choice: the request's read timeout bounds the whole response."""

    async def silent(stream: anyio.abc.SocketStream, receive: BufferedByteReceiveStream, _: Server) -> None:
        await read_request(receive)
        await anyio.sleep(30)

    async with serving(silent) as server, httpx2.AsyncClient(transport=Http11Transport()) as client:
        with anyio.fail_after(10):
            started = anyio.current_time()
            with pytest.raises(httpx2.ReadTimeout):
                await client.get(f"{server.url}/x", timeout=httpx2.Timeout(0.2))
            assert anyio.current_time() - started < 5


async def test_a_refused_connection_is_a_connect_error() -> None:
    """Platform choice: nobody listening is httpx2's ConnectError (the adapter's `connect` outcome)."""
    listener = await anyio.create_tcp_listener(local_host="127.0.0.1")
    port = port_of(listener)
    await listener.aclose()
    async with httpx2.AsyncClient(transport=Http11Transport()) as client:
        with pytest.raises(httpx2.ConnectError):
            await client.get(f"http://127.0.0.1:{port}/x")


async def test_only_plain_http_is_spoken() -> None:
    """Platform choice: an https URL never goes out unencrypted."""
    async with httpx2.AsyncClient(transport=Http11Transport()) as client:
        with pytest.raises(httpx2.UnsupportedProtocol):
            await client.get("https://127.0.0.1:1/x")


async def test_a_chunked_response_is_read_whole() -> None:
    """HTTP/1.1 framing is h11's: a chunked body arrives whole."""

    async def chunked(stream: anyio.abc.SocketStream, receive: BufferedByteReceiveStream, _: Server) -> None:
        await read_request(receive)
        await stream.send(
            b'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n{"a\r\n4\r\n":1}\r\n0\r\n\r\n'
        )

    async with serving(chunked) as server, httpx2.AsyncClient(transport=Http11Transport()) as client:
        assert (await client.get(f"{server.url}/x")).json() == {"a": 1}


async def test_the_upstream_speaks_to_a_plain_http_platform_through_it(platform: Platform) -> None:
    """Platform choice: the adapter's default client for an http:// platform uses this transport, and the
    real platform's answers come back as usual; a platform that went away is the `connect` outcome."""
    settings = AdapterSettings(platform_base_url=platform.base_url, organization_id="carolyns_dental")
    upstream = Upstream(settings, platform=PLATFORM, version_header=VERSION_HEADER)
    try:
        assert isinstance(upstream._client._transport, Http11Transport)
        outcome = await upstream.fetch("GET", "/api/organizations/{org}", path={"org": "carolyns_dental"})
        assert isinstance(outcome, UpstreamResponse)
        assert (outcome.status, outcome.body["id"]) == (200, "carolyns_dental")
    finally:
        await upstream.aclose()
    gone = AdapterSettings(
        platform_base_url="http://127.0.0.1:9", organization_id="carolyns_dental", retry_attempts=1
    )
    unreachable = Upstream(gone, platform=PLATFORM, version_header=VERSION_HEADER)
    try:
        assert await unreachable.fetch("GET", "/api/organizations") == UpstreamUnavailable(
            "GET /api/organizations", "connect"
        )
    finally:
        await unreachable.aclose()
