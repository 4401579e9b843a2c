"""End to end over real HTTP: `osbp mcp --transport streamable-http` as a subprocess, the SDK's client.

The platform runs on loopback frozen at the reference instant; one authorized server serves every
organization on it, with tokens of the development issuer (``osbp auth``, its JWKS as a file). Status
codes and headers the SDK client hides (401, 403, 413, 408, 421) are read with a plain HTTP client.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import socket
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from osbp.backend.serving import PlatformServer
from osbp.protocol.canonical import canonical_json
from osbp.protocol.timeutil import format_instant
from tests.support.jsonrpc import holding
from tests.support.mcp import read_events
from tests.support.paths import REPO
from tests.support.reference import CLEANING, DAY, MIDTOWN, NOW, ORG, create_input
from tests.support.remote import (
    HEADERS,
    INITIALIZE,
    ISSUER,
    Issuer,
    RemoteServer,
    approved,
    envelope,
    remote_client,
)

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

NOTARY = "gus_notary"
NOTARIZATION = "gus_notary_notarization"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server's working directory (state, audit, issuer key)."""
    return tmp_path_factory.mktemp("remote")


@pytest.fixture(scope="module")
def issuer(workdir: Path) -> Issuer:
    """The development issuer, its JWKS in a file the server reads."""
    return Issuer(workdir / "issuer")


def remote_env(base_url: str, workdir: Path, issuer: Issuer | None, **extra: str) -> dict[str, str]:
    """A remote server's whole configuration: every organization, frozen clock, authorization if given."""
    env = {
        "OSBP_PLATFORM_BASE_URL": base_url,
        "OSBP_ORGANIZATION_ID": "*",
        "OSBP_STATE_PATH": str(workdir / "state" / "osbp.sqlite3"),
        "OSBP_AUDIT_LOG_PATH": str(workdir / "audit" / "events.jsonl"),
        "OSBP_LOG_LEVEL": "INFO",
        "OSBP_NOW": format_instant(NOW),
    }
    if issuer is not None:
        env |= {"OSBP_AUTH_ISSUER": ISSUER, "OSBP_AUTH_JWKS": str(issuer.jwks_path)}
    return env | extra


@pytest.fixture(scope="module")
def server(platform: PlatformServer, workdir: Path, issuer: Issuer) -> Iterator[RemoteServer]:
    """One authorized Streamable HTTP server for every organization on the platform."""
    with RemoteServer(remote_env(platform.base_url, workdir, issuer), workdir) as running:
        yield running


def post(url: str, body: Any, *, token: str | None = None, **headers: str) -> httpx2.Response:
    """One raw JSON-RPC POST."""
    sent = HEADERS | headers | ({"Authorization": f"Bearer {token}"} if token else {})
    return httpx2.post(url, content=json.dumps(body), headers=sent, trust_env=False, timeout=30)


def tool_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A stateless ``tools/call`` request body."""
    return {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }


def create_args(key: str, **overrides: Any) -> dict[str, Any]:
    """booking.create arguments for the Carolyn's Dental cleaning at 10:00 under key ``key``."""
    return create_input(idempotency_key=key, **overrides).to_wire()


def stats(testing: httpx2.Client, organization_id: str = ORG) -> dict[str, Any]:
    """The platform's counters for one organization."""
    body: dict[str, Any] = testing.get("/_testing/stats", params={"organization_id": organization_id}).json()
    return body


