"""The approval summary, element by element, against the facts the server itself reported.

The spec requires the final-confirmation summary to carry the resolved service, merchant-local time and
price, the provider and location, every surfaced cancellation or no-show fee, the payment requirement, and
the merchant-visible customer name (booking.create, policy.explain). Each element is graded against what
the same server answered from service.describe, availability.find and policy.explain for that slot, never
against the fixture file alone, so a server is held to its own facts. The prose is free: a fact counts as
stated when one of its usual written forms appears (a date as 2030-05-02 or May 2, a time as 10:30, a price
as its display string or its major amount beside the currency).

Besides the happy-path challenge of the fixed-price service, the payment element is graded on the
challenges of the deposit and full-prepayment services under a mandate that allows the fee
(`allow_policy_fee` with a `max_extra_fee` covering it): those reach the gate without booking anything.
"""

from __future__ import annotations

import datetime as dt
import re
from decimal import Decimal
from typing import Any

from iso4217 import Currency

from osbp.conformance.flows import challenge
from osbp.conformance.grading import expect
from osbp.conformance.probe import Probe
from osbp.conformance.summary_facts import grade_summary_facts, policy_case_challenges
from osbp.conformance.wallclock import clock_forms, zone
from osbp.conformance.wire import Exchange

__all__ = [
    "SUMMARY_CHECKS",
    "date_forms",
    "grade_summaries",
    "payment_problem",
    "price_forms",
    "price_stated",
    "summary_text",
]

#: Every check this module grades, in report order.
SUMMARY_CHECKS = (
    "approval.summary",
    "summary.date",
    "summary.timezone",
    "summary.provider",
    "summary.location",
    "summary.fees",
    "summary.payment",
    "summary.customer_name",
)
#: Currency signs prose commonly uses instead of the ISO code.
_SIGNS = {"USD": ("$",), "EUR": ("€",), "GBP": ("£",), "JPY": ("¥", "円"), "KWD": ("KD", "د.ك")}
_FEES = (("cancellation_fee", "cancellation fee"), ("no_show_fee", "no-show fee"))
#: How prose says the whole price is due before the appointment ("upfront" alone also opens "No upfront
#: payment", and "before the appointment" a cancellation deadline, so neither counts).
_PREPAY = re.compile(r"prepa|in advance|full payment|paid in full|pay in full", re.IGNORECASE)
_PAYMENT = re.compile(r"\b(pay\w*|deposit\w*|prepa\w*|charge\w*)\b", re.IGNORECASE)
#: A deposit or payment said to be due before the appointment, and what makes that a denial.
_REQUIRED_PAYMENT = re.compile(r"\b(?:deposit|prepa\w*|full payment|payment in advance)\b", re.IGNORECASE)
_PAYMENT_NEGATION = re.compile(r"\b(?:no|not|never|without|nothing)\b|n't\b", re.IGNORECASE)
_NONE_REQUIRED = re.compile(r"\bnone\b|\bnot (?:required|needed|due)\b|n't (?:required|needed|due)\b", re.I)
_NO_PAYMENT = re.compile(
    r"\bno (?:upfront |advance )?(?:payment|prepayment)\b|\bnothing (?:is )?(?:due|to pay)\b", re.IGNORECASE
)


def _named(text: str, name: object) -> bool:
    return isinstance(name, str) and bool(name) and name.casefold() in text.casefold()


def price_forms(price: dict[str, Any]) -> list[str]:
    """How a summary may write `price`: its display string, or its major amount (plain or grouped)."""
    forms = [price["display"]] if isinstance(price.get("display"), str) and price["display"] else []
    amount, currency = price.get("amount_minor"), price.get("currency")
    if type(amount) is int and isinstance(currency, str):
        try:
            exponent = Currency(currency).exponent or 0
        except ValueError:
            exponent = 2
        major = Decimal(amount).scaleb(-exponent)
        forms += [f"{major:.{exponent}f}", f"{major:,.{exponent}f}"]
    return forms


