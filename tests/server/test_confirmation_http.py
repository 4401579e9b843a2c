"""Final confirmation through the host over Streamable HTTP: shared request-state keys, and URL mode.

The real HTTP app (:func:`osbp.server.http.build_app`, stateless, JSON responses) runs in process behind
httpx's ASGI transport, one app per replica, each replica's core on one shared state file; the SDK's
Streamable HTTP client negotiates 2026-07-28 and carries its capabilities in every request's ``_meta``.
Without authorization the host confirms in its form (``input_required``); with it, a client declaring
URL-mode elicitation is sent to the server's own confirmation page (``/confirm/<secret>``), which the
tests open and answer over HTTP as the user's browser would.
"""

from __future__ import annotations

import html
import json
import logging
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.session import ElicitationFnT
from mcp.client.streamable_http import streamable_http_client
from mcp.types import (
    CallToolResult,
    ElicitRequestFormParams,
    ElicitRequestURLParams,
    ElicitResult,
    InputRequiredResult,
)

from osbp.protocol.approval import APPROVAL_TOKEN_PATTERN, APPROVAL_TTL
from osbp.protocol.canonical import sha256_hex
from osbp.protocol.clock import FixedClock
from osbp.protocol.core import OsbpCore
from osbp.protocol.models import Money
from osbp.server.audit import AuditLog
from osbp.server.confirmation import CONFIRM_KEY
from osbp.server.http import build_app
from osbp.server.settings import ServerSettings
from tests.support.logs import capture_logs, events, fields
from tests.support.mcp import create_args, read_events
from tests.support.memory_adapter import ORG, MemoryAdapter
from tests.support.remote import ISSUER, Issuer

pytestmark = [pytest.mark.anyio, pytest.mark.usefixtures("no_osbp_environment")]

ORIGIN = "http://127.0.0.1:8500"
URL = f"{ORIGIN}/mcp"
CREATE = "osbp_booking_create"
#: A request-state key as secrets.token_hex(32) makes one (a test key, not secret).
KEY = "244228c387f4688cda0657facb6672969e33b5bc7db2e273a08cac9a7c0028b1"
OTHER_KEY = "be6a2fad1d5329b7d41083ee02b500f4d8ecfd267ed416b15a0ac26cd93e98ba"


def accept() -> ElicitResult:
    """The host's accept (form: the box ticked; URL mode: the user agreed to open the page)."""
    return ElicitResult(action="accept", content={"confirm": True})


def settings_for(
    tmp_path: Path, *, issuer: Issuer | None = None, key: str | None = KEY, **extra: Any
) -> ServerSettings:
    """A remote server's settings on the test's shared state file (with authorization if ``issuer``)."""
    auth = {"issuer": ISSUER, "jwks": str(issuer.jwks_path)} if issuer is not None else {}
    return ServerSettings(
        adapter={
            "platform_base_url": "http://127.0.0.1:9",
            "organization_id": ORG,
            "state_path": str(tmp_path / "state" / "osbp.sqlite3"),
        },
        transport="streamable-http",
        audit_log_path=tmp_path / "audit" / "events.jsonl",
        auth=auth,
        request_state_key=key,
        **extra,
    )


@asynccontextmanager
async def replica(
    adapter: MemoryAdapter, audit: AuditLog, clock: FixedClock, settings: ServerSettings, token: str | None
) -> AsyncIterator[httpx2.AsyncClient]:
    """One replica's HTTP app, running, and an HTTP client to it (with the bearer token, if any)."""
    core = OsbpCore(adapter, state=settings.adapter.state_path, clock=clock)
    settings._clock = clock  # the replica's one clock is the test's
    app = build_app(core, audit, settings)
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=httpx2.ASGITransport(app=app), base_url=ORIGIN, headers=headers) as http,
    ):
        yield http


@asynccontextmanager
async def mcp_client(http: httpx2.AsyncClient, host: ElicitationFnT | None = None) -> AsyncIterator[Client]:
    """The SDK's Streamable HTTP client over ``http`` (declaring form and URL elicitation with a host)."""
    async with Client(streamable_http_client(URL, http_client=http), elicitation_callback=host) as client:
        yield client


