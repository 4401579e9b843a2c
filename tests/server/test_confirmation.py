"""Final confirmation through the host: booking.create asks the user by MCP elicitation, in memory.

Both elicitation shapes run against the real server over the SDK's in-memory client: the 2026-07-28
``input_required`` round trip (the client's default negotiation) and the classic in-request
``elicitation/create`` (``mode="legacy"``). The client's elicitation callback plays the host's UI.
"""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.server.request_state import RequestStateSecurity
from mcp.types import CallToolResult, ElicitRequestFormParams, ElicitResult, ErrorData, InputRequiredResult

from osbp.protocol.approval import APPROVAL_TOKEN_PATTERN
from osbp.protocol.canonical import sha256_hex
from osbp.protocol.clock import FixedClock
from osbp.protocol.core import OsbpCore
from osbp.protocol.models import Money
from osbp.protocol.state import open_state_store
from osbp.server.app import create_server
from osbp.server.audit import AuditLog
from osbp.server.confirmation import CODE_KEY, CONFIRM_KEY, ConfirmationPolicy, PerOrganization
from tests.support.mcp import create_args, read_events
from tests.support.memory_adapter import MemoryAdapter

pytestmark = pytest.mark.anyio

Answer = Callable[[str], Awaitable[ElicitResult | ErrorData]]
MODES = ["auto", "legacy"]  # the 2026-07-28 input_required round trip, the classic in-request request


def accept() -> ElicitResult:
    """The user pressed the host's confirm button."""
    return ElicitResult(action="accept", content={"confirm": True})


class Host:
    """The host's UI: records every message the user was shown and answers with ``answer``."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.shown: list[str] = []

    async def __call__(self, context: Any, params: Any) -> ElicitResult | ErrorData:
        assert isinstance(params, ElicitRequestFormParams)
        self.shown.append(params.message)
        return await self.answer(params.message)


def answering(*results: ElicitResult) -> Host:
    """A host whose user gives ``results`` in turn."""
    queue = list(results)

    async def answer(message: str) -> ElicitResult:
        return queue.pop(0)

    return Host(answer)


@asynccontextmanager
async def connected(
    core: OsbpCore,
    audit: AuditLog,
    clock: FixedClock,
    host: Host | None,
    *,
    mode: str = "auto",
    policy: ConfirmationPolicy = "auto",
    wait_s: float = 30.0,
) -> AsyncIterator[Client]:
    """An in-memory client (with ``host`` as its elicitation UI, if any) on a fresh server."""
    counter = itertools.count(1)
    server = create_server(
        core,
        audit,
        clock=clock,
        new_event_id=lambda: f"aud_test_{next(counter):04d}",
        confirmation=policy,
        confirmation_timeout=wait_s,
        state=core.state,
    )
    async with Client(server, elicitation_callback=host, mode=mode) as client:
        yield client


async def create(client: Client, **overrides: Any) -> dict[str, Any]:
    """booking.create's envelope."""
    result = await client.call_tool("osbp_booking_create", create_args(**overrides))
    envelope = result.structured_content
    assert isinstance(envelope, dict)
    return envelope


async def token_summary(core: OsbpCore, audit: AuditLog, clock: FixedClock, **overrides: Any) -> str:
    """The approval summary the token path shows for the same payload (a client without elicitation)."""
    async with connected(core, audit, clock, None) as client:
        envelope = await create(client, **overrides)
    message = envelope["problem"]["message"]
    assert APPROVAL_TOKEN_PATTERN.search(message)
    return str(message.split("\n\n")[1])


def create_events(audit_path: Path) -> list[dict[str, Any]]:
    """The booking.create audit records, in order."""
    return [event for event in read_events(audit_path) if event["tool_name"] == "booking.create"]


