"""The tamper-evident local audit log: one redacted, hash-chained JSON line per schema-valid tool call.

Each line is an :class:`AuditRecord`: the spec's audit event (``id``, ``mandate_id``, ``tool_name``,
``created_at``, ``source``, ``platform``, ``upstream``, redacted ``input`` and ``result`` with their
SHA-256 ``input_hash``/``result_hash``), plus what explains the decision afterwards (``mandate``: the
mandate's scope, window, caps and expiry; ``decision``: ok, or the Problem code; ``subject``: on a remote
call, the keyed hash of the token subject; ``phase``/``intents``/``payload_hash``: an effect's
write-ahead record and the outcome that closes it) and the chain: ``prev_hash`` (the previous line's
``hash``, 64 zeros for the first line) and ``hash`` (SHA-256 of the canonical JSON of the record without
``hash`` and ``mac``). :mod:`osbp.server.audit_verify` walks the chain. With a key (``OSBP_AUDIT_KEY``,
from the environment only) every line also carries ``mac``, the HMAC-SHA256 of its ``hash`` under that
key: the hash covers the whole record and its link, so the mac authenticates both, and rewriting the log
takes the key, not just a SHA-256 implementation.

Promises:

* **Redacted before writing.** :meth:`AuditLog.append` runs :class:`~osbp.server.redaction.Redactor`
  over the input, the result and the mandate summary; nothing unredacted reaches the file.
* **One chain across processes.** Reading the last hash and appending the line happen under an
  exclusive ``fcntl`` lock on the file, so several servers appending to one file keep one valid chain.
* **Durable before the effect and before the answer.** A ``durable`` append (the dispatcher's intent
  record before each platform send, and its record of every booking.create and verification call) is
  ``fsync``-ed before it returns, which also makes every
  earlier line of the file durable. Other appends (reads, handoff) are written at once, so a process
  that dies loses nothing, and synced in groups: at the next durable append, after ``sync_every``
  unsynced lines, or ``sync_delay_s`` after the first of them, whichever comes first; only an operating
  system crash can lose them, and then only the unsynced tail (see ``docs/server.md``, group commit).
* **A torn tail stays apart.** A log whose last line was cut off by a crash gets a newline before the
  next record, so the damaged line is named by ``osbp audit verify`` on its own and never merges with a
  good record; the chain continues from the hash of its exact bytes.
* **Private.** The file is created ``0600``; a directory the log creates is ``0700``.
* **One record, one line.** Besides JSON's own escapes, U+0085, U+2028 and U+2029 are written escaped:
  they are line breaks to ``str.splitlines`` and other line readers.
* **Every schema-valid input can be recorded.** Tool inputs are I-JSON (no lone surrogates, amounts at
  most 2**53 - 1: :mod:`osbp.protocol.models`), so redaction, RFC 8785 canonical JSON and SHA-256 never
  fail on them; the test suite checks this property over every tool's published input schema.

Known limits: without a key, someone who can rewrite the whole file can recompute every hash; with or
without one, a truncated tail is indistinguishable from a shorter log. Anchor the head (``osbp audit
verify`` prints it) somewhere else when that matters.
"""

from __future__ import annotations

import fcntl
import hashlib
import hmac
import json
import logging
import os
import secrets
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

import anyio.to_thread
from pydantic import BaseModel, ConfigDict

from osbp.protocol.canonical import canonical_json, canonical_object, sha256_hex, sha256_hex_bytes
from osbp.protocol.models import AuditEvent, PlatformIdentity, ToolName, UpstreamMeta
from osbp.protocol.principal import Principal
from osbp.server.redaction import Redactor, Scrubber

__all__ = [
    "AUDIT_KEY_MIN_LENGTH",
    "DEFAULT_AUDIT_PATH",
    "GENESIS_HASH",
    "SOURCE",
    "SYNC_DELAY_S",
    "SYNC_EVERY",
    "AuditDraft",
    "AuditLog",
    "AuditRecord",
    "Decision",
    "format_created_at",
    "record_hash",
    "record_mac",
]

