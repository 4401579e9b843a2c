"""The read tools graded against the oracle: each fact the fixture file states, never the server's own.

service.describe, policy.explain and availability.find (each slot's price) must state, for every fixture
service and schedule that the file describes, exactly the facts it lists (price with type and display per
currency, duration, consultation flag, fees, payment requirement, deposit, cancellation window,
verification, opening hours per ISO weekday). A fact the file does not state is not graded; a format-1
file states none, and the checks then SKIP. The module also asks for the approval challenge of each priced
role the other checks do not reach (free, fees, every non-USD currency, under a cap in that currency), so
the prose checks, graded over every recorded summary at the end, see each currency's price text.
"""

from __future__ import annotations

from typing import Any

from osbp.conformance.fixtures import Money, QuotedPrice, Schedule, ServiceRef
from osbp.conformance.flows import challenge
from osbp.conformance.grading import expect, summarize
from osbp.conformance.probe import Probe
from osbp.conformance.wallclock import iso_duration_seconds

__all__ = ["ORACLE_CHECKS", "grade_oracle", "money_problem"]

#: Every check this module grades, in report order.
ORACLE_CHECKS = (
    "oracle.service_facts",
    "oracle.price_display",
    "oracle.policy_facts",
    "oracle.opening_hours",
    "oracle.schedule_place",
)
_FEES = ("cancellation_fee", "no_show_fee")
#: A cap in any currency's minor unit that covers every fixture price (10**12 yen is far beyond them).
_CAP = 10**12


def _no_facts(probe: Probe) -> str | None:
    if probe.fixtures.fixture_format < 2:
        return "the fixture file is format 1: it states no expected facts"
    return None


def money_problem(where: str, got: object, wanted: Money | QuotedPrice) -> str | None:
    """Why `got` is not the oracle's `wanted` Money (amount, currency, type), or None."""
    if not isinstance(got, dict):
        return f"{where}: no Money, expected {_shown(wanted)}"
    if got.get("currency") != wanted.currency:
        return f"{where}: currency {got.get('currency')!r}, expected {wanted.currency}"
    if isinstance(wanted, QuotedPrice):
        if got.get("type") != wanted.type or "amount_minor" in got:
            amount = got.get("amount_minor")
            return f"{where}: {got.get('type')!r} with amount {amount!r}, expected {wanted.type}"
        return None
    if got.get("type", "fixed") != "fixed":
        return f"{where}: type {got.get('type')!r}, expected fixed"
    amount = got.get("amount_minor")
    if type(amount) is not int or amount != wanted.amount_minor:
        return f"{where}: amount_minor {amount!r}, expected {wanted.amount_minor} {wanted.currency}"
    return None


def _shown(money: Money | QuotedPrice) -> str:
    if isinstance(money, QuotedPrice):
        return f"{money.type} {money.currency}"
    return money.display or f"{money.amount_minor} {money.currency} minor units"


def _display_problem(where: str, got: object, wanted: Money) -> str | None:
    if wanted.display is None:
        return None
    display = got.get("display") if isinstance(got, dict) else None
    if display != wanted.display:
        return f"{where}: display {display!r}, expected {wanted.display!r}"
    return None


def _service_problems(service: ServiceRef, value: object) -> list[str]:
    where = f"service.describe {service.id}"
    if not isinstance(value, dict):
        return [f"{where}: no Service"]
    problems = []
    if service.states("name") and value.get("name") != service.name:
        problems.append(f"{where}: name {value.get('name')!r}, expected {service.name!r}")
    if service.states("duration"):
        got, wanted = iso_duration_seconds(value.get("duration")), iso_duration_seconds(service.duration)
        if got != wanted:
            problems.append(f"{where}: duration {value.get('duration')!r}, expected {service.duration}")
    if service.price is not None and (
        problem := money_problem(f"{where} price", value.get("price"), service.price)
    ):
        problems.append(problem)
    problems += _option_problems(service, value.get("options"), where)
    consultation = value.get("requires_consultation", False)
    if service.states("requires_consultation") and consultation is not service.requires_consultation:
        problems.append(
            f"{where}: requires_consultation {consultation!r}, expected {service.requires_consultation}"
        )
    return problems


def _option_problems(service: ServiceRef, got: object, where: str) -> list[str]:
    """Each option the file states is listed with its id, and with its name, duration and price."""
    if not service.options:
        return []
    listed = {o.get("id"): o for o in got if isinstance(o, dict)} if isinstance(got, list) else {}
    problems = []
    for option in service.options:
        at = f"{where} option {option.id}"
        found = listed.get(option.id)
        if found is None:
            problems.append(f"{at}: not listed (options {got!r})")
            continue
        if option.name is not None and found.get("name") != option.name:
            problems.append(f"{at}: name {found.get('name')!r}, expected {option.name!r}")
        if option.duration is not None and iso_duration_seconds(
            found.get("duration")
        ) != iso_duration_seconds(option.duration):
            problems.append(f"{at}: duration {found.get('duration')!r}, expected {option.duration}")
        if option.price is not None and (
            problem := money_problem(f"{at} price", found.get("price"), option.price)
        ):
            problems.append(problem)
    return problems


