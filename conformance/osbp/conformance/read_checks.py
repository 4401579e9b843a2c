"""Checks on the read tools: service facts, money, the fixture slot, slot context and policy facts."""

from __future__ import annotations

from typing import Any

from iso4217 import Currency

from osbp.conformance.fixtures import Money, ServiceRef
from osbp.conformance.grading import expect, summarize
from osbp.conformance.probe import Probe
from osbp.conformance.wallclock import iso_duration_seconds, parse_wall_clock
from osbp.conformance.wire import Exchange

__all__ = ["grade_reads"]

_SLOT_STRINGS = (
    "id",
    "organization_id",
    "organization_name",
    "schedule_id",
    "schedule_name",
    "schedule_timezone",
    "provider_id",
    "provider_name",
    "service_id",
    "starts_at",
    "ends_at",
    "starts_at_local",
    "ends_at_local",
)
_VERIFICATION_METHODS = {"sms", "email", "none", "unknown"}


def _exponent(currency: str) -> str:
    try:
        return str(Currency(currency).exponent)
    except ValueError:
        return "unknown"


def fixed_price_problem(where: str, price: object, expected: Money) -> str | None:
    """Why `price` is not the fixed Money `expected`, or None."""
    if not isinstance(price, dict):
        return f"{where}: no price object"
    amount, currency = price.get("amount_minor"), price.get("currency")
    if currency != expected.currency:
        return f"{where}: currency {currency!r}, expected {expected.currency}"
    if price.get("type", "fixed") != "fixed":
        return f"{where}: price type {price.get('type')!r}, expected fixed"
    if type(amount) is not int:
        return f"{where}: amount_minor {amount!r} is not an integer"
    if amount == expected.amount_minor:
        return None
    note = ""
    if expected.amount_minor and amount and amount % expected.amount_minor == 0:
        note = f", {amount // expected.amount_minor}x too large"
    elif amount and expected.amount_minor % amount == 0:
        note = f", {expected.amount_minor // amount}x too small"
    return (
        f"{where}: amount_minor {amount}, expected {expected.amount_minor} {currency}"
        f" (ISO 4217 exponent {_exponent(currency)}{note})"
    )


def _slot_problems(slot: object, probe: Probe, service_id: str) -> list[str]:
    fixtures = probe.fixtures
    if not isinstance(slot, dict):
        return [f"a slot is {type(slot).__name__}, not an object"]
    where = f"slot {slot.get('id')!r}"
    problems = [f"{where}: {key} missing or empty" for key in _SLOT_STRINGS if not slot.get(key)]
    for key, wanted in (
        ("organization_id", fixtures.organization_id),
        ("schedule_id", fixtures.schedule.id),
        ("schedule_timezone", fixtures.timezone),
        ("service_id", service_id),
    ):
        if slot.get(key) and slot.get(key) != wanted:
            problems.append(f"{where}: {key} {slot.get(key)!r}, expected {wanted!r}")
    if not isinstance(slot.get("price"), dict):
        problems.append(f"{where}: no price Money")
    if fixtures.schedule.has_coordinates:
        for key, bound in (("schedule_latitude", 90), ("schedule_longitude", 180)):
            value = slot.get(key)
            if not isinstance(value, int | float) or isinstance(value, bool) or not -bound <= value <= bound:
                problems.append(f"{where}: {key} {value!r} is not a coordinate")
    return problems


def _organization_problems(policy: dict[str, Any], probe: Probe) -> list[str]:
    block = policy.get("organization")
    if not isinstance(block, dict):
        return ["no organization block"]
    problems = []
    fixtures = probe.fixtures
    if block.get("id") != fixtures.organization_id:
        problems.append(f"organization.id {block.get('id')!r}, expected {fixtures.organization_id!r}")
    if block.get("timezone") != fixtures.timezone:
        problems.append(f"organization.timezone {block.get('timezone')!r}, expected {fixtures.timezone!r}")
    if not (isinstance(block.get("name"), str) and block["name"]):
        problems.append("organization.name missing")
    currency, country = block.get("currency"), block.get("country")
    if not (isinstance(currency, str) and len(currency) == 3 and currency.isupper()):
        problems.append(f"organization.currency {currency!r} is not an ISO 4217 code")
    if not (isinstance(country, str) and len(country) == 2 and country.isalpha() and country.isupper()):
        problems.append(f"organization.country {country!r} is not an ISO 3166-1 alpha-2 code")
    return problems


