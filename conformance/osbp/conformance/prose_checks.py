"""Prose graded over the whole run: Problem messages, and the falsehoods of summaries and receipts.

The spec: "problem.message is explanatory English prose in v0.1.0, not a parsing target". A message that
embeds a JSON object is a platform's (or a library's) raw answer passed through: foreign text that may
carry customer data and that an agent would be tempted to parse. Every approval summary and receipt the
run recorded is read for false statements (`osbp.conformance.falsehoods`), judged against the oracle's
facts for the service it is about.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass
from typing import Any

from osbp.conformance.falsehoods import (
    fee_cap_claims,
    hold_claims,
    money_mentions,
    policy_falsehoods,
    unknown_amounts,
    weekday_falsehoods,
)
from osbp.conformance.fixtures import Fixtures, Money, ServiceRef
from osbp.conformance.grading import Grader, expect, summarize
from osbp.conformance.payloads import CREATE
from osbp.conformance.summary_checks import price_stated, summary_text
from osbp.conformance.wallclock import iso_duration_seconds
from osbp.conformance.wire import Wire

__all__ = ["FALSEHOOD_CHECKS", "grade_problem_prose", "grade_prose_falsehoods"]

#: A JSON object with at least one key, as a raw body would carry: `{"type": …` or `{ "detail":…`.
_JSON_OBJECT = re.compile(r'\{\s*"[^"\n]{1,64}"\s*:')


def _raw_bodies(wire: Wire) -> list[str]:
    problems = []
    for index, exchange in enumerate(wire.exchanges):
        message = exchange.message
        if exchange.ok is False and (found := _JSON_OBJECT.search(message)):
            start = max(found.start() - 20, 0)
            problems.append(f"#{index + 1} {exchange.tool}: …{message[start : found.end() + 40]}…")
    return problems


def grade_problem_prose(grader: Grader, wire: Wire) -> None:
    """Grade envelope.problem_message_prose over every recorded failure."""
    with grader.check("envelope.problem_message_prose"):
        problems = _raw_bodies(wire)
        expect(not problems, "a Problem message embeds a JSON object: " + summarize(problems))


# --- Falsehoods in approval summaries and receipts, graded against the oracle --------------------------

#: The falsehood checks, in report order.
FALSEHOOD_CHECKS = (
    "summary.fees_oracle",
    "prose.weekday",
    "prose.price_text",
    "prose.fee_cap_claim",
    "prose.hold_claim",
    "prose.policy_supported",
)


@dataclass(frozen=True, slots=True)
class _Text:
    """One user-facing text of the run: a challenge's summary (before booking) or a receipt's text."""

    kind: str  # "summary" or "receipt"
    service_id: object
    date: object
    text: str

    @property
    def where(self) -> str:
        return f"{self.kind} of {self.service_id}"


def _texts(wire: Wire) -> list[_Text]:
    texts = []
    for exchange in wire.exchanges:
        if exchange.tool != CREATE:
            continue
        args = exchange.arguments
        if exchange.code == "requires_user_confirmation":
            texts.append(
                _Text("summary", args.get("service_id"), args.get("date"), summary_text(exchange.message))
            )
        elif isinstance(exchange.value, dict) and isinstance(exchange.value.get("text"), str):
            texts.append(_Text("receipt", args.get("service_id"), args.get("date"), exchange.value["text"]))
    return texts


def _year(value: object, fallback: int) -> int:
    try:
        return dt.date.fromisoformat(str(value)).year
    except ValueError:
        return fallback


def _amounts(service: ServiceRef) -> set[tuple[str, int]]:
    """Every (currency, minor amount) the oracle gives the service: price, deposit, fees."""
    moneys = [service.price, service.deposit, service.cancellation_fee, service.no_show_fee]
    return {(money.currency, money.amount_minor) for money in moneys if isinstance(money, Money)}


def _grade_claims(grader: Grader, check_id: str, texts: list[_Text], find: Any, what: str) -> None:
    with grader.check(check_id, f"{len(texts)} texts"):
        problems = [f"{text.where}: {claim!r}" for text in texts for claim in find(text.text)]
        expect(not problems, f"{what}: " + summarize(problems))


def _grade_oracle_fees(grader: Grader, texts: list[_Text], fixtures: Fixtures) -> None:
    """Each fee the oracle gives a summarized service is stated in its summary, with its amount."""
    roles = {service.id: service for service in fixtures.services.roles().values()}
    graded = [
        (text, roles[str(text.service_id)].fees())
        for text in texts
        if text.kind == "summary" and str(text.service_id) in roles and roles[str(text.service_id)].fees()
    ]
    if not graded:
        grader.skipped("summary.fees_oracle", "no recorded summary is of a service the oracle gives a fee")
        return
    with grader.check("summary.fees_oracle", f"{sum(len(fees) for _, fees in graded)} fees"):
        problems = [
            f"{text.where}: no {name.replace('_', ' ')} {money.display or money.amount_minor}"
            for text, fees in graded
            for name, money in fees.items()
            if not price_stated(text.text, money.model_dump(exclude_none=True))
        ]
        expect(not problems, summarize(problems))


def grade_prose_falsehoods(grader: Grader, wire: Wire, fixtures: Fixtures) -> None:
    """Grade the falsehood checks over every approval summary and receipt the run recorded."""
    texts = _texts(wire)
    if not texts:
        for check_id in FALSEHOOD_CHECKS:
            grader.skipped(check_id, "no approval summary or receipt was recorded")
        return
    _grade_oracle_fees(grader, texts, fixtures)
    with grader.check("prose.weekday"):
        count, problems = 0, list[str]()
        for text in texts:
            found, wrong = weekday_falsehoods(text.text, year=_year(text.date, fixtures.slot.date.year))
            count, problems = count + found, problems + [f"{text.where}: {p}" for p in wrong]
        expect(not problems, "a weekday that is not its date's: " + summarize(problems))
    roles = {service.id: service for service in fixtures.services.roles().values()}
    priced = [(text, roles[str(text.service_id)]) for text in texts if str(text.service_id) in roles]
    priced = [
        (text, service) for text, service in priced if service.price is not None and service.states("price")
    ]
    if fixtures.fixture_format < 2 or not priced:
        grader.skipped("prose.price_text", "the fixture file states no price for the services summarized")
    else:
        with grader.check("prose.price_text", f"{len(priced)} texts"):
            problems = []
            for text, service in priced:
                wrong = unknown_amounts(money_mentions(text.text), _amounts(service))
                problems += [f"{text.where}: {p} is none of the oracle's amounts" for p in wrong]
            expect(not problems, summarize(problems))
    _grade_claims(grader, "prose.fee_cap_claim", texts, fee_cap_claims, "a claim that the mandate caps fees")
    summaries = [text for text in texts if text.kind == "summary"]
    _grade_claims(grader, "prose.hold_claim", summaries, hold_claims, "a claim that the slot is held")
    stated = [
        (text, service)
        for text, service in ((t, roles.get(str(t.service_id))) for t in texts)
        if service is not None and service.states("cancellation_fee") and service.states("no_show_fee")
    ]
    if not stated:
        grader.skipped(
            "prose.policy_supported", "the fixture file states no fees for the services summarized"
        )
        return
    with grader.check("prose.policy_supported", f"{len(stated)} texts"):
        problems = []
        for text, service in stated:
            fees = {
                name: (money.amount_minor if isinstance(money, Money) else None)
                for name, money in (
                    ("cancellation_fee", service.cancellation_fee),
                    ("no_show_fee", service.no_show_fee),
                )
            }
            window = (
                iso_duration_seconds(service.cancellation_window) if service.cancellation_window else None
            )
            problems += [f"{text.where}: {p}" for p in policy_falsehoods(text.text, fees=fees, window=window)]
        expect(not problems, summarize(problems))
