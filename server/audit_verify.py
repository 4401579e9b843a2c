"""Walk an audit log's hash chain and name the first broken link.

A line is intact when it parses as a JSON object, its ``hash`` equals :func:`~osbp.server.audit.record_hash`
of its content, its ``input_hash``/``result_hash`` match its snapshots, and its ``prev_hash`` equals the
previous line's ``hash`` (the genesis hash for line 1). An edited line fails its own hash; a deleted,
inserted or reordered line fails the link to its predecessor. Given the log's key, every line must also
carry the ``mac`` of its hash under that key, so a log rewritten and re-hashed without the key fails too.
"""

from __future__ import annotations

import hmac
import json
from dataclasses import dataclass
from pathlib import Path

from osbp.protocol.canonical import sha256_hex
from osbp.server.audit import GENESIS_HASH, record_hash, record_mac

__all__ = ["ChainBreak", "ChainReport", "verify_chain", "verify_lines"]


@dataclass(frozen=True, slots=True)
class ChainBreak:
    """The first broken link: its 1-based line number, the event id when readable, and what is wrong."""

    line: int
    event_id: str | None
    reason: str


@dataclass(frozen=True, slots=True)
class ChainReport:
    """The verdict on one log: how many lines were checked, the head hash, and the first break if any."""

    lines: int
    head: str
    first_break: ChainBreak | None
    #: Whether every line's mac was checked against a key (not just the public hash chain).
    authenticated: bool = False

    @property
    def ok(self) -> bool:
        """Whether the whole chain is intact."""
        return self.first_break is None


def verify_lines(lines: list[bytes], key: bytes | None = None) -> ChainReport:
    """Verify raw log lines (without their newlines) in order; with ``key``, their macs as well."""
    report = _verify_lines(lines, key)
    return ChainReport(report.lines, report.head, report.first_break, authenticated=key is not None)


def _verify_lines(lines: list[bytes], key: bytes | None) -> ChainReport:
    previous = GENESIS_HASH
    for number, raw in enumerate(lines, start=1):
        try:
            record = json.loads(raw)
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
    return ChainReport(len(lines), previous, None)


def _line_problem(record: dict[str, object], previous: str, key: bytes | None) -> str | None:
    stored = record.get("hash")
    if not isinstance(stored, str):
        return "the line has no hash"
    if record_hash(record) != stored:
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
        return ChainReport(report.lines, report.head, broken, authenticated=report.authenticated)
    return verify_lines(lines, key)
