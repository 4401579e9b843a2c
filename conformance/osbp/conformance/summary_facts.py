"""More of the approval summary's facts, its prose over the whole run, and the token's other bindings.

Graded on the fixed-price challenge (and the deposit and full-prepayment ones) against what the same
server answered from availability.find and policy.explain, like `osbp.conformance.summary_checks`:

- `summary.end_time`: when the appointment ends (its merchant-local end, or its length);
- `summary.merchant`: the merchant (policy.explain's organization name) the booking is with;
- `summary.cancellation`: whether the booking can be cancelled, as policy.explain's cancellation_enabled
  says (never denied, nor called unreported, when it is reported);
- `summary.policy_terms`: the cancellation window, the late grace and the merchant's cancellation note
  policy.explain reports (the spec binds the token to "policy text", so the summary carries it);
- `summary.end_date`, `summary.schedule_timezone` (the fixtures' `overnight` slot, challenged only): a
  slot ending the next day states that day, and one at a schedule in another zone than the organization's
  names the schedule's zone (the merchant-local time is the schedule's).

Over every approval summary the run recorded (the payload it answered is known):

- `summary.fees_uncapped`: a summary stating a cancellation or no-show fee also says the booking mandate
  does not cap or limit it (Security: "the protection is explicit disclosure in final approval");
- `summary.name_fields`: a given_name or family_name the payload sends is stated, and never said not to
  be sent (booking.create: the summary shows the merchant-visible name so swapped fields are caught);
- `prose.null_placeholder`: no summary shows a program's null (`None`, `null`, `undefined`) where a value
  belongs ("a cancellation fee of None", "(None)");
- `prose.unit_number`: a duration's unit agrees with its count ("1 hour", never "1 hours"; "10 minutes
  late", never "10 minute late").

The policy cases (`policy_cases` in the fixtures) are challenged beside the deposit and full-prepayment
services, so the summary checks also read a booking that cannot be cancelled, one with neither deadline nor
late grace, and spans of one unit.

And two more token bindings, each under a fresh idempotency key:

- `approval.token_invented`: a token no challenge issued gets a fresh challenge, never a booking or a
  server error;
- `approval.token_other_booking`: one booking's token sent with another booking is re-challenged with a
  summary of that other booking (its service), never of the booking the token was issued for.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from osbp.conformance.falsehoods import fee_cap_claims, sentences, span_forms
from osbp.conformance.grading import Grader, expect, summarize
from osbp.conformance.payloads import CREATE, approval_token, approved
from osbp.conformance.probe import Probe
from osbp.conformance.wallclock import clock_forms, format_wall_clock, iso_duration_seconds, zone
from osbp.conformance.wire import Exchange, Wire

__all__ = [
    "FACT_CHECKS",
    "OVERNIGHT_CHECKS",
    "PROSE_CHECKS",
    "TOKEN_CHECKS",
    "grade_summary_facts",
    "grade_summary_prose",
]

#: The checks graded on the fixed-price challenge and the fee-allowing ones, in report order.
FACT_CHECKS = ("summary.end_time", "summary.merchant", "summary.cancellation", "summary.policy_terms")
#: The checks graded over every recorded summary.
PROSE_CHECKS = ("summary.fees_uncapped", "summary.name_fields", "prose.null_placeholder", "prose.unit_number")
#: The checks of the overnight slot (the fixtures' `overnight`).
OVERNIGHT_CHECKS = ("summary.end_date", "summary.schedule_timezone")
#: The token checks of this module.
TOKEN_CHECKS = ("approval.token_invented", "approval.token_other_booking")

_NEGATION = re.compile(r"\b(?:not|never|cannot|no|without|nothing|none)\b|n't\b", re.IGNORECASE)
_CANCEL = re.compile(r"\bcancel", re.IGNORECASE)
#: A statement that the booking cannot be cancelled.
_NOT_CANCELLABLE = re.compile(
    r"\b(?:does|do|will) not (?:allow|permit|accept)\b[^.;]*\bcancel"
    r"|\b(?:cannot|can ?not|can't|won't|may not) be cancell?ed\b|\bnon-?cancell?able\b|\bnot cancell?able\b"
    r"|\bno cancell?ations?\b",
    re.IGNORECASE,
)
#: A statement that the merchant did not say whether the booking can be cancelled.
_CANCELLABLE_UNREPORTED = re.compile(
    r"\b(?:not|never)\s+(?:report|state|say|disclose|specif)\w*\s+whether\b|\bunknown whether\b"
    r"|\bwhether\b[^.;]*\bcancel\w*[^.;]*\b(?:unknown|not (?:reported|known|stated))\b",
    re.IGNORECASE,
)
_FEE_NAME = re.compile(r"\bcancell?ation fee\b|\bno[- ]?show fee\b", re.IGNORECASE)
_MONEY_DIGIT = re.compile(r"\d")
#: A program's null where a value belongs: after a preposition, a colon or an opening parenthesis, or
#: opening the text (a sentence may start "None of ...", so "None of" is English).
_NULL = re.compile(
    r"(?:\b(?:of|than|for|is|are|at|with|from|by|to|as)\s+|[:(]\s*|^\s*)(?P<null>None|null|undefined|NaN)\b"
    r"(?!\s+of\b)"
)


#: A time unit whose number disagrees with its count: "1 hours", or "10 minute" ending a phrase ("a
#: 10-minute grace" and "a 10 minute grace" are compound adjectives, so a noun after the unit is left alone).
_UNIT_NUMBER = re.compile(
    r"(?<![\d.,])(?:1\s+(?:minute|hour|day|week)s|(?!1\s)\d+\s+(?:minute|hour|day|week)"
    r"(?=\s+(?:late|early|before|after|ahead|prior|in advance)\b|\s*[.,;:)]|$))",
    re.IGNORECASE,
)


def _require(condition: bool, text: str, what: str) -> None:
    expect(condition, f"the summary does not state {what}", expected=what, observed=repr(text[:400]))


def _duration_stated(text: str, duration: object) -> bool:
    seconds = iso_duration_seconds(duration)
    if seconds is None:
        return True  # nothing the summary could be held to
    said = text.casefold()
    forms = [*span_forms(seconds), str(duration)]
    return any(form.casefold() in said for form in forms)


def _grade_end(probe: Probe, message: str) -> None:
    slot = probe.fixtures.slot
    with probe.grader.check("summary.end_time"):
        ends = clock_forms(slot.end.time())
        lengths = span_forms(slot.duration_minutes * 60)
        stated = any(form in message for form in ends) or any(
            form.casefold() in message.casefold() for form in lengths
        )
        _require(stated, message, f"when the appointment ends ({slot.end:%H:%M}, or its length)")


def _grade_merchant(probe: Probe, message: str, policy: dict[str, Any] | None) -> None:
    with probe.grader.check("summary.merchant"):
        expect(policy is not None, "policy.explain failed, so the merchant's name is unknown")
        assert policy is not None
        organization = policy.get("organization")
        name = organization.get("name") if isinstance(organization, dict) else None
        expect(isinstance(name, str) and bool(name), "policy.explain reported no organization name")
        assert isinstance(name, str)
        _require(name.casefold() in message.casefold(), message, f"the merchant {name!r}")


def cancellation_problem(text: str, enabled: object, where: str) -> str | None:
    """Why `text` misstates whether the booking can be cancelled (`enabled`: cancellation_enabled)."""
    said = [sentence for sentence in sentences(text) if _CANCEL.search(sentence)]
    unreported = [sentence for sentence in said if _CANCELLABLE_UNREPORTED.search(sentence)]
    denied = [sentence for sentence in said if _NOT_CANCELLABLE.search(sentence)]
    if enabled is True:
        if unreported:
            return f"{where}: {unreported[0]!r} calls reported cancellation unreported"
        if denied:
            return f"{where}: {denied[0]!r} denies the cancellation policy.explain allows"
    elif enabled is False:
        if unreported:
            return f"{where}: {unreported[0]!r} calls reported cancellation unreported"
        if not denied:
            return f"{where}: the summary does not say the booking cannot be cancelled"
    return None


def policy_terms_problems(text: str, policy: dict[str, Any], where: str) -> list[str]:
    """The cancellation window, late grace and cancellation note `policy` reports that `text` omits."""
    problems = []
    if policy.get("cancellation_enabled") is not False and not _duration_stated(
        text, policy.get("cancellation_window")
    ):
        problems.append(f"{where}: no cancellation window {policy.get('cancellation_window')}")
    if not _duration_stated(text, policy.get("late_grace")):
        problems.append(f"{where}: no late grace {policy.get('late_grace')}")
    note = policy.get("cancellation_note")
    if isinstance(note, str) and note.strip():
        flat = " ".join(note.split()).casefold()
        if flat not in " ".join(text.split()).casefold():
            problems.append(f"{where}: no cancellation note {note!r}")
    return problems


async def grade_summary_facts(probe: Probe, graded: list[tuple[str, str]]) -> None:
    """Grade the fact checks on `graded` ((service id, summary) pairs; the fixed-price one first), then
    the token checks."""
    usd, message = graded[0]
    _grade_end(probe, message)
    _grade_merchant(probe, message, probe.policies.get(usd))
    cancellation, terms = [], []
    for service_id, text in graded:
        policy = probe.policies.get(service_id)
        if policy is None:
            cancellation.append(f"{service_id}: policy.explain failed")
            continue
        if problem := cancellation_problem(text, policy.get("cancellation_enabled"), service_id):
            cancellation.append(problem)
        terms += policy_terms_problems(text, policy, service_id)
    with probe.grader.check("summary.cancellation", f"{len(graded)} summaries"):
        expect(not cancellation, summarize(cancellation))
    with probe.grader.check("summary.policy_terms", f"{len(graded)} summaries"):
        expect(not terms, summarize(terms))
    # A customer with a given name and no family name: summary.name_fields and prose.null_placeholder
    # read its summary with the run's others.
    customer = probe.fixtures.customer.model_dump(exclude_none=True, exclude={"family_name"})
    customer["given_name"] = customer["display_name"].partition(" ")[0]
    await probe.wire.call(CREATE, probe.payloads.create(usd, customer=customer))
    await _grade_overnight(probe)
    await _grade_tokens(probe)


async def _grade_overnight(probe: Probe) -> None:
    """The overnight slot's summary names its schedule's zone and the date it ends on."""
    from osbp.conformance.summary_checks import date_forms, summary_text

    slot = probe.fixtures.overnight
    if slot is None:
        for check_id in OVERNIGHT_CHECKS:
            probe.grader.skipped(check_id, "the fixtures name no overnight slot")
        return
    build = probe.payloads
    start, end = (
        dt.datetime.fromisoformat(slot.starts_at_local),
        dt.datetime.fromisoformat(slot.ends_at_local),
    )
    mandate = build.mandate(
        slot.service_id,
        schedule_ids=[slot.schedule_id],
        provider_ids=[slot.provider_id],
        earliest_start=format_wall_clock(dt.datetime.combine(start.date(), dt.time())),
        latest_end=format_wall_clock(dt.datetime.combine(end.date(), dt.time()) + dt.timedelta(days=1)),
    )
    payload = build.create(
        slot.service_id,
        mandate=mandate,
        schedule_id=slot.schedule_id,
        provider_id=slot.provider_id,
        date=start.date().isoformat(),
        time=start.strftime("%H:%M"),
    )
    answer = await probe.wire.call(CREATE, payload)
    text = summary_text(answer.message)
    challenged = answer.code == "requires_user_confirmation" and approval_token(answer.message) is not None
    with probe.grader.check("summary.end_date"):
        expect(challenged, f"expected an approval challenge for the overnight slot, got {answer.describe()}")
        ends = clock_forms(end.time())
        _require(
            any(form in text for form in date_forms(end.date())) and any(form in text for form in ends),
            text,
            f"the end on the next day ({end:%Y-%m-%d %H:%M})",
        )
    with probe.grader.check("summary.schedule_timezone"):
        expect(challenged, f"expected an approval challenge for the overnight slot, got {answer.describe()}")
        try:
            abbreviation = start.replace(tzinfo=zone(slot.timezone)).tzname()
        except ValueError:
            abbreviation = None
        forms = [slot.timezone, *([abbreviation] if abbreviation else [])]
        _require(any(form in text for form in forms), text, f"the schedule's timezone ({slot.timezone})")


async def policy_case_challenges(probe: Probe) -> list[tuple[str, Exchange]]:
    """Each policy case's policy.explain (kept in `probe.policies`) and challenge."""
    found = []
    for service_id in probe.fixtures.policy_cases:
        policy = await probe.wire.call("osbp_policy_explain", {"service_id": service_id})
        if isinstance(policy.value, dict):
            probe.policies[service_id] = policy.value
        found.append((service_id, await probe.wire.call(CREATE, probe.payloads.create(service_id))))
    return found