async def test_the_canonical_flow_runs_over_streamable_http_with_a_bearer_token(
    server: RemoteServer, issuer: Issuer, testing: httpx2.Client, workdir: Path
) -> None:
    """MCP Streamable HTTP and OSBP spec, Canonical Flow: describe, find, explain, challenge, book, status."""
    token = issuer.token(server.url, subject="alice@example.org")
    async with remote_client(server.url, token) as client:
        assert len((await client.list_tools()).tools) == 8
        service = envelope(await client.call_tool("osbp_service_describe", {"service_id": CLEANING}))
        assert service["value"]["id"] == CLEANING
        found = envelope(
            await client.call_tool(
                "osbp_availability_find", {"service_id": CLEANING, "schedule_id": MIDTOWN, "date": DAY}
            )
        )
        assert any(slot["starts_at_local"] == f"{DAY}T10:00:00" for slot in found["value"])
        policy = envelope(await client.call_tool("osbp_policy_explain", {"service_id": CLEANING}))
        assert policy["value"]["organization"]["id"] == ORG
        arguments = create_args("idem-http-canonical")
        challenge = envelope(await client.call_tool("osbp_booking_create", arguments))
        assert stats(testing)["create_requests"] == 0
        receipt = envelope(await client.call_tool("osbp_booking_create", approved(arguments, challenge)))
        assert receipt["ok"] is True, receipt
        status = envelope(
            await client.call_tool("osbp_booking_status", {"booking_id": receipt["value"]["booking_id"]})
        )
        assert status["value"]["status"] == "booked"
        # The other merchant on the same server, routed by its service id.
        notary = envelope(await client.call_tool("osbp_service_describe", {"service_id": NOTARIZATION}))
        assert notary["value"]["id"] == NOTARIZATION
    assert stats(testing)["active_appointments"] == 1
    events = read_events(workdir / "audit" / "events.jsonl")
    ours = {receipt["audit_event_id"], status["audit_event_id"], notary["audit_event_id"]}
    subjects = {event["subject"] for event in events if event["id"] in ours}
    with sqlite3.connect(workdir / "state" / "osbp.sqlite3") as db:
        [(salt,)] = db.execute("SELECT value FROM deployment_secrets").fetchall()
    identity = canonical_json({"iss": ISSUER, "sub": "alice@example.org"})
    # Keyed with the deployment's salt (no OSBP_AUDIT_KEY here): a guessed subject cannot be checked.
    assert subjects == {hmac.new(bytes.fromhex(salt), identity, hashlib.sha256).hexdigest()}
    assert "alice@example.org" not in (workdir / "audit" / "events.jsonl").read_text(encoding="utf-8")


async def test_a_request_without_a_token_is_401_naming_the_protected_resource_metadata(
    server: RemoteServer,
) -> None:
    """MCP authorization, RFC 6750 and RFC 9728: 401 with WWW-Authenticate resource_metadata; the metadata."""
    answer = post(server.url, INITIALIZE)
    assert answer.status_code == 401
    assert answer.json()["error_description"] == "no bearer token: send Authorization: Bearer <access token>"
    challenge = answer.headers["www-authenticate"]
    assert challenge.startswith("Bearer ")
    metadata_url = f"http://127.0.0.1:{server.port}/.well-known/oauth-protected-resource/mcp"
    assert f'resource_metadata="{metadata_url}"' in challenge
    for url in (metadata_url, f"http://127.0.0.1:{server.port}/.well-known/oauth-protected-resource"):
        metadata = httpx2.get(url, trust_env=False).json()
        assert metadata["resource"] == server.url
        assert metadata["authorization_servers"] == [ISSUER]
        assert metadata["scopes_supported"] == ["osbp:read", "osbp:verify", "osbp:book"]


def claims_of(audience: str, **overrides: Any) -> dict[str, Any]:
    """A valid token's claims for ``audience``, some replaced (to sign malformed ones)."""
    issued = int(time.time())
    claims = {
        "iss": ISSUER,
        "sub": "user-1",
        "aud": audience,
        "iat": issued,
        "nbf": issued,
        "exp": issued + 600,
        "scope": "osbp:read",
        "osbp_organizations": "*",
    }
    return claims | overrides


