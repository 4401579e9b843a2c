"""The final-confirmation gate and its summary."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from osbp.protocol.approval import (
    APPROVAL_TOKEN_PATTERN,
    ApprovalGate,
    Approved,
    build_approval_summary,
    default_token_source,
)
from osbp.protocol.clock import FixedClock
from osbp.protocol.models import (
    BookingCreateInput,
    Customer,
    Money,
    Policy,
    PolicyOrganization,
    Problem,
    Service,
    Slot,
)
from osbp.protocol.port import Offer, offer_from_json, offer_to_json
from osbp.protocol.state import open_state_store
from tests.support.state import stored_text

START = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


def create_input(**changes: Any) -> BookingCreateInput:
    base: dict[str, Any] = {
        "mandate": {
            "id": "mnd_1",
            "expires_at": "2026-07-31T23:59:59Z",
            "allowed_actions": ["booking.create"],
            "organization_id": "org_1",
            "earliest_start": "2026-07-01T00:00:00",
            "latest_end": "2026-07-31T23:59:00",
            "max_price": {"amount_minor": 20000, "currency": "USD"},
        },
        "idempotency_key": "idem_1",
        "service_id": "svc_clean",
        "schedule_id": "sch_main",
        "provider_id": "prov_lee",
        "date": "2026-07-07",
        "time": "09:00",
        "customer": {"display_name": "Jane Customer", "phone": "+15555550100"},
    }
    base.update(changes)
    return BookingCreateInput.model_validate(base)


def approved(inp: BookingCreateInput, token: str) -> BookingCreateInput:
    return BookingCreateInput.model_validate(
        {**inp.to_wire(), "approval": {"confirmed": True, "token": token}}
    )


SERVICE = Service(id="svc_clean", name="Regular cleaning", duration="PT60M")
SLOT = Slot(
    id="sch_main:prov_lee:svc_clean:2026-07-07T09:00:00",
    organization_id="org_1",
    organization_name="Carolyn's Dental",
    schedule_id="sch_main",
    schedule_name="Main Office",
    schedule_timezone="America/New_York",
    provider_id="prov_lee",
    provider_name="Dr. Mina Lee",
    service_id="svc_clean",
    starts_at="2026-07-07T13:00:00Z",
    ends_at="2026-07-07T14:00:00Z",
    starts_at_local="2026-07-07T09:00:00",
    ends_at_local="2026-07-07T10:00:00",
    price=Money(amount_minor=9500, currency="USD", type="fixed", display="$95.00"),
)
POLICY = Policy(
    payment_requirement="none",
    deposit=Money(amount_minor=0, currency="USD"),
    cancellation_window="PT24H",
    no_show_fee=Money(amount_minor=5000, currency="USD"),
    organization=PolicyOrganization(id="org_1", name="Carolyn's Dental", timezone="America/New_York"),
)
CUSTOMER = Customer(display_name="Jane Customer", phone="+15555550100")
SUMMARY = build_approval_summary(SERVICE, SLOT, POLICY, CUSTOMER)


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(START)


@pytest.fixture
def gate(state_location: str, clock: FixedClock) -> ApprovalGate:
    counter = itertools.count(1)
    return ApprovalGate(
        open_state_store(state_location), clock=clock, token_source=lambda: f"tok{next(counter)}"
    )


def challenge_token(result: Approved | Problem) -> str:
    assert isinstance(result, Problem)
    assert result.code == "requires_user_confirmation"
    assert result.retryable is True
    found = APPROVAL_TOKEN_PATTERN.findall(result.message)
    assert len(found) == 1
    return str(found[0])


def test_summary_is_plain_prose_with_every_required_fact() -> None:
    """The summary states service, local time + IANA zone, provider, place, price, fees, name (OSBP spec)."""
    assert SUMMARY.startswith(
        "Book Regular cleaning on Tuesday, 2026-07-07 at 09:00 until 10:00 (America/New_York time)"
    )
    for fact in (
        "with Dr. Mina Lee",
        "at Main Office, Carolyn's Dental",
        "Price: $95.00.",
        "No upfront payment or deposit is required to book.",
        "No-show fee: $50.00.",
        "the booking mandate does not limit them",
        "The merchant will see the customer name: Jane Customer.",
    ):
        assert fact in SUMMARY
    assert "payment_requirement" not in SUMMARY
    assert "capped" not in SUMMARY


def test_summary_shows_given_and_family_name_when_no_display_name() -> None:
    """Confirmation shows the merchant-visible name so swapped fields are caught (OSBP spec, Customer)."""
    text = build_approval_summary(SERVICE, SLOT, POLICY, Customer(given_name="Lee", family_name="Jane"))
    assert "customer name: Lee Jane. Given name: Lee; family name: Jane." in text
    override = build_approval_summary(SERVICE, SLOT, POLICY, CUSTOMER, customer_name="Customer, Jane")
    assert "customer name: Customer, Jane." in override


@pytest.mark.parametrize(
    ("customer", "stated"),
    [
        (
            Customer(display_name="Jane Customer", given_name="Customer", family_name="Jane"),
            "The merchant will see the customer name: Jane Customer. "
            "Given name: Customer; family name: Jane.",
        ),
        (
            Customer(display_name="Jane Customer", given_name="Jane"),
            "The merchant will see the customer name: Jane Customer. "
            "Given name: Jane; no family name is sent.",
        ),
        (
            Customer(family_name="Customer"),
            "The merchant will see the customer name: Customer. "
            "Family name: Customer; no given name is sent.",
        ),
    ],
    ids=["swapped-pair", "given-only", "family-only"],
)
def test_summary_states_every_name_field_sent_to_the_platform(customer: Customer, stated: str) -> None:
    """Display, given and family names sent are all shown: a swap is visible (OSBP spec, booking.create)."""
    text = build_approval_summary(SERVICE, SLOT, POLICY, customer)
    assert stated in text


def test_summary_with_only_a_display_name_adds_no_name_fields() -> None:
    """Only the fields actually sent are stated (OSBP spec, booking.create: the merchant-visible name)."""
    assert "Given name" not in SUMMARY
    assert "Family name" not in SUMMARY
    assert "family name" not in SUMMARY


def _terms(**policy: Any) -> str:
    bare = Policy(payment_requirement="none", deposit=Money(amount_minor=0, currency="USD"), **policy)
    text = build_approval_summary(SERVICE, SLOT, bare)
    start = text.index("No upfront payment or deposit is required to book.") + len(
        "No upfront payment or deposit is required to book. "
    )
    return text[start : text.index("Once booked, OSBP cannot cancel or change this appointment.")].strip()


FEE = Money(amount_minor=2500, currency="USD")


@pytest.mark.parametrize(
    ("policy", "terms"),
    [
        (
            {"cancellation_enabled": True, "cancellation_window": "PT6H"},
            "Free cancellation with the merchant up to 6 hours before the appointment.",
        ),
        (
            {"cancellation_enabled": True, "cancellation_window": "PT6H", "cancellation_fee": FEE},
            "Free cancellation with the merchant up to 6 hours before the appointment; "
            "cancelling later costs a cancellation fee of $25.00.",
        ),
        (
            {"cancellation_enabled": True},
            "The merchant allows cancellation and reported no deadline or cancellation fee.",
        ),
        (
            {"cancellation_enabled": True, "cancellation_fee": FEE},
            "The merchant allows cancellation for a cancellation fee of $25.00.",
        ),
        (
            {"cancellation_enabled": False, "cancellation_window": "PT6H"},
            "The merchant does not allow this booking to be cancelled.",
        ),
        (
            {"cancellation_enabled": False, "cancellation_fee": FEE},
            "The merchant does not allow this booking to be cancelled; "
            "it reports a cancellation fee of $25.00.",
        ),
        ({}, "The merchant did not report whether this booking can be cancelled."),
        (
            {"cancellation_window": "PT90M"},
            "The merchant did not report whether this booking can be cancelled; "
            "its cancellation deadline is 1 hour 30 minutes before the appointment.",
        ),
        (
            {"cancellation_window": "PT6H", "cancellation_fee": FEE},
            "The merchant did not report whether this booking can be cancelled; "
            "cancelling less than 6 hours before the appointment costs $25.00.",
        ),
        (
            {"cancellation_fee": FEE},
            "The merchant did not report whether this booking can be cancelled; "
            "it reports a cancellation fee of $25.00.",
        ),
    ],
    ids=[
        "enabled-window",
        "enabled-window-fee",
        "enabled",
        "enabled-fee",
        "disabled-window-ignored",
        "disabled-fee",
        "unknown",
        "unknown-window",
        "unknown-window-fee",
        "unknown-fee",
    ],
)
def test_summary_always_states_the_cancellation_terms_in_prose(policy: dict[str, Any], terms: str) -> None:
    """Cancellation allowed or not, its deadline and any fee, always, as prose (OSBP spec, booking.create)."""
    stated = _terms(**policy)
    assert stated.startswith(terms)
    fee_note = "These fees are set by the merchant; the booking mandate does not limit them."
    assert (fee_note in stated) == ("cancellation_fee" in policy)
    for label in ("cancellation_enabled", "cancellation_window", "PT", "True", "False", "None"):
        assert label not in stated


def test_summary_states_the_late_grace_and_the_no_show_fee() -> None:
    """The late grace period and any no-show fee are part of the terms (OSBP spec, policy.explain)."""
    stated = _terms(
        cancellation_enabled=True,
        cancellation_window="PT6H",
        late_grace="PT15M",
        no_show_fee=Money(amount_minor=5000, currency="USD"),
    )
    assert stated == (
        "Free cancellation with the merchant up to 6 hours before the appointment. "
        "Arriving more than 15 minutes late counts as a no-show. No-show fee: $50.00. "
        "These fees are set by the merchant; the booking mandate does not limit them."
    )
    assert "late" not in _terms(cancellation_enabled=True, cancellation_window="PT6H")


def test_summary_describes_deposit_and_cancellation_window() -> None:
    """Deposits and cancellation fees are disclosed with their conditions (OSBP spec, policy.explain)."""
    policy = POLICY.model_copy(
        update={
            "payment_requirement": "deposit",
            "deposit": Money(amount_minor=2000, currency="USD"),
            "cancellation_enabled": True,
            "cancellation_fee": Money(amount_minor=2500, currency="USD"),
            "cancellation_window": "PT6H",
        }
    )
    text = build_approval_summary(SERVICE, SLOT, policy, CUSTOMER)
    assert "A deposit of $20.00 is required" in text
    assert "cancelling later costs a cancellation fee of $25.00." in text


def test_first_call_is_challenged_with_summary_then_exact_token_instruction(gate: ApprovalGate) -> None:
    """The first valid create gets requires_user_confirmation: summary, then approval.token (OSBP spec)."""
    result = gate.evaluate(create_input(), SUMMARY)
    assert challenge_token(result) == "tok1"
    assert isinstance(result, Problem)
    summary_at, token_at = result.message.index(SUMMARY), result.message.index('approval.token="tok1"')
    assert summary_at < token_at


def test_repeated_preflight_gets_a_fresh_token_and_the_earlier_one_still_approves(
    gate: ApprovalGate, clock: FixedClock
) -> None:
    """A repeated preflight of the same facts issues a new token (only hashes are stored, so the old one
    cannot be re-sent); either approves, as the user saw the same summary (platform choice)."""
    first = challenge_token(gate.evaluate(create_input(), SUMMARY))
    clock.advance(timedelta(minutes=5))
    second = challenge_token(gate.evaluate(create_input(), SUMMARY))
    assert (first, second) == ("tok1", "tok2")
    assert gate.evaluate(approved(create_input(), first), SUMMARY) == Approved(first)
    assert gate.evaluate(approved(create_input(), second), SUMMARY) == Approved(second)


def test_an_earlier_token_of_a_repeated_preflight_still_expires_on_its_own_clock(
    gate: ApprovalGate, clock: FixedClock
) -> None:
    """A repeated preflight does not extend an earlier token's ten minutes (OSBP spec: reference TTL)."""
    first = challenge_token(gate.evaluate(create_input(), SUMMARY))
    clock.advance(timedelta(minutes=5))
    second = challenge_token(gate.evaluate(create_input(), SUMMARY))
    clock.advance(timedelta(minutes=5))
    result = gate.evaluate(approved(create_input(), first), SUMMARY)
    assert isinstance(result, Problem)
    assert "expired" in result.message
    assert gate.evaluate(approved(create_input(), second), SUMMARY) == Approved(second)