def price_stated(text: str, price: dict[str, Any]) -> bool:
    """The display string, or the major amount right beside the currency's code or sign (either side)."""
    display = price.get("display")
    if isinstance(display, str) and display and display in text:
        return True
    currency = price.get("currency")
    if not isinstance(currency, str):
        return False
    marks = "|".join(re.escape(mark) for mark in (currency, *_SIGNS.get(currency, ())))
    for amount in (re.escape(form) for form in price_forms(price) if form != display):
        beside = rf"(?:{marks})\s?{amount}(?![\d]|[.,]\d)|(?<![\d.,]){amount}\s?(?:{marks})"
        if re.search(beside, text):
            return True
    return False


def date_forms(day: dt.date) -> tuple[str, ...]:
    """How prose may write a date: ISO, month-day or day-month with the English month name, numeric."""
    month, short = day.strftime("%B"), day.strftime("%b")
    return (
        day.isoformat(),
        f"{month} {day.day}",
        f"{day.day} {month}",
        f"{short} {day.day}",
        f"{day.day} {short}",
        day.strftime("%m/%d/%Y"),
        day.strftime("%d/%m/%Y"),
        day.strftime("%d.%m.%Y"),
    )


def _zone_forms(timezone: str, local: dt.datetime) -> tuple[str, ...]:
    try:
        abbreviation = local.replace(tzinfo=zone(timezone)).tzname()
    except ValueError:
        abbreviation = None
    return (timezone, abbreviation) if abbreviation else (timezone,)


def summary_text(message: str) -> str:
    """The user-facing part of a challenge message: everything before the sentence carrying the token."""
    at = message.find('approval.token="')
    if at < 0:
        return message
    cut = max(message.rfind("\n", 0, at), message.rfind(". ", 0, at))
    return message[: cut + 1].strip() if cut >= 0 else ""


def _require(condition: bool, text: str, what: str) -> None:
    """Fail unless `condition`: expected `what` in the summary, observed the summary the server showed."""
    expect(condition, f"the summary does not state {what}", expected=what, observed=repr(text[:400]))


def _grade_core(probe: Probe, message: str) -> None:
    fixtures, grader = probe.fixtures, probe.grader
    usd = fixtures.services.fixed_usd.id
    service = probe.services.get(usd) or {}
    slot = probe.slot or {}
    price = slot.get("price") if isinstance(slot.get("price"), dict) else service.get("price")
    with grader.check("approval.summary"):
        expect(bool(service), "service.describe failed, so the service name is unknown")
        name = service.get("name")
        _require(_named(message, name), message, f"the service name {name!r}")
        times = clock_forms(fixtures.slot.start.time())
        _require(
            any(form in message for form in times), message, f"the merchant-local time {fixtures.slot.time}"
        )
        expect(isinstance(price, dict), "neither availability.find nor service.describe reported a price")
        assert isinstance(price, dict)
        wanted = f"the price {price_forms(price)} beside its currency {price.get('currency')!r}"
        _require(price_stated(message, price), message, wanted)
    with grader.check("summary.date"):
        forms = date_forms(fixtures.slot.date)
        _require(any(form in message for form in forms), message, f"the date {fixtures.slot.date}")
    with grader.check("summary.timezone"):
        timezone = slot.get("schedule_timezone") or fixtures.timezone
        zones = _zone_forms(str(timezone), fixtures.slot.start)
        _require(any(form in message for form in zones), message, f"the timezone (one of {list(zones)})")
    for check_id, key, what in (
        ("summary.provider", "provider_name", "provider"),
        ("summary.location", "schedule_name", "location"),
    ):
        with grader.check(check_id):
            expect(bool(slot), "availability.find did not offer the fixture slot, so its names are unknown")
            _require(_named(message, slot.get(key)), message, f"the {what} {slot.get(key)!r}")
    with grader.check("summary.customer_name"):
        customer = fixtures.customer.display_name
        _require(_named(message, customer), message, f"the merchant-visible name {customer!r}")


def _fee_problems(message: str, policy: dict[str, Any], where: str) -> tuple[int, list[str]]:
    count, problems = 0, []
    for key, label in _FEES:
        fee = policy.get(key)
        if not isinstance(fee, dict):
            continue
        count += 1
        if not price_stated(message, fee):
            problems.append(f"{where}: no {label} {price_forms(fee)}")
    return count, problems


