"""booking.create against the real platform: order of checks, the gate, idempotency, verification, mapping."""

from __future__ import annotations

import json
import socket
import sqlite3
from datetime import timedelta
from pathlib import Path

import anyio
import httpx2
import pytest
from sqlalchemy import text

from osbp.adapter.bookwell import native_idempotency_key
from osbp.protocol.canonical import sha256_hex
from osbp.protocol.clock import FixedClock
from osbp.protocol.contract import Success
from osbp.protocol.core import OsbpCore
from osbp.protocol.idempotency import LOCAL_CACHE_REPLAY
from osbp.protocol.models import (
    BookingCreateInput,
    BookingStatusInput,
    Customer,
    Money,
    PolicyExplainInput,
    VerificationSendInput,
)
from osbp.protocol.store import secret_hash
from osbp.protocol.upstream import capture_upstream
from tests.support.reference import (
    CLEANING,
    DAY,
    JANE,
    MIDTOWN,
    NOW,
    OKAFOR,
    ORG,
    REYES,
    ForwardingTransport,
    Platform,
    approved,
    book,
    create_input,
    make_adapter,
    mandate,
    problem_of,
    summary_of,
    token_of,
    value_of,
)

pytestmark = pytest.mark.anyio


def set_price(platform: Platform, service_id: str, amount: str) -> None:
    """The merchant edits its catalog (the platform has no admin API, so its own database is used)."""
    with platform.server.runtime.db.write() as session:
        session.execute(
            text("UPDATE service SET price_amount = :amount WHERE id = :id"),
            {"amount": amount, "id": service_id},
        )


# --- The canonical flow -------------------------------------------------------------------------------------


async def test_first_call_is_a_challenge_and_creates_nothing(platform: Platform, adapter: OsbpCore) -> None:
    """OSBP spec, booking.create: a valid call without approval returns requires_user_confirmation first."""
    with capture_upstream() as capture:
        failure = problem_of(await adapter.create_booking(create_input()))
    assert (failure.problem.code, failure.problem.retryable) == ("requires_user_confirmation", True)
    assert f'approval.token="{token_of(failure)}"' in failure.problem.message
    assert platform.create_requests() == 0
    assert all(meta.call.startswith("GET ") for meta in capture.calls)


async def test_challenge_summary_shows_the_resolved_booking_in_plain_prose(adapter: OsbpCore) -> None:
    """OSBP spec, booking.create: service, local time with zone, provider, location, price, fees, name."""
    failure = problem_of(await adapter.create_booking(create_input()))
    summary = summary_of(failure.problem.message)
    for fact in (
        "Regular cleaning",
        "2026-05-05 at 10:00",
        "America/New_York",
        "Dr. Carolyn Reyes",
        "Carolyn's Dental Midtown",
        "$120.00",
        "No upfront payment or deposit is required to book.",
        "No-show fee: $50.00",
        "Jane Customer",
    ):
        assert fact in summary
    assert "approval.token" not in summary
    assert "payment_requirement" not in summary


async def test_approved_create_books_and_returns_a_readable_receipt(
    platform: Platform, adapter: OsbpCore
) -> None:
    """OSBP spec, booking.create: the approved retry creates the appointment and returns a Receipt."""
    inp = create_input()
    token = token_of(await adapter.create_booking(inp))
    with capture_upstream() as capture:
        receipt = value_of(await adapter.create_booking(approved(inp, token)))
    assert receipt.id == "receipt_idem-test-001"
    assert receipt.booking_id.startswith("apt_")
    assert receipt.text == (
        f"Booked Regular cleaning on 2026-05-05 at 10:00 America/New_York with Dr. Carolyn Reyes. "
        f"Booking id: {receipt.booking_id}."
    )
    assert platform.create_requests() == 1
    assert platform.active_appointments(ORG) == 1
    calls = [meta.call for meta in capture.calls]
    # The approved offer is placed with its validator: no re-read of what the user just approved.
    assert calls == [f"POST /api/organizations/{ORG}/appointments"]
    assert capture.last is not None
    assert capture.last.status == 201


