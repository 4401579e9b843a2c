"""booking.cancel and booking.reschedule through the protocol core, over the in-memory lifecycle platform.

Each test books through the core's own booking.create first (so the booking is this deployment's), then
drives the change the way an agent does: the challenge, the user's approval, the retry.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from osbp.protocol.approval import APPROVAL_TOKEN_PATTERN
from osbp.protocol.clock import FixedClock
from osbp.protocol.contract import AdapterResult, Failure, Success
from osbp.protocol.core import OsbpCore
from osbp.protocol.idempotency import LOCAL_CACHE_REPLAY
from osbp.protocol.lifecycle_models import (
    BookingCancelInput,
    BookingRescheduleInput,
    CancelResult,
    LifecycleMandate,
    RescheduleResult,
)
from osbp.protocol.models import Approval, Booking, BookingCreateInput, BookingMandate, Customer, Problem
from osbp.protocol.principal import Principal, acting_for
from osbp.protocol.problems import ExtensionCode, ProblemCode
from tests.support import memory_adapter as memory
from tests.support.memory_lifecycle import MemoryLifecycleAdapter, usd

#: 09:00 in Los Angeles, the day before the appointment (2030-05-02 10:00 local, 17:00Z).
NOW = datetime(2030, 5, 1, 16, 0, tzinfo=UTC)
#: The late window (6 hours) opens at 04:00 local on the appointment's day.
WINDOW_OPENS = datetime(2030, 5, 2, 11, 0, tzinfo=UTC)
LATE = WINDOW_OPENS + timedelta(minutes=30)
CUSTOMER = Customer(display_name="Casey Customer", phone="+15555550142")
ALL_ACTIONS = ["booking.create", "booking.cancel", "booking.reschedule"]


def mandate(**changes: Any) -> dict[str, Any]:
    """A lifecycle mandate's wire form (every action allowed, free changes only by default)."""
    wire: dict[str, Any] = {
        "id": "mandate_1",
        "expires_at": "2030-05-03T00:00:00Z",
        "allowed_actions": ALL_ACTIONS,
        "organization_id": memory.ORG,
        "earliest_start": "2030-05-01T00:00:00",
        "latest_end": "2030-05-10T00:00:00",
        "max_price": {"amount_minor": 10000, "currency": "USD"},
    }
    wire.update(changes)
    return {key: value for key, value in wire.items() if value is not None}


def cancel_input(booking_id: str, key: str = "cancel_1", **mandate_changes: Any) -> BookingCancelInput:
    """A booking.cancel input."""
    return BookingCancelInput.model_validate(
        {"mandate": mandate(**mandate_changes), "idempotency_key": key, "booking_id": booking_id}
    )


def reschedule_input(
    booking_id: str,
    date: str = "2030-05-03",
    time: str = "14:00",
    key: str = "move_1",
    **mandate_changes: Any,
) -> BookingRescheduleInput:
    """A booking.reschedule input to the memory merchant's schedule and provider."""
    return BookingRescheduleInput.model_validate(
        {
            "mandate": mandate(**mandate_changes),
            "idempotency_key": key,
            "booking_id": booking_id,
            "schedule_id": memory.SCHEDULE,
            "provider_id": memory.PROVIDER,
            "date": date,
            "time": time,
        }
    )


@pytest.fixture
def clock() -> FixedClock:
    """The platform's and the core's one clock."""
    return FixedClock(NOW)


@pytest.fixture
def adapter(clock: FixedClock) -> MemoryLifecycleAdapter:
    """The in-memory merchant with the lifecycle port."""
    return MemoryLifecycleAdapter(clock=clock)


@pytest.fixture
def core(adapter: MemoryLifecycleAdapter, clock: FixedClock, tmp_path: Path) -> OsbpCore:
    """The protocol core over the memory merchant, with its own state file."""
    return OsbpCore(adapter, state=tmp_path / "osbp.sqlite3", clock=clock)


def token_of(result: AdapterResult[Any]) -> str:
    """The approval token of a challenge (fails the test on anything else)."""
    assert isinstance(result, Failure)
    assert result.problem.code == ProblemCode.REQUIRES_USER_CONFIRMATION
    assert result.problem.retryable
    found = APPROVAL_TOKEN_PATTERN.search(result.problem.message)
    assert found is not None
    return found.group(1)


def approved(inp: Any, token: str) -> Any:
    """The same input with the user's approval."""
    return inp.model_copy(update={"approval": Approval(confirmed=True, token=token)})


