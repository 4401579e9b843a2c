"""Walk an audit log's hash chain and name the first broken link.

A line is intact when it parses as a JSON object, its ``hash`` equals :func:`~osbp.server.audit.record_hash`
of its content, its ``input_hash``/``result_hash`` match its snapshots, and its ``prev_hash`` equals the
previous line's ``hash`` (the genesis hash for line 1). An edited line fails its own hash; a deleted,
inserted or reordered line fails the link to its predecessor. Given the log's key, every line must also
carry the ``mac`` of its hash under that key, so a log rewritten and re-hashed without the key fails too.

Lines are parsed strictly, as the writer writes them: UTF-8 I-JSON (RFC 7493) objects. A duplicated key
is refused rather than resolved (a lenient parser keeps the last value, so a forged line could carry a
``hash`` or ``result`` that verifies after one that a different reader would take), and so are NaN and
Infinity, numbers beyond a double, lone surrogates and a byte-order mark: text the writer never produces
and that has no canonical hash.

An intact chain's report also names every **open intent**: a write-ahead record (``phase: intent``, made
durable before an effect was sent to the platform) that no later record closes. A record closes the
intents it lists in ``intents`` (the call's own sends); a later booking.create record of the same logical
create (its ``payload_hash``) that settled (``decision.ok``) or sent the create again (its own
``intents``) closes that create's earlier intents as well, since the platform's idempotency makes every
send of one key one appointment. An open intent is an effect that may have happened with no record of its
outcome: a server that died between the two, or a call still in flight.
"""

from __future__ import annotations

import hmac
import json
import math
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from osbp.protocol.canonical import sha256_hex
from osbp.server.audit import GENESIS_HASH, record_hash, record_mac

__all__ = ["ChainBreak", "ChainReport", "OpenIntent", "verify_chain", "verify_lines"]


@dataclass(frozen=True, slots=True)
class ChainBreak:
    """The first broken link: its 1-based line number, the event id when readable, and what is wrong."""

    line: int
    event_id: str | None
    reason: str


@dataclass(frozen=True, slots=True)
class OpenIntent:
    """A write-ahead record no later record closes: its line, id, tool, mandate id and instant."""

    line: int
    event_id: str
    tool_name: str
    mandate_id: str | None
    created_at: str


@dataclass(frozen=True, slots=True)
class ChainReport:
    """The verdict on one log: how many lines were checked, the head hash, and the first break if any."""

    lines: int
    head: str
    first_break: ChainBreak | None
    #: Whether every line's mac was checked against a key (not just the public hash chain).
    authenticated: bool = False
    #: The intents of an intact chain that no later record closes, in log order.
    open_intents: tuple[OpenIntent, ...] = ()

    @property
    def ok(self) -> bool:
        """Whether the whole chain is intact."""
        return self.first_break is None


def verify_lines(lines: list[bytes], key: bytes | None = None) -> ChainReport:
    """Verify raw log lines (without their newlines) in order; with ``key``, their macs as well."""
    report = _verify_lines(lines, key)
    return replace(report, authenticated=key is not None)


class _NotStrictJson(ValueError):
    """A line that parses leniently but is not the strict JSON the writer writes; the message says why."""


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    record: dict[str, Any] = {}
    for name, value in pairs:
        if name in record:
            # json.dumps: the key is forged text, so it is shown escaped (one line) and cut short.
            raise _NotStrictJson(f"the key {json.dumps(name)[:60]} appears twice")
        record[name] = value
    return record


def _no_constant(name: str) -> Any:
    raise _NotStrictJson(f"{name} is not a JSON number")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NotStrictJson(f"the number {text[:40]} does not fit a double")
    return value


def _lone_surrogate(value: object) -> bool:
    """Whether a string anywhere in ``value`` (a key too) holds a lone surrogate: not Unicode text."""
    if isinstance(value, str):
        return not value.isascii() and any(0xD800 <= ord(char) <= 0xDFFF for char in value)
    if isinstance(value, dict):
        return any(_lone_surrogate(name) or _lone_surrogate(item) for name, item in value.items())
    if isinstance(value, list):
        return any(_lone_surrogate(item) for item in value)
    return False