@pytest.mark.parametrize(
    "case",
    [
        "expired",
        "not_yet_valid",
        "wrong_audience",
        "unknown_key",
        "garbage",
        "empty_subject",
        "blank_subject",
        "string_expiry",
        "string_not_before",
    ],
)
async def test_a_token_that_fails_verification_is_401(
    server: RemoteServer, issuer: Issuer, tmp_path: Path, case: str
) -> None:
    """MCP authorization (OAuth 2.1 resource server, RFC 8707, RFC 7519 NumericDate, RFC 6750 §3.1)."""
    tokens = {
        "expired": lambda: issuer.token(server.url, now=time.time() - 7200, ttl_s=600),
        "not_yet_valid": lambda: issuer.token(server.url, now=time.time() + 7200),
        "wrong_audience": lambda: issuer.token("http://127.0.0.1:1/mcp"),
        "unknown_key": lambda: Issuer(tmp_path / "other").token(server.url),
        "garbage": lambda: "not.a.jwt",
        "empty_subject": lambda: issuer.token(server.url, subject=""),
        "blank_subject": lambda: issuer.token(server.url, subject=" \t "),
        "string_expiry": lambda: issuer.sign(claims_of(server.url, exp="9999999999")),
        "string_not_before": lambda: issuer.sign(claims_of(server.url, nbf=str(int(time.time())))),
    }
    answer = post(server.url, INITIALIZE, token=tokens[case]())
    assert answer.status_code == 401
    assert 'error="invalid_token"' in answer.headers["www-authenticate"]
    assert "resource_metadata=" in answer.headers["www-authenticate"]
    # The description says which check refused the token (never the token), and differs from no token's.
    reasons = {
        "expired": "the token has expired",
        "not_yet_valid": "the token is not valid yet (nbf or iat in the future)",
        "wrong_audience": "the token is for another resource (aud is not this server's resource URL)",
        "unknown_key": "the token is not signed by a key of the issuer's JWKS",
    }
    expected = reasons.get(case, "the token is malformed or lacks a required claim")
    assert answer.json() == {"error": "invalid_token", "error_description": expected}


async def test_a_tool_outside_the_tokens_scopes_is_403_insufficient_scope(
    server: RemoteServer, issuer: Issuer, testing: httpx2.Client
) -> None:
    """MCP authorization, scope challenge (RFC 6750 §3.1): booking needs osbp:book; nothing runs."""
    reader = issuer.token(server.url, scopes=("osbp:read",))
    answer = post(server.url, tool_call("osbp_booking_create", create_args("idem-http-scope")), token=reader)
    assert answer.status_code == 403
    challenge = answer.headers["www-authenticate"]
    assert 'error="insufficient_scope"' in challenge
    assert 'scope="osbp:book"' in challenge
    sender = post(
        server.url, tool_call("osbp_verification_send", {"purpose": f"booking:{ORG}"}), token=reader
    )
    assert sender.status_code == 403
    assert 'scope="osbp:verify"' in sender.headers["www-authenticate"]
    assert stats(testing)["create_requests"] == 0
    async with remote_client(server.url, reader) as client:  # the reads it has are served
        described = envelope(await client.call_tool("osbp_service_describe", {"service_id": CLEANING}))
        assert described["ok"] is True