def _policy_problems(service: ServiceRef, policy: object) -> list[str]:
    where = f"policy.explain {service.id}"
    if not isinstance(policy, dict):
        return [f"{where}: no Policy"]
    problems = []
    if (
        service.states("payment_requirement")
        and policy.get("payment_requirement") != service.payment_requirement
    ):
        problems.append(
            f"{where}: payment_requirement {policy.get('payment_requirement')!r}, "
            f"expected {service.payment_requirement!r}"
        )
    if service.deposit is not None and (
        problem := money_problem(f"{where} deposit", policy.get("deposit"), service.deposit)
    ):
        problems.append(problem)
    for fee in _FEES:
        if not service.states(fee):
            continue
        wanted, got = getattr(service, fee), policy.get(fee)
        if isinstance(wanted, Money):
            if problem := money_problem(f"{where} {fee}", got, wanted):
                problems.append(problem)
        elif isinstance(got, dict) and got.get("amount_minor") not in (None, 0):
            problems.append(
                f"{where}: {fee} {got.get('amount_minor')!r} {got.get('currency')}, expected none"
            )
    if service.states("cancellation_window"):
        got_window = iso_duration_seconds(policy.get("cancellation_window"))
        if got_window != iso_duration_seconds(service.cancellation_window):
            problems.append(
                f"{where}: cancellation_window {policy.get('cancellation_window')!r}, "
                f"expected {service.cancellation_window}"
            )
    if service.states("late_grace"):
        got_grace = iso_duration_seconds(policy.get("late_grace"))
        if got_grace != iso_duration_seconds(service.late_grace):
            problems.append(
                f"{where}: late_grace {policy.get('late_grace')!r}, expected {service.late_grace}"
            )
    if service.states("verification"):
        method = policy.get("verification_method")
        allowed = {service.verification} if service.verification != "none" else {"none", None}
        if method not in allowed:
            problems.append(f"{where}: verification_method {method!r}, expected {service.verification!r}")
    return problems


def _displays(service: ServiceRef, value: object, policy: object) -> tuple[int, list[str]]:
    count, problems = 0, []
    facts: list[tuple[str, object, Money | QuotedPrice | None]] = [
        (
            f"service.describe {service.id} price",
            value.get("price") if isinstance(value, dict) else None,
            service.price,
        )
    ]
    for fee in ("deposit", *_FEES):
        got = policy.get(fee) if isinstance(policy, dict) else None
        facts.append((f"policy.explain {service.id} {fee}", got, getattr(service, fee)))
    for where, got, wanted in facts:
        if isinstance(wanted, Money) and wanted.display is not None:
            count += 1
            if problem := _display_problem(where, got, wanted):
                problems.append(problem)
    return count, problems


async def _offered_prices(probe: Probe, service_id: str) -> list[tuple[str, object]]:
    """The price of each slot availability.find offers for the service on the fixture date and schedule."""
    fixtures = probe.fixtures
    exchange = await probe.wire.call(
        "osbp_availability_find",
        {
            "service_id": service_id,
            "schedule_id": fixtures.schedule.id,
            "date": fixtures.slot.date.isoformat(),
            "provider_id": fixtures.providers.in_scope,
        },
    )
    slots = exchange.value if isinstance(exchange.value, list) else []
    if not slots:
        return [(f"availability.find {service_id}: {exchange.describe()}", None)]
    return [
        (f"availability.find {service_id} slot {slot.get('starts_at_local')}", slot.get("price"))
        for slot in slots
        if isinstance(slot, dict)
    ]


async def _slot_of(probe: Probe, schedule: Schedule, service_id: str) -> dict[str, Any] | str:
    """The first slot of `schedule` on the fixture date (else why there is none)."""
    exchange = await probe.wire.call(
        "osbp_availability_find",
        {"service_id": service_id, "schedule_id": schedule.id, "date": probe.fixtures.slot.date.isoformat()},
    )
    slots = exchange.value if isinstance(exchange.value, list) else []
    for slot in slots:
        if isinstance(slot, dict) and slot.get("schedule_id") == schedule.id:
            return slot
    return f"no slot of {schedule.id} on the fixture date ({exchange.describe()})"


def _place_problems(schedule: Schedule, slot: dict[str, Any] | str) -> list[str]:
    """The schedule's name and address as its slots carry them, against the file."""
    if isinstance(slot, str):
        return [slot]
    problems = []
    for member, wanted in (("schedule_name", schedule.name), ("schedule_address", schedule.address)):
        if wanted is not None and slot.get(member) != wanted:
            problems.append(f"{schedule.id}: {member} {slot.get(member)!r}, expected {wanted!r}")
    return problems


