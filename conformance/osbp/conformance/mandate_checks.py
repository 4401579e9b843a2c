"""The mandate fail-closed matrix: each case asserts the exact Problem code on the FIRST create call.

A server that answers a case with an approval challenge instead has let an out-of-mandate booking reach
the final-confirmation step, so the matrix never retries: the first answer is the grade. Each case varies
one thing from a mandate that is otherwise valid for the fixture slot.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from osbp.conformance.fixtures import DepositService
from osbp.conformance.grading import expect, summarize
from osbp.conformance.payloads import CREATE, approval_token
from osbp.conformance.probe import Probe
from osbp.conformance.wallclock import format_wall_clock

__all__ = [
    "Case",
    "Pair",
    "at_offset",
    "grade_mandates",
    "mandate_cases",
    "order_pairs",
    "payment_kind_claims",
]

#: The code of the fail-closed (terminal) form of requires_user_confirmation.
_FAIL_CLOSED = "requires_user_confirmation"
#: The code of the final-confirmation challenge (retryable, with a token): a mandate that holds gets it.
_CHALLENGE = "requires_user_confirmation"
#: How far from now the offset-carrying expiries lie, and the offset they are written with.
_EXPIRY_SHIFT = dt.timedelta(hours=2)
_OFFSET_HOURS = 5
#: A negation in a clause ("no-show" is a noun, not one).
_NEGATION = re.compile(
    r"\b(?:not|never|cannot|without|nothing|neither|nor|instead of|rather than)\b|\bno\b(?![- ]?show)|n't\b",
    re.IGNORECASE,
)
#: A fee cap far above every fixture amount in any currency's minor unit.
_WIDE_CAP = 10**12


def _other_currency(service: DepositService) -> str:
    """A currency other than the service's deposit's."""
    return "EUR" if service.deposit.currency != "EUR" else "USD"


@dataclass(frozen=True, slots=True)
class Case:
    """One row of the matrix: the check, the code every payload must get, the payloads."""

    check_id: str
    code: str
    payloads: tuple[dict[str, Any], ...]


@dataclass(frozen=True, slots=True)
class Pair:
    """A payload breaking two rules at once: the earlier rule's code must win."""

    earlier: str
    later: str
    code: str
    payload: dict[str, Any]


