"""Checks that book: the happy path, the approval gate, idempotency, boundaries, verification, runtime
branches, and the two remaining read tools.

The battery plays agent and customer at once: it reads the token from the `approval.token="…"`
instruction of the challenge, retries with the same payload plus `approval: {confirmed: true, token}`,
and supplies the fixture's verification code when the platform asks for one.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping
from typing import Any

from osbp.conformance.approval_checks import grade_summary_bound
from osbp.conformance.binding_checks import grade_binding
from osbp.conformance.flows import book as _book
from osbp.conformance.flows import challenge as _challenge
from osbp.conformance.flows import receipt_problems as _receipt_problems
from osbp.conformance.grading import CheckFailed, Verdict, expect, summarize
from osbp.conformance.outage_checks import grade_outage
from osbp.conformance.payloads import CREATE, approved
from osbp.conformance.probe import Probe
from osbp.conformance.scenario import Outcome, arm, create_requests, set_native_status
from osbp.conformance.summary_checks import SUMMARY_CHECKS, grade_summaries
from osbp.conformance.verify_checks import grade_verify, wrong_code
from osbp.conformance.wallclock import clock_forms, format_wall_clock, parse_wall_clock

__all__ = ["grade_bookings", "wrong_code"]

_STATUSES = {"booked", "cancelled", "completed", "no_show", "pending", "unknown"}
_REFUSALS = {"requires_user_confirmation", "idempotency_conflict"}
#: How many replays the offline check may observe before it concludes the platform is contacted each time.
_REPLAY_WINDOWS = 5


async def _happy_path(probe: Probe) -> None:
    grader, usd = probe.grader, probe.fixtures.services.fixed_usd
    payload = probe.payloads.create(usd.id)
    challenge, token = await _challenge(probe, payload)
    with grader.check("approval.challenge"):
        expect(
            challenge.code == "requires_user_confirmation",
            f"expected requires_user_confirmation, got {challenge.describe()}",
        )
        expect(
            challenge.problem.get("retryable") is True, "the final-confirmation challenge must be retryable"
        )
        expect(token is not None, 'the message carries no approval.token="…" instruction')
    if token is None:
        for check_id in SUMMARY_CHECKS:
            grader.blocked(check_id, "approval.challenge")
    else:
        await grade_summaries(probe, challenge)
    later = (
        "happy.receipt",
        "happy.status",
        "idempotency.replay",
        "idempotency.replay_offline",
        "idempotency.conflict",
        "approval.token_spent",
    )
    if token is None:
        for check_id in later:
            grader.blocked(check_id, "approval.challenge")
        return
    booked = await probe.wire.call(CREATE, approved(payload, token))
    with grader.check("happy.receipt"):
        problems = _receipt_problems(booked)
        expect(not problems, "; ".join(problems))
        text = booked.value["text"]
        name = (probe.services.get(usd.id) or {}).get("name")
        expect(
            isinstance(name, str) and name.casefold() in text.casefold(),
            f"receipt text {text!r} does not name the service",
        )
        expect(_time_named(text, probe), f"receipt text {text!r} does not state the time")
    if _receipt_problems(booked):
        for check_id in later[1:]:
            grader.blocked(check_id, "happy.receipt")
        return
    receipt: dict[str, Any] = booked.value
    await _status(probe, receipt["booking_id"])
    with grader.check("idempotency.replay"):
        for retry, label in (
            (payload, "without approval"),
            (approved(payload, token), "with the spent approval"),
        ):
            again = await probe.wire.call(CREATE, retry)
            expect(again.ok is True, f"replay {label}: {again.describe()}")
            expect(
                isinstance(again.value, dict)
                and {k: again.value.get(k) for k in ("id", "booking_id")}
                == {k: receipt[k] for k in ("id", "booking_id")},
                f"replay {label} returned another receipt: {again.value!r}",
            )
    await _replay_offline(probe, payload)
    with grader.check("idempotency.conflict"):
        changed = _changed(payload)
        conflict = await probe.wire.call(CREATE, changed)
        expect(
            conflict.code == "idempotency_conflict",
            f"expected idempotency_conflict, got {conflict.describe()}",
        )
    with grader.check("approval.token_spent"):
        reuse = await probe.wire.call(
            CREATE, approved({**payload, "idempotency_key": probe.payloads.key()}, token)
        )
        expect(reuse.ok is False, f"a spent token authorized a new booking: {reuse.describe()}")
        expect(
            reuse.code == "requires_user_confirmation",
            f"expected requires_user_confirmation, got {reuse.describe()}",
        )


def _time_named(text: str, probe: Probe) -> bool:
    return any(form in text for form in clock_forms(probe.fixtures.slot.start.time()))


def _changed(payload: dict[str, Any]) -> dict[str, Any]:
    customer = dict(payload["customer"])
    customer["display_name"] = f"{customer['display_name']} Changed"
    return {**payload, "customer": customer}


async def _status(probe: Probe, booking_id: str) -> None:
    fixtures = probe.fixtures
    with probe.grader.check("happy.status"):
        status = await probe.wire.call("osbp_booking_status", {"booking_id": booking_id})
        booking = status.value
        expect(isinstance(booking, dict), f"booking.status {booking_id}: {status.describe()}")
        expect(booking.get("id") == booking_id, f"booking id {booking.get('id')!r}, expected {booking_id!r}")
        expect(
            booking.get("status") in _STATUSES, f"status {booking.get('status')!r} is not a protocol status"
        )
        for key, wanted in (
            ("service_id", fixtures.services.fixed_usd.id),
            ("schedule_id", fixtures.schedule.id),
            ("provider_id", fixtures.providers.in_scope),
            ("schedule_timezone", fixtures.timezone),
        ):
            expect(booking.get(key) == wanted, f"{key} {booking.get(key)!r}, expected {wanted!r}")
        expect(
            parse_wall_clock(booking.get("starts_at_local")) == fixtures.slot.start,
            f"starts_at_local {booking.get('starts_at_local')!r}, "
            f"expected {format_wall_clock(fixtures.slot.start)}",
        )


async def _token_binding(probe: Probe) -> None:
    grader, usd = probe.grader, probe.fixtures.services.fixed_usd.id
    with grader.check("approval.token_payload_bound"):
        payload = probe.payloads.create(usd)
        first, token = await _challenge(probe, payload)
        expect(token is not None, f"expected an approval challenge, got {first.describe()}")
        assert token is not None
        other = await probe.wire.call(CREATE, approved(_changed(payload), token))
        expect(other.ok is False, "the token of one payload booked a changed payload")
        expect(other.code in _REFUSALS, f"expected one of {sorted(_REFUSALS)}, got {other.describe()}")
    with grader.check("approval.token_key_bound"):
        payload = probe.payloads.create(usd)
        first, token = await _challenge(probe, payload)
        expect(token is not None, f"expected an approval challenge, got {first.describe()}")
        assert token is not None
        other = await probe.wire.call(
            CREATE, approved({**payload, "idempotency_key": probe.payloads.key()}, token)
        )
        expect(other.ok is False, "the token of one idempotency key booked under another")
        expect(
            other.code == "requires_user_confirmation",
            f"expected requires_user_confirmation, got {other.describe()}",
        )


async def _boundaries(probe: Probe) -> None:
    grader, build = probe.grader, probe.payloads
    usd = probe.fixtures.services.fixed_usd
    price = usd.price
    slot = probe.fixtures.slot
    with grader.check("boundary.price_equal_cap_books"):
        cap = {"amount_minor": price.amount_minor, "currency": price.currency}
        booked = await _book(probe, build.with_mandate(usd.id, max_price=cap))
        expect(booked.ok is True, f"a price equal to max_price did not book: {booked.describe()}")
    with grader.check("boundary.price_cap_minus_one_refuses"):
        cap = {"amount_minor": price.amount_minor - 1, "currency": price.currency}
        refused = await probe.wire.call(CREATE, build.with_mandate(usd.id, max_price=cap))
        expect(
            refused.code == "price_exceeds_mandate",
            f"expected price_exceeds_mandate, got {refused.describe()}",
        )
    for currency in ("JPY", "KWD"):
        await _price_cap_in(probe, currency)
    with grader.check("boundary.window_exact_books"):
        window = {"earliest_start": format_wall_clock(slot.start), "latest_end": format_wall_clock(slot.end)}
        booked = await _book(probe, build.with_mandate(usd.id, **window))
        expect(booked.ok is True, f"a slot filling the window exactly did not book: {booked.describe()}")
    with grader.check("boundary.window_minus_minute_refuses"):
        latest = format_wall_clock(slot.end - dt.timedelta(minutes=1))
        refused = await probe.wire.call(CREATE, build.with_mandate(usd.id, latest_end=latest))
        expect(refused.code == "slot_too_late", f"expected slot_too_late, got {refused.describe()}")


async def _price_cap_in(probe: Probe, currency: str) -> None:
    """The price boundaries in a currency of another exponent: the cap in that currency's minor units."""
    service = probe.fixtures.services.fixed()[currency]
    price, build = service.price, probe.payloads

    def capped(minor: int) -> dict[str, Any]:
        cap = {"amount_minor": minor, "currency": currency}
        return build.with_mandate(service.id, max_price=cap, max_extra_fee={**cap, "amount_minor": 0})

    with probe.grader.check(f"boundary.price_cap_{currency.lower()}"):
        refused = await probe.wire.call(CREATE, capped(price.amount_minor - 1))
        expect(
            refused.code == "price_exceeds_mandate",
            f"{price.amount_minor} {currency} under a cap of {price.amount_minor - 1}: expected "
            f"price_exceeds_mandate, got {refused.describe()}",
            expected="price_exceeds_mandate",
            observed=refused.describe(),
        )
        booked = await _book(probe, capped(price.amount_minor))
        expect(
            booked.ok is True,
            f"{price.amount_minor} {currency} under an equal cap did not book: {booked.describe()}",
        )