def _parse(raw: bytes) -> object:
    """The line's JSON value, or :class:`ValueError` naming why it is not the writer's strict JSON."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise _NotStrictJson("it is not UTF-8 text") from None
    value = json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant, parse_float=_finite)
    if _lone_surrogate(value):
        raise _NotStrictJson("a string holds a lone surrogate, which is not Unicode text")
    return value


def _verify_lines(lines: list[bytes], key: bytes | None) -> ChainReport:
    previous = GENESIS_HASH
    intents = _Intents()
    for number, raw in enumerate(lines, start=1):
        try:
            record = _parse(raw)
        except _NotStrictJson as error:
            broken = ChainBreak(number, None, f"the line is not strict JSON: {error}")
            return ChainReport(number - 1, previous, broken)
        except ValueError:
            return ChainReport(number - 1, previous, ChainBreak(number, None, "the line is not JSON"))
        if not isinstance(record, dict):
            broken = ChainBreak(number, None, "the line is not a JSON object")
            return ChainReport(number - 1, previous, broken)
        event_id = record.get("id") if isinstance(record.get("id"), str) else None
        reason = _line_problem(record, previous, key)
        if reason is not None:
            return ChainReport(number - 1, previous, ChainBreak(number, event_id, reason))
        previous = record["hash"]
        intents.see(number, record)
    return ChainReport(len(lines), previous, None, open_intents=intents.still_open())


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


class _Intents:
    """The intents seen so far that no later record closed (module docstring)."""

    def __init__(self) -> None:
        self._open: dict[str, tuple[OpenIntent, str | None]] = {}

    def see(self, line: int, record: dict[str, object]) -> None:
        event_id, tool = _text(record.get("id")), _text(record.get("tool_name"))
        payload_hash = _text(record.get("payload_hash"))
        if record.get("phase") == "intent":
            if event_id is not None and tool is not None:
                opened = OpenIntent(
                    line, event_id, tool, _text(record.get("mandate_id")), str(record.get("created_at"))
                )
                self._open[event_id] = (opened, payload_hash if tool == "booking.create" else None)
            return
        listed = record.get("intents")
        closed = [item for item in listed if isinstance(item, str)] if isinstance(listed, list) else []
        for intent_id in closed:
            self._open.pop(intent_id, None)
        decision = record.get("decision")
        settled = isinstance(decision, dict) and decision.get("ok") is True
        if tool == "booking.create" and payload_hash is not None and (settled or closed):
            for intent_id, (_, create) in list(self._open.items()):
                if create == payload_hash:
                    del self._open[intent_id]

    def still_open(self) -> tuple[OpenIntent, ...]:
        return tuple(opened for opened, _ in self._open.values())


def _line_problem(record: dict[str, object], previous: str, key: bytes | None) -> str | None:
    stored = record.get("hash")
    if not isinstance(stored, str):
        return "the line has no hash"
    try:
        computed = record_hash(record)
    except ValueError as error:  # rfc8785 refuses what I-JSON excludes, e.g. an integer beyond 2**53 - 1
        return f"the line is not I-JSON, so it has no canonical hash: {error}"
    if computed != stored:
        return "the line was edited: its content does not match its hash"
    if key is not None:
        mac = record.get("mac")
        if not isinstance(mac, str):
            return "the line has no mac, but the log is verified with a key"
        if not hmac.compare_digest(mac, record_mac(key, stored)):
            return "the line's mac does not match: it was not written with this key"
    for snapshot, field in (("input", "input_hash"), ("result", "result_hash")):
        if record.get(field) != sha256_hex(record.get(snapshot)):
            return f"the line's {field} does not match its {snapshot}"
    if record.get("prev_hash") != previous:
        if previous == GENESIS_HASH:
            return "the first line does not start the chain: lines before it were deleted"
        return "the link to the previous line is broken: a line was deleted, inserted or reordered here"
    return None


def verify_chain(path: str | Path, key: bytes | None = None) -> ChainReport:
    """Verify the log file at ``path`` (an empty file is an intact, empty chain).

    Raises :class:`OSError` when there is no file to read (missing, a directory, unreadable): a log that
    is not there is not an intact one.
    """
    data = Path(path).read_bytes()
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    else:
        # A last line without its newline was cut off mid-write.
        report = verify_lines(lines[:-1], key)
        if not report.ok:
            return report
        broken = ChainBreak(len(lines), None, "the last line is incomplete")
        return replace(report, first_break=broken, open_intents=())
    return verify_lines(lines, key)