def test_spending_one_token_spends_every_token_of_that_payload(gate: ApprovalGate) -> None:
    """Once the booking is created no token of its payload approves again (OSBP spec, booking.create)."""
    first = challenge_token(gate.evaluate(create_input(), SUMMARY))
    second = challenge_token(gate.evaluate(create_input(), SUMMARY))
    other = challenge_token(gate.evaluate(create_input(idempotency_key="idem_2"), SUMMARY))
    gate.mark_spent(second)
    result = gate.evaluate(approved(create_input(), first), SUMMARY)
    assert isinstance(result, Problem)
    assert "already used" in result.message
    assert gate.evaluate(approved(create_input(idempotency_key="idem_2"), other), SUMMARY) == Approved(other)


def test_verification_code_does_not_change_the_bound_payload(gate: ApprovalGate) -> None:
    """approval and verification_code are transient, outside the payload hash (OSBP spec, booking.create)."""
    token = challenge_token(gate.evaluate(create_input(), SUMMARY))
    retry = approved(create_input(verification_code="123456"), token)
    assert gate.evaluate(retry, SUMMARY) == Approved(token)


@pytest.mark.parametrize(
    "tamper",
    [
        {"time": "10:00"},
        {"provider_id": "prov_other"},
        {"customer": {"display_name": "Someone Else"}},
        {"idempotency_key": "idem_2"},
    ],
    ids=["changed time", "changed provider", "changed customer", "other idempotency key"],
)
def test_token_never_authorizes_another_payload_or_key(gate: ApprovalGate, tamper: dict[str, Any]) -> None:
    """A leaked token cannot authorize a different payload or key (OSBP spec, booking.create)."""
    token = challenge_token(gate.evaluate(create_input(), SUMMARY))
    result = gate.evaluate(approved(create_input(**tamper), token), SUMMARY)
    assert challenge_token(result) != token
    assert isinstance(result, Problem)
    assert "not valid for this booking" in result.message


