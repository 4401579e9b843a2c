"""The platform refuses encoded slashes and dot segments in a path before routing (problem+json 404)."""

from __future__ import annotations

import json
import socket
from collections.abc import AsyncIterator
from urllib.parse import urlsplit

import httpx2
import pytest

from osbp.backend.app import create_app
from osbp.backend.paths import refused_segment
from osbp.backend.serving import PlatformServer
from tests.support.bookwell import make_settings

SERVICES = "/api/organizations/carolyns_dental/services"
REFUSED = "No such path: a path segment may not hold an encoded '/' or be '.' or '..'."


@pytest.fixture
async def raw_client() -> AsyncIterator[httpx2.AsyncClient]:
    """The platform app in process behind httpx2's ASGI transport (which keeps percent-escapes as sent)."""
    app = create_app(make_settings())
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://bookwell") as client:
        yield client
    app.state.runtime.db.dispose()


async def get_raw(client: httpx2.AsyncClient, raw_path: bytes) -> httpx2.Response:
    """GET a pre-encoded path exactly as written (no client-side decoding)."""
    return await client.send(client.build_request("GET", httpx2.URL("http://bookwell", raw_path=raw_path)))


def raw_http_get(base_url: str, target: str) -> tuple[int, dict[str, str], bytes]:
    """One HTTP/1.1 GET written byte for byte on a socket (no client normalizes the target)."""
    parts = urlsplit(base_url)
    with socket.create_connection((parts.hostname, parts.port), timeout=10) as conn:
        conn.sendall(f"GET {target} HTTP/1.1\r\nHost: bookwell\r\nConnection: close\r\n\r\n".encode())
        received = b""
        while chunk := conn.recv(65536):
            received += chunk
    head, _, body = received.partition(b"\r\n\r\n")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    headers = {name.lower(): value.strip() for name, value in (line.split(":", 1) for line in header_lines)}
    return int(status_line.split()[1]), headers, body


@pytest.mark.anyio
@pytest.mark.parametrize(
    "raw_path",
    [
        f"{SERVICES}/a%2Fb".encode(),
        f"{SERVICES}/a%2fb".encode(),
        f"{SERVICES}/%2e%2e".encode(),
        f"{SERVICES}/%2E".encode(),
        b"/api/organizations/carolyns_dental%2F..%2Fgus_notary/services",
    ],
)
async def test_encoded_slashes_and_dot_segments_are_not_found_before_routing(
    raw_client: httpx2.AsyncClient, raw_path: bytes
) -> None:
    """Platform choice (docs/backend-api.md, Endpoints): a decoded '/' or dot segment names no resource."""
    response = await get_raw(raw_client, raw_path)
    assert response.status_code == 404
    assert response.headers["content-type"] == "application/problem+json"
    body = response.json()
    assert (body["code"], body["detail"]) == ("not_found", REFUSED)
    assert body["request_id"] == response.headers["x-request-id"]
    assert response.headers["server"] == "Bookwell/0.1.0"


@pytest.mark.anyio
async def test_ordinary_paths_and_escapes_elsewhere_answer_as_before(raw_client: httpx2.AsyncClient) -> None:
    """Platform choice: only refused segments change; other answers stay byte-identical."""
    found = await get_raw(raw_client, f"{SERVICES}/carolyns_dental_cleaning".encode())
    unknown = await get_raw(raw_client, f"{SERVICES}/a%20b".encode())
    queried = await get_raw(raw_client, f"{SERVICES}/nope?x=%2F..".encode())
    assert (found.status_code, found.json()["id"]) == (200, "carolyns_dental_cleaning")
    assert (unknown.status_code, unknown.json()["code"]) == (404, "service_not_found")
    assert (queried.status_code, queried.json()["code"]) == (404, "service_not_found")


def test_literal_dot_segments_sent_on_the_wire_are_refused(platform_server: PlatformServer) -> None:
    """RFC 3986 section 3.3: a client that does not remove dot segments still reaches no other route."""
    status, headers, body = raw_http_get(platform_server.base_url, f"{SERVICES}/..")
    assert (status, headers["content-type"]) == (404, "application/problem+json")
    assert json.loads(body)["detail"] == REFUSED
    status, _, body = raw_http_get(platform_server.base_url, "/api/organizations/./carolyns_dental")
    assert (status, json.loads(body)["code"]) == (404, "not_found")


def test_only_whole_dot_segments_and_encoded_slashes_are_refused() -> None:
    """Platform choice: dots inside a segment and other escapes are ordinary characters."""
    assert not refused_segment(b"/api/organizations/a.b/services/..x/%20")
    assert [refused_segment(path) for path in (b"/api/x/%2F", b"/api/./x", b"/api/x/..")] == [True] * 3