async def test_another_organizations_ids_are_refused_as_if_they_did_not_exist(
    server: RemoteServer, issuer: Issuer, testing: httpx2.Client
) -> None:
    """Platform choice (tenant isolation): a token for one organization learns nothing of another's ids."""
    everyone = issuer.token(server.url)
    notary_only = issuer.token(server.url, organizations=(NOTARY,))
    async with remote_client(server.url, everyone) as client:
        arguments = create_args("idem-http-other-org")
        challenge = envelope(await client.call_tool("osbp_booking_create", arguments))
        receipt = envelope(await client.call_tool("osbp_booking_create", approved(arguments, challenge)))
        booking_id = receipt["value"]["booking_id"]
    async with remote_client(server.url, notary_only) as client:

        async def problem(tool: str, args: dict[str, Any]) -> dict[str, Any]:
            answer = envelope(await client.call_tool(tool, args))
            assert answer["ok"] is False
            return dict(answer["problem"])

        foreign = await problem("osbp_service_describe", {"service_id": CLEANING})
        unknown = await problem("osbp_service_describe", {"service_id": "no_such_service"})
        assert foreign == unknown
        assert foreign["code"] == "service_not_found"
        foreign_booking = await problem("osbp_booking_status", {"booking_id": booking_id})
        unknown_booking = await problem("osbp_booking_status", {"booking_id": "apt_0000000000000000"})
        assert foreign_booking == unknown_booking
        assert foreign_booking["code"] == "booking_not_found"
        # Even the exact approved retry: refused before the shared idempotency record could replay it.
        replayed = await problem("osbp_booking_create", approved(arguments, challenge))
        assert replayed["code"] == "organization_not_allowed"
        foreign_mandate = create_input().mandate.model_copy(update={"organization_id": "no_such_org"})
        invented = await problem("osbp_booking_create", create_args("idem-x", mandate=foreign_mandate))
        assert invented["code"] == "organization_not_allowed"
        # The mandate's earlier rules still come first, in the spec's order (an expired mandate).
        stale = foreign_mandate.model_copy(update={"expires_at": "2026-05-01T00:00:00Z"})
        expired = await problem("osbp_booking_create", create_args("idem-y", mandate=stale))
        assert expired["code"] == "mandate_expired"
        own = envelope(await client.call_tool("osbp_service_describe", {"service_id": NOTARIZATION}))
        assert own["ok"] is True
    assert stats(testing)["active_appointments"] == 1


async def test_an_approval_challenged_to_one_subject_cannot_be_redeemed_by_another(
    server: RemoteServer, issuer: Issuer, testing: httpx2.Client
) -> None:
    """OSBP spec, Final Confirmation (bound to the approving user): another subject is challenged anew."""
    arguments = create_args("idem-http-subjects")
    async with remote_client(server.url, issuer.token(server.url, subject="alice")) as alice:
        challenge = envelope(await alice.call_tool("osbp_booking_create", arguments))
    async with remote_client(server.url, issuer.token(server.url, subject="mallory")) as mallory:
        stolen = envelope(await mallory.call_tool("osbp_booking_create", approved(arguments, challenge)))
    assert stolen["problem"]["code"] == "requires_user_confirmation"
    assert "not valid for this booking" in stolen["problem"]["message"]
    assert stats(testing)["create_requests"] == 0
    async with remote_client(server.url, issuer.token(server.url, subject="alice")) as alice:
        receipt = envelope(await alice.call_tool("osbp_booking_create", approved(arguments, challenge)))
    assert receipt["ok"] is True, receipt
    assert stats(testing)["active_appointments"] == 1


@pytest.mark.parametrize(
    ("headers", "status"),
    [({"Host": "evil.example"}, 421), ({"Origin": "http://evil.example"}, 403), ({"Origin": "null"}, 403)],
)
async def test_a_foreign_host_or_origin_is_rejected_before_anything_else(
    server: RemoteServer, issuer: Issuer, headers: dict[str, str], status: int
) -> None:
    """MCP Streamable HTTP, DNS rebinding protection: Host and Origin on the allow-lists (403 for Origin)."""
    answer = post(server.url, INITIALIZE, token=issuer.token(server.url), **headers)
    assert answer.status_code == status
    metadata = httpx2.get(
        f"http://127.0.0.1:{server.port}/.well-known/oauth-protected-resource",
        headers=headers,
        trust_env=False,
    )
    assert metadata.status_code == status


async def test_a_loopback_origin_is_accepted(server: RemoteServer, issuer: Issuer) -> None:
    """MCP Streamable HTTP: a browser on this machine (loopback Origin) is served."""
    answer = post(
        server.url, INITIALIZE, token=issuer.token(server.url), Origin=f"http://127.0.0.1:{server.port}"
    )
    assert answer.status_code == 200
    assert answer.json()["result"]["serverInfo"]["name"] == "osbp"