def test_changed_mandate_field_is_another_payload(gate: ApprovalGate) -> None:
    """The mandate is part of the bound payload (OSBP spec: bound to the exact pending payload)."""
    token = challenge_token(gate.evaluate(create_input(), SUMMARY))
    loose = create_input().to_wire()
    loose["mandate"]["max_price"] = {"amount_minor": 99999, "currency": "USD"}
    result = gate.evaluate(approved(BookingCreateInput.model_validate(loose), token), SUMMARY)
    assert challenge_token(result) != token


def test_expired_token_is_rechallenged_with_a_fresh_token(gate: ApprovalGate, clock: FixedClock) -> None:
    """Tokens expire after ten minutes on the injected clock (OSBP spec: reference gate TTL)."""
    token = challenge_token(gate.evaluate(create_input(), SUMMARY))
    clock.advance(timedelta(minutes=9, seconds=59))
    assert gate.evaluate(approved(create_input(), token), SUMMARY) == Approved(token)
    clock.advance(timedelta(seconds=1))
    result = gate.evaluate(approved(create_input(), token), SUMMARY)
    assert challenge_token(result) == "tok2"
    assert isinstance(result, Problem)
    assert "expired" in result.message


def test_spent_token_is_never_accepted_again(gate: ApprovalGate) -> None:
    """Once the booking is created the token is spent (OSBP spec; replays are idempotency's job)."""
    token = challenge_token(gate.evaluate(create_input(), SUMMARY))
    gate.mark_spent(token)
    result = gate.evaluate(approved(create_input(), token), SUMMARY)
    assert challenge_token(result) == "tok2"
    assert isinstance(result, Problem)
    assert "already used" in result.message