async def never(context: Any, params: Any) -> ElicitResult:
    """A host callback the test drives by hand (``allow_input_required``): never called."""
    raise AssertionError("the test answers the rounds itself")


async def first_round(client: Client, **overrides: Any) -> InputRequiredResult:
    """booking.create's first round: the ``input_required`` result asking the user."""
    first = await client.session.call_tool(CREATE, create_args(**overrides), allow_input_required=True)
    assert isinstance(first, InputRequiredResult), first
    return first


async def retry(
    client: Client, first: InputRequiredResult, answer: ElicitResult | None = None, **overrides: Any
) -> CallToolResult | InputRequiredResult:
    """The client's retry of ``first`` with the host's answer (accept unless given)."""
    return await client.session.call_tool(
        CREATE,
        create_args(**overrides),
        input_responses={CONFIRM_KEY: answer or accept()},
        request_state=first.request_state,
        allow_input_required=True,
    )


def envelope_of(result: CallToolResult | InputRequiredResult) -> dict[str, Any]:
    """A final tool result's OSBP envelope."""
    assert isinstance(result, CallToolResult), result
    assert isinstance(result.structured_content, dict)
    return result.structured_content


def page_url(first: InputRequiredResult) -> str:
    """The confirmation page an ``input_required`` result sends the host to."""
    assert first.input_requests is not None
    params = first.input_requests[CONFIRM_KEY].params
    assert isinstance(params, ElicitRequestURLParams), params
    return params.url


async def opened(http: httpx2.AsyncClient, url: str) -> str:
    """The user's browser opens the page (no bearer token): the summary hash its form carries."""
    page = await http.get(url, headers={"Authorization": ""})
    assert page.status_code == 200, page.text
    shown = re.search(r'name=summary_hash value="([0-9a-f]{64})"', page.text)
    assert shown is not None
    return shown.group(1)


async def answer_page(
    http: httpx2.AsyncClient, url: str, decision: str = "confirm", *, origin: str = ORIGIN
) -> httpx2.Response:
    """The user's browser: open the page, then press one of its buttons."""
    form = {"decision": decision, "summary_hash": await opened(http, url)}
    return await http.post(url, data=form, headers={"Origin": origin, "Authorization": ""})


def create_events(tmp_path: Path) -> list[dict[str, Any]]:
    """The booking.create audit records, in order."""
    events = read_events(tmp_path / "audit" / "events.jsonl")
    return [event for event in events if event["tool_name"] == "booking.create"]


@pytest.fixture
def issuer(tmp_path: Path) -> Issuer:
    """The development issuer whose JWKS the replicas read."""
    return Issuer(tmp_path / "issuer")


# --- form elicitation over HTTP: the sealed request state is shared by replicas holding the same key ---


async def test_a_form_confirmation_asked_by_one_replica_is_answered_on_another_with_the_shared_key(
    adapter: MemoryAdapter, audit: AuditLog, clock: FixedClock, tmp_path: Path
) -> None:
    """MCP 2026-07-28 input_required over stateless HTTP: replicas sharing the state key book once."""
    settings = settings_for(tmp_path)
    async with (
        replica(adapter, audit, clock, settings, None) as a,
        replica(adapter, audit, clock, settings_for(tmp_path), None) as b,
        mcp_client(a, never) as on_a,
        mcp_client(b, never) as on_b,
    ):
        first = await first_round(on_a)
        assert first.input_requests is not None
        assert isinstance(first.input_requests[CONFIRM_KEY].params, ElicitRequestFormParams)
        booked = envelope_of(await retry(on_b, first))
        assert booked["ok"] is True, booked
        again = envelope_of(await on_a.call_tool(CREATE, create_args()))
    assert again["value"] == booked["value"]
    assert adapter.creates == 1