async def test_an_oversized_body_is_413(server: RemoteServer, issuer: Issuer) -> None:
    """Platform choice (request limits): a body over max_body_bytes is refused unread."""
    huge = tool_call("osbp_handoff_request", {"reason": "x", "message": "y" * 2_000_000})
    answer = post(server.url, huge, token=issuer.token(server.url))
    assert answer.status_code == 413


async def test_a_get_of_the_endpoint_is_405_not_a_stream_held_open(
    server: RemoteServer, issuer: Issuer
) -> None:
    """MCP Streamable HTTP, Listening for Messages: a server that offers no stream answers GET with 405;
    a stateless one has no server-initiated message to put on it, so none is opened to hold a slot."""
    headers = {"Accept": "text/event-stream", "Authorization": f"Bearer {issuer.token(server.url)}"}
    answer = httpx2.get(server.url, headers=headers, trust_env=False, timeout=10)
    assert answer.status_code == 405
    assert answer.headers["allow"] == "POST"


DEEP = "[" * 100_000 + "]" * 100_000


@pytest.mark.parametrize(
    ("body", "code", "request_id"),
    [
        (holding(DEEP), -32700, 7),
        (holding("[" * 300 + "]" * 300, id=4), -32700, 4),
        (DEEP, -32700, None),
        ("not json", -32700, None),
        (json.dumps([tool_call("osbp_service_describe", {}), INITIALIZE]), -32600, None),
        ("[]", -32600, None),
        ('{"jsonrpc":"2.0","id":4,"method":7}', -32600, 4),
    ],
)
async def test_a_body_the_transport_cannot_read_is_400_with_a_json_rpc_error_never_a_500(
    server: RemoteServer, issuer: Issuer, body: str, code: int, request_id: int | None
) -> None:
    """MCP Streamable HTTP (input the server cannot accept: an HTTP error status, a JSON-RPC error body),
    JSON-RPC 2.0 §5.1: -32700 past the parser's nesting limit, -32600 for a batch (MCP 2025-06-18 removed
    batching); the same rule as over stdio, never a 500."""
    sent = HEADERS | {"Authorization": f"Bearer {issuer.token(server.url)}"}
    answer = httpx2.post(server.url, content=body, headers=sent, trust_env=False, timeout=30)
    assert answer.status_code == 400
    assert answer.json() == {
        "jsonrpc": "2.0",
        "id": request_id,
        "error": {"code": code, "message": answer.json()["error"]["message"]},
    }
    assert answer.json()["error"]["message"].startswith(("Parse error: ", "Invalid Request: "))


def test_a_client_that_sends_its_body_too_slowly_is_cut_off(platform: PlatformServer, tmp_path: Path) -> None:
    """Platform choice (request limits): the whole request within request_timeout_s, else 408 and closed."""
    env = remote_env(platform.base_url, tmp_path, None, OSBP_HTTP_REQUEST_TIMEOUT_S="0.5")
    with RemoteServer(env, tmp_path) as slow:
        with socket.create_connection(("127.0.0.1", slow.port), timeout=10) as connection:
            head = (
                f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{slow.port}\r\nContent-Type: application/json\r\n"
                "Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{"
            )
            connection.sendall(head.encode())
            started = time.monotonic()
            answer = connection.recv(4096).decode()
            assert answer.startswith("HTTP/1.1 408"), answer
            assert time.monotonic() - started < 5
        # The server is still serving others.
        assert post(slow.url, INITIALIZE).status_code == 200