async def book(core: OsbpCore, key: str = "create_1", time: str = "10:00") -> str:
    """A booking.create through the core (v0.1.0 mandate), challenged and approved: its booking id."""
    v010 = mandate(allowed_actions=["booking.create"])
    inp = BookingCreateInput.model_validate(
        {
            "mandate": v010,
            "idempotency_key": key,
            "service_id": memory.SERVICE,
            "schedule_id": memory.SCHEDULE,
            "provider_id": memory.PROVIDER,
            "date": "2030-05-02",
            "time": time,
            "customer": CUSTOMER.to_wire(),
        }
    )
    created = await core.create_booking(approved(inp, token_of(await core.create_booking(inp))))
    assert isinstance(created, Success)
    return created.value.booking_id


def refusal(result: AdapterResult[Any]) -> Problem:
    """The Problem of a refused call."""
    assert isinstance(result, Failure)
    return result.problem


# --- The gate and the write ---------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_first_cancel_challenges_with_the_facts_and_the_approved_retry_cancels(
    core: OsbpCore, adapter: MemoryLifecycleAdapter
) -> None:
    """docs/lifecycle.md, The two-step gate: no approval → a summary and a token, nothing written."""
    booking_id = await book(core)
    inp = cancel_input(booking_id)
    challenge = await core.cancel_booking(inp)
    token = token_of(challenge)
    summary = refusal(challenge).message
    for fact in ("Haircut", "2030-05-02 at 10:00", "America/Los_Angeles", "Jordan Lee", "free until 04:00"):
        assert fact in summary
    assert "cannot be undone through OSBP" in summary
    assert adapter.writes == 0
    done = await core.cancel_booking(approved(inp, token))
    assert isinstance(done, Success)
    assert done.value == CancelResult(
        id="receipt_cancel_1",
        booking_id=booking_id,
        status="cancelled",
        fee=usd(0),
        text="Cancelled Haircut on 2030-05-02 at 10:00 (America/Los_Angeles). No fee was charged.",
    )
    assert adapter.bookings[booking_id].status == "cancelled"
    assert adapter.writes == 1


@pytest.mark.anyio
async def test_a_fee_that_changed_after_the_challenge_refuses_the_old_token_with_a_fresh_challenge(
    core: OsbpCore, adapter: MemoryLifecycleAdapter, clock: FixedClock
) -> None:
    """docs/lifecycle.md, The two-step gate: time passed into the late window; no approval is stretched."""
    booking_id = await book(core)
    inp = cancel_input(booking_id, max_cancellation_fee={"amount_minor": 2000, "currency": "USD"})
    clock.advance(WINDOW_OPENS - NOW - timedelta(minutes=2))
    old = token_of(await core.cancel_booking(inp))
    clock.advance(timedelta(minutes=3))  # the token is still unexpired; the fee applies now
    fresh = await core.cancel_booking(approved(inp, old))
    new = token_of(fresh)
    assert new != old
    assert "changed since the user approved" in refusal(fresh).message
    assert "inside the 6-hour late-cancellation window" in refusal(fresh).message
    assert adapter.writes == 0
    done = await core.cancel_booking(approved(inp, new))
    assert isinstance(done, Success)
    assert done.value.fee == usd(2000)
    assert done.value.text.endswith("A fee of $20.00 was charged.")


@pytest.mark.anyio
async def test_a_version_change_between_challenge_and_retry_answers_a_fresh_challenge(
    core: OsbpCore, adapter: MemoryLifecycleAdapter
) -> None:
    """docs/lifecycle.md, The two-step gate: the appointment's version differs: the old token is refused."""
    booking_id = await book(core)
    inp = cancel_input(booking_id)
    old = token_of(await core.cancel_booking(inp))
    adapter.edit_on_platform(booking_id)
    assert token_of(await core.cancel_booking(approved(inp, old))) != old
    assert adapter.writes == 0


@pytest.mark.anyio
async def test_a_change_between_read_and_write_answers_booking_changed_then_a_fresh_challenge(
    core: OsbpCore, adapter: MemoryLifecycleAdapter
) -> None:
    """docs/lifecycle.md, Problem codes: booking_changed is retryable; the retry gets a fresh challenge."""
    booking_id = await book(core)
    inp = cancel_input(booking_id)
    token = token_of(await core.cancel_booking(inp))
    adapter.edit_before_next_write = True
    changed = refusal(await core.cancel_booking(approved(inp, token)))
    assert (changed.code, changed.retryable) == (ExtensionCode.BOOKING_CHANGED, True)
    assert token_of(await core.cancel_booking(approved(inp, token))) != token
    assert adapter.writes == 0