async def test_a_request_state_sealed_under_another_key_is_refused_and_books_nothing(
    adapter: MemoryAdapter, audit: AuditLog, clock: FixedClock, tmp_path: Path
) -> None:
    """MCP 2026-07-28 request state: a replica with another key refuses the state (-32602), books nothing."""
    async with (
        replica(adapter, audit, clock, settings_for(tmp_path), None) as a,
        replica(adapter, audit, clock, settings_for(tmp_path, key=OTHER_KEY), None) as b,
        mcp_client(a, never) as on_a,
        mcp_client(b, never) as on_b,
    ):
        first = await first_round(on_a)
        with pytest.raises(Exception, match="Invalid or expired requestState"):
            await retry(on_b, first)
    assert adapter.creates == 0


def test_without_a_shared_key_the_server_warns_that_its_confirmations_stay_on_this_process(
    core: OsbpCore, audit: AuditLog, tmp_path: Path
) -> None:
    """Platform choice: no key means a per-process one, said at start; a configured key is never logged."""
    with capture_logs(logging.INFO) as unkeyed:
        build_app(core, audit, settings_for(tmp_path, key=None))
    with capture_logs(logging.INFO) as keyed:
        build_app(core, audit, settings_for(tmp_path))
    assert events(unkeyed, "request_state_key_ephemeral")
    assert not events(keyed, "request_state_key_ephemeral")
    assert all(KEY not in record.getMessage() and KEY not in str(fields(record)) for record in keyed)


# --- URL mode: the server's own confirmation page, bound to the subject, single-use, expiring ---


@pytest.fixture
def alice(issuer: Issuer) -> str:
    """Alice's bearer token for this server."""
    return issuer.token(URL, subject="alice@example.org")


@dataclass(frozen=True, slots=True)
class Served:
    """An authorized replica (URL mode on) and Alice's client on it, whose rounds the test answers."""

    http: httpx2.AsyncClient
    client: Client


@pytest.fixture
async def served(
    adapter: MemoryAdapter, audit: AuditLog, clock: FixedClock, tmp_path: Path, issuer: Issuer, alice: str
) -> AsyncIterator[Served]:
    """One authorized replica and Alice's client."""
    settings = settings_for(tmp_path, issuer=issuer)
    async with replica(adapter, audit, clock, settings, alice) as http, mcp_client(http, never) as client:
        yield Served(http, client)


async def test_a_booking_confirmed_on_the_page_books_once_and_the_audit_says_url(
    adapter: MemoryAdapter, audit: AuditLog, clock: FixedClock, tmp_path: Path, issuer: Issuer, alice: str
) -> None:
    """Platform choice (URL-mode elicitation, MCP 2025-11-25+): the page shows the summary, its yes books."""
    settings = settings_for(tmp_path, issuer=issuer)
    shown: list[str] = []
    async with replica(adapter, audit, clock, settings, alice) as http:

        async def browser(context: Any, params: Any) -> ElicitResult:
            assert isinstance(params, ElicitRequestURLParams)
            assert params.url.startswith(f"{ORIGIN}/confirm/")
            shown.append((await http.get(params.url)).text)
            confirmed = await answer_page(http, params.url)
            assert confirmed.status_code == 200, confirmed.text
            assert "Confirmed" in confirmed.text
            return ElicitResult(action="accept")

        async with mcp_client(http, browser) as client:
            booked = envelope_of(await client.call_tool(CREATE, create_args()))
            again = envelope_of(await client.call_tool(CREATE, create_args()))
    assert booked["ok"] is True, booked
    assert again["value"] == booked["value"]
    assert adapter.creates == 1
    [page] = shown
    token_view = await token_summary(adapter, audit, clock, tmp_path)
    assert html.escape(token_view) in page
    assert "Confirm and book" in page
    events = create_events(tmp_path)
    steps = [event["confirmation"] for event in events if "confirmation" in event]
    assert [step["answer"] for step in steps][:2] == ["asked", "accept"]
    assert {step["mode"] for step in steps[:2]} == {"url"}
    assert steps[1]["summary_hash"] == sha256_hex(token_view)
    assert "/confirm/" not in (tmp_path / "audit" / "events.jsonl").read_text(encoding="utf-8")