#: The default log location, relative to the working directory (``OSBP_AUDIT_LOG_PATH`` overrides).
DEFAULT_AUDIT_PATH = Path(".osbp/audit/events.jsonl")
#: The ``source`` of every event this server writes.
SOURCE = "osbp-local-mcp"
#: The shortest ``OSBP_AUDIT_KEY`` accepted (characters; use a random one, e.g. ``openssl rand -hex 32``).
AUDIT_KEY_MIN_LENGTH = 32
#: ``prev_hash`` of the first line of a log.
GENESIS_HASH = "0" * 64
_TAIL_CHUNK = 4096
#: Group commit of non-durable appends: at most this many unsynced lines, for at most this long.
SYNC_EVERY = 64
SYNC_DELAY_S = 0.05

logger = logging.getLogger("osbp.server")
#: The fields computed from the rest of a record, so never part of its hash.
_AFTER_HASH = frozenset({"hash", "mac"})
#: Characters JSON may leave raw inside a string that Python's ``str.splitlines`` (and other line readers)
#: treat as line breaks; written escaped, so one record is always exactly one line to every reader.
_LINE_BREAKS = str.maketrans({"\x85": "\\u0085", "\u2028": "\\u2028", "\u2029": "\\u2029"})


class Decision(BaseModel):
    """Why the call ended as it did: ok, or the Problem code (and whether it is retryable)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    ok: bool
    code: str | None = None
    retryable: bool | None = None


class AuditRecord(AuditEvent):
    """One line of the audit log: the spec's audit event plus the decision context and the hash chain."""

    mandate: dict[str, Any] | None = None
    decision: Decision
    #: HMAC-SHA256 of the bearer token's issuer and subject under the audit key (else the deployment's
    #: salt), on a remote call: who acted, without the identifier itself (a user id is personal data; the
    #: hash still links one subject's events, and without the key a guess cannot be checked against it).
    subject: str | None = None
    #: booking.create's final confirmation: mode (token or elicitation), summary and payload hashes, answer.
    confirmation: dict[str, Any] | None = None
    #: ``intent`` on the write-ahead record of an effect, made durable before the platform is called
    #: (its ``result`` is empty: nothing is known yet); absent on the record of a call's outcome.
    phase: Literal["intent"] | None = None
    #: booking.create: SHA-256 of the canonical input without approval and verification_code (the one
    #: logical create of its idempotency key), linking an attempt's intents to the outcome that settles it.
    payload_hash: str | None = None
    #: On a call's outcome record: the ids of the intent records this call wrote (each platform send).
    intents: list[str] | None = None
    prev_hash: str
    hash: str
    mac: str | None = None


@dataclass(frozen=True, slots=True)
class AuditDraft:
    """What the tool layer knows about one call, before redaction, hashing and chaining."""

    id: str
    tool_name: ToolName
    created_at: datetime
    input: dict[str, Any]
    result: dict[str, Any]
    decision: Decision
    mandate_id: str | None = None
    mandate: dict[str, Any] | None = None
    platform: PlatformIdentity | None = None
    upstream: UpstreamMeta | None = None
    #: The remote caller's :attr:`~osbp.protocol.principal.Principal.subject_hash` (none on stdio).
    subject: str | None = None
    confirmation: dict[str, Any] | None = None
    phase: Literal["intent"] | None = None
    payload_hash: str | None = None
    intents: tuple[str, ...] | None = None