async def _free_gate(probe: Probe) -> None:
    """A zero price bounds nothing away: the free service still gets the approval challenge, then books."""
    check_id, free = "approval.free_service_gated", probe.fixtures.services.free
    if free is None:
        probe.grader.skipped(check_id, "the fixtures name no services.free")
        return
    with probe.grader.check(check_id):
        payload = probe.payloads.create(free.id)
        first, token = await _challenge(probe, payload)
        expect(
            first.code == "requires_user_confirmation" and first.problem.get("retryable") is True,
            f"the first create of the free service {free.id} did not stop at the approval step: "
            f"{first.describe()}",
            expected="a retryable requires_user_confirmation with an approval token",
            observed=first.describe(),
        )
        expect(token is not None, 'the free service\'s challenge carries no approval.token="…" instruction')
        assert token is not None
        booked = await probe.wire.call(CREATE, approved(payload, token))
        problems = _receipt_problems(booked)
        expect(not problems, "; ".join(problems))


async def _verification(probe: Probe) -> None:
    grader, fixtures = probe.grader, probe.fixtures
    service = fixtures.services.verification
    payload = probe.payloads.create(service.id)
    token: str | None = None
    with grader.check("verification.required_after_approval"):
        first, token = await _challenge(probe, payload)
        expect(token is not None, f"expected an approval challenge first, got {first.describe()}")
        assert token is not None
        second = await probe.wire.call(CREATE, approved(payload, token))
        expect(
            second.code == "requires_verification", f"expected requires_verification, got {second.describe()}"
        )
        expect(second.problem.get("retryable") is True, "requires_verification must be retryable")
    purpose = f"booking:{fixtures.organization_id}"
    with grader.check("verification.send"):
        contact = {"phone": fixtures.customer.phone, "email": fixtures.customer.email}
        sent = await probe.wire.call("osbp_verification_send", {"customer": contact, "purpose": purpose})
        value = sent.value
        expect(isinstance(value, dict), f"verification.send: {sent.describe()}")
        expect(value.get("sent") is True, f"sent is {value.get('sent')!r}, expected true")
        expect(
            value.get("method") == service.method,
            f"method {value.get('method')!r}, expected {service.method!r}",
        )
        expect(value.get("purpose") == purpose, f"purpose {value.get('purpose')!r}, expected {purpose!r}")
    # Right after the send, as an agent would pre-verify; the booking's own code is sent afresh below.
    await grade_verify(probe, contact, purpose)
    if token is None or grader.verdict("verification.required_after_approval") is not Verdict.PASS:
        grader.blocked("verification.wrong_code_refused", "verification.required_after_approval")
        grader.blocked("verification.code_books", "verification.required_after_approval")
        return
    with grader.check("verification.wrong_code_refused"):
        wrong = wrong_code(service.code)
        refused = await probe.wire.call(CREATE, approved(payload, token, verification_code=wrong))
        expect(
            refused.code == "verification_failed",
            f"a wrong verification code {wrong!r} was not refused with verification_failed"
            + (" (it booked)" if refused.ok is True else ""),
            expected="verification_failed",
            observed=refused.describe(),
        )
    with grader.check("verification.code_books"):
        # After verification_failed the spec's next step is a fresh send; it also spares the code the wrong
        # attempts of other clients sharing the platform and the contact.
        await probe.wire.call("osbp_verification_send", {"customer": contact, "purpose": purpose})
        booked = await probe.wire.call(CREATE, approved(payload, token, verification_code=service.code))
        problems = _receipt_problems(booked)
        expect(not problems, "; ".join(problems))