async def test_create_passes_mandate_id_customer_and_derived_idempotency_key(
    platform: Platform, adapter: OsbpCore
) -> None:
    """OSBP spec, booking.create: native Idempotency-Key derived from the OSBP key; the mandate id in the
    metadata."""
    receipt = value_of(await book(adapter, create_input()))
    native = platform.appointment(ORG, receipt.booking_id)
    assert native["metadata"] == {"mandate_id": "mnd_test_001", "osbp_receipt_id": "receipt_idem-test-001"}
    assert native["customer"]["display_name"] == "Jane Customer"
    assert (native["customer"]["given_name"], native["customer"]["family_name"]) == ("Jane", "Customer")
    assert native["customer"]["phone"] == "+12125550199"
    # The platform replays its stored 201 for the same native key: proof of which key the adapter sent.
    body = {
        "service_id": CLEANING,
        "location_id": MIDTOWN,
        "provider_id": REYES,
        "date": DAY,
        "time": "10:00",
        "customer": {
            "display_name": "Jane Customer",
            "given_name": "Jane",
            "family_name": "Customer",
            "phone": "+12125550199",
        },
        "metadata": {"mandate_id": "mnd_test_001", "osbp_receipt_id": "receipt_idem-test-001"},
    }
    replay = platform.client.post(
        f"/api/organizations/{ORG}/appointments",
        json=body,
        headers={"Idempotency-Key": native_idempotency_key(ORG, "idem-test-001")},
    )
    assert replay.headers.get("idempotent-replayed") == "true"
    assert replay.json()["id"] == receipt.booking_id


async def test_booking_status_after_create_reports_booked(adapter: OsbpCore) -> None:
    """OSBP spec, Canonical Flow: preflight → approved create → booking.status."""
    receipt = value_of(await book(adapter, create_input()))
    booking = value_of(await adapter.get_booking(BookingStatusInput(booking_id=receipt.booking_id)))
    assert booking.to_wire() == {
        "id": receipt.booking_id,
        "status": "booked",
        "organization_id": ORG,
        "service_id": CLEANING,
        "schedule_id": MIDTOWN,
        "provider_id": REYES,
        "starts_at": "2026-05-05T14:00:00Z",
        "ends_at": "2026-05-05T14:45:00Z",
        "starts_at_local": "2026-05-05T10:00:00",
        "ends_at_local": "2026-05-05T10:45:00",
        "schedule_timezone": "America/New_York",
    }


# --- Idempotency --------------------------------------------------------------------------------------------


async def test_replay_returns_the_stored_receipt_without_any_platform_request(
    platform: Platform, adapter: OsbpCore
) -> None:
    """OSBP spec, booking.create: same key and payload → same receipt without contacting the platform."""
    inp = create_input()
    token = token_of(await adapter.create_booking(inp))
    first = await adapter.create_booking(approved(inp, token))
    with capture_upstream() as capture:
        again = await adapter.create_booking(approved(inp, token))
        bare = await adapter.create_booking(inp)
    assert isinstance(first, Success)
    assert isinstance(again, Success)
    assert isinstance(bare, Success)
    assert again.value == first.value == bare.value
    assert again.runtime == LOCAL_CACHE_REPLAY
    assert again.runtime is not None
    assert again.runtime.idempotency == "local_cache_replay"
    assert capture.calls == []
    assert platform.create_requests() == 1


async def test_replay_survives_a_new_adapter_on_the_same_state_file(
    platform: Platform, state_path: Path, clock: FixedClock
) -> None:
    """OSBP spec, booking.create: the idempotency store is durable across an adapter restart."""
    inp = create_input()
    first = make_adapter(platform.base_url, state_path, clock)
    receipt = value_of(await book(first, inp))
    await first.aclose()
    second = make_adapter(platform.base_url, state_path, clock)
    replay = await second.create_booking(inp)
    await second.aclose()
    assert isinstance(replay, Success)
    assert (replay.value, replay.runtime) == (receipt, LOCAL_CACHE_REPLAY)
    assert platform.create_requests() == 1


async def test_same_key_with_another_payload_is_an_idempotency_conflict(
    platform: Platform, adapter: OsbpCore
) -> None:
    """OSBP spec, booking.create: the same key with a different payload fails with idempotency_conflict."""
    value_of(await book(adapter, create_input()))
    with capture_upstream() as capture:
        failure = problem_of(await adapter.create_booking(create_input(time="11:00")))
    assert (failure.problem.code, failure.problem.retryable) == ("idempotency_conflict", False)
    assert capture.calls == []
    assert platform.create_requests() == 1


async def test_concurrent_duplicates_make_exactly_one_platform_create(
    platform: Platform, adapter: OsbpCore
) -> None:
    """OSBP spec, booking.create: concurrent duplicates of one key → exactly one platform create."""
    inp = create_input()
    token = token_of(await adapter.create_booking(inp))
    results: list[object] = []

    async def attempt() -> None:
        results.append(await adapter.create_booking(approved(inp, token)))

    async with anyio.create_task_group() as group:
        for _ in range(5):
            group.start_soon(attempt)
    receipts = [result.value for result in results if isinstance(result, Success)]
    assert len(receipts) == 5
    assert len({receipt.booking_id for receipt in receipts}) == 1
    assert sum(1 for result in results if isinstance(result, Success) and result.runtime is None) == 1
    assert platform.create_requests() == 1
    assert platform.active_appointments(ORG) == 1


