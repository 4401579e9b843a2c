"""The audit log, read after the run (`--audit-log`): a record per call, the chain, redaction, the hashes.

The battery knows what it sent and what came back, so it can hold the server's JSONL log to the format
docs/conformance.md states (the spec's audit event plus a hash chain), without any of the server's code:

- `audit.record_per_call`: every schema-valid call the battery made has exactly one record (a line that
  is not a write-ahead `"phase": "intent"` record) whose `id` is the envelope's `audit_event_id`, naming
  the call's tool in the spec's dotted form, and the run added no other call records;
- `audit.chain`: line 1 has `prev_hash` of 64 zeros, each later line the previous line's `hash`, and
  every `hash` is the SHA-256 of the RFC 8785 canonical JSON of the line without `hash` and `mac`;
- `audit.redacted`: no value the battery sent that the spec says must be redacted (customer names,
  phone, email, verification codes, approval tokens, including those the server issued) appears in any
  string of the log;
- `audit.hashes`: `input_hash` and `result_hash` are the SHA-256 of the RFC 8785 canonical JSON of the
  line's (redacted) `input` and `result`.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import rfc8785

from osbp.conformance.envelope_checks import SCHEMA_INVALID_CALL
from osbp.conformance.grading import Grader, expect, summarize
from osbp.conformance.payloads import approval_token
from osbp.conformance.wire import Exchange

__all__ = ["CHECK_IDS", "GENESIS_HASH", "AuditLogFile", "grade_audit", "spec_tool_name"]

CHECK_IDS = ("audit.record_per_call", "audit.chain", "audit.redacted", "audit.hashes")
#: `prev_hash` of the first line of a log.
GENESIS_HASH = "0" * 64
#: The members of a line its own `hash` does not cover.
_AFTER_HASH = frozenset({"hash", "mac"})
#: Sentinels this short are compared as whole words only, so a digest or an id never matches by chance.
_WORD = "A-Za-z0-9"


def spec_tool_name(mcp_name: str) -> str:
    """The spec's dotted tool name of a flattened MCP name (`osbp_booking_create` → `booking.create`)."""
    return mcp_name.removeprefix("osbp_").replace("_", ".", 1)


@dataclass(frozen=True, slots=True)
class AuditLogFile:
    """The audit log to read after the run, and where it ended before the run started."""

    path: Path
    start: int = 0

    @classmethod
    def before_run(cls, path: str | Path) -> AuditLogFile:
        """Note how long the log is now: the run's records are the lines appended after this."""
        target = Path(path)
        try:
            start = target.stat().st_size
        except OSError:
            start = 0
        return cls(target, start)


def _sha256(value: Any) -> str:
    return hashlib.sha256(rfc8785.dumps(value)).hexdigest()


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    record: dict[str, Any] = {}
    for name, value in pairs:
        if name in record:
            raise ValueError(f"the key {name!r} appears twice")
        record[name] = value
    return record


@dataclass(frozen=True, slots=True)
class _Line:
    number: int
    raw: str
    record: dict[str, Any] | None
    problem: str = ""
    #: Whether the line was appended during the run.
    in_run: bool = True


def _read(log: AuditLogFile) -> list[_Line]:
    data = log.path.read_bytes()
    lines: list[_Line] = []
    offset = 0
    for number, raw in enumerate(data.split(b"\n"), start=1):
        start, offset = offset, offset + len(raw) + 1
        if not raw and offset > len(data):
            break  # the newline that ends the last line
        text = raw.decode("utf-8", errors="replace")
        try:
            parsed = json.loads(text, object_pairs_hook=_unique_keys)
        except ValueError as exc:
            lines.append(_Line(number, text, None, f"line {number} is not JSON: {exc}", start >= log.start))
            continue
        if not isinstance(parsed, dict):
            lines.append(_Line(number, text, None, f"line {number} is not a JSON object", start >= log.start))
            continue
        lines.append(_Line(number, text, parsed, in_run=start >= log.start))
    return lines


def _calls(exchanges: list[Exchange]) -> list[tuple[str, Exchange]]:
    """The schema-valid calls of the run, labelled in call order."""
    invalid_tool, invalid_arguments = SCHEMA_INVALID_CALL
    return [
        (f"#{index} {exchange.tool}", exchange)
        for index, exchange in enumerate(exchanges, start=1)
        if not (exchange.tool == invalid_tool and exchange.arguments == invalid_arguments)
    ]