@pytest.mark.parametrize("mode", MODES)
async def test_an_accepted_confirmation_books_once_on_the_summary_the_token_path_shows(
    core: OsbpCore, adapter: MemoryAdapter, audit: AuditLog, audit_path: Path, clock: FixedClock, mode: str
) -> None:
    """Platform choice (host-enforced final confirmation, OSBP spec Security roadmap): one accept books."""
    summary = await token_summary(core, audit, clock, idempotency_key="idem_token_view")
    host = answering(accept())
    async with connected(core, audit, clock, host, mode=mode) as client:
        envelope = await create(client)
    assert envelope["ok"] is True
    assert envelope["value"]["booking_id"] == "appt_idem_test_001"
    assert adapter.creates == 1
    [shown] = host.shown
    assert shown.endswith("\n\n" + summary)
    last = create_events(audit_path)[-1]
    assert last["decision"] == {"ok": True}
    assert last["confirmation"]["mode"] == "elicitation"
    assert last["confirmation"]["answer"] == "accept"
    assert last["confirmation"]["summary_hash"] == sha256_hex(summary)
    assert "approval.token" not in str(last)


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_declined_or_dismissed_confirmation_books_nothing_and_is_final(
    core: OsbpCore,
    adapter: MemoryAdapter,
    audit: AuditLog,
    audit_path: Path,
    clock: FixedClock,
    mode: str,
    action: str,
) -> None:
    """OSBP spec, requires_user_confirmation (its terminal form): the user said no, so nothing is booked."""
    host = answering(ElicitResult(action=action))
    async with connected(core, audit, clock, host, mode=mode) as client:
        envelope = await create(client)
    assert envelope["ok"] is False
    assert envelope["problem"]["code"] == "requires_user_confirmation"
    assert envelope["problem"]["retryable"] is False
    assert "approval.token" not in envelope["problem"]["message"]
    assert adapter.creates == 0
    last = create_events(audit_path)[-1]
    assert last["confirmation"]["answer"] == action
    assert last["decision"]["code"] == "requires_user_confirmation"


@pytest.mark.parametrize("mode", MODES)
async def test_an_accept_with_the_box_unticked_is_a_decline(
    core: OsbpCore, adapter: MemoryAdapter, audit: AuditLog, clock: FixedClock, mode: str
) -> None:
    """Platform choice: only confirm=true is a yes; a submitted form saying no books nothing."""
    host = answering(ElicitResult(action="accept", content={"confirm": False}))
    async with connected(core, audit, clock, host, mode=mode) as client:
        envelope = await create(client)
    assert envelope["problem"]["code"] == "requires_user_confirmation"
    assert envelope["problem"]["retryable"] is False
    assert adapter.creates == 0


@pytest.mark.parametrize("mode", MODES)
async def test_a_price_change_while_the_user_answers_asks_again_on_the_new_summary(
    core: OsbpCore, adapter: MemoryAdapter, audit: AuditLog, audit_path: Path, clock: FixedClock, mode: str
) -> None:
    """OSBP spec, Final Confirmation: changed resolved facts are confirmed afresh, never on the old answer."""

    async def answer(message: str) -> ElicitResult:
        if "$95.00" in message:
            adapter.price = Money(amount_minor=9900, currency="USD", type="fixed", display="$99.00")
        return accept()

    host = Host(answer)
    async with connected(core, audit, clock, host, mode=mode) as client:
        envelope = await create(client)
    assert envelope["ok"] is True
    assert len(host.shown) == 2
    assert "$95.00" in host.shown[0]
    assert "$99.00" in host.shown[1]
    assert adapter.creates == 1
    confirmation = create_events(audit_path)[-1]["confirmation"]
    assert confirmation["answer"] == "accept"
    assert confirmation["summary_hash"] == sha256_hex(host.shown[1].split("\n\n", 1)[1])


@pytest.mark.parametrize("mode", MODES)
async def test_a_retry_of_a_confirmed_booking_replays_its_receipt_without_asking_again(
    core: OsbpCore, adapter: MemoryAdapter, audit: AuditLog, clock: FixedClock, mode: str
) -> None:
    """OSBP spec, Idempotency: a settled key replays its receipt; the user is not asked a second time."""
    host = answering(accept())
    async with connected(core, audit, clock, host, mode=mode) as client:
        first = await create(client)
        again = await create(client)
    assert again["value"] == first["value"]
    assert again["osbp_runtime"]["idempotency"] == "local_cache_replay"
    assert len(host.shown) == 1
    assert adapter.creates == 1


