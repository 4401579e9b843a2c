"""The platform's HTTP/1.1 protocol: a request uvicorn/h11 cannot parse still gets problem+json."""

from __future__ import annotations

import json
import logging
import socket
from collections.abc import Iterator
from urllib.parse import urlsplit

import h11
import pytest

from osbp.backend.http_protocol import MALFORMED_DETAIL
from osbp.backend.serving import PlatformServer
from tests.support.bookwell import make_settings

pytestmark = pytest.mark.integration

VERIFY = b"/api/organizations/carolyns_dental/verifications"


@pytest.fixture(scope="module")
def address() -> Iterator[tuple[str, int]]:
    """One real platform under uvicorn on loopback for the module (a malformed request cannot change it)."""
    with PlatformServer(make_settings()) as server:
        parts = urlsplit(server.base_url)
        yield str(parts.hostname), int(parts.port or 0)


def _exchange(address: tuple[str, int], raw: bytes) -> tuple[h11.Response, bytes, bool]:
    """Send raw bytes, read until the server closes: the response, its body, and whether it closed."""
    client = h11.Connection(our_role=h11.CLIENT)
    # h11 parses a response only after it has sent a request of its own; a placeholder moves its state on.
    client.send(h11.Request(method="GET", target="/", headers=[("Host", "x")]))
    client.send(h11.EndOfMessage())
    with socket.create_connection(address, timeout=10) as sock:
        sock.sendall(raw)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
    client.receive_data(received)
    client.receive_data(b"")  # the server closed the connection
    response, body = None, b""
    while (event := client.next_event()) not in (h11.NEED_DATA, h11.PAUSED):
        if isinstance(event, h11.Response):
            response = event
        elif isinstance(event, h11.Data):
            body += event.data
        elif isinstance(event, (h11.EndOfMessage, h11.ConnectionClosed)):
            break
    assert response is not None, received
    return response, body, client.their_state in (h11.DONE, h11.MUST_CLOSE, h11.CLOSED)


MALFORMED = {
    "request-line": b"THIS IS NOT HTTP\r\n\r\n",
    "header-name-with-space": b"GET /health HTTP/1.1\r\nHost: x\r\nBad Header: y\r\n\r\n",
    "header-without-colon": b"GET /health HTTP/1.1\r\nHost: x\r\nno-colon-here\r\n\r\n",
    "header-nul-byte": b"GET /health HTTP/1.1\r\nHost: x\r\nX-Note: a\x00b\r\n\r\n",
    # h11 refuses an incomplete header section once it passes 16 KiB (`h11_max_incomplete_event_size`).
    "header-section-too-large": b"GET /health HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 20_000,
    "missing-host": b"GET /health HTTP/1.1\r\n\r\n",
    "bad-chunk-size": b"POST " + VERIFY + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    b"Transfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
    "chunk-overruns-its-size": b"POST "
    + VERIFY
    + b" HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
    b"Transfer-Encoding: chunked\r\n\r\n2\r\n{}XX\r\n0\r\n\r\n",
    "tls-client-hello": b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03" + b"\x00" * 32 + b"\r\n\r\n",
}


@pytest.mark.parametrize("raw", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_request_the_http_parser_rejects_gets_an_invalid_request_problem(address, raw):
    """RFC 9457 / RFC 9112 §2.2: a malformed message is a 400, as problem+json like every platform error."""
    response, body, closed = _exchange(address, raw)
    headers = {name.decode(): value.decode() for name, value in response.headers}
    assert response.status_code == 400
    assert headers["content-type"] == "application/problem+json"
    assert headers["server"] == "Bookwell/0.1.0"
    assert headers["connection"] == "close"
    problem = json.loads(body)
    assert problem == {
        "type": "https://developer.bookwell.example/problems/invalid-request",
        "title": "Invalid request",
        "status": 400,
        "detail": MALFORMED_DETAIL,
        "code": "invalid_request",
        "request_id": headers["x-request-id"],
    }
    assert closed


def test_the_server_still_serves_well_formed_requests_after_malformed_ones(address):
    """Platform choice: a protocol error closes only its own connection."""
    _exchange(address, MALFORMED["request-line"])
    response, body, _closed = _exchange(
        address, b"GET /health HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    assert (response.status_code, json.loads(body)) == (200, {"status": "ok"})


def test_a_framing_error_after_the_response_closes_the_connection_without_a_second_status_line(
    address, caplog
):
    """RFC 9112 §9.6: once a response is sent the server can only close; no protocol failure is logged."""
    with socket.create_connection(address, timeout=10) as sock:
        # An unknown route answers 404 at once, without reading the (chunked, still open) body.
        sock.sendall(b"POST /nowhere HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        client = h11.Connection(our_role=h11.CLIENT)
        client.send(h11.Request(method="POST", target="/", headers=[("Host", "x"), ("Content-Length", "0")]))
        client.send(h11.EndOfMessage())
        events: list[object] = []
        while not any(isinstance(event, h11.EndOfMessage) for event in events):
            client.receive_data(sock.recv(65536))
            while (event := client.next_event()) is not h11.NEED_DATA:
                events.append(event)
        sock.sendall(b"zz\r\n")
        rest = b""
        while chunk := sock.recv(65536):
            rest += chunk
    assert [event.status_code for event in events if isinstance(event, h11.Response)] == [404]
    assert rest == b""
    assert not [record for record in caplog.records if record.levelno >= logging.ERROR]