async def test_platform_idempotency_mismatch_is_idempotency_conflict_not_slot_taken(
    platform: Platform, tmp_path: Path, clock: FixedClock
) -> None:
    """OSBP spec, booking.create: the platform's own idempotency mismatch → idempotency_conflict (never
    slot_taken)."""
    first = make_adapter(platform.base_url, tmp_path / "a.sqlite3", clock)
    value_of(await book(first, create_input()))
    await first.aclose()
    # A cleared local store: only the platform still remembers the key, now with another body.
    second = make_adapter(platform.base_url, tmp_path / "b.sqlite3", clock)
    failure = problem_of(await book(second, create_input(time="11:00")))
    await second.aclose()
    assert (failure.problem.code, failure.problem.retryable) == ("idempotency_conflict", False)
    assert platform.active_appointments(ORG) == 1


async def test_a_failed_attempt_releases_the_key_for_its_retry(platform: Platform, adapter: OsbpCore) -> None:
    """OSBP spec, booking.create: the agent retries the same attempt with the same key after a refusal."""
    inp = create_input()
    token = token_of(await adapter.create_booking(inp))
    platform.arm(ORG, "rate_limited")
    limited = problem_of(await adapter.create_booking(approved(inp, token)))
    assert (limited.problem.code, limited.problem.retryable) == ("rate_limited", True)
    receipt = value_of(await adapter.create_booking(approved(inp, token)))
    assert receipt.booking_id.startswith("apt_")
    assert platform.create_requests() == 2
    assert platform.active_appointments(ORG) == 1


# --- Mandate before the gate, scope before availability -----------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "code"),
    [
        ({"mandate": mandate(id=None)}, "invalid_mandate"),
        ({"mandate": mandate(expires_at="2026-05-05T23:59:59")}, "invalid_mandate"),
        ({"mandate": mandate(earliest_start="2026-05-05T08:00:00Z")}, "invalid_mandate"),
        ({"mandate": mandate(expires_at="2026-05-04T07:59:59-04:00")}, "mandate_expired"),
        ({"mandate": mandate(allowed_actions=["booking.status"])}, "action_not_allowed"),
        ({"mandate": mandate(organization_id="gus_notary")}, "organization_not_allowed"),
        ({"mandate": mandate(service_ids=["carolyns_dental_checkup"])}, "service_not_allowed"),
        ({"mandate": mandate(schedule_ids=[])}, "schedule_not_allowed"),
        ({"mandate": mandate(provider_ids=[OKAFOR])}, "provider_not_allowed"),
        ({"mandate": mandate(provider_ids=[REYES]), "provider_id": ""}, "provider_unknown"),
        ({"mandate": mandate(earliest_start="2026-05-05T10:30:00")}, "slot_too_early"),
        ({"mandate": mandate(latest_end="2026-05-05T10:44:00")}, "slot_too_late"),
        ({"mandate": mandate(max_price=Money(amount_minor=11999, currency="USD"))}, "price_exceeds_mandate"),
        ({"mandate": mandate(max_price=Money(amount_minor=20000, currency="EUR"))}, "currency_mismatch"),
        ({"service_id": "carolyns_dental_filling"}, "requires_user_confirmation"),
        (
            {
                "service_id": "carolyns_dental_new_patient_exam",
                "mandate": mandate(max_price=Money(amount_minor=100000, currency="USD")),
            },
            "requires_consultation_handoff",
        ),
        (
            {
                "service_id": "carolyns_dental_crown",
                "mandate": mandate(max_price=Money(amount_minor=200000, currency="USD")),
            },
            "requires_payment_handoff",
        ),
        ({"service_id": "carolyns_dental_treatment_plan"}, "requires_user_confirmation"),
        ({"date": "2026-05-05", "time": "10:00+02:00"}, "invalid_mandate"),
    ],
)
async def test_mandate_problems_come_back_on_the_first_call_before_any_challenge(
    platform: Platform, adapter: OsbpCore, overrides: dict[str, object], code: str
) -> None:
    """OSBP spec, Mandate Enforcement: every rule runs before the approval gate and before any create."""
    failure = problem_of(await adapter.create_booking(create_input(**overrides)))
    assert failure.problem.code == code
    assert "approval.token" not in failure.problem.message
    assert failure.problem.retryable is False
    assert platform.create_requests() == 0


async def test_price_at_the_cap_passes_to_the_challenge(adapter: OsbpCore) -> None:
    """OSBP spec, Mandate Enforcement: the amount "at or below" max_price passes (boundary inclusive)."""
    inp = create_input(mandate=mandate(max_price=Money(amount_minor=12000, currency="USD")))
    assert problem_of(await adapter.create_booking(inp)).problem.code == "requires_user_confirmation"