async def test_an_unanswered_classic_confirmation_times_out_retryably_and_books_nothing(
    core: OsbpCore, adapter: MemoryAdapter, audit: AuditLog, audit_path: Path, clock: FixedClock
) -> None:
    """Platform choice: a confirmation the user never answers ends retryable, with nothing booked."""
    never = anyio.Event()

    async def answer(message: str) -> ElicitResult:
        await never.wait()
        return accept()  # pragma: no cover - the server stops waiting first

    async with connected(core, audit, clock, Host(answer), mode="legacy", wait_s=0.2) as client:
        envelope = await create(client)
        never.set()
    assert envelope["problem"]["code"] == "confirmation_timeout"
    assert envelope["problem"]["retryable"] is True
    assert adapter.creates == 0
    assert create_events(audit_path)[-1]["confirmation"]["answer"] == "timeout"


async def test_a_host_that_fails_to_ask_gets_a_clear_problem_and_nothing_is_booked(
    core: OsbpCore, adapter: MemoryAdapter, audit: AuditLog, audit_path: Path, clock: FixedClock
) -> None:
    """Platform choice: an elicitation the host answers with an error books nothing and says why."""

    async def answer(message: str) -> ErrorData:
        return ErrorData(code=-32603, message="the host has no UI")

    async with connected(core, audit, clock, Host(answer), mode="legacy") as client:
        envelope = await create(client)
    assert envelope["problem"]["code"] == "confirmation_unavailable"
    assert "could not ask the user" in envelope["problem"]["message"]
    assert adapter.creates == 0
    assert create_events(audit_path)[-1]["confirmation"]["answer"] == "host_error"


async def test_an_answer_bound_to_another_summary_books_nothing_and_asks_again(
    core: OsbpCore, adapter: MemoryAdapter, audit: AuditLog, clock: FixedClock
) -> None:
    """Platform choice: an accept carried back for another summary (request state) confirms nothing."""
    counter = itertools.count(1)
    server = create_server(
        core, audit, clock=clock, new_event_id=lambda: f"aud_x_{next(counter):04d}", state=core.state
    )
    host = answering(accept())
    async with Client(server, elicitation_callback=host) as client:
        first = await client.session.call_tool(
            "osbp_booking_create", create_args(), allow_input_required=True
        )
        state = first.request_state  # type: ignore[union-attr]
        adapter.price = Money(amount_minor=9900, currency="USD", type="fixed", display="$99.00")
        retry = await client.session.call_tool(
            "osbp_booking_create",
            create_args(),
            input_responses={CONFIRM_KEY: accept()},
            request_state=state,
            allow_input_required=True,
        )
    assert isinstance(retry, InputRequiredResult)
    assert retry.input_requests is not None
    [ask] = retry.input_requests.values()
    assert isinstance(ask.params, ElicitRequestFormParams)
    assert "$99.00" in ask.params.message
    assert adapter.creates == 0


async def test_a_forged_request_state_is_refused_and_books_nothing(
    core: OsbpCore, adapter: MemoryAdapter, audit: AuditLog, clock: FixedClock
) -> None:
    """MCP 2026-07-28 request state: a state the server did not seal is rejected, nothing is booked."""
    server = create_server(core, audit, clock=clock, state=core.state)
    async with Client(server, elicitation_callback=answering(accept())) as client:
        with pytest.raises(Exception, match="Invalid or expired requestState"):
            await client.session.call_tool(
                "osbp_booking_create",
                create_args(),
                input_responses={CONFIRM_KEY: accept()},
                request_state='{"payload_hash":"x","summary_hash":"y"}',
                allow_input_required=True,
            )
    assert adapter.creates == 0