def _grade_records(grader: Grader, lines: list[_Line], exchanges: list[Exchange]) -> None:
    records = [line.record for line in lines if line.record is not None and line.in_run]
    outcomes = [record for record in records if record.get("phase") != "intent"]
    by_id = Counter(record.get("id") for record in outcomes if isinstance(record.get("id"), str))
    tools = {record.get("id"): record.get("tool_name") for record in outcomes}
    with grader.check("audit.record_per_call"):
        problems: list[str] = []
        ours: set[str] = set()
        unanswered = 0
        calls = _calls(exchanges)
        for label, exchange in calls:
            envelope = exchange.envelope
            if envelope is None:
                unanswered += 1  # no envelope to name its record (the envelope checks report the call)
                continue
            event_id = envelope.get("audit_event_id")
            if not isinstance(event_id, str):
                problems.append(f"{label}: no audit_event_id")
                continue
            ours.add(event_id)
            if by_id[event_id] != 1:
                problems.append(f"{label}: {by_id[event_id]} records with id {event_id}")
            elif tools[event_id] != spec_tool_name(exchange.tool):
                problems.append(f"{label}: its record {event_id} names tool {tools[event_id]!r}")
        others = sum(count for event_id, count in by_id.items() if event_id not in ours)
        others += sum(1 for record in outcomes if not isinstance(record.get("id"), str))
        if others > unanswered:
            problems.append(f"{others} records of the run answer no call the battery made")
        expect(
            not problems,
            summarize(problems),
            expected=f"one record per schema-valid call ({len(calls)})",
            observed=f"{len(outcomes)} call records in the run; {len(problems)} problems",
        )


def _grade_chain(grader: Grader, lines: list[_Line]) -> None:
    with grader.check("audit.chain"):
        previous = GENESIS_HASH
        for line in lines:
            expect(line.record is not None, line.problem)
            assert line.record is not None
            stored = line.record.get("hash")
            expect(isinstance(stored, str), f"line {line.number} has no hash")
            covered = {key: value for key, value in line.record.items() if key not in _AFTER_HASH}
            try:
                computed = _sha256(covered)
            except (TypeError, ValueError) as exc:  # not I-JSON, so no canonical form
                computed = f"none ({exc})"
            expect(
                computed == stored,
                f"line {line.number}: its hash does not match its content",
                expected=computed,
                observed=str(stored),
            )
            expect(
                line.record.get("prev_hash") == previous,
                f"line {line.number}: prev_hash is not the previous line's hash",
                expected=previous,
                observed=str(line.record.get("prev_hash")),
            )
            previous = str(stored)


def _strings(node: Any) -> Iterator[str]:
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for key, value in node.items():
            yield key
            yield from _strings(value)
    elif isinstance(node, list):
        for item in node:
            yield from _strings(item)


def _walk_customer(node: Any) -> Iterator[str]:
    if isinstance(node, dict):
        for value in node.values():
            yield from _walk_customer(value)
    elif isinstance(node, str) and node.strip():
        yield node.strip()


def _codes(exchange: Exchange) -> set[str]:
    arguments = exchange.arguments
    return {arguments[key] for key in ("verification_code", "code") if isinstance(arguments.get(key), str)}


#: The arguments the battery fills with its own identifiers (keys, the mandate, its id), never a customer's.
_OWN_IDS = ("idempotency_key", "mandate", "mandate_id")
#: The reads whose answers are the merchant's catalog, never a customer's data.
_CATALOG_READS = frozenset({"osbp_service_describe", "osbp_availability_find", "osbp_policy_explain"})


def sentinels(exchanges: list[Exchange]) -> set[str]:
    """What the battery sent (or was issued) that the spec says no audit event may hold: customer names
    and contacts, approval tokens. (Verification codes are per call: see `_grade_redaction`.)"""
    found: set[str] = set()
    for exchange in exchanges:
        arguments = exchange.arguments
        found.update(_walk_customer(arguments.get("customer")))
        approval = arguments.get("approval")
        if isinstance(approval, dict) and isinstance(approval.get("token"), str):
            found.add(approval["token"])
        token = approval_token(exchange.message)
        if token is not None:
            found.add(token)
    # A phone written as digits only is the same number.
    found.update({value.lstrip("+") for value in found if re.fullmatch(r"\+\d{7,15}", value)})
    # A name part that is also other data is not the customer's secret there: a word of the merchant's
    # catalog (the family name "Conformance" of "Conformance Co", where a catalog read answers it), or of
    # what the battery itself sends outside the customer (its idempotency keys and mandate ids start
    # "conformance_"). Only what neither ever shows is a sentinel. (booking.status may echo the customer,
    # so it is not a catalog read.)
    public = _pattern(found)
    published: set[str] = set()
    if public is not None:
        for exchange in exchanges:
            own = {key: exchange.arguments[key] for key in _OWN_IDS if key in exchange.arguments}
            texts = [*_strings(own)]
            if exchange.tool in _CATALOG_READS and exchange.envelope is not None:
                texts.append(json.dumps(exchange.envelope, ensure_ascii=False))
            for text in texts:
                published.update(match.group(0).casefold() for match in public.finditer(text))
    return {value for value in found if value and value.casefold() not in published}