@pytest.mark.anyio
async def test_a_cancel_whose_answer_was_lost_settles_on_retry_without_a_second_change(
    core: OsbpCore, adapter: MemoryLifecycleAdapter
) -> None:
    """docs/lifecycle.md, Crash safety: intent stored before the call; the platform's replay settles it."""
    booking_id = await book(core)
    inp = cancel_input(booking_id)
    token = token_of(await core.cancel_booking(inp))
    adapter.lose_next_answer = True
    lost = refusal(await core.cancel_booking(approved(inp, token)))
    assert lost.code == ExtensionCode.UPSTREAM_UNAVAILABLE
    unapproved = refusal(await core.cancel_booking(inp))
    assert unapproved.code == ExtensionCode.IDEMPOTENCY_IN_PROGRESS
    settled = await core.cancel_booking(approved(inp, token))
    assert isinstance(settled, Success)
    assert settled.value.status == "cancelled"
    assert adapter.writes == 1


# --- Idempotency --------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_settled_cancel_replays_from_local_state(
    core: OsbpCore, adapter: MemoryLifecycleAdapter
) -> None:
    """docs/lifecycle.md, Inputs and results: a retry after success replays with local_cache_replay."""
    booking_id = await book(core)
    inp = cancel_input(booking_id)
    first = await core.cancel_booking(approved(inp, token_of(await core.cancel_booking(inp))))
    calls = len(adapter.calls)
    again = await core.cancel_booking(inp)
    assert isinstance(first, Success)
    assert isinstance(again, Success)
    assert (again.value, again.runtime) == (first.value, LOCAL_CACHE_REPLAY)
    assert (len(adapter.calls), adapter.writes) == (calls, 1)


@pytest.mark.anyio
async def test_a_key_reused_with_another_payload_or_tool_is_an_idempotency_conflict(
    core: OsbpCore, adapter: MemoryLifecycleAdapter
) -> None:
    """docs/lifecycle.md, Inputs and results: another payload, or the other tool, under a key conflicts."""
    booking_id = await book(core)
    other_id = await book(core, key="create_2", time="12:00")
    inp = cancel_input(booking_id)
    token_of(await core.cancel_booking(inp))
    conflicts = [
        await core.cancel_booking(cancel_input(other_id)),
        await core.reschedule_booking(reschedule_input(booking_id, key="cancel_1")),
        await core.cancel_booking(cancel_input(booking_id, key="create_1")),
    ]
    assert [refusal(result).code for result in conflicts] == [ProblemCode.IDEMPOTENCY_CONFLICT] * 3
    assert adapter.writes == 0


# --- The mandate --------------------------------------------------------------------------------------------

_UNFIXED = {"currency": "USD", "type": "unknown"}


@pytest.mark.parametrize(
    ("changes", "code"),
    [
        ({"id": None}, ProblemCode.INVALID_MANDATE),
        (
            {"max_cancellation_fee": _UNFIXED, "expires_at": "2030-04-01T00:00:00Z"},
            ProblemCode.INVALID_MANDATE,
        ),
        ({"max_reschedule_fee": _UNFIXED}, ProblemCode.INVALID_MANDATE),
        ({"expires_at": "2030-04-01T00:00:00Z", "organization_id": "org_other"}, ProblemCode.MANDATE_EXPIRED),
        (
            {"allowed_actions": ["booking.create"], "organization_id": "org_other"},
            ProblemCode.ACTION_NOT_ALLOWED,
        ),
        ({"organization_id": "org_other", "booking_ids": []}, ProblemCode.ORGANIZATION_NOT_ALLOWED),
        ({"booking_ids": []}, ProblemCode.BOOKING_NOT_FOUND),
        ({"booking_ids": ["appt_other"]}, ProblemCode.BOOKING_NOT_FOUND),
    ],
)
@pytest.mark.anyio
async def test_each_platform_free_step_refuses_in_order_before_any_platform_request(
    core: OsbpCore, adapter: MemoryLifecycleAdapter, changes: dict[str, Any], code: str
) -> None:
    """docs/lifecycle.md, The mandate: validity, expiry, action, organization, booking_ids, in this order."""
    booking_id = await book(core)
    calls = len(adapter.calls)
    assert refusal(await core.cancel_booking(cancel_input(booking_id, **changes))).code == code
    assert refusal(await core.reschedule_booking(reschedule_input(booking_id, **changes))).code == code
    assert len(adapter.calls) == calls


