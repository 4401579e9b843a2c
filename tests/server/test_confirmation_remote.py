"""Host confirmation against a client that tries to weaken it, over real Streamable HTTP processes.

`osbp mcp --transport streamable-http` runs as a subprocess on loopback against the real platform (frozen
at the reference instant); the client is the SDK's Streamable HTTP client, or plain JSON-RPC POSTs where
the test declares capabilities the SDK would not (form elicitation only). Appointments are counted on the
platform itself.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.types import (
    CallToolResult,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    InputRequiredResult,
)

from osbp.backend.serving import PlatformServer
from osbp.protocol.approval import APPROVAL_TOKEN_PATTERN
from osbp.protocol.timeutil import format_instant
from osbp.server.confirmation import CONFIRM_KEY
from tests.support.reference import NOW, ORG, create_input
from tests.support.remote import HEADERS, ISSUER, Issuer, RemoteServer, envelope, remote_client

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

CREATE = "osbp_booking_create"
MODERN = "2026-07-28"


@pytest.fixture
def issuer(tmp_path: Path) -> Issuer:
    """The development issuer the server trusts."""
    return Issuer(tmp_path / "issuer")


def server_env(base_url: str, tmp_path: Path, issuer: Issuer | None, **extra: str) -> dict[str, str]:
    """One server on the platform's organization, frozen clock, authorization when ``issuer`` is given."""
    env = {
        "OSBP_PLATFORM_BASE_URL": base_url,
        "OSBP_ORGANIZATION_ID": ORG,
        "OSBP_STATE_PATH": str(tmp_path / "state" / "osbp.sqlite3"),
        "OSBP_AUDIT_LOG_PATH": str(tmp_path / "audit" / "events.jsonl"),
        "OSBP_NOW": format_instant(NOW),
        "OSBP_REQUEST_STATE_KEY": "one-server-seals-its-request-state-here",
        "OSBP_LOG_LEVEL": "INFO",
    }
    if issuer is not None:
        env |= {"OSBP_AUTH_ISSUER": ISSUER, "OSBP_AUTH_JWKS": str(issuer.jwks_path)}
    return env | extra


@pytest.fixture
def form_server(platform: PlatformServer, tmp_path: Path) -> Iterator[RemoteServer]:
    """A server without authorization: a 2026-07-28 client is confirmed in the host's form."""
    with RemoteServer(server_env(platform.base_url, tmp_path, None), tmp_path) as running:
        yield running


@pytest.fixture
def page_server(platform: PlatformServer, tmp_path: Path, issuer: Issuer) -> Iterator[RemoteServer]:
    """An authorized server whose organization requires the confirmation page (URL mode)."""
    env = server_env(platform.base_url, tmp_path, issuer, OSBP_CONFIRMATION_FOR=f"{ORG}=page")
    with RemoteServer(env, tmp_path) as running:
        yield running


def appointments(testing: httpx2.Client) -> int:
    """Appointments the platform holds for the organization."""
    counters: dict[str, Any] = testing.get("/_testing/stats", params={"organization_id": ORG}).json()
    return int(counters["appointments"])


async def unanswered(context: Any, params: Any) -> ElicitResult:
    """The host callback of a client whose rounds the test answers itself: never called."""
    raise AssertionError("the test answers the rounds itself")


def accept() -> ElicitResult:
    """The host's accept (form: the box ticked; URL mode: the user agreed to open the page)."""
    return ElicitResult(action="accept", content={"confirm": True})


def form_only_call(arguments: dict[str, Any], **params: Any) -> dict[str, Any]:
    """A 2026-07-28 ``tools/call`` from a client that declares form elicitation and nothing else."""
    meta = {
        "io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
    }
    return {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": CREATE, "arguments": arguments, "_meta": meta} | params,
    }


def post(url: str, body: dict[str, Any], token: str) -> dict[str, Any]:
    """One raw JSON-RPC POST; its ``result``."""
    headers = HEADERS | {
        "Authorization": f"Bearer {token}",
        "MCP-Protocol-Version": MODERN,
        "Mcp-Method": "tools/call",
        "Mcp-Name": CREATE,
    }
    answer = httpx2.post(url, content=json.dumps(body), headers=headers, trust_env=False, timeout=30)
    assert answer.status_code == 200, answer.text
    result: dict[str, Any] = answer.json()["result"]
    return result


