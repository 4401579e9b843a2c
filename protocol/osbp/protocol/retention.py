"""Forgetting per-attempt state once it is of no use: the purge of expired pages, approvals and rounds.

:meth:`StatePurge.purge` deletes, from the shared state store, every confirmation page, approval token
record and confirmation round whose expiry lies more than ``retention`` in the past: nothing can use them
then (a page or token past its expiry confirms nothing, and a round's sealed request state has expired
with it), while the grace keeps an expired page answering "expired" rather than "unknown" for a while.
An unanswered page holds the approval summary (the customer's name, the time, the place, the price),
so this is what keeps personal data from outliving the attempt.

Idempotency records and booking snapshots are never purged here: a settled record is the receipt replay
of a booking that exists, and a snapshot is booking.status's fallback for it (neither holds a customer
name or contact; docs/server.md, "What the state keeps").

Each purge deletes at most ``batch`` rows of each table in one short transaction (the oldest first, by an
index on the expiry), so a backlog never holds the SQLite file's write lock for long. On SQLite the
connections zero freed bytes (``secure_delete``) and the purge then truncates the WAL, so a deleted
summary is gone from the files, not only from the tables; PostgreSQL reclaims the dead rows' space with
its (auto)vacuum.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

import anyio.to_thread

from osbp.protocol.clock import Clock
from osbp.protocol.state import StateBackend
from osbp.protocol.store import StateStore, duration_micros, to_micros

__all__ = ["DEFAULT_RETENTION", "PURGE_BATCH", "Purged", "StatePurge"]

#: How long expired per-attempt state is kept past its expiry before the purge deletes it.
DEFAULT_RETENTION = timedelta(minutes=10)
#: The most rows of one table one purge deletes (one transaction).
PURGE_BATCH = 500

#: The purged tables and their keys (constants: never built from input).
_TABLES = (
    ("confirmation_pages", "page_hash"),
    ("approvals", "token_hash"),
    ("confirmation_rounds", "round_hash"),
)


@dataclass(frozen=True, slots=True)
class Purged:
    """What one purge deleted, per table; ``full``: a table had more than one batch to delete."""

    confirmation_pages: int
    approvals: int
    confirmation_rounds: int
    full: bool

    @property
    def total(self) -> int:
        """Rows deleted in all."""
        return self.confirmation_pages + self.approvals + self.confirmation_rounds


class StatePurge:
    """Deletes the expired per-attempt records of one state store, ``retention`` after their expiry."""

    def __init__(
        self,
        state: StateBackend,
        clock: Clock,
        *,
        retention: timedelta = DEFAULT_RETENTION,
        batch: int = PURGE_BATCH,
    ) -> None:
        if retention < timedelta(0) or batch < 1:
            raise ValueError("the retention must not be negative and the batch at least one row")
        self._state = state
        self._clock = clock
        self._retention_us = duration_micros(retention)
        self._batch = batch
        #: Rows were deleted and the WAL not yet truncated since (a reader kept the checkpoint from ending).
        self._unflushed = False

    def purge(self) -> Purged:
        """One purge: at most ``batch`` expired rows of each table, in one transaction (blocking)."""
        cutoff = to_micros(self._clock.now()) - self._retention_us
        # PostgreSQL: rows another transaction holds (another replica's purge) are left to it.
        skip = f"{self._state.for_update} SKIP LOCKED" if self._state.for_update else ""
        deleted: list[int] = []
        with self._state.write() as db:
            for table, key in _TABLES:
                cursor = db.execute(
                    f"DELETE FROM {table} WHERE {key} IN "  # noqa: S608  # constant names, bound values
                    f"(SELECT {key} FROM {table} WHERE expires_at < ? ORDER BY expires_at LIMIT ?{skip})",
                    (cutoff, self._batch),
                )
                deleted.append(cursor.rowcount)
        if isinstance(self._state, StateStore) and (self._unflushed or any(deleted)):
            self._unflushed = not self._state.checkpoint()
        pages, approvals, rounds = deleted
        return Purged(pages, approvals, rounds, full=max(deleted) >= self._batch)

    async def apurge(self) -> Purged:
        """:meth:`purge` in a worker thread (the WAL checkpoint may wait for a reader)."""
        return await anyio.to_thread.run_sync(self.purge)