async def test_a_key_stays_bound_to_its_payload_after_a_failed_attempt(
    platform: Platform, adapter: OsbpCore
) -> None:
    """OSBP spec, idempotency: the same key with a different payload fails with idempotency_conflict,
    also when the first attempt ended without creating; the same payload may still be retried."""
    first = problem_of(await adapter.create_booking(create_input(time="10:05")))  # not offered
    assert first.problem.code == "slot_taken"
    moved = problem_of(await adapter.create_booking(create_input(time="10:00")))
    assert (moved.problem.code, moved.problem.retryable) == ("idempotency_conflict", False)
    again = problem_of(await adapter.create_booking(create_input(time="10:05")))
    assert again.problem.code == "slot_taken"
    assert platform.create_requests() == 0
    value_of(await book(adapter, create_input(idempotency_key="idem-fresh", time="10:00")))


async def test_provider_outside_the_mandate_wins_over_a_taken_slot(adapter: OsbpCore) -> None:
    """OSBP spec, Mandate Enforcement: scope wins over availability (provider_not_allowed, not slot_taken)."""
    value_of(await book(adapter, create_input()))
    inp = create_input(idempotency_key="idem-other", mandate=mandate(provider_ids=[OKAFOR]))
    assert problem_of(await adapter.create_booking(inp)).problem.code == "provider_not_allowed"


async def test_unknown_provider_outside_the_mandate_is_provider_not_allowed(
    adapter: OsbpCore,
) -> None:
    """OSBP spec, Mandate Enforcement: scope wins even over ids the platform does not know."""
    inp = create_input(provider_id="nobody", mandate=mandate(provider_ids=[REYES]))
    assert problem_of(await adapter.create_booking(inp)).problem.code == "provider_not_allowed"


async def test_unknown_service_outside_the_mandate_is_service_not_allowed(adapter: OsbpCore) -> None:
    """OSBP spec, Mandate Enforcement: mandate scope answers before the platform's "not found"."""
    inp = create_input(service_id="no_such_service", mandate=mandate(service_ids=[CLEANING]))
    assert problem_of(await adapter.create_booking(inp)).problem.code == "service_not_allowed"


async def test_unknown_ids_inside_the_mandate_are_named(adapter: OsbpCore) -> None:
    """OSBP spec, Adapter Contract (status mapping): ids the platform does not know map to adapter-specific
    not-found codes."""
    # One idempotency key per attempt: a key stays bound to its first payload even after a failure.
    service = problem_of(
        await adapter.create_booking(create_input(idempotency_key="k-svc", service_id="no_such_service"))
    )
    schedule = problem_of(
        await adapter.create_booking(create_input(idempotency_key="k-loc", schedule_id="no_such_location"))
    )
    provider = problem_of(
        await adapter.create_booking(create_input(idempotency_key="k-prov", provider_id="no_such_provider"))
    )
    assert (service.problem.code, schedule.problem.code, provider.problem.code) == (
        "service_not_found",
        "schedule_not_found",
        "provider_not_found",
    )


async def test_empty_provider_without_provider_scope_is_still_provider_unknown(
    adapter: OsbpCore,
) -> None:
    """OSBP spec, Mandate Enforcement: an empty provider_id never reaches the platform (provider_unknown)."""
    assert (
        problem_of(await adapter.create_booking(create_input(provider_id=""))).problem.code
        == "provider_unknown"
    )


async def test_a_time_no_longer_offered_is_slot_taken_on_preflight(adapter: OsbpCore) -> None:
    """OSBP spec, booking.create: the slot is still bookable, else slot_taken (retryable), before any
    challenge."""
    value_of(await book(adapter, create_input()))
    failure = problem_of(await adapter.create_booking(create_input(idempotency_key="idem-late")))
    assert (failure.problem.code, failure.problem.retryable) == ("slot_taken", True)


async def test_off_grid_or_closed_times_are_slot_taken(adapter: OsbpCore) -> None:
    """Platform choice: a time the platform does not offer is never sent to its create endpoint."""
    off_grid = problem_of(await adapter.create_booking(create_input(idempotency_key="k-grid", time="10:05")))
    sunday = create_input(
        idempotency_key="k-closed", date="2026-05-03", mandate=mandate(earliest_start="2026-05-03T08:00:00")
    )
    closed = problem_of(await adapter.create_booking(sunday))
    assert (off_grid.problem.code, closed.problem.code) == ("slot_taken", "slot_taken")


async def test_a_customer_without_name_or_contact_is_refused_before_the_gate(
    platform: Platform, adapter: OsbpCore
) -> None:
    """OSBP spec, Customer: the platform needs a name and a contact; fail before asking for approval."""
    no_contact = create_input(idempotency_key="k-1", customer=Customer(display_name="Jane"))
    no_name = create_input(idempotency_key="k-2", customer=Customer(phone="+12125550199"))
    no_customer = create_input(idempotency_key="k-3").model_copy(update={"customer": None})
    attempts = (no_contact, no_name, no_customer)
    codes = {problem_of(await adapter.create_booking(inp)).problem.code for inp in attempts}
    assert codes == {"invalid_customer"}
    assert platform.create_requests() == 0


