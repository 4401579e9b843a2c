"""Checks graded over every call of the run: envelopes, keys, money, time, operating hours, stdout.

These run last, over the recorded exchanges, so one wrong result anywhere in the run fails the check and
its detail names the call (`#<n> <tool>`, in call order). After them, `grade_rejections` makes the one
deliberately schema-invalid call of the run and grades its answer on its own: the spec audits only
schema-valid calls, so that answer is not held to the audit_event_id checks.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import Any

from iso4217 import Currency

from osbp.conformance.grading import Grader, expect, summarize
from osbp.conformance.probe import Probe
from osbp.conformance.wallclock import parse_instant, parse_wall_clock, wall_clock_to_instants
from osbp.conformance.wire import Exchange, Wire

__all__ = ["SCHEMA_INVALID_CALL", "grade_envelopes", "grade_rejections"]

_SNAKE = re.compile(r"^[a-z][a-z0-9]*(_[a-z0-9]+)*$")
_HHMM = re.compile(r"^([01]\d|2[0-3]):[0-5]\d$")
_MONEY_FIELDS = {"price", "deposit", "cancellation_fee", "no_show_fee", "max_price", "max_extra_fee"}
_MONEY_KEYS = {"amount_minor", "currency", "type", "display"}
_NON_FIXED = {"insurance_dependent", "quote_required", "unknown"}
_INSTANT_FIELDS = {"starts_at", "ends_at", "created_at", "expires_at"}
_WALL_CLOCK_FIELDS = {"starts_at_local", "ends_at_local", "earliest_start", "latest_end"}
_RUNTIME_KEYS = {"idempotency", "message"}
#: The run's one schema-invalid call: availability.find's merchant-local date as a JSON number, which every
#: published schema types as a string.
SCHEMA_INVALID_CALL: tuple[str, dict[str, Any]] = ("osbp_availability_find", {"date": 20300502})


def _walk(node: Any) -> Iterator[dict[str, Any]]:
    """Every object inside `node`, depth first."""
    if isinstance(node, dict):
        yield node
        for child in node.values():
            yield from _walk(child)
    elif isinstance(node, list):
        for child in node:
            yield from _walk(child)


def _label(index: int, exchange: Exchange) -> str:
    return f"#{index + 1} {exchange.tool}"


def _envelopes(wire: Wire) -> list[tuple[str, Exchange, dict[str, Any]]]:
    return [
        (_label(index, exchange), exchange, exchange.envelope)
        for index, exchange in enumerate(wire.exchanges)
        if exchange.envelope is not None
    ]


def _runtime_problem(envelope: dict[str, Any]) -> str | None:
    if "osbp_runtime" not in envelope:
        return None
    runtime = envelope["osbp_runtime"]
    if not isinstance(runtime, dict) or not set(runtime) <= _RUNTIME_KEYS:
        return f"osbp_runtime {runtime!r} is not {{idempotency, message}}"
    if runtime.get("idempotency", "local_cache_replay") != "local_cache_replay":
        return f"osbp_runtime.idempotency {runtime.get('idempotency')!r} is not a v0.1.0 value"
    return None


def _field_problems(wire: Wire, ok: bool, required: set[str]) -> list[str]:
    problems = []
    for label, _, envelope in _envelopes(wire):
        if envelope.get("ok") is not ok:
            continue
        keys = set(envelope)
        if missing := sorted(required - keys):
            problems.append(f"{label}: missing {missing}")
        if extra := sorted(keys - required - {"osbp_runtime"}):
            problems.append(f"{label}: unexpected {extra}")
        if runtime := _runtime_problem(envelope):
            problems.append(f"{label}: {runtime}")
    return problems


def _problem_field_problems(wire: Wire) -> list[str]:
    problems = []
    for label, _, envelope in _envelopes(wire):
        if envelope.get("ok") is not False:
            continue
        problem = envelope.get("problem")
        if not isinstance(problem, dict):
            problems.append(f"{label}: problem is not an object")
            continue
        if not (isinstance(problem.get("code"), str) and problem["code"]):
            problems.append(f"{label}: no code")
        if not (isinstance(problem.get("message"), str) and problem["message"]):
            problems.append(f"{label}: no message")
        if "retryable" in problem and not isinstance(problem["retryable"], bool):
            problems.append(f"{label}: retryable {problem['retryable']!r} is not a boolean")
        if extra := sorted(set(problem) - {"code", "message", "retryable"}):
            problems.append(f"{label}: unexpected problem fields {extra}")
    return problems


def _structured_problems(wire: Wire) -> list[str]:
    problems = []
    for index, exchange in enumerate(wire.exchanges):
        if exchange.result is None:
            continue
        label = _label(index, exchange)
        structured = exchange.result.structured_content
        if structured is None:
            problems.append(f"{label}: no structuredContent")
        elif not exchange.has_text_json:
            problems.append(f"{label}: {exchange.text_problem}")
        elif json.dumps(structured, sort_keys=True) != json.dumps(exchange.text_json, sort_keys=True):
            problems.append(f"{label}: structuredContent differs from the text JSON")
        elif not isinstance(structured, dict) or not isinstance(structured.get("ok"), bool):
            problems.append(f"{label}: the result is not an OSBP envelope")
    return problems


def _is_error_problems(wire: Wire) -> list[str]:
    return [
        f"{label}: ok={exchange.ok} with isError={exchange.result.is_error}"
        for label, exchange, _ in _envelopes(wire)
        if exchange.result is not None and exchange.ok is not None and exchange.result.is_error == exchange.ok
    ]


def _audit_problems(wire: Wire) -> list[str]:
    problems: list[str] = []
    seen: dict[str, str] = {}
    for label, _, envelope in _envelopes(wire):
        audit_id = envelope.get("audit_event_id")
        if not (isinstance(audit_id, str) and audit_id):
            problems.append(f"{label}: no audit_event_id")
        elif audit_id in seen:
            problems.append(f"{label}: audit_event_id {audit_id!r} repeats {seen[audit_id]}")
        else:
            seen[audit_id] = label
    return problems


def _objects(wire: Wire) -> Iterator[tuple[str, dict[str, Any]]]:
    for label, _, envelope in _envelopes(wire):
        for node in _walk(envelope):
            yield label, node


def _snake_problems(wire: Wire) -> list[str]:
    problems = []
    for label, node in _objects(wire):
        problems += [f"{label}: key {key!r}" for key in node if not _SNAKE.match(str(key))]
    return problems


def _money_problem(money: Any) -> str | None:
    if not isinstance(money, dict):
        return f"{money!r} is not a Money object"
    currency, kind, amount = money.get("currency"), money.get("type", "fixed"), money.get("amount_minor")
    try:
        Currency(currency)
    except (ValueError, TypeError):
        return f"currency {currency!r} is not an ISO 4217 code"
    if extra := sorted(set(money) - _MONEY_KEYS):
        return f"unexpected Money fields {extra}"
    if kind == "fixed":
        if type(amount) is not int or amount < 0:
            return f"fixed amount_minor {amount!r} is not an integer >= 0"
    elif kind in _NON_FIXED:
        if "amount_minor" in money:
            return f"a {kind} price carries amount_minor {amount!r}"
    else:
        return f"type {kind!r} is not a Money type"
    if "display" in money and not isinstance(money["display"], str):
        return f"display {money['display']!r} is not a string"
    return None


def _money_problems(wire: Wire) -> list[str]:
    problems = []
    for label, node in _objects(wire):
        for key in _MONEY_FIELDS & set(node):
            if problem := _money_problem(node[key]):
                problems.append(f"{label}: {key}: {problem}")
    return problems


def _format_problems(
    wire: Wire, fields: set[str], parse: Callable[[object], object], kind: str
) -> tuple[int, list[str]]:
    count, problems = 0, []
    for label, node in _objects(wire):
        for key in fields & set(node):
            count += 1
            if parse(node[key]) is None:
                problems.append(f"{label}: {key} {node[key]!r} is not {kind}")
    return count, problems


def _instant_problems(wire: Wire) -> tuple[int, list[str]]:
    count, problems = 0, []
    for label, node in _objects(wire):
        timezone = node.get("schedule_timezone")
        if not isinstance(timezone, str):
            continue
        for instant_key, local_key in (("starts_at", "starts_at_local"), ("ends_at", "ends_at_local")):
            instant, local = parse_instant(node.get(instant_key)), parse_wall_clock(node.get(local_key))
            if instant is None or local is None:
                continue
            count += 1
            try:
                candidates = wall_clock_to_instants(local, timezone)
            except ValueError as exc:
                problems.append(f"{label}: {exc}")
                continue
            if instant not in candidates:
                problems.append(
                    f"{label}: {instant_key} {node[instant_key]!r} is not {node[local_key]} in {timezone}"
                )
    return count, problems


def _hours_problems(wire: Wire) -> tuple[int, list[str]]:
    count, problems = 0, []
    for label, node in _objects(wire):
        for key, value in node.items():
            if not (str(key).endswith("hours") and isinstance(value, list)):
                continue
            for period in value:
                count += 1
                if not isinstance(period, dict):
                    problems.append(f"{label}: {key} entry {period!r}")
                    continue
                day = period.get("day")
                if type(day) is not int or not 1 <= day <= 7:
                    problems.append(f"{label}: {key} day {day!r} is not an ISO weekday 1-7")
                for edge in ("open", "close"):
                    if not (isinstance(period.get(edge), str) and _HHMM.match(period[edge])):
                        problems.append(f"{label}: {key} {edge} {period.get(edge)!r} is not HH:MM")
    return count, problems


def grade_envelopes(grader: Grader, wire: Wire) -> None:
    """Grade every check that looks at all the calls of the run."""
    listed = {
        "envelope.success_fields": _field_problems(wire, True, {"ok", "value", "audit_event_id"}),
        "envelope.failure_fields": _field_problems(wire, False, {"ok", "problem", "audit_event_id"}),
        "envelope.problem_fields": _problem_field_problems(wire),
        "envelope.structured_equals_text": _structured_problems(wire),
        "envelope.is_error_matches_ok": _is_error_problems(wire),
        "envelope.audit_event_id_unique": _audit_problems(wire),
        "envelope.snake_case_keys": _snake_problems(wire),
        "money.well_formed": _money_problems(wire),
    }
    for check_id, problems in listed.items():
        with grader.check(check_id):
            expect(not problems, summarize(problems))
    counted = {
        "time.instants_have_offset": (
            _format_problems(wire, _INSTANT_FIELDS, parse_instant, "an instant with an offset"),
            "no instants",
        ),
        "time.wall_clock_naked": (
            _format_problems(wire, _WALL_CLOCK_FIELDS, parse_wall_clock, "a wall-clock without offset"),
            "no wall-clock times",
        ),
        "time.instant_matches_wall_clock": (
            _instant_problems(wire),
            "no instant beside a wall-clock and timezone",
        ),
    }
    for check_id, ((count, problems), nothing) in counted.items():
        with grader.check(check_id, f"{count} values"):
            expect(count > 0, f"{nothing} in any result to grade")
            expect(not problems, summarize(problems))
    count, problems = _hours_problems(wire)
    if count == 0:
        grader.skipped(
            "shapes.operating_hours", "no operating hours in any result (they are optional display context)"
        )
    else:
        with grader.check("shapes.operating_hours", f"{count} periods"):
            expect(not problems, summarize(problems))
    with grader.check("wire.stdout_clean"):
        stray = wire.stray_stdout
        expect(not stray, f"{len(stray)} non-protocol stdout line(s), first: {stray[0] if stray else ''}")


def _rejection_problems(exchange: Exchange) -> list[str]:
    if exchange.result is None:
        return [exchange.describe()]
    problems: list[str] = []
    structured = exchange.result.structured_content
    if not isinstance(structured, dict):
        problems.append("no structuredContent envelope (a plain-text error is not the one envelope shape)")
    if not exchange.has_text_json:
        problems.append(exchange.text_problem or "the text content is not JSON")
    elif structured is not None and exchange.text_json != structured:
        problems.append("structuredContent differs from the text JSON")
    envelope = exchange.envelope or {}
    if envelope.get("ok") is not False:
        problems.append(f"ok is {envelope.get('ok')!r}, not false")
    if exchange.result.is_error is not True:
        problems.append("isError is not true")
    if extra := sorted(set(envelope) - {"ok", "problem", "audit_event_id", "osbp_runtime"}):
        problems.append(f"unexpected {extra}")
    problem = envelope.get("problem")
    if envelope and not (isinstance(problem, dict) and problem.get("code") and problem.get("message")):
        problems.append("no problem with a code and a message")
    rejected = str(SCHEMA_INVALID_CALL[1]["date"])
    if rejected in exchange.message:
        problems.append("the message echoes the rejected value")
    return problems


async def grade_rejections(probe: Probe) -> None:
    """Grade envelope.schema_invalid with one call whose arguments no published schema admits."""
    with probe.grader.check("envelope.schema_invalid"):
        exchange = await probe.wire.call(*SCHEMA_INVALID_CALL)
        label = _label(len(probe.wire.exchanges) - 1, exchange)
        problems = _rejection_problems(exchange)
        expect(not problems, f"{label}: {summarize(problems)}")