def _payment_claims(message: str) -> list[str]:
    """The sentences that say a deposit or a payment in advance is required (a negation before it, or
    "none" / "not required" in the sentence, makes it a denial)."""
    claims = []
    for sentence in re.split(r"(?<=[.!?])\s+|\n+", message):
        found = _REQUIRED_PAYMENT.search(sentence)
        if (
            found
            and not _PAYMENT_NEGATION.search(sentence[: found.start()])
            and not _NONE_REQUIRED.search(sentence)
        ):
            claims.append(sentence.strip())
    return claims


def payment_problem(message: str, policy: dict[str, Any], where: str, name: object = None) -> str | None:
    """Why `message` misstates `policy`'s payment requirement (None when it states it). `name`, the
    service's name, is read out first: a service called "Deposit required" states no deposit by its name."""
    if isinstance(name, str) and name:
        message = re.sub(re.escape(name), " ", message, flags=re.IGNORECASE)
    requirement = policy.get("payment_requirement")
    claims = _payment_claims(message)
    if requirement == "deposit":
        deposit = policy.get("deposit")
        if not (
            isinstance(deposit, dict) and price_stated(message, deposit) and "deposit" in message.lower()
        ):
            forms = price_forms(deposit) if isinstance(deposit, dict) else []
            return f"{where}: no deposit of {forms}"
        if _PREPAY.search(message):
            return f"{where}: a deposit is described as full prepayment"
    elif requirement == "full_prepay":
        if not _PREPAY.search(message):
            return f"{where}: full prepayment is not stated"
        if _NO_PAYMENT.search(message):
            return f"{where}: full prepayment is required but the summary says no payment is"
    elif not _PAYMENT.search(message):
        return f"{where}: the payment requirement ({requirement}) is not stated"
    elif requirement == "none" and claims:
        return f"{where}: {claims[0]!r} claims a payment the policy does not require"
    return None


async def _fee_challenges(probe: Probe) -> list[tuple[str, Exchange]]:
    """The challenges of the deposit and full-prepayment services under a mandate allowing the fee."""
    services, build = probe.fixtures.services, probe.payloads
    cap = probe.fixtures.max_price
    allowance = {"amount_minor": cap.amount_minor, "currency": cap.currency}
    found = []
    for service_id in (services.deposit.id, services.full_prepay.id):
        payload = build.with_mandate(service_id, allow_policy_fee=True, max_extra_fee=allowance)
        exchange, _ = await challenge(probe, payload)
        found.append((service_id, exchange))
    return found


async def grade_summaries(probe: Probe, first: Exchange) -> None:
    """Grade every summary element on `first` (the fixed-price challenge) and the fee-allowing challenges."""
    message = summary_text(first.message)
    _grade_core(probe, message)
    usd = probe.fixtures.services.fixed_usd.id
    graded: list[tuple[str, str]] = [(usd, message)]
    problems: list[str] = []
    for service_id, exchange in [*await _fee_challenges(probe), *await policy_case_challenges(probe)]:
        if exchange.code == "requires_user_confirmation" and exchange.problem.get("retryable") is True:
            graded.append((service_id, summary_text(exchange.message)))
        else:
            problems.append(f"{service_id}: expected an approval challenge, got {exchange.describe()}")
    names = {service.id: service.name for service in probe.fixtures.services.roles().values()}
    names |= {key: value.get("name") for key, value in probe.services.items() if value.get("name")}
    with probe.grader.check("summary.payment"):
        for service_id, text in graded:
            policy = probe.policies.get(service_id)
            if policy is None:
                problems.append(f"{service_id}: policy.explain failed, so the requirement is unknown")
            elif problem := payment_problem(text, policy, service_id, names.get(service_id)):
                problems.append(problem)
        expect(not problems, "; ".join(problems))
    await grade_summary_facts(probe, graded)
    fees, missing = 0, list[str]()
    for service_id, text in graded:
        count, absent = _fee_problems(text, probe.policies.get(service_id) or {}, service_id)
        fees, missing = fees + count, missing + absent
    if fees == 0:
        probe.grader.skipped(
            "summary.fees", "policy.explain surfaced no cancellation or no-show fee for the graded services"
        )
        return
    with probe.grader.check("summary.fees", f"{fees} fees"):
        expect(not missing, "; ".join(missing))