async def test_a_malformed_phone_is_the_platforms_to_reject(platform: Platform, adapter: OsbpCore) -> None:
    """OSBP spec, Customer: contacts pass through; the platform enforces its formats (invalid_customer)."""
    failure = problem_of(
        await book(adapter, create_input(customer=Customer(display_name="Jane", phone="555-0100")))
    )
    assert failure.problem.code == "invalid_customer"
    assert "555-0100" not in failure.problem.message
    assert platform.create_requests() == 1


async def test_given_and_family_name_become_the_merchant_visible_name(
    platform: Platform, adapter: OsbpCore
) -> None:
    """OSBP spec, booking.create: the summary shows the merchant-visible name that is sent."""
    customer = Customer(given_name="Alex", family_name="Smith", email="alex@example.com")
    inp = create_input(customer=customer)
    challenge = problem_of(await adapter.create_booking(inp))
    assert "The merchant will see the customer name: Alex Smith." in challenge.problem.message
    receipt = value_of(await adapter.create_booking(approved(inp, token_of(challenge))))
    assert platform.appointment(ORG, receipt.booking_id)["customer"]["display_name"] == "Alex Smith"


# --- The gate -----------------------------------------------------------------------------------------------


async def test_a_token_never_authorizes_another_payload_or_key(platform: Platform, adapter: OsbpCore) -> None:
    """OSBP spec, booking.create: a leaked token cannot authorize a different booking or idempotency key."""
    token = token_of(await adapter.create_booking(create_input()))
    other_time = problem_of(
        await adapter.create_booking(approved(create_input(idempotency_key="k2", time="11:00"), token))
    )
    other_key = problem_of(await adapter.create_booking(approved(create_input(idempotency_key="k3"), token)))
    assert token_of(other_time) != token
    assert token_of(other_key) != token
    assert platform.create_requests() == 0


async def test_an_expired_token_is_re_challenged(
    platform: Platform, adapter: OsbpCore, clock: FixedClock
) -> None:
    """OSBP spec, booking.create: a token expires after a short TTL (ten minutes)."""
    inp = create_input()
    token = token_of(await adapter.create_booking(inp))
    clock.advance(timedelta(minutes=10, seconds=1))
    failure = problem_of(await adapter.create_booking(approved(inp, token)))
    assert token_of(failure) != token
    assert "expired" in failure.problem.message
    assert platform.create_requests() == 0


async def test_a_resolved_price_change_re_challenges_with_a_fresh_summary(
    platform: Platform, adapter: OsbpCore
) -> None:
    """OSBP spec, booking.create: if resolved facts such as the price change, re-challenge the user."""
    inp = create_input()
    first = problem_of(await adapter.create_booking(inp))
    old_token = token_of(first)
    assert "$120.00" in first.problem.message
    set_price(platform, CLEANING, "130.00")
    again = problem_of(await adapter.create_booking(approved(inp, old_token)))
    assert again.problem.code == "requires_user_confirmation"
    assert "changed" in again.problem.message
    assert "$130.00" in summary_of(again.problem.message)
    new_token = token_of(again)
    assert new_token != old_token
    # The one create sent carried the approved offer's validator, and the platform refused it (412).
    assert (platform.create_requests(), platform.active_appointments(ORG)) == (1, 0)
    receipt = value_of(await adapter.create_booking(approved(inp, new_token)))
    assert platform.appointment(ORG, receipt.booking_id)["price"]["amount"] == "130.00"


async def test_a_price_raised_above_the_cap_after_preflight_is_refused(
    platform: Platform, adapter: OsbpCore
) -> None:
    """OSBP spec, Mandate Enforcement: the mandate is re-validated on the approved retry."""
    inp = create_input()
    token = token_of(await adapter.create_booking(inp))
    set_price(platform, CLEANING, "150.01")
    failure = problem_of(await adapter.create_booking(approved(inp, token)))
    assert failure.problem.code == "price_exceeds_mandate"
    assert (platform.create_requests(), platform.active_appointments(ORG)) == (1, 0)


async def test_token_is_spent_after_success(adapter: OsbpCore, state_path: Path) -> None:
    """OSBP spec, booking.create: once created the token is spent; replays are idempotency's job."""
    inp = create_input()
    token = token_of(await adapter.create_booking(inp))
    value_of(await adapter.create_booking(approved(inp, token)))
    with sqlite3.connect(state_path) as db:
        spent = db.execute(
            "SELECT spent_at FROM approvals WHERE token_hash = ?", (secret_hash(token),)
        ).fetchone()
    assert spent is not None
    assert spent[0] is not None