@pytest.mark.parametrize("mode", MODES)
async def test_required_elicitation_refuses_a_client_without_it_instead_of_issuing_a_token(
    core: OsbpCore, adapter: MemoryAdapter, audit: AuditLog, audit_path: Path, clock: FixedClock, mode: str
) -> None:
    """Platform choice (--confirmation elicitation): no elicitation, no booking, and no token either."""
    async with connected(core, audit, clock, None, mode=mode, policy="elicitation") as client:
        envelope = await create(client)
    problem = envelope["problem"]
    assert problem["code"] == "confirmation_unavailable"
    assert problem["retryable"] is False
    assert "did not declare form elicitation" in problem["message"]
    assert not APPROVAL_TOKEN_PATTERN.search(problem["message"])
    assert adapter.creates == 0
    assert create_events(audit_path)[-1]["confirmation"]["answer"] == "unavailable"


async def test_an_organizations_own_mode_decides_for_its_bookings_whatever_the_default(
    core: OsbpCore, adapter: MemoryAdapter, audit: AuditLog, clock: FixedClock
) -> None:
    """Platform choice (--confirmation-for): the mode of the organization the mandate names applies."""
    own = adapter.organization_id
    host = answering(accept())
    by_token = PerOrganization("auto", {own: "token"})
    async with connected(core, audit, clock, host, policy=by_token) as client:
        envelope = await create(client)
    assert APPROVAL_TOKEN_PATTERN.search(envelope["problem"]["message"])
    assert host.shown == []
    by_host = PerOrganization("token", {own: "elicitation", "another_org": "token"})
    async with connected(core, audit, clock, host, policy=by_host) as client:
        envelope = await create(client, idempotency_key="idem_confirm_per_org")
    assert envelope["ok"] is True
    assert len(host.shown) == 1
    assert adapter.creates == 1


async def test_an_organization_without_its_own_mode_gets_the_default(
    core: OsbpCore, audit: AuditLog, clock: FixedClock
) -> None:
    """Platform choice (--confirmation-for): organizations it does not name keep --confirmation."""
    host = answering()
    async with connected(
        core, audit, clock, host, policy=PerOrganization("token", {"other": "auto"})
    ) as client:
        envelope = await create(client)
    assert APPROVAL_TOKEN_PATTERN.search(envelope["problem"]["message"])
    assert host.shown == []


async def test_a_client_without_elicitation_keeps_the_token_path(
    core: OsbpCore, audit: AuditLog, audit_path: Path, clock: FixedClock
) -> None:
    """OSBP spec, Final Confirmation: without elicitation the challenge carries the token, as in v0.1.0."""
    async with connected(core, audit, clock, None) as client:
        envelope = await create(client)
    assert envelope["problem"]["code"] == "requires_user_confirmation"
    assert envelope["problem"]["retryable"] is True
    assert APPROVAL_TOKEN_PATTERN.search(envelope["problem"]["message"])
    confirmation = create_events(audit_path)[-1]["confirmation"]
    assert confirmation["mode"] == "token"
    assert confirmation["answer"] == "challenged"


async def test_the_token_policy_keeps_the_token_path_for_a_client_with_elicitation(
    core: OsbpCore, audit: AuditLog, clock: FixedClock
) -> None:
    """Platform choice (--confirmation token): the operator can keep the spec's token path for everyone."""
    host = answering()
    async with connected(core, audit, clock, host, policy="token") as client:
        envelope = await create(client)
    assert APPROVAL_TOKEN_PATTERN.search(envelope["problem"]["message"])
    assert host.shown == []


class CodeHost(Host):
    """A host whose user confirms, then types ``code`` into the verification form (or cancels it)."""

    def __init__(self, code: str | None) -> None:
        super().__init__(self._answer)
        self.code = code
        self.forms: list[str] = []

    async def __call__(self, context: Any, params: Any) -> ElicitResult | ErrorData:
        self.forms.append(next(iter(params.requested_schema["properties"])))
        return await super().__call__(context, params)

    async def _answer(self, message: str) -> ElicitResult:
        if self.forms[-1] == "confirm":
            return accept()
        if self.code is None:
            return ElicitResult(action="cancel")
        return ElicitResult(action="accept", content={"code": self.code})