def mandate_cases(probe: Probe) -> list[Case]:
    """The matrix for this run's fixtures."""
    fixtures, build = probe.fixtures, probe.payloads
    services = fixtures.services
    usd = services.fixed_usd
    start = fixtures.slot.start
    minute = dt.timedelta(minutes=1)

    def usd_with(**changes: Any) -> dict[str, Any]:
        return build.with_mandate(usd.id, **changes)

    def case(check_id: str, code: str, *payloads: dict[str, Any]) -> Case:
        return Case(check_id, code, payloads)

    without_id = build.mandate(usd.id)
    del without_id["id"]
    return [
        case(
            "mandate.missing_id",
            "invalid_mandate",
            build.create(usd.id, mandate=without_id),
            usd_with(id=""),
        ),
        case("mandate.expired", "mandate_expired", usd_with(expires_at=build.expires_at(days=-1))),
        case(
            "mandate.naked_expires_at", "invalid_mandate", usd_with(expires_at=build.expires_at().rstrip("Z"))
        ),
        case(
            "mandate.wall_clock_offset",
            "invalid_mandate",
            usd_with(earliest_start=build.day_start + "-04:00"),
            usd_with(latest_end=build.day_end + "Z"),
            build.create(usd.id, time=f"{fixtures.slot.time}-04:00"),
        ),
        case(
            "mandate.action_not_allowed", "action_not_allowed", usd_with(allowed_actions=["booking.status"])
        ),
        case(
            "mandate.organization_scope",
            "organization_not_allowed",
            usd_with(organization_id=f"{fixtures.organization_id}_elsewhere"),
        ),
        case(
            "mandate.service_scope",
            "service_not_allowed",
            usd_with(service_ids=[services.fixed_eur.id]),
            usd_with(service_ids=[]),
        ),
        case(
            "mandate.schedule_scope",
            "schedule_not_allowed",
            usd_with(schedule_ids=[f"{fixtures.schedule.id}_elsewhere"]),
            usd_with(schedule_ids=[]),
        ),
        case("mandate.provider_unknown", "provider_unknown", build.create(usd.id, provider_id="")),
        case(
            "mandate.provider_not_allowed",
            "provider_not_allowed",
            build.create(usd.id, provider_id=fixtures.providers.other),
            usd_with(provider_ids=[]),
        ),
        case(
            "mandate.slot_too_early",
            "slot_too_early",
            usd_with(earliest_start=format_wall_clock(start + minute)),
        ),
        case("mandate.slot_too_late", "slot_too_late", usd_with(latest_end=format_wall_clock(start))),
        case(
            "mandate.price_over_cap",
            "price_exceeds_mandate",
            usd_with(max_price={"amount_minor": usd.price.amount_minor // 2, "currency": usd.price.currency}),
        ),
        case(
            "mandate.currency_mismatch",
            "currency_mismatch",
            build.create(services.fixed_eur.id),
            build.create(services.fixed_gbp.id),
        ),
        case("mandate.unknown_payment", _FAIL_CLOSED, build.create(services.unknown_payment.id)),
        case("mandate.insurance_dependent", _FAIL_CLOSED, build.create(services.insurance_dependent.id)),
        case("mandate.quote_required", _FAIL_CLOSED, build.create(services.quote_required.id)),
        case("mandate.deposit", "requires_payment_handoff", build.create(services.deposit.id)),
        case("mandate.full_prepay", "requires_payment_handoff", build.create(services.full_prepay.id)),
        case("mandate.consultation", "requires_consultation_handoff", build.create(services.consultation.id)),
        case(
            "mandate.policy_fee_currency",
            "currency_mismatch",
            build.with_mandate(
                services.deposit.id,
                allow_policy_fee=True,
                max_extra_fee={"amount_minor": _WIDE_CAP, "currency": _other_currency(services.deposit)},
            ),
        ),
        case(
            "mandate.cap_unfixed",
            "invalid_mandate",
            usd_with(max_extra_fee={"currency": fixtures.max_price.currency}),
            usd_with(max_price={"currency": fixtures.max_price.currency, "type": "quote_required"}),
        ),
    ]


def order_pairs(probe: Probe) -> list[Pair]:
    """Each adjacent pair of the spec's Mandate Enforcement order the fixtures can break at once.

    The order: well-formed, not expired, action, organization, service, schedule, provider, wall-clock
    shape, window start, window end, price currency, price amount, consultation, payment. The fixtures hold
    no consultation service with a payment requirement, so the last pair is price before payment.
    """
    fixtures, build = probe.fixtures, probe.payloads
    services = fixtures.services
    usd = services.fixed_usd
    start = fixtures.slot.start
    minute = dt.timedelta(minutes=1)
    elsewhere = f"{fixtures.schedule.id}_elsewhere"

    def below(service_id: str) -> dict[str, Any]:
        # One minor unit under the price the server itself described (the fixed USD price otherwise).
        price = (probe.services.get(service_id) or {}).get("price") or {}
        amount = price.get("amount_minor")
        amount = amount if type(amount) is int and amount > 0 else usd.price.amount_minor
        return {"amount_minor": amount - 1, "currency": fixtures.max_price.currency}

    def usd_with(**changes: Any) -> dict[str, Any]:
        return build.with_mandate(usd.id, **changes)

    return [
        Pair(
            "expires_at shape",
            "expiry",
            "invalid_mandate",
            usd_with(expires_at=build.expires_at(days=-1).rstrip("Z")),
        ),
        Pair(
            "expiry",
            "action",
            "mandate_expired",
            usd_with(expires_at=build.expires_at(days=-1), allowed_actions=["booking.status"]),
        ),
        Pair(
            "action",
            "organization",
            "action_not_allowed",
            usd_with(
                allowed_actions=["booking.status"], organization_id=f"{fixtures.organization_id}_elsewhere"
            ),
        ),
        Pair(
            "organization",
            "service",
            "organization_not_allowed",
            usd_with(
                organization_id=f"{fixtures.organization_id}_elsewhere", service_ids=[services.fixed_eur.id]
            ),
        ),
        Pair(
            "service",
            "schedule",
            "service_not_allowed",
            usd_with(service_ids=[services.fixed_eur.id], schedule_ids=[elsewhere]),
        ),
        Pair(
            "schedule",
            "provider",
            "schedule_not_allowed",
            build.create(
                usd.id,
                mandate=build.mandate(usd.id, schedule_ids=[elsewhere]),
                provider_id=fixtures.providers.other,
            ),
        ),
        Pair(
            "provider",
            "wall-clock shape",
            "provider_not_allowed",
            build.create(
                usd.id,
                mandate=build.mandate(usd.id, earliest_start=build.day_start + "Z"),
                provider_id=fixtures.providers.other,
            ),
        ),
        Pair(
            "wall-clock shape",
            "window start",
            "invalid_mandate",
            usd_with(earliest_start=format_wall_clock(start + minute), latest_end=build.day_end + "Z"),
        ),
        Pair(
            "window start",
            "window end",
            "slot_too_early",
            usd_with(earliest_start=format_wall_clock(start + minute), latest_end=format_wall_clock(start)),
        ),
        Pair(
            "window end",
            "price currency",
            "slot_too_late",
            build.with_mandate(services.fixed_eur.id, latest_end=format_wall_clock(start)),
        ),
        Pair(
            "price currency",
            "price amount",
            "currency_mismatch",
            build.with_mandate(services.fixed_eur.id, max_price={"amount_minor": 1, "currency": "USD"}),
        ),
        Pair(
            "price currency",
            "consultation",
            "currency_mismatch",
            build.with_mandate(
                services.consultation.id,
                max_price={"amount_minor": fixtures.max_price.amount_minor, "currency": "EUR"},
            ),
        ),
        Pair(
            "price amount",
            "payment (deposit)",
            "price_exceeds_mandate",
            build.with_mandate(services.deposit.id, max_price=below(services.deposit.id)),
        ),
        Pair(
            "price amount",
            "payment (unknown)",
            "price_exceeds_mandate",
            build.with_mandate(services.unknown_payment.id, max_price=below(services.unknown_payment.id)),
        ),
    ]


async def _grade_order(probe: Probe) -> None:
    with probe.grader.check("mandate.order"):
        problems, first = list[str](), ("", "")
        for pair in order_pairs(probe):
            exchange = await probe.wire.call(CREATE, pair.payload)
            if exchange.code != pair.code:
                if not problems:
                    first = (f"{pair.code} ({pair.earlier} before {pair.later})", exchange.describe())
                problems.append(
                    f"{pair.earlier} before {pair.later}: expected {pair.code}, got {exchange.describe()}"
                )
        expect(not problems, summarize(problems), expected=first[0], observed=first[1])


def at_offset(instant: dt.datetime, hours: int) -> str:
    """`instant` written with the UTC offset `hours` (never Z)."""
    local = instant.astimezone(dt.timezone(dt.timedelta(hours=hours)))
    return local.isoformat(timespec="seconds")


async def _grade_expiry_offsets(probe: Probe) -> None:
    """An expires_at with an offset is the instant it names: read without it, each verdict flips."""
    build, usd = probe.payloads, probe.fixtures.services.fixed_usd.id
    # Two hours ahead written at -05:00 reads three hours past without the offset; two hours past
    # written at +05:00 reads three hours ahead.
    ahead = at_offset(build.now + _EXPIRY_SHIFT, -_OFFSET_HOURS)
    behind = at_offset(build.now - _EXPIRY_SHIFT, _OFFSET_HOURS)
    with probe.grader.check("mandate.expires_offset"):
        valid = await probe.wire.call(CREATE, build.with_mandate(usd, expires_at=ahead))
        expect(
            valid.code == _CHALLENGE and approval_token(valid.message) is not None,
            f"a mandate expiring at {ahead} (two hours from now) did not reach the approval challenge: "
            f"{valid.describe()}",
            expected="requires_user_confirmation with an approval token",
            observed=valid.describe(),
        )
        expired = await probe.wire.call(CREATE, build.with_mandate(usd, expires_at=behind))
        expect(
            expired.code == "mandate_expired",
            f"a mandate that expired at {behind} (two hours ago) was not refused: {expired.describe()}",
            expected="mandate_expired",
            observed=expired.describe(),
        )


async def _grade_fee_cap(probe: Probe) -> None:
    """max_extra_fee caps a required deposit on its own (below max_price): one minor unit under refuses."""
    build, deposit = probe.payloads, probe.fixtures.services.deposit
    amount = deposit.deposit

    def capped(minor: int) -> dict[str, Any]:
        fee = {"amount_minor": minor, "currency": amount.currency}
        return build.with_mandate(deposit.id, allow_policy_fee=True, max_extra_fee=fee)

    with probe.grader.check("mandate.policy_fee_over_cap"):
        over = await probe.wire.call(CREATE, capped(amount.amount_minor - 1))
        expect(
            over.code == "policy_fee_exceeds_mandate",
            f"a deposit of {amount.amount_minor} under max_extra_fee {amount.amount_minor - 1}: "
            f"expected policy_fee_exceeds_mandate, got {over.describe()}",
            expected="policy_fee_exceeds_mandate",
            observed=over.describe(),
        )
        equal = await probe.wire.call(CREATE, capped(amount.amount_minor))
        expect(
            equal.code == _CHALLENGE and approval_token(equal.message) is not None,
            f"a deposit equal to max_extra_fee did not reach the approval challenge: {equal.describe()}",
            expected="requires_user_confirmation with an approval token",
            observed=equal.describe(),
        )


async def _grade_optional_fee_cap(probe: Probe) -> None:
    """max_extra_fee is optional: without it a mandate still holds, and allow_policy_fee alone allows a
    fixed deposit ("if the mandate also provides max_extra_fee, that cap must ... cover the amount")."""
    build, services = probe.payloads, probe.fixtures.services

    def uncapped(service_id: str, **changes: Any) -> dict[str, Any]:
        mandate = build.mandate(service_id, **changes)
        del mandate["max_extra_fee"]
        return build.create(service_id, mandate=mandate)

    with probe.grader.check("boundary.fee_cap_absent_holds"):
        for what, payload in (
            ("a fixed-price booking", uncapped(services.fixed_usd.id)),
            ("a deposit booking with allow_policy_fee", uncapped(services.deposit.id, allow_policy_fee=True)),
        ):
            exchange = await probe.wire.call(CREATE, payload)
            expect(
                exchange.code == _CHALLENGE and approval_token(exchange.message) is not None,
                f"{what} under a mandate without max_extra_fee did not reach the approval challenge: "
                f"{exchange.describe()}",
                expected="requires_user_confirmation with an approval token",
                observed=exchange.describe(),
            )


#: What a payment handoff may say is required: full payment up front, or a deposit.
_FULL_PAYMENT = re.compile(
    r"\bfull\s+(?:pre-?)?payment\b|\bpre-?pay(?:ment|s)?\b|\bpre-?paid\b|\bin full\b", re.IGNORECASE
)
_DEPOSIT = re.compile(r"\bdeposits?\b", re.IGNORECASE)
_CLAUSE = re.compile(r"[.;:,()!?\n]|\s[-\u2013\u2014]\s")


def payment_kind_claims(message: str, *, claimed: re.Pattern[str], actual: re.Pattern[str]) -> list[str]:
    """The clauses of `message` that affirm the `claimed` payment kind without naming the `actual` one.

    A clause that names both ("a deposit or full prepayment") or negates ("not a deposit") claims nothing
    false.
    """
    return [
        clause.strip()
        for clause in _CLAUSE.split(message)
        if claimed.search(clause) and not actual.search(clause) and not _NEGATION.search(clause)
    ]


async def _grade_payment_kind(probe: Probe) -> None:
    """requires_payment_handoff must not misstate what is required: a deposit refusal never claims full
    payment in advance, a full-prepayment refusal never claims a deposit (prose: falsehoods only)."""
    build, services = probe.payloads, probe.fixtures.services
    with probe.grader.check("mandate.payment_handoff_kind"):
        problems = []
        for service_id, claimed, actual, what in (
            (services.deposit.id, _FULL_PAYMENT, _DEPOSIT, "full payment for a deposit service"),
            (services.full_prepay.id, _DEPOSIT, _FULL_PAYMENT, "a deposit for a full-prepayment service"),
        ):
            exchange = await probe.wire.call(CREATE, build.create(service_id))
            if exchange.code != "requires_payment_handoff":
                problems.append(f"{service_id}: expected requires_payment_handoff, got {exchange.describe()}")
                continue
            for clause in payment_kind_claims(exchange.message, claimed=claimed, actual=actual):
                problems.append(f"{service_id}: {clause!r} claims {what}")
        expect(not problems, summarize(problems))


async def _grade_unknown_schedule(probe: Probe) -> None:
    """A schedule id the platform does not know, under a mandate that leaves schedules open, is refused
    as the platform's answer: never a challenge, never an adapter that threw (internal_adapter_error)."""
    fixtures, build = probe.fixtures, probe.payloads
    usd = fixtures.services.fixed_usd.id
    mandate = build.mandate(usd)
    del mandate["schedule_ids"]
    payload = build.create(usd, mandate=mandate, schedule_id=f"{fixtures.schedule.id}_nowhere")
    with probe.grader.check("booking.unknown_schedule_refused"):
        exchange = await probe.wire.call(CREATE, payload)
        expect(
            exchange.ok is False and exchange.code not in ("internal_adapter_error", _CHALLENGE),
            f"booking.create at an unknown schedule: expected a refusal, got {exchange.describe()}",
            expected="a Problem other than internal_adapter_error and the approval challenge",
            observed=exchange.describe(),
        )


async def grade_mandates(probe: Probe) -> None:
    """Run the matrix, one first call per payload."""
    for case in mandate_cases(probe):
        with probe.grader.check(case.check_id):
            for payload in case.payloads:
                exchange = await probe.wire.call(CREATE, payload)
                expect(
                    exchange.code == case.code,
                    f"expected {case.code} on the first call, got {exchange.describe()}",
                    expected=case.code,
                    observed=exchange.describe(),
                )
                if case.code == _FAIL_CLOSED:
                    expect(
                        exchange.problem.get("retryable") is not True,
                        "the fail-closed requires_user_confirmation must not be retryable",
                    )
                    expect(
                        approval_token(exchange.message) is None,
                        "the fail-closed requires_user_confirmation must carry no approval token",
                    )
    await _grade_expiry_offsets(probe)
    await _grade_fee_cap(probe)
    await _grade_optional_fee_cap(probe)
    await _grade_payment_kind(probe)
    await _grade_unknown_schedule(probe)
    await _grade_order(probe)