@pytest.mark.anyio
async def test_booking_create_is_not_required_for_a_lifecycle_tool(core: OsbpCore) -> None:
    """docs/lifecycle.md, The mandate: the change's own action is what allowed_actions must list."""
    booking_id = await book(core)
    inp = cancel_input(booking_id, allowed_actions=["booking.cancel"])
    token_of(await core.cancel_booking(inp))
    moved = refusal(
        await core.reschedule_booking(reschedule_input(booking_id, allowed_actions=["booking.cancel"]))
    )
    assert moved.code == ProblemCode.ACTION_NOT_ALLOWED


def test_a_v010_mandate_parses_to_the_same_values_and_unknown_fields_stay_refused() -> None:
    """docs/lifecycle.md, The mandate: a mandate without the extension's fields validates as in v0.1.0."""
    v010 = mandate(allowed_actions=["booking.create"], service_ids=[memory.SERVICE])
    assert LifecycleMandate.model_validate(v010).to_wire() == BookingMandate.model_validate(v010).to_wire()
    for model in (BookingMandate, LifecycleMandate):
        with pytest.raises(ValidationError):
            model.model_validate({**v010, "max_discount": 1})
    # booking.create's input is v0.1.0's: the extension's fields and actions are unknown to it.
    extension: dict[str, Any]
    for extension in ({"max_cancellation_fee": {"amount_minor": 0, "currency": "USD"}}, {"booking_ids": []}):
        with pytest.raises(ValidationError):
            BookingMandate.model_validate({**v010, **extension})
    with pytest.raises(ValidationError):
        BookingMandate.model_validate({**v010, "allowed_actions": ["booking.cancel"]})


# --- Whose booking ------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_another_principals_booking_answers_exactly_as_an_unknown_id(
    core: OsbpCore, adapter: MemoryLifecycleAdapter
) -> None:
    """docs/lifecycle.md, Whose booking: never says the booking exists."""
    alice = Principal("https://issuer.test", "alice", None)
    bob = Principal("https://issuer.test", "bob", None)
    with acting_for(alice):
        booking_id = await book(core)
        unknown = refusal(await core.cancel_booking(cancel_input("appt_nope")))
    calls = len(adapter.calls)
    with acting_for(bob):
        foreign = refusal(await core.cancel_booking(cancel_input(booking_id)))
        moved = refusal(await core.reschedule_booking(reschedule_input(booking_id)))
    assert unknown.code == ProblemCode.BOOKING_NOT_FOUND
    assert foreign == moved == unknown
    assert len(adapter.calls) == calls  # the platform was never asked about it
    with acting_for(alice):
        token_of(await core.cancel_booking(cancel_input(booking_id)))


@pytest.mark.anyio
async def test_a_booking_made_on_the_platforms_own_ui_answers_as_an_unknown_id(
    core: OsbpCore, adapter: MemoryLifecycleAdapter
) -> None:
    """docs/lifecycle.md, Whose booking: only a booking this deployment created can be changed."""
    await book(core)
    adapter.bookings["appt_walk_in"] = Booking(
        id="appt_walk_in",
        status="booked",
        service_id=memory.SERVICE,
        starts_at="2030-05-02T20:00:00Z",
        starts_at_local="2030-05-02T13:00:00",
    )
    walk_in = refusal(await core.cancel_booking(cancel_input("appt_walk_in")))
    assert walk_in == refusal(await core.cancel_booking(cancel_input("appt_nope")))


# --- Status and fees ----------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_a_started_or_cancelled_booking_is_not_cancellable_nor_reschedulable(
    core: OsbpCore, adapter: MemoryLifecycleAdapter, clock: FixedClock
) -> None:
    """docs/lifecycle.md, Problem codes: started or no longer active appointments cannot change."""
    booking_id = await book(core)
    adapter.bookings[booking_id] = adapter.bookings[booking_id].model_copy(update={"status": "cancelled"})
    assert (
        refusal(await core.cancel_booking(cancel_input(booking_id))).code
        == ExtensionCode.BOOKING_NOT_CANCELLABLE
    )
    moved = refusal(await core.reschedule_booking(reschedule_input(booking_id)))
    assert moved.code == ExtensionCode.BOOKING_NOT_RESCHEDULABLE
    started_id = await book(core, key="create_2", time="12:00")
    clock.advance(timedelta(days=1, hours=3, minutes=30))  # 12:30 local on the appointment's day
    started = refusal(await core.cancel_booking(cancel_input(started_id, key="cancel_2")))
    assert (started.code, "already started" in started.message) == (
        ExtensionCode.BOOKING_NOT_CANCELLABLE,
        True,
    )