def test_changed_summary_rechallenges_and_retires_the_old_token(gate: ApprovalGate) -> None:
    """If the resolved price changes before the retry, re-challenge with a fresh summary (OSBP spec)."""
    token = challenge_token(gate.evaluate(create_input(), SUMMARY))
    pricier = SLOT.model_copy(update={"price": Money(amount_minor=12000, currency="USD")})
    new_summary = build_approval_summary(SERVICE, pricier, POLICY, CUSTOMER)
    result = gate.evaluate(approved(create_input(), token), new_summary)
    fresh = challenge_token(result)
    assert fresh != token
    assert isinstance(result, Problem)
    assert "$120.00" in result.message
    assert "changed" in result.message
    # The old token no longer works even with the old summary: the user saw new facts.
    assert challenge_token(gate.evaluate(approved(create_input(), token), SUMMARY)) not in (token, fresh)
    assert isinstance(gate.evaluate(approved(create_input(), fresh), new_summary), Problem)


def test_unknown_token_is_challenged(gate: ApprovalGate) -> None:
    """An invented token never approves (OSBP spec: agents must not invent a token)."""
    result = gate.evaluate(approved(create_input(), "apv_made_up"), SUMMARY)
    assert challenge_token(result) == "tok1"


def test_pending_approvals_survive_a_new_gate_on_the_same_file(
    state_location: str, clock: FixedClock
) -> None:
    """Pending approvals live in the durable state, and a second replica redeems them (platform choice)."""
    issuer = ApprovalGate(open_state_store(state_location), clock=clock)
    token = challenge_token(issuer.evaluate(create_input(), SUMMARY))
    again = ApprovalGate(open_state_store(state_location), clock=clock)
    assert again.evaluate(approved(create_input(), token), SUMMARY) == Approved(token)