async def token_summary(adapter: MemoryAdapter, audit: AuditLog, clock: FixedClock, tmp_path: Path) -> str:
    """The approval summary the token path shows for the same booking (a client without elicitation)."""
    settings = settings_for(tmp_path / "token")
    async with replica(adapter, audit, clock, settings, None) as http, mcp_client(http) as client:
        message = envelope_of(await client.call_tool(CREATE, create_args()))["problem"]["message"]
    assert APPROVAL_TOKEN_PATTERN.search(message)
    return str(message.split("\n\n")[1])


async def test_the_page_escapes_the_summary_and_refuses_framing_caching_and_referrers(
    adapter: MemoryAdapter, served: Served
) -> None:
    """Platform choice (URL mode): the summary is shown as text, on a page no other site can frame."""
    customer = create_args()["customer"] | {"display_name": "Jane <b>Bold</b> & Co"}
    http, client = served.http, served.client
    first = await first_round(client, customer=customer)
    page = await http.get(page_url(first), headers={"Authorization": ""})
    assert page.status_code == 200
    assert "Jane &lt;b&gt;Bold&lt;/b&gt; &amp; Co" in page.text
    assert "<b>Bold</b>" not in page.text
    assert page.headers["cache-control"] == "no-store"
    assert page.headers["referrer-policy"] == "no-referrer"
    assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
    assert adapter.creates == 0


async def test_a_retry_before_the_page_is_confirmed_books_nothing_and_is_retryable(
    adapter: MemoryAdapter, tmp_path: Path, served: Served
) -> None:
    """Platform choice (URL mode): the host's accept only opened the page; the page's yes is what books."""
    first = await first_round(served.client)
    early = envelope_of(await retry(served.client, first))
    assert early["ok"] is False
    assert early["problem"]["code"] == "confirmation_pending"
    assert early["problem"]["retryable"] is True
    assert "not confirmed this booking on the confirmation page" in early["problem"]["message"]
    assert adapter.creates == 0
    assert create_events(tmp_path)[-1]["confirmation"]["answer"] == "pending"


async def test_a_used_page_cannot_be_answered_again(adapter: MemoryAdapter, served: Served) -> None:
    """Platform choice (URL mode): a page is single-use; after its booking it refuses every answer."""
    http, client = served.http, served.client
    first = await first_round(client)
    url = page_url(first)
    assert (await answer_page(http, url)).status_code == 200
    assert envelope_of(await retry(client, first))["ok"] is True
    shown = await http.get(url, headers={"Authorization": ""})
    again = await http.post(
        url, data={"decision": "confirm", "summary_hash": "0" * 64}, headers={"Origin": ORIGIN}
    )
    assert shown.status_code == 409
    assert again.status_code == 409
    assert "works once" in again.text
    assert adapter.creates == 1


async def test_an_expired_page_refuses_the_answer_and_its_retry_books_nothing(
    adapter: MemoryAdapter, clock: FixedClock, served: Served
) -> None:
    """Platform choice (URL mode): the page lives as long as an approval token (--approval-ttl-seconds)."""
    first = await first_round(served.client)
    url = page_url(first)
    clock.advance(APPROVAL_TTL)
    expired = await served.http.get(url, headers={"Authorization": ""})
    late = envelope_of(await retry(served.client, first))
    assert expired.status_code == 410
    assert late["problem"]["code"] == "confirmation_timeout"
    assert late["problem"]["retryable"] is True
    assert adapter.creates == 0


async def test_another_subjects_retry_of_a_confirmed_page_is_refused_and_books_nothing(
    adapter: MemoryAdapter, audit: AuditLog, clock: FixedClock, tmp_path: Path, issuer: Issuer, alice: str
) -> None:
    """MCP request state bound to the principal: a page confirmed for Alice books nothing for Bob."""
    settings = settings_for(tmp_path, issuer=issuer)
    bob = issuer.token(URL, subject="bob@example.org")
    async with (
        replica(adapter, audit, clock, settings, alice) as as_alice,
        replica(adapter, audit, clock, settings_for(tmp_path, issuer=issuer), bob) as as_bob,
        mcp_client(as_alice, never) as alices,
        mcp_client(as_bob, never) as bobs,
    ):
        first = await first_round(alices)
        assert (await answer_page(as_alice, page_url(first))).status_code == 200
        with pytest.raises(Exception, match="Invalid or expired requestState"):
            await retry(bobs, first)
        assert adapter.creates == 0
        booked = envelope_of(await retry(alices, first))
    assert booked["ok"] is True
    assert adapter.creates == 1


