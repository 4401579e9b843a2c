"""Durable booking.create idempotency, keyed by the caller's scope, ``idempotency_key`` and the payload hash.

Every record lives in a scope (:func:`osbp.protocol.principal.scope_of`: the organization and the token
subject, or the one local caller on stdio): another organization or subject using the same key meets
nothing of it: no receipt it did not earn, no conflict with a key it never used, and its own fresh
attempt. A state made before scopes keeps its records in the legacy scope ``''``; the first scoped call
whose key and payload match one that settled or was sent to the platform adopts it into its own scope
(:meth:`IdempotencyStore.peek`), so a retry across the upgrade replays or resumes instead of booking again.

The booking pipeline (:mod:`osbp.protocol.booking`) asks :meth:`IdempotencyStore.peek` first: a settled key
with this payload answers from here, before anything else, and an attempt already sent to the platform
(:class:`Placing`) is resumed rather than re-checked. Otherwise, once the platform-free mandate steps
passed, it calls :meth:`IdempotencyStore.claim`:

* :class:`Replay` - the key already settled with this payload: return ``replay.receipt`` with
  :data:`LOCAL_CACHE_REPLAY` as ``osbp_runtime`` and make no platform call;
* :class:`Conflict` - the key was used with another payload, whether that attempt settled, is in flight
  or ended without creating: return ``conflict.problem`` (``idempotency_conflict``);
* :class:`InProgress` - another call holds this key and did not settle within the bounded wait, or it
  gave up: return ``in_progress.problem`` (retryable);
* :class:`Claimed` - this call owns the attempt: do the work, then :meth:`~IdempotencyStore.complete`
  with the receipt after a platform create succeeded, or :meth:`~IdempotencyStore.release` on every
  other outcome (so the same attempt can be retried, e.g. after ``requires_verification``; the key stays
  bound to its payload).

Concurrent duplicates of one key (threads, processes or replicas sharing the state) are serialized by
the row (SQLite's write lock, PostgreSQL's ``ON CONFLICT`` and ``FOR UPDATE``): one caller claims, the
others poll until it settles (then they replay) or the wait runs out. A lease that
outlives ``lease_ttl`` on the injected clock (a crashed holder) can be taken over, and so, at once, can a
lease whose owner (host, pid and the pid's start time) is a process on this host that no longer runs.

Crash safety: before the platform create is sent the attempt is marked as placed
(:meth:`IdempotencyStore.mark_placing`, with the hash of the approval token that authorized it). If the
outcome is then unknown (no answer, a process killed), the mark stays, and a retry with the same key,
payload and approval re-sends the same create under the same native idempotency key: the platform replays
the appointment it made, or makes it now, so one logical create is one appointment. The payload hash is
the canonical JSON of the booking.create input without the transient ``approval`` and
``verification_code`` (so it includes ``idempotency_key``): :func:`booking_payload_hash`.
"""

from __future__ import annotations

import json
import os
import secrets
import socket
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import timedelta
from functools import lru_cache
from pathlib import Path

import anyio.to_thread

from osbp.protocol.canonical import sha256_hex
from osbp.protocol.clock import Clock, SystemClock
from osbp.protocol.models import Booking, BookingCreateInput, OSBPModel, Problem, Receipt, RuntimeDiagnostics
from osbp.protocol.problems import ExtensionCode, ProblemCode, problem
from osbp.protocol.state import StateBackend
from osbp.protocol.store import StateStoreError, duration_micros, to_micros

__all__ = [
    "LEGACY_SCOPE",
    "LOCAL_CACHE_REPLAY",
    "ClaimOutcome",
    "Claimed",
    "Conflict",
    "IdempotencyStore",
    "InProgress",
    "Lease",
    "Placing",
    "Replay",
    "booking_payload_hash",
    "lease_owner",
]

#: The spec's ``osbp_runtime`` for a result served from local idempotency state.
LOCAL_CACHE_REPLAY = RuntimeDiagnostics(
    idempotency="local_cache_replay",
    message="No platform create call was made; this result was replayed from local OSBP idempotency state.",
)

#: The scope of the records a state made before scopes holds (and of direct callers that name none).
LEGACY_SCOPE = ""