def format_created_at(moment: datetime) -> str:
    """An aware instant as RFC 3339 UTC with milliseconds (``2026-05-05T20:00:00.000Z``)."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("audit instants must be timezone-aware")
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def record_hash(record: dict[str, Any]) -> str:
    """The chain hash of a record: SHA-256 hex of its canonical JSON without ``hash`` and ``mac``."""
    return sha256_hex({key: value for key, value in record.items() if key not in _AFTER_HASH})


def record_mac(key: bytes, hash_hex: str) -> str:
    """A keyed log's ``mac`` of a record: HMAC-SHA256 hex of its ``hash`` under ``key``."""
    return hmac.new(key, hash_hex.encode("ascii"), hashlib.sha256).hexdigest()


def _last_hash(fd: int, end: int) -> str:
    """The ``hash`` of the last line of the log (ending at ``end``, read backwards), or the genesis hash."""
    if end == 0:
        return GENESIS_HASH
    tail = b""
    position = end
    while position > 0:
        step = min(_TAIL_CHUNK, position)
        position -= step
        tail = os.pread(fd, step, position) + tail
        # The last line is complete once a newline precedes its content.
        if tail.rstrip(b"\n").find(b"\n") != -1:
            break
    line = tail.rstrip(b"\n").rsplit(b"\n", 1)[-1]
    try:
        parsed = json.loads(line)
        value = parsed.get("hash") if isinstance(parsed, dict) else None
    except ValueError:
        value = None
    if isinstance(value, str):
        return value
    # A damaged last line still anchors the chain to its exact bytes; `osbp audit verify` names it.
    return sha256_hex(line.decode("utf-8", errors="replace"))