# --- Armed platform outcomes and verification ---------------------------------------------------------------


async def test_armed_slot_taken_on_the_approved_create_is_slot_taken(
    platform: Platform, adapter: OsbpCore
) -> None:
    """OSBP spec, booking.create: platform slot conflict → slot_taken (retryable)."""
    inp = create_input()
    token = token_of(await adapter.create_booking(inp))
    platform.arm(ORG, "slot_taken")
    failure = problem_of(await adapter.create_booking(approved(inp, token)))
    assert (failure.problem.code, failure.problem.retryable) == ("slot_taken", True)
    assert platform.active_appointments(ORG) == 0


async def test_armed_requires_verification_is_requires_verification(
    platform: Platform, adapter: OsbpCore
) -> None:
    """OSBP spec, booking.create: platform 428 → requires_verification (retryable)."""
    inp = create_input()
    token = token_of(await adapter.create_booking(inp))
    platform.arm(ORG, "requires_verification")
    failure = problem_of(await adapter.create_booking(approved(inp, token)))
    assert (failure.problem.code, failure.problem.retryable) == ("requires_verification", True)
    assert "verification.send" in failure.problem.message


GUS = "gus_notary"
REMOTE = "gus_notary_remote_signing"


def remote_signing(**overrides: object) -> BookingCreateInput:
    """A booking.create for Gus' Notary remote signing (sms verification) at 10:00 on DAY."""
    values: dict[str, object] = {
        "mandate": mandate(organization_id=GUS),
        "service_id": REMOTE,
        "schedule_id": "gus_notary_online",
        "provider_id": "gus_notary_gus",
        "customer": Customer(display_name="Pat Signer", phone="+12125550142"),
    } | overrides
    return create_input(**values)


async def test_verification_send_then_code_then_create(
    platform: Platform, tmp_path: Path, clock: FixedClock
) -> None:
    """OSBP spec, Canonical Flow: requires_verification → verification.send → code out of band → create."""
    adapter = make_adapter(platform.base_url, tmp_path / "s.sqlite3", clock, organization_id=GUS)
    inp = remote_signing()
    token = token_of(await adapter.create_booking(inp))
    needs = problem_of(await adapter.create_booking(approved(inp, token)))
    assert (needs.problem.code, needs.problem.retryable) == ("requires_verification", True)
    assert "by sms" in needs.problem.message
    sent = value_of(
        await adapter.send_verification(
            VerificationSendInput(customer=Customer(phone="+12125550142"), purpose=f"booking:{GUS}")
        )
    )
    assert (sent.sent, sent.method) == (True, "sms")
    code = platform.latest_code(GUS)
    with_code = approved(inp, token).model_copy(update={"verification_code": code})
    receipt = value_of(await adapter.create_booking(with_code))
    await adapter.aclose()
    native = platform.appointment(GUS, receipt.booking_id)
    assert native["verified_by"] == "sms"
    assert receipt.text.startswith(
        "Booked Remote signing session on 2026-05-05 at 10:00 America/New_York with Gus Alvarez."
    )


async def test_a_wrong_code_is_verification_failed(
    platform: Platform, tmp_path: Path, clock: FixedClock
) -> None:
    """OSBP spec, booking.create: wrong/expired code → verification_failed."""
    adapter = make_adapter(platform.base_url, tmp_path / "s.sqlite3", clock, organization_id=GUS)
    inp = remote_signing()
    token = token_of(await adapter.create_booking(inp))
    value_of(await adapter.send_verification(VerificationSendInput(customer=Customer(phone="+12125550142"))))
    wrong = "000000" if platform.latest_code(GUS) != "000000" else "111111"
    with_code = approved(inp, token).model_copy(update={"verification_code": wrong})
    failure = problem_of(await adapter.create_booking(with_code))
    await adapter.aclose()
    assert failure.problem.code == "verification_failed"
    assert wrong not in failure.problem.message
    assert platform.active_appointments(GUS) == 0


async def test_verification_code_is_transient_and_not_a_new_attempt(
    platform: Platform, tmp_path: Path, clock: FixedClock
) -> None:
    """OSBP spec, booking.create: verification_code is excluded from the payload hash (same attempt)."""
    adapter = make_adapter(platform.base_url, tmp_path / "s.sqlite3", clock, organization_id="conformance_co")
    inp = create_input(
        mandate=mandate(organization_id="conformance_co"),
        service_id="conformance_verification",
        schedule_id="conformance_main",
        provider_id="conformance_provider_ada",
    )
    token = token_of(await adapter.create_booking(inp))
    assert (
        problem_of(await adapter.create_booking(approved(inp, token))).problem.code == "requires_verification"
    )
    value_of(await adapter.send_verification(VerificationSendInput(customer=JANE)))
    receipt = value_of(
        await adapter.create_booking(approved(inp, token).model_copy(update={"verification_code": "123456"}))
    )
    replay = await adapter.create_booking(inp)
    await adapter.aclose()
    assert isinstance(replay, Success)
    assert (replay.value, replay.runtime) == (receipt, LOCAL_CACHE_REPLAY)