_TRANSIENT_FIELDS = frozenset({"approval", "verification_code"})


def booking_payload_hash(inp: BookingCreateInput) -> str:
    """SHA-256 of the canonical booking.create input without ``approval`` and ``verification_code``."""
    wire = {key: value for key, value in inp.to_wire().items() if key not in _TRANSIENT_FIELDS}
    return sha256_hex(wire)


@dataclass(frozen=True, slots=True)
class Lease:
    """Ownership of one idempotency key for the duration of a create attempt."""

    key: str
    payload_hash: str
    lease_id: str
    #: The caller's scope the record lives in (:func:`osbp.protocol.principal.scope_of`).
    scope: str = LEGACY_SCOPE


@dataclass(frozen=True, slots=True)
class Placing:
    """An approved attempt under this key was sent to the platform and never settled: it may have booked.

    ``token_hash`` is the SHA-256 of the approval token that authorized it; ``context`` what the receipt
    needs (the service and provider names and the zone), so a resumed attempt answers the same receipt.
    """

    token_hash: str
    context: dict[str, str | None]


@dataclass(frozen=True, slots=True)
class Claimed:
    """This caller owns the attempt; it must ``complete`` or ``release`` the lease.

    ``placing`` is set when an earlier holder already sent this attempt to the platform.
    """

    lease: Lease
    placing: Placing | None = None


@dataclass(frozen=True, slots=True)
class Replay:
    """The attempt already settled: serve this receipt without contacting the platform.

    ``stored`` is the settled result's JSON as completed (a lifecycle change's result has more fields
    than the receipt view in ``receipt``).
    """

    receipt: Receipt
    stored: str = field(default="", compare=False, repr=False)


def _replay(stored: str) -> Replay:
    """The settled record's result: its receipt fields (``id``, ``booking_id``, ``text``) and the whole."""
    settled = json.loads(stored)
    receipt = Receipt.model_validate({name: settled[name] for name in Receipt.model_fields})
    return Replay(receipt, stored)


@dataclass(frozen=True, slots=True)
class Conflict:
    """The key was used with a different payload."""

    problem: Problem


@dataclass(frozen=True, slots=True)
class InProgress:
    """Another call holds the key and did not settle in time (or gave up); retry later."""

    problem: Problem


ClaimOutcome = Claimed | Replay | Conflict | InProgress

_SELECT_CLAIM = (
    "SELECT payload_hash, state, receipt_json, lease_id, lease_expires, lease_owner, placing_json"
    " FROM idempotency WHERE scope = ? AND key = ?"
)


def _start_ticks(pid: int) -> str | None:
    """When process ``pid`` started (Linux ``/proc``), so a reused pid is not mistaken for the holder."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii")
    except OSError:
        return None
    return stat.rsplit(")", 1)[-1].split()[19]


def lease_owner() -> str:
    """This process as a lease owner: host, pid and the pid's start time."""
    return _owner(os.getpid())


@lru_cache(maxsize=1)
def _owner(pid: int) -> str:
    # Made once per process (keyed by pid, so a forked child makes its own): the start time is read from
    # /proc, which every claim would otherwise do again.
    return f"{socket.gethostname()}|{pid}|{_start_ticks(pid) or '-'}"


def _provably_dead(owner: str | None) -> bool:
    """Whether the holder is a process on this host that no longer runs (never guessed for another host)."""
    if not owner:
        return False
    host, _, rest = owner.partition("|")
    pid_text, _, started = rest.partition("|")
    if host != socket.gethostname() or not pid_text.isdigit():
        return False
    pid = int(pid_text)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False  # alive, another user's
    return started != "-" and _start_ticks(pid) not in (None, started)  # the pid was reused