async def test_a_declined_page_is_final_and_books_nothing(adapter: MemoryAdapter, served: Served) -> None:
    """Platform choice (URL mode): the page's decline is the user's no, as in the host's form."""
    http, client = served.http, served.client
    first = await first_round(client)
    declined = await answer_page(http, page_url(first), "decline")
    answered = envelope_of(await retry(client, first))
    assert declined.status_code == 200
    assert "Nothing will be booked" in declined.text
    assert answered["problem"]["code"] == "requires_user_confirmation"
    assert answered["problem"]["retryable"] is False
    assert adapter.creates == 0


async def test_a_price_change_after_the_page_was_confirmed_asks_again_on_a_new_page(
    adapter: MemoryAdapter, served: Served
) -> None:
    """Platform choice (URL mode): the page confirmed one summary; a changed summary needs a new yes."""
    http, client = served.http, served.client
    first = await first_round(client)
    assert (await answer_page(http, page_url(first))).status_code == 200
    adapter.price = Money(amount_minor=9900, currency="USD", type="fixed", display="$99.00")
    asked = await retry(client, first)
    assert isinstance(asked, InputRequiredResult)
    new_url = page_url(asked)
    page = await http.get(new_url, headers={"Authorization": ""})
    assert new_url != page_url(first)
    assert "$99.00" in page.text
    assert adapter.creates == 0


#: A 2026-07-28 stateless booking.create from a client that declares form elicitation only.
FORM_ONLY_CREATE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {
        "name": CREATE,
        "arguments": create_args(),
        "_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"elicitation": {"form": {}}},
        },
    },
}
STATELESS_CREATE_HEADERS = {
    "Accept": "application/json, text/event-stream",
    "Content-Type": "application/json",
    "MCP-Protocol-Version": "2026-07-28",
    "Mcp-Method": "tools/call",
    "Mcp-Name": CREATE,
}


async def test_a_client_declaring_only_form_elicitation_keeps_the_form_over_authorized_http(
    adapter: MemoryAdapter, audit: AuditLog, clock: FixedClock, tmp_path: Path, issuer: Issuer, alice: str
) -> None:
    """Platform choice: URL mode only for a client that declares it; the form otherwise, as before."""
    async with replica(adapter, audit, clock, settings_for(tmp_path, issuer=issuer), alice) as http:
        answer = await http.post(
            "/mcp", content=json.dumps(FORM_ONLY_CREATE), headers=STATELESS_CREATE_HEADERS
        )
    assert answer.status_code == 200, answer.text
    result = answer.json()["result"]
    assert result["resultType"] == "input_required", result
    assert result["inputRequests"][CONFIRM_KEY]["params"]["mode"] == "form"


async def test_an_answer_posted_from_a_foreign_origin_is_refused_and_the_page_stays_open(
    adapter: MemoryAdapter, served: Served
) -> None:
    """MCP Streamable HTTP security (Origin validation): another site cannot answer the page."""
    http, client = served.http, served.client
    first = await first_round(client)
    url = page_url(first)
    forged = await answer_page(http, url, origin="https://evil.example")
    still = await http.get(url, headers={"Authorization": ""})
    early = envelope_of(await retry(client, first))
    assert forged.status_code == 403
    assert still.status_code == 200
    assert early["problem"]["code"] == "confirmation_pending"
    assert adapter.creates == 0