@pytest.mark.parametrize(("cap", "allowed"), [(2000, True), (1999, False), (None, False)])
@pytest.mark.anyio
async def test_the_late_cancellation_fee_is_capped_by_max_cancellation_fee(
    core: OsbpCore, clock: FixedClock, cap: int | None, allowed: bool
) -> None:
    """docs/lifecycle.md, The mandate: max_cancellation_fee (default zero) caps the fee that applies now."""
    booking_id = await book(core)
    clock.advance(LATE - NOW)
    fee_cap = {"amount_minor": cap, "currency": "USD"} if cap is not None else None
    result = await core.cancel_booking(cancel_input(booking_id, max_cancellation_fee=fee_cap))
    if allowed:
        assert "costs a cancellation fee of $20.00" in refusal(result).message
        token_of(result)
        return
    refused = refusal(result)
    assert (refused.code, refused.retryable) == (ExtensionCode.CANCELLATION_FEE_EXCEEDS_MANDATE, False)
    assert "$20.00" in refused.message
    assert "was free until 04:00 on 2030-05-02 (America/Los_Angeles)" in refused.message


@pytest.mark.anyio
async def test_an_unknown_fee_fails_closed_without_a_token(
    core: OsbpCore, adapter: MemoryLifecycleAdapter
) -> None:
    """docs/lifecycle.md, The mandate: an unknown fee is the terminal requires_user_confirmation."""
    booking_id = await book(core)
    adapter.unknown_cancellation_fee = True
    adapter.reschedule_fee = None
    for result in (
        await core.cancel_booking(cancel_input(booking_id)),
        await core.reschedule_booking(reschedule_input(booking_id)),
    ):
        refused = refusal(result)
        assert (refused.code, refused.retryable) == (ProblemCode.REQUIRES_USER_CONFIRMATION, False)
        assert APPROVAL_TOKEN_PATTERN.search(refused.message) is None
    assert adapter.writes == 0


# --- Reschedule ---------------------------------------------------------------------------------------------


@pytest.mark.anyio
async def test_an_approved_reschedule_moves_the_same_appointment(
    core: OsbpCore, adapter: MemoryLifecycleAdapter
) -> None:
    """docs/lifecycle.md, Inputs and results: the same booking id, with previous and current positions."""
    booking_id = await book(core)
    inp = reschedule_input(booking_id)
    challenge = await core.reschedule_booking(inp)
    summary = refusal(challenge).message
    assert "to Friday, 2030-05-03 at 14:00 (America/Los_Angeles time) with Jordan Lee" in summary
    assert "the current appointment costs $95.00, the new one $95.00; no difference" in summary
    assert "There is no reschedule fee." in summary
    done = await core.reschedule_booking(approved(inp, token_of(challenge)))
    assert isinstance(done, Success)
    value = done.value
    assert isinstance(value, RescheduleResult)
    assert (value.booking_id, value.status, value.fee) == (booking_id, "booked", usd(0))
    assert (value.previous.starts_at_local, value.current.starts_at_local) == (
        "2030-05-02T10:00:00",
        "2030-05-03T14:00:00",
    )
    assert value.current.starts_at == "2030-05-03T21:00:00Z"
    assert value.text == (
        "Moved Haircut from 2030-05-02 at 10:00 to 2030-05-03 at 14:00 (America/Los_Angeles). "
        "No fee was charged."
    )
    assert adapter.bookings[booking_id].starts_at_local == "2030-05-03T14:00:00"
    assert len(adapter.bookings) == 1


@pytest.mark.anyio
async def test_the_reschedule_summary_states_both_prices_and_a_new_price_refuses_the_old_token(
    core: OsbpCore, adapter: MemoryLifecycleAdapter
) -> None:
    """docs/lifecycle.md, The two-step gate: both prices and their difference; a changed price re-asks."""
    booking_id = await book(core)
    adapter.price = usd(11000)
    inp = reschedule_input(booking_id, max_price={"amount_minor": 12000, "currency": "USD"})
    challenge = refusal(await core.reschedule_booking(inp))
    assert "the current appointment costs $95.00, the new one $110.00; $15.00 more." in challenge.message
    old = token_of(Failure(challenge))
    adapter.price = usd(11500)
    fresh = refusal(await core.reschedule_booking(approved(inp, old)))
    assert "the new one $115.00; $20.00 more." in fresh.message
    assert token_of(Failure(fresh)) != old
    assert adapter.writes == 0