async def _describe_all(probe: Probe) -> dict[str, Exchange]:
    services = probe.fixtures.services
    ids = [service.id for service in services.fixed().values()] + [
        services.insurance_dependent.id,
        services.quote_required.id,
        services.consultation.id,
        services.deposit.id,
        services.full_prepay.id,
        services.unknown_payment.id,
        services.verification.id,
    ]
    described: dict[str, Exchange] = {}
    for service_id in ids:
        exchange = await probe.wire.call("osbp_service_describe", {"service_id": service_id})
        described[service_id] = exchange
        if isinstance(exchange.value, dict):
            probe.services[service_id] = exchange.value
    return described


async def _find_fixed(probe: Probe) -> dict[str, Exchange]:
    fixtures = probe.fixtures
    found: dict[str, Exchange] = {}
    for currency, service in fixtures.services.fixed().items():
        found[currency] = await probe.wire.call(
            "osbp_availability_find",
            {
                "service_id": service.id,
                "schedule_id": fixtures.schedule.id,
                "date": fixtures.slot.date.isoformat(),
                "provider_id": fixtures.providers.in_scope,
            },
        )
    return found


def _slots(exchange: Exchange) -> list[Any]:
    return exchange.value if isinstance(exchange.value, list) else []


def _grade_money(probe: Probe, described: dict[str, Exchange], found: dict[str, Exchange]) -> None:
    for currency, service in probe.fixtures.services.fixed().items():
        with probe.grader.check(f"money.{currency.lower()}_minor_units"):
            describe = described[service.id]
            expect(isinstance(describe.value, dict), f"service.describe {service.id}: {describe.describe()}")
            problems = [
                fixed_price_problem(
                    f"service.describe {service.id}", describe.value.get("price"), service.price
                )
            ]
            problems += [
                fixed_price_problem(
                    f"availability.find slot {slot.get('id')!r}", slot.get("price"), service.price
                )
                for slot in _slots(found[currency])
                if isinstance(slot, dict)
            ]
            expect(not any(problems), summarize([p for p in problems if p]))
    with probe.grader.check("money.non_fixed_omits_amount"):
        services = probe.fixtures.services
        non_fixed: tuple[tuple[str, ServiceRef], ...] = (
            ("insurance_dependent", services.insurance_dependent),
            ("quote_required", services.quote_required),
        )
        for role, ref in non_fixed:
            describe = described[ref.id]
            expect(isinstance(describe.value, dict), f"service.describe {ref.id}: {describe.describe()}")
            price = describe.value.get("price")
            expect(isinstance(price, dict), f"{ref.id}: no price Money (a non-fixed price is still a Money)")
            expect(
                price.get("type") == role,
                f"{ref.id}: price type {price.get('type')!r}, expected {role!r}",
            )
            expect("amount_minor" not in price, f"{ref.id}: a {role} price carries amount_minor")
            expect(isinstance(price.get("currency"), str), f"{ref.id}: a {role} price has no currency")


def _grade_durations(probe: Probe, described: dict[str, Exchange], policies: list[Exchange]) -> None:
    with probe.grader.check("shapes.durations_iso8601"):
        problems: list[str] = []
        for service_id, exchange in described.items():
            value = exchange.value
            if not isinstance(value, dict):
                continue
            if iso_duration_seconds(value.get("duration")) is None:
                problems.append(f"{service_id}: duration {value.get('duration')!r}")
            options = value.get("options")
            for option in options if isinstance(options, list) else []:
                if (
                    isinstance(option, dict)
                    and "duration" in option
                    and iso_duration_seconds(option["duration"]) is None
                ):
                    problems.append(
                        f"{service_id} option {option.get('id')!r}: duration {option['duration']!r}"
                    )
        for exchange in policies:
            policy = exchange.value if isinstance(exchange.value, dict) else {}
            for key in ("cancellation_window", "late_grace"):
                if key in policy and iso_duration_seconds(policy[key]) is None:
                    problems.append(f"policy {policy.get('service_id')!r}: {key} {policy[key]!r}")
        expect(not problems, "not ISO 8601 durations: " + summarize(problems))
        usd = probe.fixtures.services.fixed_usd.id
        expect(usd in probe.services, f"service.describe {usd} failed: {described[usd].describe()}")
        seconds = iso_duration_seconds(probe.services[usd].get("duration"))
        wanted = probe.fixtures.slot.duration_minutes * 60
        expect(
            seconds == wanted,
            f"{usd}: duration {probe.services[usd].get('duration')!r}, expected {wanted // 60} minutes",
        )