def _pattern(values: set[str]) -> re.Pattern[str] | None:
    if not values:
        return None
    alternatives = "|".join(re.escape(value) for value in sorted(values, key=len, reverse=True))
    return re.compile(f"(?<![{_WORD}])(?:{alternatives})(?![{_WORD}])", re.IGNORECASE)


def _leak(line: _Line, pattern: re.Pattern[str] | None) -> str | None:
    if pattern is None:
        return None
    for text in _strings(line.record) if line.record is not None else iter([line.raw]):
        match = pattern.search(text)
        if match:
            return match.group(0)
    return None


def _grade_redaction(grader: Grader, lines: list[_Line], exchanges: list[Exchange]) -> None:
    """Names, contacts and tokens: nowhere in the log. A verification code: nowhere in the records of the
    calls that carried it (their own record and its write-ahead intents), where the server knows it is
    one; elsewhere the same digits may be platform data (a sandbox service named after its code)."""
    with grader.check("audit.redacted"):
        leaks: list[str] = []
        everywhere = _pattern(sentinels(exchanges))
        for line in lines:
            found = _leak(line, everywhere)
            if found is not None:
                leaks.append(f"line {line.number}: {_kind(found, exchanges)}")
        by_id = {line.record.get("id"): line for line in lines if line.record is not None and line.in_run}
        for label, exchange in _calls(exchanges):
            codes = _codes(exchange)
            event_id = (exchange.envelope or {}).get("audit_event_id")
            own = by_id.get(event_id) if codes and isinstance(event_id, str) else None
            if own is None or own.record is None:
                continue
            intents = own.record.get("intents")
            related = [own] + [
                by_id[intent] for intent in (intents if isinstance(intents, list) else []) if intent in by_id
            ]
            for line in related:
                if _leak(line, _pattern(codes)) is not None:
                    leaks.append(f"line {line.number} ({label}): a verification code")
        expect(
            not leaks,
            f"the audit log holds values it must redact: {summarize(leaks)}",
            expected="no customer name, contact, verification code or approval token in the log",
            observed=f"{len(leaks)} leaks",
        )


def _kind(value: str, exchanges: list[Exchange]) -> str:
    """What a leaked value is, without repeating it (the report may be published)."""
    for exchange in exchanges:
        approval = exchange.arguments.get("approval")
        if approval_token(exchange.message) == value or (
            isinstance(approval, dict) and approval.get("token") == value
        ):
            return "an approval token"
    return "a customer name or contact"


def _grade_hashes(grader: Grader, lines: list[_Line]) -> None:
    with grader.check("audit.hashes"):
        wrong: list[str] = []
        for line in lines:
            if line.record is None:
                continue
            for snapshot, field in (("input", "input_hash"), ("result", "result_hash")):
                if snapshot not in line.record:
                    wrong.append(f"line {line.number}: no {snapshot}")
                    continue
                try:
                    computed = _sha256(line.record[snapshot])
                except (TypeError, ValueError):
                    computed = ""
                if line.record.get(field) != computed:
                    wrong.append(f"line {line.number}: {field} is not the digest of its {snapshot}")
        expect(
            not wrong,
            summarize(wrong),
            expected="input_hash/result_hash = SHA-256 of the RFC 8785 canonical input/result",
            observed=f"{len(wrong)} mismatches",
        )


def grade_audit(grader: Grader, log: AuditLogFile | None, exchanges: list[Exchange]) -> None:
    """Grade the four audit checks over the log after the run (SKIP without a log to read)."""
    if log is None:
        for check_id in CHECK_IDS:
            grader.skipped(check_id, "no --audit-log: the battery cannot read the server's audit log")
        return
    try:
        lines = _read(log)
    except OSError as exc:
        for check_id in CHECK_IDS:
            grader.failed(check_id, f"cannot read the audit log {log.path}: {exc.strerror or exc}")
        return
    _grade_records(grader, lines, exchanges)
    _grade_chain(grader, lines)
    _grade_redaction(grader, lines, exchanges)
    _grade_hashes(grader, lines)