class AuditLog:
    """Appends redacted, hash-chained audit records to a JSONL file (thread- and process-safe)."""

    def __init__(
        self,
        path: str | Path = DEFAULT_AUDIT_PATH,
        *,
        redactor: Redactor | None = None,
        key: bytes | None = None,
        subject_key: bytes | None = None,
        sync_every: int = SYNC_EVERY,
        sync_delay_s: float = SYNC_DELAY_S,
    ) -> None:
        self.path = Path(path)
        self._redactor = redactor or Redactor()
        self._key = key
        #: What a caller's subject hash is keyed with for the state (:meth:`Principal.keyed`: scopes,
        #: approvals, pages): the given key (the server's: the deployment's salt), else a salt of this log
        #: object only. The records' own ``subject`` is keyed with the audit key when set (:meth:`subject`).
        self.subject_key = subject_key or secrets.token_bytes(32)
        self._sync_every = sync_every
        self._sync_delay_s = sync_delay_s
        self._fd: int | None = None
        self._lock = threading.Lock()
        #: Lines written since the last fsync, and the timer that will sync them.
        self._unsynced = 0
        self._timer: threading.Timer | None = None
        #: A group fsync that failed in the timer's thread: raised by the next append.
        self._sync_error: OSError | None = None
        #: Where our last line ended and its hash: while the file still ends there, no other process has
        #: appended since, and that hash is the chain's last (no need to read it back and parse it).
        self._tail: tuple[int, str] | None = None

    def subject(self, principal: Principal) -> str:
        """A record's ``subject``: the caller's HMAC-SHA256 under the audit key when set, else its state hash.

        With the key an auditor can test a suspected subject against the log; without it the hash is the
        deployment salt's, which lives only in the state.
        """
        return principal.hash_under(self._key) if self._key is not None else principal.subject_hash

    def open(self) -> None:
        """Create and open the log now (so a bad path fails at start-up, not on the first call)."""
        with self._lock:
            self._open()

    def _open(self) -> int:
        if self._fd is None:
            directory = self.path.parent
            if not directory.exists():
                # exist_ok: another server process may create it between the check and here.
                directory.mkdir(parents=True, mode=0o700, exist_ok=True)
                # mkdir's mode is filtered by the umask; the audit directory is private regardless.
                directory.chmod(0o700)
            fd = os.open(self.path, os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_CLOEXEC, 0o600)
            # The open mode is filtered by the umask and ignored for an existing file: enforce it.
            os.fchmod(fd, 0o600)
            self._fd = fd
        return self._fd

    def build(self, draft: AuditDraft, prev_hash: str) -> AuditRecord:
        """The redacted, hashed record of ``draft`` chained after ``prev_hash`` (pure)."""
        return AuditRecord.model_validate(self._link(self._snapshot(draft), prev_hash), strict=False)

    def _link(self, snapshot: _Snapshot, prev_hash: str) -> dict[str, Any]:
        # The record's wire form after ``prev_hash``: its hash, and in a keyed log its mac.
        wire = _chained(snapshot, prev_hash)
        if self._key is not None:
            wire["mac"] = record_mac(self._key, wire["hash"])
        return wire

    def _snapshot(self, draft: AuditDraft) -> _Snapshot:
        # One scrubber for the whole call: the known strings are shared by every snapshot.
        scrubber = self._redactor.prepare(self._redactor.discover(draft.input, draft.result))
        safe_input = scrubber.redact(draft.input)
        safe_result = scrubber.redact(draft.result)
        # The snapshots are the bulk of a record: serialize each canonically once, for its own hash and
        # inside the record's.
        canonical = {"input": canonical_json(safe_input), "result": canonical_json(safe_result)}
        # In AuditRecord's field order, so the written line reads like the model's wire form.
        fields: dict[str, Any] = {
            "id": draft.id,
            "mandate_id": scrubber.scrub_text(draft.mandate_id) if draft.mandate_id else None,
            "tool_name": draft.tool_name,
            "created_at": format_created_at(draft.created_at),
            "source": SOURCE,
            "input": safe_input,
            "result": safe_result,
            "input_hash": sha256_hex_bytes(canonical["input"]),
            "result_hash": sha256_hex_bytes(canonical["result"]),
            "platform": draft.platform.to_wire() if draft.platform else None,
            # Upstream metadata carries no customer data by construction; scrub it anyway in case an
            # adapter let a contact-bearing path segment through.
            "upstream": _scrub_strings(draft.upstream.to_wire(), scrubber) if draft.upstream else None,
            "mandate": scrubber.redact(draft.mandate) if draft.mandate is not None else None,
            "decision": draft.decision.model_dump(exclude_none=True),
            "subject": draft.subject,
            # Hashes, fixed words and our own audit ids only: nothing here needs redaction.
            "confirmation": draft.confirmation,
            "phase": draft.phase,
            "payload_hash": draft.payload_hash,
            "intents": list(draft.intents) if draft.intents else None,
        }
        return _Snapshot({key: value for key, value in fields.items() if value is not None}, canonical)

    def append(self, draft: AuditDraft, *, durable: bool = True) -> AuditRecord:
        """Redact, chain and append one record (``fsync``-ed first when ``durable``); returns it."""
        return AuditRecord.model_validate(self.write(draft, durable=durable), strict=False)

    def write(self, draft: AuditDraft, *, durable: bool = True, block: bool = True) -> dict[str, Any] | None:
        """:meth:`append` returning the written line's JSON object instead of a model.

        ``block=False`` never waits: when another process holds the file lock it returns ``None`` and
        writes nothing (the caller retries with ``block=True`` where waiting is harmless).
        """
        # Redaction and hashing of the snapshots need no lock; only the link to the last line does.
        snapshot = self._snapshot(draft)
        if not self._lock.acquire(blocking=block):
            return None  # another thread is appending or syncing
        try:
            if self._sync_error is not None:
                error, self._sync_error = self._sync_error, None
                raise error
            fd = self._open()
            try:
                fcntl.flock(fd, fcntl.LOCK_EX if block else fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                return None  # another process is appending
            try:
                end = os.lseek(fd, 0, os.SEEK_END)
                tail, self._tail = self._tail, None
                if tail is not None and tail[0] == end:
                    prev_hash = tail[1]
                else:
                    end = _terminate_torn_tail(fd, end)
                    prev_hash = _last_hash(fd, end)
                wire = self._link(snapshot, prev_hash)
                # The very dict that was hashed is written, so verification sees exactly what was hashed.
                text = json.dumps(wire, ensure_ascii=False, separators=(",", ":"))
                data = (text.translate(_LINE_BREAKS) + "\n").encode("utf-8")
                _write_all(fd, data)
                self._tail = (end + len(data), wire["hash"])
                self._unsynced += 1
                if durable or self._unsynced >= self._sync_every:
                    self._sync(fd)
                elif self._timer is None:
                    self._timer = threading.Timer(self._sync_delay_s, self._sync_later)
                    self._timer.daemon = True
                    self._timer.start()
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            self._lock.release()
        return wire

    def _sync(self, fd: int) -> None:
        """fsync the file (every line so far) and forget the pending group; called under ``_lock``."""
        os.fsync(fd)
        self._unsynced = 0
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _sync_later(self) -> None:
        # Under the lock, like every fsync: an append on the event loop that finds it taken does not wait,
        # it goes to a worker thread (aappend).
        with self._lock:
            self._timer = None
            if self._fd is None or not self._unsynced:
                return
            try:
                self._sync(self._fd)
            except OSError as error:
                # No caller to tell now: the next append raises it (audit_unavailable / CRITICAL there).
                logger.critical("audit_sync_failed", exc_info=True, extra={"audit": str(self.path)})
                self._sync_error = error

    async def aappend(self, draft: AuditDraft, *, durable: bool = True) -> None:
        """Append ``draft``: on the event loop when nothing can block, else in a worker thread.

        A non-durable append whose locks are free costs only CPU (redaction, hashing, one ``write``), so
        it runs here and saves the thread hand-off; an ``fsync``, a group fsync in progress or a lock
        another process holds is waited out in a worker thread.
        """
        if not durable and self.write(draft, durable=False, block=False) is not None:
            return
        await anyio.to_thread.run_sync(lambda: self.write(draft, durable=durable))

    def flush(self) -> None:
        """fsync every line written so far (the pending group too)."""
        with self._lock:
            if self._fd is not None and self._unsynced:
                self._sync(self._fd)

    def close(self) -> None:
        """fsync what is pending and close the log file (appending again reopens it).

        A failed last fsync is logged at CRITICAL, not raised: the records were written, and the process
        that is stopping has no caller left to answer.
        """
        with self._lock:
            if self._fd is None:
                return
            try:
                if self._unsynced:
                    self._sync(self._fd)
            except OSError:
                logger.critical("audit_sync_failed", exc_info=True, extra={"audit": str(self.path)})
            finally:
                if self._timer is not None:
                    self._timer.cancel()
                    self._timer = None
                os.close(self._fd)
                self._fd = None
                self._tail = None


def _terminate_torn_tail(fd: int, end: int) -> int:
    """End a last line cut off mid-write (a crash) with a newline, so the next record starts its own.

    Returns where the file now ends.
    """
    if end and os.pread(fd, 1, end - 1) != b"\n":
        _write_all(fd, b"\n")
        return end + 1
    return end


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


@dataclass(frozen=True, slots=True)
class _Snapshot:
    """A record without its place in the chain, plus the snapshots' canonical JSON bytes."""

    fields: dict[str, Any]
    canonical: dict[str, bytes]


def _chained(snapshot: _Snapshot, prev_hash: str) -> dict[str, Any]:
    """The record's wire form linked after ``prev_hash``, with its own ``hash``."""
    wire = snapshot.fields | {"prev_hash": prev_hash}
    wire["hash"] = sha256_hex_bytes(canonical_object(wire, snapshot.canonical))
    return wire


def _scrub_strings(node: Any, scrubber: Scrubber) -> Any:
    if isinstance(node, dict):
        return {key: _scrub_strings(value, scrubber) for key, value in node.items()}
    if isinstance(node, list):
        return [_scrub_strings(item, scrubber) for item in node]
    if isinstance(node, str):
        return scrubber.scrub_text(node)
    return node