def _grade_slots(probe: Probe, found: dict[str, Exchange]) -> None:
    fixtures = probe.fixtures
    usd = found["USD"]
    with probe.grader.check("availability.fixture_slot"):
        expect(
            isinstance(usd.value, list),
            f"availability.find {fixtures.services.fixed_usd.id}: {usd.describe()}",
        )
        start, end = fixtures.slot.start, fixtures.slot.end
        matching = [
            slot
            for slot in usd.value
            if isinstance(slot, dict)
            and parse_wall_clock(slot.get("starts_at_local")) == start
            and parse_wall_clock(slot.get("ends_at_local")) == end
            and slot.get("provider_id") == fixtures.providers.in_scope
        ]
        expect(
            bool(matching),
            f"no slot from {start.isoformat()} to {end.isoformat()} with the in-scope provider "
            f"among {len(usd.value)} slots",
        )
        probe.slot = matching[0]
    with probe.grader.check("shapes.slot_context"):
        problems: list[str] = []
        count = 0
        for currency, exchange in found.items():
            service_id = fixtures.services.fixed()[currency].id
            for slot in _slots(exchange):
                count += 1
                problems += _slot_problems(slot, probe, service_id)
        expect(count > 0, "availability.find returned no slots to grade")
        expect(
            not problems,
            summarize(problems),
        )


async def _grade_policies(probe: Probe) -> list[Exchange]:
    services = probe.fixtures.services
    roles: list[tuple[str, str]] = [
        (services.fixed_usd.id, "none"),
        (services.deposit.id, "deposit"),
        (services.full_prepay.id, "full_prepay"),
        (services.unknown_payment.id, "unknown"),
        (services.verification.id, "none"),
    ]
    exchanges = []
    with probe.grader.check("shapes.policy"):
        problems: list[str] = []
        for service_id, requirement in roles:
            exchange = await probe.wire.call("osbp_policy_explain", {"service_id": service_id})
            exchanges.append(exchange)
            policy = exchange.value
            if not isinstance(policy, dict):
                problems.append(f"policy.explain {service_id}: {exchange.describe()}")
                continue
            probe.policies[service_id] = policy
            where = f"policy.explain {service_id}"
            if policy.get("service_id") != service_id:
                problems.append(f"{where}: service_id {policy.get('service_id')!r}")
            if policy.get("payment_requirement") != requirement:
                problems.append(
                    f"{where}: payment_requirement {policy.get('payment_requirement')!r}, "
                    f"expected {requirement!r}"
                )
            if policy.get("verification_method") not in _VERIFICATION_METHODS:
                problems.append(f"{where}: verification_method {policy.get('verification_method')!r}")
            problems += [f"{where}: {p}" for p in _organization_problems(policy, probe)]
            if service_id == services.deposit.id:
                problem = fixed_price_problem(
                    f"{where}: deposit", policy.get("deposit"), services.deposit.deposit
                )
                problems += [problem] if problem else []
            if (
                service_id == services.verification.id
                and policy.get("verification_method") != services.verification.method
            ):
                problems.append(
                    f"{where}: verification_method {policy.get('verification_method')!r}, "
                    f"expected {services.verification.method!r}"
                )
        expect(not problems, summarize(problems))
    return exchanges


async def grade_reads(probe: Probe) -> None:
    """Describe every fixture service, find the fixed-price slots, explain the policies, and grade them."""
    described = await _describe_all(probe)
    found = await _find_fixed(probe)
    policies = await _grade_policies(probe)
    _grade_money(probe, described, found)
    _grade_durations(probe, described, policies)
    _grade_slots(probe, found)