# --- Prose over every recorded summary -----------------------------------------------------------------


def _summaries(wire: Wire) -> list[tuple[dict[str, Any], str]]:
    from osbp.conformance.summary_checks import summary_text

    return [
        (exchange.arguments, summary_text(exchange.message))
        for exchange in wire.exchanges
        if exchange.tool == CREATE
        and exchange.code == "requires_user_confirmation"
        and approval_token(exchange.message)
    ]


def uncapped_missing(text: str) -> bool:
    """Whether `text` states a fee amount but never says the mandate does not cap or limit the fees."""
    stated = any(_FEE_NAME.search(sentence) and _MONEY_DIGIT.search(sentence) for sentence in sentences(text))
    if not stated:
        return False
    disclaimers = [
        sentence
        for sentence in sentences(text)
        if re.search(r"\bmandate\b", sentence, re.IGNORECASE)
        and re.search(r"\b(?:cap|limit|bound|cover)\w*", sentence, re.IGNORECASE)
        and _NEGATION.search(sentence)
    ]
    return not disclaimers and not fee_cap_claims(text)


def name_problems(text: str, customer: object) -> list[str]:
    """The customer name fields `customer` sends that `text` omits or says are not sent."""
    if not isinstance(customer, dict):
        return []
    problems = []
    said = text.casefold()
    for key, label in (("given_name", "given name"), ("family_name", "family name")):
        value = customer.get(key)
        if not isinstance(value, str) or not value:
            continue
        if value.casefold() not in said:
            problems.append(f"the {label} {value!r} is not stated")
        if re.search(
            rf"\bno {label}\b|\b{label}\s+(?:is\s+)?(?:not sent|missing|absent)", text, re.IGNORECASE
        ):
            problems.append(f"says no {label} is sent, though {value!r} is")
    return problems