def test_default_tokens_are_long_and_distinct() -> None:
    """Tokens are unguessable: 256 random bits, never repeated (OSBP spec, attempt-scoped capabilities)."""
    tokens = {default_token_source() for _ in range(100)}
    assert len(tokens) == 100
    assert all(len(t) >= 40 and '"' not in t for t in tokens)


@pytest.mark.anyio
async def test_async_wrappers_evaluate_and_spend(gate: ApprovalGate) -> None:
    """The gate is usable from the async adapter (platform choice: sqlite in a worker thread)."""
    token = challenge_token(await gate.aevaluate(create_input(), SUMMARY))
    assert await gate.aevaluate(approved(create_input(), token), SUMMARY) == Approved(token)
    await gate.amark_spent(token)
    assert isinstance(await gate.aevaluate(approved(create_input(), token), SUMMARY), Problem)


# --- The approved offer kept with its token ----------------------------------------------------------------

OFFER = Offer(service=SERVICE, slot=SLOT, policy=POLICY, validator="ofr_1")


def test_a_kept_offer_reads_back_equal_so_its_summary_is_the_approved_one() -> None:
    """Platform choice: the kept offer rebuilds the exact summary the user approved."""
    kept = offer_from_json(offer_to_json(OFFER))
    assert kept == OFFER
    assert kept.service is not None
    assert kept.slot is not None
    assert kept.policy is not None
    assert build_approval_summary(kept.service, kept.slot, kept.policy, CUSTOMER) == SUMMARY


def test_the_offer_kept_with_a_challenge_is_handed_back_for_its_approved_retry(
    gate: ApprovalGate, state_location: str
) -> None:
    """OSBP spec, booking.create: the approved retry may use the facts the user approved (token-bound)."""
    inp = create_input()
    token = challenge_token(gate.evaluate(inp, SUMMARY, offer_to_json(OFFER)))
    assert gate.approved_offer(inp) is None, "no approval, no kept offer"
    kept = gate.approved_offer(approved(inp, token))
    assert kept is not None
    assert offer_from_json(kept) == OFFER
    assert token not in stored_text(state_location)


def test_a_kept_offer_is_never_handed_to_another_payload_a_spent_or_an_expired_token(
    gate: ApprovalGate, clock: FixedClock
) -> None:
    """OSBP spec, booking.create: a token authorizes only its payload, once, until it expires."""
    inp = create_input()
    token = challenge_token(gate.evaluate(inp, SUMMARY, offer_to_json(OFFER)))
    assert gate.approved_offer(approved(create_input(time="10:00"), token)) is None
    clock.advance(timedelta(minutes=10))
    assert gate.approved_offer(approved(inp, token)) is None
    fresh = challenge_token(gate.evaluate(inp, SUMMARY, offer_to_json(OFFER)))
    gate.mark_spent(fresh)
    assert gate.approved_offer(approved(inp, fresh)) is None