async def test_platform_down_on_create_is_retryable_upstream_unavailable(
    platform: Platform, tmp_path: Path, clock: FixedClock
) -> None:
    """OSBP spec, Adapter Contract: 5xx, timeouts and refused connections → a retryable adapter-specific
    Problem."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    adapter = make_adapter(f"http://127.0.0.1:{port}", tmp_path / "s.sqlite3", clock)
    failure = problem_of(await adapter.create_booking(create_input()))
    await adapter.aclose()
    assert (failure.problem.code, failure.problem.retryable) == ("upstream_unavailable", True)


class UnknownFeeTransport(ForwardingTransport):
    """The real platform, except that its service answers report a no-show fee without an amount."""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send for real; rewrite one service's policy on the way back."""
        response = await super().handle_async_request(request)
        if "/services/" not in request.url.path:
            return response
        body = json.loads(await response.aread())
        body["policy"]["no_show_fee"] = {"kind": "unknown", "currency": "USD"}
        # The platform's own headers, except the length of the body this replaces.
        headers = [(name, value) for name, value in response.headers.items() if name != "content-length"]
        return httpx2.Response(response.status_code, headers=headers, json=body)


async def test_a_fee_of_unknown_amount_is_omitted_from_the_policy_and_refuses_the_booking(
    platform: Platform, tmp_path: Path
) -> None:
    """OSBP spec: fees appear only with an amount; unknown fee amounts refuse or hand off (fail closed)."""
    transport = UnknownFeeTransport()
    adapter = make_adapter(platform.base_url, tmp_path / "s.sqlite3", FixedClock(NOW), transport=transport)
    try:
        policy = value_of(await adapter.explain_policy(PolicyExplainInput(service_id=CLEANING)))
        assert policy.no_show_fee is None
        refused = problem_of(await adapter.create_booking(create_input()))
    finally:
        await adapter.aclose()
    assert (refused.problem.code, refused.problem.retryable) == ("requires_user_confirmation", False)
    assert "no-show fee" in refused.problem.message
    assert 'approval.token="' not in refused.problem.message
    assert platform.create_requests() == 0


async def test_a_mandate_id_with_a_control_character_is_recorded_by_its_hash(
    platform: Platform, adapter: OsbpCore
) -> None:
    """Platform choice: Bookwell refuses control characters in metadata; the id is recorded by its hash."""
    odd = "mnd\x07bell"
    receipt = value_of(await book(adapter, create_input(mandate=mandate(id=odd))))
    native = platform.appointment(ORG, receipt.booking_id)
    assert native["metadata"]["mandate_id"] == "sha256:" + sha256_hex(odd)


# --- Facts that change between the user's approval and the create ----------------------------------------


async def test_a_policy_change_after_approval_re_challenges_and_books_at_the_new_policy(
    platform: Platform, adapter: OsbpCore
) -> None:
    """OSBP spec, booking.create: a policy changed after the approval gets a fresh challenge, never a
    booking under the policy the user did not see."""
    inp = create_input()
    first = problem_of(await adapter.create_booking(inp))
    assert "No-show fee: $50.00" in summary_of(first.problem.message)
    platform.change_service(CLEANING, no_show_fee="80.00", cancellation_window_minutes=1440)
    again = problem_of(await adapter.create_booking(approved(inp, token_of(first))))
    assert again.problem.code == "requires_user_confirmation"
    assert "changed since the user approved" in again.problem.message
    summary = summary_of(again.problem.message)
    assert "No-show fee: $80.00" in summary
    assert "24 hours before the appointment" in summary
    assert (platform.create_requests(), platform.active_appointments(ORG)) == (1, 0)
    receipt = value_of(await adapter.create_booking(approved(inp, token_of(again))))
    assert platform.appointment(ORG, receipt.booking_id)["status"] == "confirmed"
    assert platform.active_appointments(ORG) == 1


async def test_a_slot_taken_after_approval_is_slot_taken_and_books_nothing_for_the_user(
    platform: Platform, adapter: OsbpCore
) -> None:
    """OSBP spec, booking.create: the approved create of a slot someone else took is slot_taken."""
    inp = create_input()
    token = token_of(await adapter.create_booking(inp))
    other = {
        "service_id": CLEANING,
        "location_id": MIDTOWN,
        "provider_id": REYES,
        "date": DAY,
        "time": "10:00",
        "customer": {"display_name": "Someone Else", "phone": "+12125550111"},
    }
    taken = platform.client.post(
        f"/api/organizations/{ORG}/appointments", json=other, headers={"Idempotency-Key": "someone-else"}
    )
    assert taken.status_code == 201
    failure = problem_of(await adapter.create_booking(approved(inp, token)))
    assert failure.problem.code == "slot_taken"
    assert platform.active_appointments(ORG) == 1  # only the other customer's