async def test_an_oversized_answer_is_refused_unread_and_the_page_stays_open(
    adapter: MemoryAdapter, served: Served
) -> None:
    """Platform choice (URL mode): an answer past the page's size limit is 413, read no further than the
    limit (a streamed body without a length too), and leaves the page open for the real answer."""
    http, client = served.http, served.client
    first = await first_round(client)
    url = page_url(first)
    summary_hash = await opened(http, url)
    padded = f"decision=confirm&summary_hash={summary_hash}&pad={'x' * 4096}".encode()

    sent: list[int] = []

    async def streamed() -> AsyncIterator[bytes]:
        for start in range(0, len(padded), 512):
            sent.append(start)
            yield padded[start : start + 512]

    form = {"Origin": ORIGIN, "Authorization": "", "Content-Type": "application/x-www-form-urlencoded"}
    declared = await http.post(url, content=padded, headers=form)
    chunked = await http.post(url, content=streamed(), headers=form)
    still = await http.get(url, headers={"Authorization": ""})
    assert (declared.status_code, chunked.status_code, still.status_code) == (413, 413, 200)
    assert len(sent) == 3  # 1,536 bytes pulled, just past the 1,024-byte limit; the rest never read
    assert (await answer_page(http, url)).status_code == 200
    assert envelope_of(await retry(client, first))["ok"] is True
    assert adapter.creates == 1


async def test_after_the_page_the_verification_code_is_collected_in_the_hosts_form_and_books(
    adapter: MemoryAdapter, tmp_path: Path, served: Served
) -> None:
    """OSBP spec, Verification, with URL mode: the page confirms, then the host's form takes the code."""
    adapter.requires_verification = True
    adapter.sent_codes.append("731942")  # verification.send delivered it to the customer
    first = await first_round(served.client)
    assert (await answer_page(served.http, page_url(first))).status_code == 200
    coded = await retry(served.client, first)
    assert isinstance(coded, InputRequiredResult), coded
    assert coded.input_requests is not None
    [(key, ask)] = coded.input_requests.items()
    assert isinstance(ask.params, ElicitRequestFormParams)
    booked = await served.client.session.call_tool(
        CREATE,
        create_args(),
        input_responses={key: ElicitResult(action="accept", content={"code": "731942"})},
        request_state=coded.request_state,
        allow_input_required=True,
    )
    assert envelope_of(booked)["ok"] is True, booked
    assert adapter.creates == 1
    assert "731942" not in (tmp_path / "audit" / "events.jsonl").read_text(encoding="utf-8")
    confirmation = create_events(tmp_path)[-1]["confirmation"]
    assert confirmation["answer"] == "code_entered"
    assert confirmation["mode"] == "url"


async def test_a_url_the_host_declined_declines_its_page_and_no_later_answer_books(
    adapter: MemoryAdapter, served: Served
) -> None:
    """Platform choice (URL mode): the host's no spends the page; confirming it afterwards books nothing."""
    http, client = served.http, served.client
    first = await first_round(client)
    url = page_url(first)
    declined = envelope_of(await retry(client, first, ElicitResult(action="decline")))
    shown = await http.get(url, headers={"Authorization": ""})
    late = await http.post(
        url, data={"decision": "confirm", "summary_hash": "0" * 64}, headers={"Origin": ORIGIN}
    )
    replayed = envelope_of(await retry(client, first))
    assert declined["problem"]["code"] == "requires_user_confirmation"
    assert (shown.status_code, late.status_code) == (409, 409)
    assert replayed["problem"]["code"] == "requires_user_confirmation"
    assert replayed["problem"]["retryable"] is False
    assert adapter.creates == 0


async def test_a_required_page_refuses_a_client_declaring_only_form_elicitation(
    adapter: MemoryAdapter, audit: AuditLog, clock: FixedClock, tmp_path: Path, issuer: Issuer, alice: str
) -> None:
    """Platform choice (--confirmation page): the page or nothing; the form is never offered instead."""
    settings = settings_for(tmp_path, issuer=issuer, confirmation="page")
    async with replica(adapter, audit, clock, settings, alice) as http:
        answer = await http.post(
            "/mcp", content=json.dumps(FORM_ONLY_CREATE), headers=STATELESS_CREATE_HEADERS
        )
        async with mcp_client(http, never) as both:  # form and URL: the page
            asked = await first_round(both)
    result = answer.json()["result"]
    assert result.get("resultType") != "input_required", result
    assert result["structuredContent"]["problem"]["code"] == "confirmation_unavailable"
    assert page_url(asked).startswith(f"{ORIGIN}/confirm/")
    assert adapter.creates == 0
