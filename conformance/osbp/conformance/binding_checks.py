"""Idempotency and approval-token binding, probed on every payload field one at a time.

booking.create: "The approval token is bound to the exact pending payload, including the idempotency_key"
and "the same key with a different payload fails with idempotency_conflict". One attempt is challenged
under a mandate wide enough that each variation stays inside it (another in-scope service, provider,
schedule, date and time), then every variation (one field changed, the rest as challenged) is sent twice:

- with the challenge's token under its key, before the attempt is approved: nothing may book (the key's
  record answers idempotency_conflict, or the gate a fresh challenge) - `approval.token_bound_*`;
- after the attempt booked, under its settled key without approval: exactly idempotency_conflict, never
  the first receipt replayed - `idempotency.conflict_*`.

The mandate's organization_id has no variation: any other organization is out of scope, and the mandate
rule answers before the key is looked at.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from osbp.conformance.flows import challenge, receipt_problems
from osbp.conformance.grading import expect, summarize
from osbp.conformance.payloads import CREATE, approval_token, approved
from osbp.conformance.probe import Probe
from osbp.conformance.wallclock import format_instant, format_wall_clock, parse_instant
from osbp.conformance.wire import Exchange

__all__ = ["GROUPS", "Variation", "grade_binding", "variations"]

#: The field groups, each graded by one idempotency and one token check, in report order.
GROUPS = ("ids", "slot", "customer", "mandate")
_REFUSALS = {"idempotency_conflict", "requires_user_confirmation"}
_NO_BOOKING = "no booking: idempotency_conflict or a fresh requires_user_confirmation"


@dataclass(frozen=True, slots=True)
class Variation:
    """One payload field changed to another value the probe's mandate still allows."""

    group: str
    field: str
    payload: dict[str, Any]


def _names(display_name: str) -> tuple[str, str]:
    given, _, family = display_name.partition(" ")
    return given or display_name, family or "Conformance"


def base_payload(probe: Probe) -> dict[str, Any]:
    """The probe's attempt: the fixture booking under a mandate that also allows every variation."""
    fixtures, build = probe.fixtures, probe.payloads
    usd, slot = fixtures.services.fixed_usd.id, fixtures.slot
    mandate = build.mandate(
        usd,
        service_ids=[usd, _other_service(probe)],
        provider_ids=[fixtures.providers.in_scope, fixtures.providers.other],
        schedule_ids=[fixtures.schedule.id, _other_schedule(probe)],
        latest_end=format_wall_clock(dt.datetime.combine(slot.date, dt.time()) + dt.timedelta(days=2)),
    )
    customer = fixtures.customer.model_dump(exclude_none=True)
    given, family = _names(fixtures.customer.display_name)
    customer.setdefault("given_name", given)
    customer.setdefault("family_name", family)
    return build.create(usd, mandate=mandate, customer=customer)


def _other_service(probe: Probe) -> str:
    # Another service in the cap's currency that books without a payment or a handoff: the free one, else
    # the repriced one, else the verification one (each fixed-price, all on the fixture schedule).
    services = probe.fixtures.services
    other = services.free or services.repriced or services.verification
    return other.id


def _other_schedule(probe: Probe) -> str:
    # The all-day schedule where the fixtures have one; an id no schedule has otherwise (the key's record
    # must answer before anything resolves it).
    all_day = probe.fixtures.all_day
    return all_day.id if all_day is not None else f"{probe.fixtures.schedule.id}_annex"


def _phone(phone: str) -> str:
    return phone[:-1] + str((int(phone[-1]) + 1) % 10)


def _later(instant: str, minutes: int) -> str:
    parsed = parse_instant(instant)
    assert parsed is not None
    return format_instant(parsed + dt.timedelta(minutes=minutes))


def _shifted(wall_clock: str, minutes: int) -> str:
    return format_wall_clock(dt.datetime.fromisoformat(wall_clock) + dt.timedelta(minutes=minutes))


def _plus_one(money: dict[str, Any]) -> dict[str, Any]:
    return {**money, "amount_minor": money["amount_minor"] + 1}