def null_placeholders(text: str) -> list[str]:
    """Each place `text` shows a program's null where a value belongs."""
    found = []
    for sentence in sentences(text):
        found += [sentence for _ in _NULL.finditer(sentence)]
    return found


def unit_number_errors(text: str) -> list[str]:
    """Each count whose time unit has the wrong number ("1 hours", "10 minute late")."""
    return [match.group(0) for match in _UNIT_NUMBER.finditer(text)]


def grade_summary_prose(grader: Grader, wire: Wire) -> None:
    """Grade the prose checks over every approval summary the run recorded."""
    summaries = _summaries(wire)
    if not summaries:
        for check_id in PROSE_CHECKS:
            grader.skipped(check_id, "no approval summary was recorded")
        return
    with grader.check("summary.fees_uncapped", f"{len(summaries)} summaries"):
        problems = [
            f"summary of {args.get('service_id')}" for args, text in summaries if uncapped_missing(text)
        ]
        expect(
            not problems,
            "a summary states a cancellation or no-show fee but not that the booking mandate does not cap "
            "it: " + summarize(problems),
        )
    named = [(args, text) for args, text in summaries if isinstance(args.get("customer"), dict)]
    with grader.check("summary.name_fields", f"{len(named)} summaries"):
        problems = [
            f"summary of {args.get('service_id')}: {problem}"
            for args, text in named
            for problem in name_problems(text, args.get("customer"))
        ]
        expect(not problems, summarize(problems))
    with grader.check("prose.null_placeholder", f"{len(summaries)} summaries"):
        problems = [
            f"summary of {args.get('service_id')}: {found!r}"
            for args, text in summaries
            for found in null_placeholders(text)
        ]
        expect(not problems, "a null where a value belongs: " + summarize(problems))
    with grader.check("prose.unit_number", f"{len(summaries)} summaries"):
        problems = [
            f"summary of {args.get('service_id')}: {found!r}"
            for args, text in summaries
            for found in unit_number_errors(text)
        ]
        expect(not problems, "a time unit whose number disagrees with its count: " + summarize(problems))


