"""Checks that book: the happy path, the approval gate, idempotency, boundaries, verification, runtime
branches, and the two remaining read tools.

The battery plays agent and customer at once: it reads the token from the `approval.token="…"`
instruction of the challenge, retries with the same payload plus `approval: {confirmed: true, token}`,
and supplies the fixture's verification code when the platform asks for one.
"""

from __future__ import annotations

import datetime as dt
from decimal import Decimal
from typing import Any

from iso4217 import Currency

from osbp.conformance.grading import CheckFailed, Verdict, expect
from osbp.conformance.payloads import CREATE, approval_token, approved
from osbp.conformance.probe import Probe
from osbp.conformance.scenario import Outcome, arm
from osbp.conformance.wallclock import clock_forms, format_wall_clock, parse_wall_clock
from osbp.conformance.wire import Exchange

__all__ = ["grade_bookings"]

_STATUSES = {"booked", "cancelled", "completed", "no_show", "pending", "unknown"}
_REFUSALS = {"requires_user_confirmation", "idempotency_conflict"}


async def _challenge(probe: Probe, payload: dict[str, Any]) -> tuple[Exchange, str | None]:
    exchange = await probe.wire.call(CREATE, payload)
    token = approval_token(exchange.message) if exchange.code == "requires_user_confirmation" else None
    return exchange, token


async def _book(probe: Probe, payload: dict[str, Any]) -> Exchange:
    """Challenge then approved retry; the approved exchange, or CheckFailed if no token came back."""
    first, token = await _challenge(probe, payload)
    expect(token is not None, f"expected an approval challenge, got {first.describe()}")
    assert token is not None
    return await probe.wire.call(CREATE, approved(payload, token))


def _receipt_problems(exchange: Exchange) -> list[str]:
    receipt = exchange.value
    if not isinstance(receipt, dict):
        return [f"no receipt: {exchange.describe()}"]
    return [
        f"receipt {key} missing"
        for key in ("id", "booking_id", "text")
        if not isinstance(receipt.get(key), str)
    ]


def _time_named(text: str, probe: Probe) -> bool:
    return any(form in text for form in clock_forms(probe.fixtures.slot.start.time()))


def _price_forms(price: dict[str, Any]) -> list[str]:
    forms = [price["display"]] if isinstance(price.get("display"), str) else []
    amount, currency = price.get("amount_minor"), price.get("currency")
    if type(amount) is int and isinstance(currency, str):
        try:
            exponent = Currency(currency).exponent or 0
        except ValueError:
            exponent = 2
        major = Decimal(amount).scaleb(-exponent)
        forms += [f"{major:.{exponent}f}", f"{major:,.{exponent}f}"]
    return forms


def _grade_summary(probe: Probe, challenge: Exchange) -> None:
    with probe.grader.check("approval.summary"):
        message = challenge.message
        expect(bool(message), f"no challenge message: {challenge.describe()}")
        service = probe.services.get(probe.fixtures.services.fixed_usd.id)
        expect(service is not None, "service.describe failed, so the service name is unknown")
        assert service is not None
        name = service.get("name")
        expect(
            isinstance(name, str) and name.casefold() in message.casefold(),
            f"the summary does not name the service {name!r}",
        )
        expect(
            _time_named(message, probe),
            f"the summary does not state the merchant-local time {probe.fixtures.slot.time}",
        )
        forms = _price_forms(service.get("price") or {})
        expect(
            any(form in message for form in forms),
            f"the summary does not state the price (looked for {forms})",
        )


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
    _grade_summary(probe, challenge)
    later = (
        "happy.receipt",
        "happy.status",
        "idempotency.replay",
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
    with grader.check("boundary.window_exact_books"):
        window = {"earliest_start": format_wall_clock(slot.start), "latest_end": format_wall_clock(slot.end)}
        booked = await _book(probe, build.with_mandate(usd.id, **window))
        expect(booked.ok is True, f"a slot filling the window exactly did not book: {booked.describe()}")
    with grader.check("boundary.window_minus_minute_refuses"):
        latest = format_wall_clock(slot.end - dt.timedelta(minutes=1))
        refused = await probe.wire.call(CREATE, build.with_mandate(usd.id, latest_end=latest))
        expect(refused.code == "slot_too_late", f"expected slot_too_late, got {refused.describe()}")


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
    if token is None or grader.verdict("verification.required_after_approval") is not Verdict.PASS:
        grader.blocked("verification.code_books", "verification.required_after_approval")
        return
    with grader.check("verification.code_books"):
        booked = await probe.wire.call(CREATE, approved(payload, token, verification_code=service.code))
        problems = _receipt_problems(booked)
        expect(not problems, "; ".join(problems))


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
            answer = await probe.wire.call(CREATE, approved(payload, token))
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
    await _token_binding(probe)
    await _boundaries(probe)
    await _verification(probe)
    await _runtime(probe)
    await _other_reads(probe)