@pytest.mark.parametrize(
    ("extra", "named"),
    [((), "--allow-remote"), (("--allow-remote",), "--auth-issuer")],
    ids=["plain", "no_auth"],
)
def test_a_non_loopback_address_needs_allow_remote_and_authorization(
    tmp_path: Path, extra: tuple[str, ...], named: str
) -> None:
    """MCP security best practices: never an unauthenticated server beyond loopback; one line, status 2."""
    env = {key: os.environ[key] for key in ("PATH", "HOME", "LANG") if key in os.environ}
    env |= {
        "PYTHONPATH": str(REPO),
        "OSBP_PLATFORM_BASE_URL": "http://127.0.0.1:9",
        "OSBP_ORGANIZATION_ID": ORG,
    }
    args = ["--transport", "streamable-http", "--host", "0.0.0.0", "--port", "0", *extra]  # noqa: S104
    done = subprocess.run(
        [sys.executable, "-m", "osbp", "mcp", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("osbp mcp: --host 0.0.0.0")
    assert named in done.stderr
    assert not (tmp_path / ".osbp").exists()  # refused before any file was created


@pytest.mark.parametrize(
    "extra",
    [(), ("--auth-issuer", ISSUER, "--resource-url", "http://osbp.example/mcp")],
    ids=["no_auth", "plain_http_origin"],
)
def test_a_required_page_that_cannot_be_served_is_refused_at_start(
    tmp_path: Path, extra: tuple[str, ...]
) -> None:
    """Platform choice (--confirmation page): without a page to send users to, the server does not start."""
    env = {key: os.environ[key] for key in ("PATH", "HOME", "LANG") if key in os.environ}
    env |= {
        "PYTHONPATH": str(REPO),
        "OSBP_PLATFORM_BASE_URL": "http://127.0.0.1:9",
        "OSBP_ORGANIZATION_ID": ORG,
        "OSBP_CONFIRMATION": "page",
    }
    done = subprocess.run(
        [sys.executable, "-m", "osbp", "mcp", "--transport", "streamable-http", "--port", "0", *extra],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=60,
    )
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith("osbp mcp: --confirmation page needs the confirmation page")
    assert not (tmp_path / ".osbp").exists()  # refused before any file was created


def _http_server(workdir: Path, *args: str, base_url: str) -> subprocess.Popen[str]:
    env = {key: os.environ[key] for key in ("PATH", "HOME", "LANG") if key in os.environ}
    env |= {"PYTHONPATH": str(REPO)} | remote_env(base_url, workdir, None)
    command = [sys.executable, "-m", "osbp", "mcp", "--transport", "streamable-http", *args]
    return subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=workdir
    )


def test_the_http_server_announces_its_real_address_and_answers_health(
    platform: PlatformServer, tmp_path: Path
) -> None:
    """Platform choice: `--port 0` serves a free port and the first stdout line says which (with the
    health URL); `GET /health` answers without authorization or a platform call."""
    process = _http_server(tmp_path, "--port", "0", base_url=platform.base_url)
    try:
        assert process.stdout is not None
        ready = json.loads(process.stdout.readline())
        assert ready["event"] == "ready"
        assert ready["url"].startswith("http://127.0.0.1:")
        assert ready["url"].endswith("/mcp")
        assert ready["url"] != "http://127.0.0.1:0/mcp"
        assert ready["health"] == ready["url"].removesuffix("/mcp") + "/health"
        health = httpx2.get(ready["health"], trust_env=False, timeout=10)
        assert (health.status_code, health.json()) == (200, {"status": "ok"})
    finally:
        process.terminate()
        _, stderr = process.communicate(timeout=30)
    # One process on a local state file: the per-process confirmation key is a note, not a warning.
    assert '"level":"WARNING","logger":"osbp.server","event":"request_state_key_ephemeral"' not in stderr


def test_a_busy_port_is_one_line_naming_the_port_and_no_ready_line(
    platform: PlatformServer, tmp_path: Path
) -> None:
    """Platform choice: a taken port is refused before anything is announced: one line, status 2."""
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        process = _http_server(
            tmp_path, "--port", str(port), "--log-level", "ERROR", base_url=platform.base_url
        )
        stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 2
    assert stdout == ""
    assert stderr == (
        f"osbp mcp: --port {port}: cannot listen on 127.0.0.1:{port}: the address is already in use; "
        "stop what holds it or choose another --port\n"
    )