# --- Token bindings under a fresh key ------------------------------------------------------------------


def _fresh_challenge(exchange: Exchange, old: str | None) -> str | None:
    """The fresh challenge's token; CheckFailed unless `exchange` is one (never a booking)."""
    expect(exchange.ok is False, f"the token booked: {exchange.describe()}")
    expect(
        exchange.code == "requires_user_confirmation",
        f"expected a fresh requires_user_confirmation challenge, got {exchange.describe()}",
    )
    token = approval_token(exchange.message)
    expect(token is not None, 'the fresh challenge carries no approval.token="…" instruction')
    expect(token != old, "the fresh challenge repeats the token sent")
    return token


async def _grade_tokens(probe: Probe) -> None:
    from osbp.conformance.summary_checks import summary_text

    fixtures, build = probe.fixtures, probe.payloads
    usd = fixtures.services.fixed_usd
    other = fixtures.services.free or fixtures.services.verification
    with probe.grader.check("approval.token_invented"):
        invented = "apv_" + "0" * 43
        answer = await probe.wire.call(CREATE, approved(build.create(usd.id), invented))
        _fresh_challenge(answer, invented)
    with probe.grader.check("approval.token_other_booking"):
        first = await probe.wire.call(CREATE, build.create(usd.id))
        token = approval_token(first.message) if first.code == "requires_user_confirmation" else None
        expect(token is not None, f"expected an approval challenge, got {first.describe()}")
        assert token is not None
        answer = await probe.wire.call(CREATE, approved(build.create(other.id), token))
        _fresh_challenge(answer, token)
        text = summary_text(answer.message)
        names = {
            service.id: (probe.services.get(service.id) or {}).get("name") or service.name
            for service in (usd, other)
        }
        wanted, issued = names[other.id], names[usd.id]
        expect(
            isinstance(wanted, str) and wanted.casefold() in text.casefold(),
            f"the fresh challenge does not name the booking it is for ({wanted!r})",
            expected=f"a summary of {other.id}",
            observed=repr(text[:400]),
        )
        # Read without the other booking's name, which may contain this one's ("New-client haircut").
        rest = text.casefold().replace(str(wanted).casefold(), " ")
        expect(
            not (isinstance(issued, str) and issued.casefold() in rest),
            f"the fresh challenge describes the booking the token was issued for ({issued!r})",
            expected=f"a summary of {other.id}",
            observed=repr(text[:400]),
        )
