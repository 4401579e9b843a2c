"""The platform writes each response to its socket in one system call: the same bytes, fewer writes."""

from __future__ import annotations

import asyncio
import json
import socket
from typing import Any

import pytest
from uvicorn.server import ServerState

from osbp.backend.app import create_app
from osbp.backend.serving import uvicorn_config
from osbp.backend.write_coalescing import FLUSH_AT, CoalescingTransport
from tests.support.bookwell import make_settings

pytestmark = pytest.mark.anyio

ORGANIZATION = b"GET /api/organizations/carolyns_dental HTTP/1.1\r\nHost: platform\r\n\r\n"


def _count_writes(transport: asyncio.BaseTransport) -> list[bytes]:
    """Every write the real socket transport gets from now on (observed, then passed on)."""
    writes: list[bytes] = []
    real_write = transport.write  # type: ignore[attr-defined]

    def counted(data: Any) -> None:
        writes.append(bytes(data))
        real_write(data)

    transport.write = counted  # type: ignore[attr-defined]  # observing the real socket transport
    return writes


async def _read_response(loop: asyncio.AbstractEventLoop, client: socket.socket) -> tuple[bytes, bytes]:
    """One HTTP response (head, body) read from ``client`` (a Content-Length body)."""
    received = b""
    while b"\r\n\r\n" not in received:
        received += await loop.sock_recv(client, 65536)
    head, _, body = received.partition(b"\r\n\r\n")
    length = next(
        int(line.split(b":", 1)[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    while len(body) < length:
        body += await loop.sock_recv(client, 65536)
    return head, body


async def _serve_and_count(requests: list[bytes]) -> tuple[list[tuple[bytes, bytes]], list[int]]:
    """Serve ``requests`` on one connection through the platform's real protocol; responses, and the
    number of writes the real socket transport got for each."""
    app = create_app(make_settings())
    config = uvicorn_config(app)
    config.load()
    loop = asyncio.get_running_loop()
    server_side, client = socket.socketpair()
    client.setblocking(False)
    state = ServerState()
    protocol: Any = config.http_protocol_class  # uvicorn types it as asyncio.Protocol
    transport, _protocol = await loop.connect_accepted_socket(
        lambda: protocol(config=config, server_state=state, app_state={}), server_side
    )
    writes = _count_writes(transport)
    responses, counts = [], []
    try:
        for request in requests:
            before = len(writes)
            await loop.sock_sendall(client, request)
            responses.append(await _read_response(loop, client))
            counts.append(len(writes) - before)
    finally:
        transport.close()
        client.close()
        app.state.runtime.db.dispose()
    return responses, counts


async def test_each_response_on_a_keep_alive_connection_is_one_socket_write() -> None:
    """Platform choice: head and body of a response leave in one write, request after request."""
    responses, counts = await _serve_and_count([ORGANIZATION, ORGANIZATION])
    assert counts == [1, 1]
    for head, body in responses:
        assert head.startswith(b"HTTP/1.1 200 OK")
        assert json.loads(body)["id"] == "carolyns_dental"
    assert responses[0][1] == responses[1][1]


async def test_a_malformed_request_still_gets_its_problem_before_the_close() -> None:
    """Platform choice: what is collected goes out before the connection closes (problem+json 400)."""
    responses, counts = await _serve_and_count([b"NOT HTTP AT ALL\r\n\r\n"])
    head, body = responses[0]
    assert head.startswith(b"HTTP/1.1 400 ")
    assert json.loads(body)["code"] == "invalid_request"
    assert counts == [1]


async def test_a_large_write_goes_out_at_once_without_waiting_for_the_turn_to_end() -> None:
    """Platform choice: collected bytes reaching FLUSH_AT are handed to the socket immediately."""
    loop = asyncio.get_running_loop()
    server_side, client = socket.socketpair()
    transport, _ = await loop.connect_accepted_socket(asyncio.Protocol, server_side)
    writes = _count_writes(transport)
    coalesced = CoalescingTransport(transport, loop)
    try:
        coalesced.write(b"a" * 10)
        assert writes == []  # held for the end of the turn
        coalesced.write(b"b" * FLUSH_AT)
        assert writes == [b"a" * 10 + b"b" * FLUSH_AT]
        coalesced.write(b"c")
        await asyncio.sleep(0)  # the turn ends: the rest follows
        assert writes[1:] == [b"c"]
    finally:
        coalesced.close()
        client.close()