async def _replay_offline(probe: Probe, payload: dict[str, Any]) -> None:
    """A replay must not reach the platform: its create-request count must not move across the replay.

    The platform may serve other clients at the same time, so one window where the count stays put is
    enough: a server that calls the platform on every replay raises it in every window.
    """
    if probe.stats_url is None:
        probe.grader.skipped(
            "idempotency.replay_offline", "no --stats-url: the battery cannot observe the platform"
        )
        return
    with probe.grader.check("idempotency.replay_offline"):
        rises = []
        for _ in range(_REPLAY_WINDOWS):
            before = await create_requests(probe.stats_url, call_timeout=probe.call_timeout)
            expect(isinstance(before, int), str(before))
            again = await probe.wire.call(CREATE, payload)
            after = await create_requests(probe.stats_url, call_timeout=probe.call_timeout)
            expect(isinstance(after, int), str(after))
            expect(again.ok is True, f"replay: {again.describe()}")
            assert isinstance(before, int)
            assert isinstance(after, int)
            if after == before:
                return
            rises.append(after - before)
        raise CheckFailed(
            f"the platform received create requests during each of {_REPLAY_WINDOWS} replays",
            expected="0 create requests during a replay",
            observed=f"{rises} create requests during {_REPLAY_WINDOWS} replays",
        )