@pytest.mark.parametrize("mode", MODES)
async def test_the_verification_code_is_collected_through_the_host_and_never_reaches_the_agent(
    core: OsbpCore, adapter: MemoryAdapter, audit: AuditLog, audit_path: Path, clock: FixedClock, mode: str
) -> None:
    """OSBP spec, Verification (the code travels through the agent only as an accommodation): host form."""
    adapter.requires_verification = True
    adapter.sent_codes.append("731942")  # verification.send delivered it to the customer
    host = CodeHost("731942")
    async with connected(core, audit, clock, host, mode=mode) as client:
        envelope = await create(client)
    assert envelope["ok"] is True
    assert host.forms == ["confirm", "code"]
    assert adapter.creates == 1
    assert "731942" not in str(read_events(audit_path))
    confirmation = create_events(audit_path)[-1]["confirmation"]
    assert confirmation["answer"] == "code_entered"
    assert confirmation["earlier"][-1]["answer"] == "accept"


@pytest.mark.parametrize("mode", MODES)
async def test_no_code_entered_through_the_host_leaves_the_agents_verification_path(
    core: OsbpCore, adapter: MemoryAdapter, audit: AuditLog, clock: FixedClock, mode: str
) -> None:
    """OSBP spec, Verification: no code, nothing booked; requires_verification stays retryable."""
    adapter.requires_verification = True
    async with connected(core, audit, clock, CodeHost(None), mode=mode) as client:
        envelope = await create(client)
    assert envelope["problem"]["code"] == "requires_verification"
    assert envelope["problem"]["retryable"] is True
    assert "verification.send" in envelope["problem"]["message"]
    assert adapter.creates == 0


# --- a client echoing a round's request state: a no is spent, never re-answered -------------------------


async def call_round(
    client: Client, state: str | None = None, **responses: ElicitResult
) -> CallToolResult | InputRequiredResult:
    """booking.create as a 2026-07-28 client driving its rounds by hand: the answers and the state."""
    return await client.session.call_tool(
        "osbp_booking_create",
        create_args(),
        input_responses=dict(responses) or None,
        request_state=state,
        allow_input_required=True,
    )


def envelope_of(result: CallToolResult | InputRequiredResult) -> dict[str, Any]:
    """A final tool result's OSBP envelope."""
    assert isinstance(result, CallToolResult), result
    assert isinstance(result.structured_content, dict)
    return result.structured_content


@pytest.mark.parametrize("action", ["decline", "cancel"])
async def test_a_declined_round_echoed_again_with_an_accept_books_nothing_on_any_replica(
    core: OsbpCore, adapter: MemoryAdapter, audit: AuditLog, audit_path: Path, clock: FixedClock, action: str
) -> None:
    """Platform choice (MCP 2026-07-28 input_required): the first no to a round is its answer for good."""
    sealing = RequestStateSecurity(keys=["k" * 40])  # the key every replica shares
    # Two replicas, each with its own handle on the shared state.
    stores = [open_state_store(core.state.location) for _ in range(2)]
    replicas = [create_server(core, audit, clock=clock, request_state=sealing, state=db) for db in stores]
    async with (
        Client(replicas[0], elicitation_callback=answering()) as on_a,
        Client(replicas[1], elicitation_callback=answering()) as on_b,
    ):
        first = await call_round(on_a)
        assert isinstance(first, InputRequiredResult)
        refused = envelope_of(
            await call_round(on_a, first.request_state, **{CONFIRM_KEY: ElicitResult(action=action)})
        )
        replayed = envelope_of(await call_round(on_b, first.request_state, **{CONFIRM_KEY: accept()}))
        again = envelope_of(await call_round(on_a, first.request_state, **{CONFIRM_KEY: accept()}))
        fresh = await call_round(on_a)
    assert adapter.creates == 0
    assert refused["problem"]["code"] == replayed["problem"]["code"] == "requires_user_confirmation"
    assert replayed["problem"]["retryable"] is False
    assert "already declined or dismissed" in replayed["problem"]["message"]
    assert again["problem"] == replayed["problem"]
    assert isinstance(fresh, InputRequiredResult)  # a new call without the state asks the user anew
    answers = [
        event["confirmation"]["answer"] for event in create_events(audit_path) if "confirmation" in event
    ]
    assert answers == ["asked", action, "spent", "spent", "asked"]