def _hours_key(hours: object) -> list[tuple[Any, Any, Any]] | None:
    if not isinstance(hours, list) or not all(isinstance(entry, dict) for entry in hours):
        return None
    return sorted((entry.get("day"), entry.get("open"), entry.get("close")) for entry in hours)


async def _grade_hours(probe: Probe) -> None:
    fixtures = probe.fixtures
    schedules = [(fixtures.schedule, fixtures.services.fixed_usd.id)]
    if fixtures.all_day is not None:
        schedules.append((fixtures.all_day, fixtures.all_day.service))
    graded = [(schedule, service) for schedule, service in schedules if schedule.opening_hours is not None]
    slots = {schedule.id: await _slot_of(probe, schedule, service_id) for schedule, service_id in schedules}
    if not graded:
        probe.grader.skipped("oracle.opening_hours", "the fixture file states no schedule's opening_hours")
    else:
        _grade_opening_hours(probe, graded, slots)
    placed = [
        schedule for schedule, _ in schedules if schedule.name is not None or schedule.address is not None
    ]
    if not placed:
        probe.grader.skipped("oracle.schedule_place", "the fixture file states no schedule's name or address")
        return
    with probe.grader.check("oracle.schedule_place", f"{len(placed)} schedules"):
        problems = [p for schedule in placed for p in _place_problems(schedule, slots[schedule.id])]
        expect(not problems, summarize(problems))


def _grade_opening_hours(
    probe: Probe, graded: list[tuple[Schedule, str]], slots: dict[str, dict[str, Any] | str]
) -> None:
    with probe.grader.check("oracle.opening_hours", f"{len(graded)} schedules"):
        problems = []
        for schedule, _ in graded:
            assert schedule.opening_hours is not None
            slot = slots[schedule.id]
            wanted = sorted((entry.day, entry.open, entry.close) for entry in schedule.opening_hours)
            if isinstance(slot, str):
                problems.append(slot)
            elif _hours_key(got := slot.get("schedule_hours")) != wanted:
                problems.append(
                    f"{schedule.id}: schedule_hours {got!r}, expected (day, open, close) {wanted}"
                )
        expect(not problems, summarize(problems))


async def _challenges(probe: Probe) -> None:
    """Challenge (never book) each priced role no other check asks about, under a cap in its currency."""
    services, build = probe.fixtures.services, probe.payloads
    roles = [
        services.free,
        services.fees,
        services.fixed_eur,
        services.fixed_gbp,
        services.fixed_jpy,
        services.fixed_kwd,
    ]
    for service in roles:
        if service is None:
            continue
        currency = service.price.currency
        cap = {"amount_minor": _CAP, "currency": currency}
        nothing = {"amount_minor": 0, "currency": currency}
        payload = build.with_mandate(service.id, max_price=cap, max_extra_fee=nothing)
        await challenge(probe, payload)


async def grade_oracle(probe: Probe) -> None:
    """Describe and explain every fixture service the file states facts for and grade them; then the
    opening hours; then take the challenges the prose checks read."""
    reason = _no_facts(probe)
    if reason is not None:
        for check_id in ORACLE_CHECKS:
            probe.grader.skipped(check_id, reason)
        return
    roles = probe.fixtures.services.roles()
    described, explained, offered = {}, {}, {}
    for service in roles.values():
        described[service.id] = (
            await probe.wire.call("osbp_service_describe", {"service_id": service.id})
        ).value
        explained[service.id] = (
            await probe.wire.call("osbp_policy_explain", {"service_id": service.id})
        ).value
        if service.price is not None:
            offered[service.id] = await _offered_prices(probe, service.id)
    with probe.grader.check("oracle.service_facts", f"{len(roles)} services"):
        problems = [p for s in roles.values() for p in _service_problems(s, described[s.id])]
        for service in roles.values():
            for where, price in offered.get(service.id, []):
                if service.price is not None and (problem := money_problem(where, price, service.price)):
                    problems.append(problem)
        expect(not problems, summarize(problems))
    with probe.grader.check("oracle.policy_facts", f"{len(roles)} services"):
        problems = [p for s in roles.values() for p in _policy_problems(s, explained[s.id])]
        expect(not problems, summarize(problems))
    count, problems = 0, []
    for service in roles.values():
        found, wrong = _displays(service, described[service.id], explained[service.id])
        count, problems = count + found, problems + wrong
        if isinstance(service.price, Money) and service.price.display is not None:
            for where, price in offered.get(service.id, []):
                count += 1
                if problem := _display_problem(where, price, service.price):
                    problems.append(problem)
    if count == 0:
        probe.grader.skipped("oracle.price_display", "the fixture file states no display string")
    else:
        with probe.grader.check("oracle.price_display", f"{count} display strings"):
            expect(not problems, summarize(problems))
    await _grade_hours(probe)
    await _challenges(probe)