def variations(probe: Probe, base: dict[str, Any]) -> list[Variation]:
    """Every field of `base` changed alone, each to a value the probe's mandate still allows."""
    fixtures = probe.fixtures
    start = fixtures.slot.start
    after = start + dt.timedelta(minutes=fixtures.slot.duration_minutes)
    mandate, customer = base["mandate"], base["customer"]
    top: list[tuple[str, str, Any]] = [
        ("ids", "service_id", _other_service(probe)),
        ("ids", "schedule_id", _other_schedule(probe)),
        ("ids", "provider_id", fixtures.providers.other),
        ("slot", "date", (start.date() + dt.timedelta(days=1)).isoformat()),
        ("slot", "time", after.strftime("%H:%M")),
    ]
    people: dict[str, Any] = {
        "display_name": f"{customer['display_name']} Changed",
        "phone": _phone(customer["phone"]),
        "email": f"changed.{customer['email']}",
        "given_name": f"{customer['given_name']}a",
        "family_name": f"{customer['family_name']}a",
    }
    scoped = {name: [*mandate[name], f"{mandate[name][0]}_also"] for name in ("service_ids", "schedule_ids")}
    terms: dict[str, Any] = {
        "id": probe.payloads.mandate_id(),
        "expires_at": _later(mandate["expires_at"], 60),
        "allowed_actions": [*mandate["allowed_actions"], "booking.status"],
        **scoped,
        "provider_ids": [*mandate["provider_ids"], f"{mandate['provider_ids'][0]}_also"],
        "earliest_start": _shifted(mandate["earliest_start"], -1),
        "latest_end": _shifted(mandate["latest_end"], 1),
        "max_price": _plus_one(mandate["max_price"]),
        "allow_policy_fee": not mandate["allow_policy_fee"],
        "max_extra_fee": _plus_one(mandate["max_extra_fee"]),
    }
    found = [Variation(group, name, {**base, name: value}) for group, name, value in top]
    found += [
        Variation("customer", f"customer.{name}", {**base, "customer": {**customer, name: value}})
        for name, value in people.items()
    ]
    found += [
        Variation("mandate", f"mandate.{name}", {**base, "mandate": {**mandate, name: value}})
        for name, value in terms.items()
    ]
    return found


async def _each(
    probe: Probe, found: list[Variation], send: Callable[[Variation], dict[str, Any]]
) -> dict[str, list[tuple[str, Exchange]]]:
    answers: dict[str, list[tuple[str, Exchange]]] = {group: [] for group in GROUPS}
    for variation in found:
        answers[variation.group].append((variation.field, await probe.wire.call(CREATE, send(variation))))
    return answers


def _grade(
    probe: Probe,
    check_id: str,
    answers: list[tuple[str, Exchange]],
    wrong: Callable[[Exchange], str],
    wanted: str,
) -> None:
    with probe.grader.check(check_id, f"{len(answers)} fields"):
        problems = [f"{field}: {why}" for field, exchange in answers if (why := wrong(exchange))]
        fields = ", ".join(field for field, _ in answers)
        expect(
            not problems,
            summarize(problems, shown=4),
            expected=f"{wanted} for each of {fields}",
            observed="; ".join(problems),
        )


def _token_wrong(token: str) -> Callable[[Exchange], str]:
    def wrong(exchange: Exchange) -> str:
        if exchange.ok is not False:
            return f"the token of the unchanged payload approved it: {exchange.describe()}"
        if exchange.code not in _REFUSALS:
            return f"expected one of {sorted(_REFUSALS)}, got {exchange.describe()}"
        if exchange.code == "requires_user_confirmation" and approval_token(exchange.message) == token:
            return "the fresh challenge repeats the old token"
        return ""

    return wrong


def _conflict_wrong(exchange: Exchange) -> str:
    if exchange.code == "idempotency_conflict":
        return ""
    return f"expected idempotency_conflict, got {exchange.describe()}"


async def grade_binding(probe: Probe) -> None:
    """Challenge one attempt, send every variation with its token, book it, then every variation again."""
    grader = probe.grader
    token_checks = [f"approval.token_bound_{group}" for group in GROUPS]
    conflict_checks = [f"idempotency.conflict_{group}" for group in GROUPS]
    base = base_payload(probe)
    first, token = await challenge(probe, base)
    if token is None:
        for check_id in (*token_checks, *conflict_checks):
            grader.failed(check_id, f"expected an approval challenge, got {first.describe()}")
        return
    found = variations(probe, base)
    with_token = await _each(probe, found, lambda variation: approved(variation.payload, token))
    for group, check_id in zip(GROUPS, token_checks, strict=True):
        _grade(probe, check_id, with_token[group], _token_wrong(token), _NO_BOOKING)
    booked = await probe.wire.call(CREATE, approved(base, token))
    if problems := receipt_problems(booked):
        for check_id in conflict_checks:
            grader.failed(check_id, f"the probe's attempt did not book: {'; '.join(problems)}")
        return
    settled = await _each(probe, found, lambda variation: variation.payload)
    for group, check_id in zip(GROUPS, conflict_checks, strict=True):
        _grade(probe, check_id, settled[group], _conflict_wrong, "idempotency_conflict")