async def test_an_accepted_round_may_be_retried_and_books_once(
    core: OsbpCore, adapter: MemoryAdapter, audit: AuditLog, clock: FixedClock
) -> None:
    """Platform choice: an accept stands; its retry (an answer lost in transit) replays, books no second."""
    server = create_server(core, audit, clock=clock, state=core.state)
    async with Client(server, elicitation_callback=answering()) as client:
        first = await call_round(client)
        assert isinstance(first, InputRequiredResult)
        booked = envelope_of(await call_round(client, first.request_state, **{CONFIRM_KEY: accept()}))
        again = envelope_of(await call_round(client, first.request_state, **{CONFIRM_KEY: accept()}))
    assert booked["ok"] is True
    assert again["value"] == booked["value"]
    assert adapter.creates == 1


async def test_a_code_round_stands_on_its_accept_and_a_later_no_to_that_round_spends_it(
    core: OsbpCore, adapter: MemoryAdapter, audit: AuditLog, clock: FixedClock
) -> None:
    """Platform choice: the code round books only while the round it came from stands accepted."""
    adapter.requires_verification = True
    adapter.sent_codes.append("731942")
    server = create_server(core, audit, clock=clock, state=core.state)
    async with Client(server, elicitation_callback=answering()) as client:
        first = await call_round(client)
        assert isinstance(first, InputRequiredResult)
        coded = await call_round(client, first.request_state, **{CONFIRM_KEY: accept()})
        assert isinstance(coded, InputRequiredResult), coded
        refused = envelope_of(
            await call_round(client, first.request_state, **{CONFIRM_KEY: ElicitResult(action="decline")})
        )
        code = ElicitResult(action="accept", content={"code": "731942"})
        replayed = envelope_of(await call_round(client, coded.request_state, **{CODE_KEY: code}))
    assert refused["problem"]["code"] == "requires_user_confirmation"
    assert replayed["problem"]["code"] == "requires_user_confirmation"
    assert "already declined or dismissed" in replayed["problem"]["message"]
    assert adapter.creates == 0


# --- the operator requires the confirmation page ------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
async def test_a_required_page_is_never_replaced_by_the_form_or_a_token(
    core: OsbpCore, adapter: MemoryAdapter, audit: AuditLog, audit_path: Path, clock: FixedClock, mode: str
) -> None:
    """Platform choice (--confirmation page): no page here (in memory, like stdio), so no booking at all."""
    host = answering(accept())
    per_org = PerOrganization("token", {adapter.organization_id: "page"})
    for policy in ("page", per_org):
        async with connected(core, audit, clock, host, mode=mode, policy=policy) as client:
            envelope = await create(client)
        problem = envelope["problem"]
        assert problem["code"] == "confirmation_unavailable"
        assert problem["retryable"] is False
        assert "confirmation page" in problem["message"]
        assert not APPROVAL_TOKEN_PATTERN.search(problem["message"])
        last = create_events(audit_path)[-1]["confirmation"]
        assert (last["mode"], last["answer"]) == ("url", "unavailable")
    assert host.shown == []
    assert adapter.creates == 0


async def test_without_a_state_store_no_round_is_asked_and_nothing_is_booked(
    core: OsbpCore, adapter: MemoryAdapter, audit: AuditLog, clock: FixedClock
) -> None:
    """Platform choice (fail closed): a round whose answer cannot be recorded is never asked."""
    server = create_server(core, audit, clock=clock)
    host = answering(accept())
    async with Client(server, elicitation_callback=host) as client:
        envelope = await create(client)
    assert envelope["problem"]["code"] == "confirmation_unavailable"
    assert not APPROVAL_TOKEN_PATTERN.search(envelope["problem"]["message"])
    assert host.shown == []
    assert adapter.creates == 0