async def _native_statuses(probe: Probe) -> None:
    """Grade the known native statuses, then those the oracle maps to unknown, each under its own id."""
    statuses = probe.fixtures.native_statuses
    known = {native: status for native, status in statuses.items() if status != "unknown"}
    unknown = {native: status for native, status in statuses.items() if status == "unknown"}
    await _native_status_check(probe, known, "status.native_mapping")
    await _native_status_check(probe, unknown, "status.native_unknown")


async def _native_status_check(probe: Probe, mapping: Mapping[str, str], check_id: str) -> None:
    """Give one booking each native status of `mapping` and read booking.status back."""
    if not mapping:
        what = "native statuses" if check_id == "status.native_mapping" else "native status mapped to unknown"
        probe.grader.skipped(check_id, f"the fixtures name no {what}")
        return
    if probe.status_url is None:
        probe.grader.skipped(check_id, "no --status-url: the battery cannot set a native status")
        return
    with probe.grader.check(check_id):
        booked = await _book(probe, probe.payloads.create(probe.fixtures.services.fixed_usd.id))
        problems = _receipt_problems(booked)
        expect(not problems, "; ".join(problems))
        booking_id = booked.value["booking_id"]
        wrong = []
        for native, expected in mapping.items():
            failed = await set_native_status(
                probe.status_url,
                probe.fixtures.organization_id,
                booking_id,
                native,
                call_timeout=probe.call_timeout,
            )
            if failed is not None:
                raise CheckFailed(failed)
            answer = await probe.wire.call("osbp_booking_status", {"booking_id": booking_id})
            got = answer.value.get("status") if isinstance(answer.value, dict) else answer.describe()
            if got != expected:
                wrong.append(f"native {native!r}: status {got!r}, expected {expected!r}")
        expect(
            not wrong,
            summarize(wrong),
            expected=", ".join(f"{native} -> {status}" for native, status in mapping.items()),
            observed="; ".join(wrong),
        )