@pytest.mark.parametrize(
    ("date", "time", "changes", "code"),
    [
        ("2030-05-10", "14:00", {}, ProblemCode.SLOT_TOO_LATE),
        ("2030-05-03", "14:00", {"earliest_start": "2030-05-04T00:00:00"}, ProblemCode.SLOT_TOO_EARLY),
        (
            "2030-05-03",
            "14:00",
            {"max_price": {"amount_minor": 9000, "currency": "USD"}},
            ProblemCode.PRICE_EXCEEDS_MANDATE,
        ),
        ("2030-05-03", "14:00", {"provider_ids": ["prv_other"]}, ProblemCode.PROVIDER_NOT_ALLOWED),
        ("2030-05-03", "20:00", {}, ProblemCode.SLOT_TAKEN),
        ("2030-05-03", "2pm", {}, ProblemCode.INVALID_MANDATE),
    ],
)
@pytest.mark.anyio
async def test_the_new_slot_is_refused_with_create_s_codes(
    core: OsbpCore, adapter: MemoryLifecycleAdapter, date: str, time: str, changes: dict[str, Any], code: str
) -> None:
    """docs/lifecycle.md, The mandate: the new slot goes through booking.create's rules, price in full."""
    booking_id = await book(core)
    assert (
        refusal(await core.reschedule_booking(reschedule_input(booking_id, date, time, **changes))).code
        == code
    )
    assert adapter.writes == 0


@pytest.mark.parametrize(("cap", "code"), [(None, ExtensionCode.RESCHEDULE_FEE_EXCEEDS_MANDATE), (500, None)])
@pytest.mark.anyio
async def test_the_reschedule_fee_is_capped_by_max_reschedule_fee(
    core: OsbpCore, adapter: MemoryLifecycleAdapter, cap: int | None, code: str | None
) -> None:
    """docs/lifecycle.md, The mandate: max_reschedule_fee (default zero) caps the platform's fee."""
    booking_id = await book(core)
    adapter.reschedule_fee = usd(500)
    fee_cap = {"amount_minor": cap, "currency": "USD"} if cap is not None else None
    result = await core.reschedule_booking(reschedule_input(booking_id, max_reschedule_fee=fee_cap))
    if code is None:
        assert "reschedule fee of $5.00" in refusal(result).message
        token_of(result)
    else:
        assert refusal(result).code == code


@pytest.mark.anyio
async def test_a_new_slot_taken_at_write_time_leaves_the_appointment_unchanged(
    core: OsbpCore, adapter: MemoryLifecycleAdapter
) -> None:
    """docs/lifecycle.md, Problem codes: slot_taken; the original appointment is unchanged."""
    booking_id = await book(core)
    inp = reschedule_input(booking_id, date="2030-05-02", time="12:00")
    token = token_of(await core.reschedule_booking(inp))
    await book(core, key="create_2", time="12:00")  # someone else takes it meanwhile
    taken = refusal(await core.reschedule_booking(approved(inp, token)))
    assert (taken.code, taken.retryable) == (ProblemCode.SLOT_TAKEN, True)
    assert "The original appointment is unchanged." in taken.message
    assert adapter.bookings[booking_id].starts_at_local == "2030-05-02T10:00:00"


@pytest.mark.anyio
async def test_a_reschedule_whose_answer_was_lost_settles_once_and_then_replays(
    core: OsbpCore, adapter: MemoryLifecycleAdapter
) -> None:
    """docs/lifecycle.md, Crash safety: one logical change is one platform change; then a local replay."""
    booking_id = await book(core)
    inp = reschedule_input(booking_id)
    token = token_of(await core.reschedule_booking(inp))
    adapter.lose_next_answer = True
    assert (
        refusal(await core.reschedule_booking(approved(inp, token))).code
        == ExtensionCode.UPSTREAM_UNAVAILABLE
    )
    settled = await core.reschedule_booking(approved(inp, token))
    replayed = await core.reschedule_booking(inp)
    assert isinstance(settled, Success)
    assert isinstance(replayed, Success)
    assert isinstance(replayed.value, RescheduleResult)
    assert (replayed.value, replayed.runtime) == (settled.value, LOCAL_CACHE_REPLAY)
    assert replayed.value.current.starts_at_local == "2030-05-03T14:00:00"
    assert adapter.writes == 1