async def answer(
    client: Client, arguments: dict[str, Any], first: InputRequiredResult, given: ElicitResult
) -> CallToolResult | InputRequiredResult:
    """The retry that answers ``first``'s confirmation round with ``given``, under its request state."""
    return await client.session.call_tool(
        CREATE,
        arguments,
        input_responses={CONFIRM_KEY: given},
        request_state=first.request_state,
        allow_input_required=True,
    )


async def test_a_form_round_declined_and_replayed_with_accept_books_nothing(
    form_server: RemoteServer, testing: httpx2.Client
) -> None:
    """Platform choice (host confirmation, MCP 2026-07-28 input_required): a declined round is spent."""
    arguments = create_input(idempotency_key="idem-declined-form").to_wire()
    async with remote_client(form_server.url, elicitation=unanswered) as client:
        first = await client.session.call_tool(CREATE, arguments, allow_input_required=True)
        assert isinstance(first, InputRequiredResult), first
        assert first.input_requests is not None
        assert isinstance(first.input_requests[CONFIRM_KEY].params, ElicitRequestFormParams)

        declined = await answer(client, arguments, first, ElicitResult(action="decline"))
        replayed = await answer(client, arguments, first, accept())
    assert appointments(testing) == 0
    assert isinstance(declined, CallToolResult)
    assert envelope(declined)["problem"]["code"] == "requires_user_confirmation"
    assert isinstance(replayed, CallToolResult), replayed
    problem = envelope(replayed)["problem"]
    assert problem["code"] == "requires_user_confirmation"
    assert problem["retryable"] is False
    assert "already" in problem["message"]


async def test_a_url_round_the_host_declined_stays_declined_though_the_page_is_confirmed_later(
    page_server: RemoteServer, issuer: Issuer, testing: httpx2.Client
) -> None:
    """Platform choice (URL-mode confirmation): the host's decline spends the page; no later yes books."""
    token = issuer.token(page_server.url, subject="alice@example.org")
    arguments = create_input(idempotency_key="idem-declined-page").to_wire()
    async with remote_client(page_server.url, token, elicitation=unanswered) as client:
        first = await client.session.call_tool(CREATE, arguments, allow_input_required=True)
        assert isinstance(first, InputRequiredResult), first
        assert first.input_requests is not None
        ask = first.input_requests[CONFIRM_KEY].params
        assert isinstance(ask, ElicitRequestURLParams)

        declined = await answer(client, arguments, first, ElicitResult(action="decline"))
        async with httpx2.AsyncClient(trust_env=False) as browser:
            # Whoever holds the URL tries to confirm the page after the host's decline.
            shown = await browser.get(ask.url)
            held = re.search(r'name=summary_hash value="([0-9a-f]{64})"', shown.text)
            form = {"decision": "confirm", "summary_hash": held.group(1) if held else "0" * 64}
            origin = ask.url.split("/confirm/")[0]
            posted = await browser.post(ask.url, data=form, headers={"Origin": origin})
        replayed = await answer(client, arguments, first, ElicitResult(action="accept"))
    assert appointments(testing) == 0
    assert isinstance(declined, CallToolResult)
    assert envelope(declined)["problem"]["code"] == "requires_user_confirmation"
    assert shown.status_code == 409
    assert posted.status_code == 409
    assert isinstance(replayed, CallToolResult), replayed
    assert envelope(replayed)["problem"]["code"] == "requires_user_confirmation"
    assert envelope(replayed)["problem"]["retryable"] is False


async def test_an_organization_requiring_the_page_refuses_a_client_declaring_only_form_elicitation(
    page_server: RemoteServer, issuer: Issuer, testing: httpx2.Client
) -> None:
    """Platform choice (--confirmation-for ORG=page): no form, no token for a client without URL mode."""
    token = issuer.token(page_server.url, subject="alice@example.org")
    arguments = create_input(idempotency_key="idem-page-form-only").to_wire()
    result = post(page_server.url, form_only_call(arguments), token)
    assert result.get("resultType") != "input_required", result
    problem = result["structuredContent"]["problem"]
    assert problem["code"] == "confirmation_unavailable"
    assert problem["retryable"] is False
    assert "confirmation page" in problem["message"]
    assert not APPROVAL_TOKEN_PATTERN.search(problem["message"])
    assert appointments(testing) == 0