async def test_a_slot_whose_facts_changed_after_approval_is_re_challenged_with_them(
    platform: Platform, adapter: OsbpCore
) -> None:
    """OSBP spec, booking.create: a changed name in the summary (here the provider's) re-challenges."""
    inp = create_input()
    token = token_of(await adapter.create_booking(inp))
    platform.rename_provider(REYES, "Dr. Carolyn Reyes-Park")
    again = problem_of(await adapter.create_booking(approved(inp, token)))
    assert "with Dr. Carolyn Reyes-Park" in summary_of(again.problem.message)
    assert platform.active_appointments(ORG) == 0
    receipt = value_of(await adapter.create_booking(approved(inp, token_of(again))))
    assert "with Dr. Carolyn Reyes-Park" in receipt.text


async def test_a_catalog_change_that_leaves_the_summary_as_approved_still_books(
    platform: Platform, adapter: OsbpCore
) -> None:
    """OSBP spec, booking.create: the user approved exactly the facts resolved again, so no new challenge."""
    inp = create_input()
    token = token_of(await adapter.create_booking(inp))
    platform.change_service("carolyns_dental_checkup", price_amount="99.00")
    receipt = value_of(await adapter.create_booking(approved(inp, token)))
    # The first create was refused for the catalog change (412), the second went through on fresh facts.
    assert (platform.create_requests(), platform.active_appointments(ORG)) == (2, 1)
    assert platform.appointment(ORG, receipt.booking_id)["price"]["amount"] == "120.00"


class LoseCreateTransport(ForwardingTransport):
    """The real platform; the first appointment create is sent and committed, or never sent, and either
    way its answer never arrives."""

    def __init__(self, *, send: bool) -> None:
        super().__init__()
        self._send = send
        self._lost = False

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send for real, except the first create's answer (and, with ``send=False``, the create itself)."""
        if request.method != "POST" or not request.url.path.endswith("/appointments") or self._lost:
            return await super().handle_async_request(request)
        self._lost = True
        if self._send:
            await super().handle_async_request(request)
        raise httpx2.ReadError("connection reset by peer", request=request)


async def test_a_lost_create_answer_resumes_to_its_appointment_even_after_the_price_changed(
    platform: Platform, tmp_path: Path
) -> None:
    """OSBP spec, Idempotency: the retry replays the appointment the lost create made (replay before
    the platform's If-Match check), never a second one."""
    adapter = make_adapter(
        platform.base_url,
        tmp_path / "s.sqlite3",
        FixedClock(NOW),
        transport=LoseCreateTransport(send=True),
        retry_attempts=1,  # no adapter retry: the agent's own retry is the one that resumes
    )
    try:
        inp = create_input()
        token = token_of(await adapter.create_booking(inp))
        lost = problem_of(await adapter.create_booking(approved(inp, token)))
        assert lost.problem.code == "upstream_unavailable"
        set_price(platform, CLEANING, "130.00")
        receipt = value_of(await adapter.create_booking(approved(inp, token)))
    finally:
        await adapter.aclose()
    assert platform.active_appointments(ORG) == 1
    assert platform.appointment(ORG, receipt.booking_id)["price"]["amount"] == "120.00"


async def test_a_create_that_never_arrived_is_not_resumed_at_changed_facts(
    platform: Platform, tmp_path: Path
) -> None:
    """OSBP spec, booking.create: the resumed create carries the approved offer's validator, so a price
    changed meanwhile gets a fresh challenge, not a booking at a price the user did not approve."""
    adapter = make_adapter(
        platform.base_url,
        tmp_path / "s.sqlite3",
        FixedClock(NOW),
        transport=LoseCreateTransport(send=False),
        retry_attempts=1,  # no adapter retry: the agent's own retry is the one that resumes
    )
    try:
        inp = create_input()
        token = token_of(await adapter.create_booking(inp))
        assert (
            problem_of(await adapter.create_booking(approved(inp, token))).problem.code
            == "upstream_unavailable"
        )
        set_price(platform, CLEANING, "130.00")
        again = problem_of(await adapter.create_booking(approved(inp, token)))
        assert platform.active_appointments(ORG) == 0
        assert "$130.00" in summary_of(again.problem.message)
        receipt = value_of(await adapter.create_booking(approved(inp, token_of(again))))
    finally:
        await adapter.aclose()
    assert platform.appointment(ORG, receipt.booking_id)["price"]["amount"] == "130.00"