async def _runtime(probe: Probe) -> None:
    outcomes: tuple[Outcome, ...] = ("slot_taken", "rate_limited")
    for outcome in outcomes:
        check_id = f"runtime.{outcome}"
        if probe.scenario_url is None:
            probe.grader.skipped(check_id, "no --scenario-url: the battery cannot arm platform outcomes")
            continue
        with probe.grader.check(check_id):
            payload = probe.payloads.create(probe.fixtures.services.fixed_usd.id)
            first, token = await _challenge(probe, payload)
            expect(token is not None, f"expected an approval challenge first, got {first.describe()}")
            assert token is not None
            problem = await arm(
                probe.scenario_url, probe.fixtures.organization_id, outcome, call_timeout=probe.call_timeout
            )
            if problem is not None:
                raise CheckFailed(problem)
            # A real 429 before the armed create is waited out; only the armed 429 is graded at once.
            patient = outcome != "rate_limited"
            answer = await probe.wire.call(CREATE, approved(payload, token), patient=patient)
            expect(answer.code == outcome, f"expected {outcome}, got {answer.describe()}")
            expect(answer.problem.get("retryable") is True, f"{outcome} must be retryable")


async def _other_reads(probe: Probe) -> None:
    with probe.grader.check("status.booking_not_found"):
        missing = await probe.wire.call(
            "osbp_booking_status", {"booking_id": f"conformance_missing_{probe.payloads.nonce}"}
        )
        expect(missing.code == "booking_not_found", f"expected booking_not_found, got {missing.describe()}")
    with probe.grader.check("handoff.requires_human"):
        request = {
            "reason": "requires_payment_handoff",
            "message": "This service needs a deposit; please book it with the merchant directly.",
            "mandate_id": probe.payloads.mandate_id(),
        }
        handoff = await probe.wire.call("osbp_handoff_request", request)
        value = handoff.value
        expect(isinstance(value, dict), f"handoff.request: {handoff.describe()}")
        wanted = {"status": "requires_human", **request}
        got = {key: value.get(key) for key in wanted}
        expect(got == wanted, f"handoff answered {got!r}, expected {wanted!r}")


async def grade_bookings(probe: Probe) -> None:
    """Run every booking-side check group in order."""
    await _happy_path(probe)
    await _free_gate(probe)
    await _token_binding(probe)
    await grade_binding(probe)
    await grade_summary_bound(probe)
    await _boundaries(probe)
    await _verification(probe)
    await _runtime(probe)
    await _native_statuses(probe)
    await grade_outage(probe)
    await _other_reads(probe)