class IdempotencyStore:
    """Idempotency records in the shared OSBP state file."""

    def __init__(
        self,
        state: StateBackend,
        *,
        clock: Clock | None = None,
        lease_ttl: timedelta = timedelta(minutes=2),
        wait_timeout_s: float = 30.0,
        poll_interval_s: float = 0.02,
        on_wait: Callable[[str], None] | None = None,
    ) -> None:
        self._state = state
        self._clock = clock or SystemClock()
        self._lease_ttl = lease_ttl
        self._wait_timeout_s = wait_timeout_s
        self._poll_interval_s = poll_interval_s
        self._on_wait = on_wait
        #: Leases this process's holders gave up because their release failed (the state store was
        #: down): a retry in this process takes such a lease over at once instead of waiting it out.
        self._abandoned: set[str] = set()

    def _try_claim(self, key: str, payload_hash: str, waited: bool, scope: str) -> ClaimOutcome | None:
        now = to_micros(self._clock.now())
        lease = Lease(key, payload_hash, secrets.token_hex(16), scope)
        expires = now + duration_micros(self._lease_ttl)
        with self._state.write() as db:
            # A new key is claimed by its insert alone; a present key (the insert does nothing: on
            # PostgreSQL after waiting for a replica's uncommitted insert of it) is read with its row locked.
            inserted = db.execute(
                "INSERT INTO idempotency (scope, key, payload_hash, state, lease_id, lease_expires,"
                " lease_owner, created_at, updated_at) VALUES (?, ?, ?, 'pending', ?, ?, ?, ?, ?)"
                " ON CONFLICT (scope, key) DO NOTHING",
                (scope, key, payload_hash, lease.lease_id, expires, lease_owner(), now, now),
            ).rowcount
            if inserted == 1:
                return Claimed(lease)
            row = db.execute(_SELECT_CLAIM + self._state.for_update, (scope, key)).fetchone()
            stored_hash, state, receipt_json, lease_id, lease_expires, owner, placing_json = row
            # A key stays bound to its first payload, whether that attempt settled, is in flight,
            # or ended without creating (spec: the same key with a different payload conflicts).
            if stored_hash != payload_hash:
                return Conflict(problem(ProblemCode.IDEMPOTENCY_CONFLICT))
            if state == "settled":
                return _replay(receipt_json)
            placing = _placing(placing_json)
            if lease_id is None and waited and placing is None:
                # The holder released without settling (its attempt failed): do not silently start
                # a second platform attempt on its heels; the caller decides to retry.
                return InProgress(_in_progress("The earlier call with this idempotency_key did not complete"))
            held = lease_id is not None and lease_expires > now and lease_id not in self._abandoned
            if held and not _provably_dead(owner):
                return None  # pending under a live lease: wait
            # Released, or held by a crashed holder (lease expired, its process is gone, or it gave the
            # lease up when the state failed under it): take it.
            db.execute(
                "UPDATE idempotency SET lease_id = ?, lease_expires = ?, lease_owner = ?, updated_at = ?"
                " WHERE scope = ? AND key = ?",
                (lease.lease_id, expires, lease_owner(), now, scope, key),
            )
            self._abandoned.discard(lease_id or "")
            return Claimed(lease, placing)

    def claim(self, key: str, payload_hash: str, scope: str = LEGACY_SCOPE) -> ClaimOutcome:
        """Claim ``key`` in ``scope`` for ``payload_hash``, waiting (bounded) while another holds it."""
        deadline = time.monotonic() + self._wait_timeout_s
        waited = False
        interval = self._poll_interval_s
        while True:
            outcome = self._try_claim(key, payload_hash, waited, scope)
            if outcome is not None:
                return outcome
            if time.monotonic() >= deadline:
                return InProgress(_in_progress("Another call with this idempotency_key is still in progress"))
            if not waited and self._on_wait is not None:
                self._on_wait(key)  # observability: this call found the key held and is now waiting
            waited = True
            # Polling is the only signal that crosses processes; back off gently up to 0.2 s.
            time.sleep(interval)
            interval = min(interval * 1.5, 0.2)

    def complete(self, lease: Lease, receipt: OSBPModel, booking: Booking | None = None) -> None:
        """Settle the attempt with its receipt (after the platform create, or a change, succeeded).

        ``booking``, when given, is the booking as the platform reported it at creation: kept in the same
        transaction as a snapshot that :meth:`booking_snapshot` can serve when the platform cannot be read.
        """
        now = to_micros(self._clock.now())
        with self._state.write() as db:
            # The receipt is booking truth: store it even if the lease was taken over meanwhile.
            db.execute(
                "UPDATE idempotency SET state = 'settled', receipt_json = ?, lease_id = NULL,"
                " lease_expires = NULL, updated_at = ? WHERE scope = ? AND key = ? AND payload_hash = ?",
                (receipt.to_wire_json(), now, lease.scope, lease.key, lease.payload_hash),
            )
            if booking is not None:
                db.execute(
                    "INSERT INTO booking_snapshots (booking_id, idempotency_key, booking_json, recorded_at)"
                    " VALUES (?, ?, ?, ?) ON CONFLICT (booking_id) DO UPDATE SET"
                    " idempotency_key = excluded.idempotency_key, booking_json = excluded.booking_json,"
                    " recorded_at = excluded.recorded_at",
                    (booking.id, lease.key, booking.to_wire_json(), now),
                )

    def created_in_scope(self, booking_id: str, scope: str) -> bool:
        """Whether a create of ``scope`` settled here with ``booking_id`` (its snapshot and its record)."""
        with self._state.read() as db:
            rows = db.execute(
                "SELECT i.receipt_json FROM booking_snapshots s JOIN idempotency i"
                " ON i.key = s.idempotency_key AND i.scope = ? AND i.state = 'settled'"
                " WHERE s.booking_id = ?",
                (scope, booking_id),
            ).fetchall()
        # The key alone does not say who booked: another scope may have used it for its own booking.
        return any(json.loads(row[0]).get("booking_id") == booking_id for row in rows)

    async def acreated_in_scope(self, booking_id: str, scope: str) -> bool:
        """:meth:`created_in_scope` without blocking the event loop."""
        return await self._state.run(lambda: self.created_in_scope(booking_id, scope))

    def booking_snapshot(self, booking_id: str) -> Booking | None:
        """The booking as it was when this store settled its create, if it did (never current state)."""
        with self._state.read() as db:
            row = db.execute(
                "SELECT booking_json FROM booking_snapshots WHERE booking_id = ?", (booking_id,)
            ).fetchone()
        return None if row is None else Booking.model_validate_json(row[0])

    def mark_placing(self, lease: Lease, token: str, context: dict[str, str | None]) -> None:
        """Record, before the platform create is sent, that this approved attempt may reach the platform.

        From here until it settles, a retry of the key resumes the attempt (re-sends the same create,
        which the platform replays if it had committed) instead of checking availability again.
        """
        now = to_micros(self._clock.now())
        placing = json.dumps({"token_hash": sha256_hex(token), "context": context}, separators=(",", ":"))
        with self._state.write() as db:
            db.execute(
                "UPDATE idempotency SET placing_json = ?, updated_at = ?"
                " WHERE scope = ? AND key = ? AND lease_id = ?",
                (placing, now, lease.scope, lease.key, lease.lease_id),
            )

    def release(self, lease: Lease, *, outcome_known: bool = True) -> None:
        """Give the key back without a receipt (the attempt failed or stopped before creating).

        The key stays bound to its payload: the same attempt may be retried under it, another may not.
        ``outcome_known=False`` (the platform may have created the appointment: no answer, a broken
        connection) keeps the attempt marked as placed, so the retry resumes it.

        When the release itself fails (the state store is down), the lease is remembered as abandoned:
        a retry in this process takes it over at once once the store answers again, rather than waiting
        for it to expire.
        """
        now = to_micros(self._clock.now())
        clear = ", placing_json = NULL" if outcome_known else ""
        try:
            with self._state.write() as db:
                db.execute(
                    "UPDATE idempotency SET lease_id = NULL, lease_expires = NULL, lease_owner = NULL"  # noqa: S608  # constant fragment
                    f"{clear}, updated_at = ?"
                    " WHERE scope = ? AND key = ? AND lease_id = ? AND state = 'pending'",
                    (now, lease.scope, lease.key, lease.lease_id),
                )
        except StateStoreError:
            self._abandoned.add(lease.lease_id)
            raise

    def peek(self, key: str, payload_hash: str, scope: str = LEGACY_SCOPE) -> Replay | Placing | None:
        """What ``key`` holds in ``scope`` for exactly this payload: a settled receipt, a placed attempt, or
        nothing.

        A record of the legacy scope (written before scopes) with this key and payload that settled or
        was sent to the platform is adopted into ``scope`` here (one write, once), so its retry replays
        or resumes it; the scoped record wins when both exist.
        """
        with self._state.read() as db:
            rows = db.execute(
                "SELECT scope, state, receipt_json, placing_json FROM idempotency"
                " WHERE scope IN (?, ?) AND key = ? AND payload_hash = ?",
                (scope, LEGACY_SCOPE, key, payload_hash),
            ).fetchall()
        found = {row[0]: row[1:] for row in rows}
        row = found.get(scope)
        if row is None and scope != LEGACY_SCOPE and LEGACY_SCOPE in found:
            legacy = found[LEGACY_SCOPE]
            if legacy[0] == "settled" or legacy[2] is not None:
                row = legacy if self._adopt(key, payload_hash, scope) else None
        if row is None:
            return None
        if row[0] == "settled":
            return _replay(row[1])
        return _placing(row[2])

    def _adopt(self, key: str, payload_hash: str, scope: str) -> bool:
        """Move a legacy record of ``key`` into ``scope``; whether this call moved it (no other scope did)."""
        now = to_micros(self._clock.now())
        with self._state.write() as db:
            moved = db.execute(
                "UPDATE idempotency SET scope = ?, updated_at = ?"
                " WHERE scope = ? AND key = ? AND payload_hash = ?"
                " AND NOT EXISTS (SELECT 1 FROM idempotency WHERE scope = ? AND key = ?)",
                (scope, now, LEGACY_SCOPE, key, payload_hash, scope, key),
            ).rowcount
        return moved == 1

    def settled_receipt(self, key: str, scope: str = LEGACY_SCOPE) -> Receipt | None:
        """The settled receipt under ``key`` in ``scope``, if any (a local snapshot, not platform state)."""
        with self._state.read() as db:
            row = db.execute(
                "SELECT receipt_json FROM idempotency WHERE scope = ? AND key = ? AND state = 'settled'",
                (scope, key),
            ).fetchone()
        return None if row is None else Receipt.model_validate_json(row[0])

    # The async forms run on the event loop when the file's lock is free (StateStore.run), else in a
    # worker thread; a claim that must wait for another holder always waits in a worker thread.

    async def aclaim(self, key: str, payload_hash: str, scope: str = LEGACY_SCOPE) -> ClaimOutcome:
        """:meth:`claim`: its first attempt on the event loop, any waiting in a worker thread."""
        outcome = await self._state.run(lambda: self._try_claim(key, payload_hash, False, scope))
        if outcome is not None:
            return outcome
        return await anyio.to_thread.run_sync(self.claim, key, payload_hash, scope)

    async def acomplete(self, lease: Lease, receipt: OSBPModel, booking: Booking | None = None) -> None:
        """:meth:`complete` without blocking the event loop."""
        await self._state.run(lambda: self.complete(lease, receipt, booking))

    async def abooking_snapshot(self, booking_id: str) -> Booking | None:
        """:meth:`booking_snapshot` without blocking the event loop."""
        return await self._state.run(lambda: self.booking_snapshot(booking_id))

    async def arelease(self, lease: Lease, *, outcome_known: bool = True) -> None:
        """:meth:`release` without blocking the event loop."""
        await self._state.run(lambda: self.release(lease, outcome_known=outcome_known))

    async def apeek(self, key: str, payload_hash: str, scope: str = LEGACY_SCOPE) -> Replay | Placing | None:
        """:meth:`peek` without blocking the event loop."""
        return await self._state.run(lambda: self.peek(key, payload_hash, scope))

    async def amark_placing(self, lease: Lease, token: str, context: dict[str, str | None]) -> None:
        """:meth:`mark_placing` without blocking the event loop."""
        await self._state.run(lambda: self.mark_placing(lease, token, context))


def _placing(placing_json: str | None) -> Placing | None:
    if placing_json is None:
        return None
    placed = json.loads(placing_json)
    return Placing(token_hash=placed["token_hash"], context=placed["context"])


def _in_progress(what: str) -> Problem:
    return problem(
        ExtensionCode.IDEMPOTENCY_IN_PROGRESS,
        f"{what}. No platform create call was made by this request; retry booking.create with the same "
        "idempotency_key and payload shortly.",
        retryable=True,
    )
