"""The database: one SQLAlchemy engine (SQLite or PostgreSQL), and read and write transactions.

Which engine, and how each one keeps writers apart, lives in `osbp.backend.dialects`. On SQLite a file
database runs in WAL mode with a busy timeout so contending writers wait instead of failing, and write
transactions start with `BEGIN IMMEDIATE`, taking the write lock before the first read, so a
read-then-write (check the slot, then insert) can never interleave with another writer; `:memory:` (unit
tests) shares one connection guarded by a lock. On PostgreSQL a write that re-checks before it inserts
takes advisory locks on what it re-checks (`dialects.serialise`). The schema comes from the migrations
(`osbp.backend.schema`).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext

from sqlmodel import Session, SQLModel

from osbp.backend import models  # noqa: F401  registers the tables on SQLModel.metadata
from osbp.backend.catalog_snapshot import CATALOG_READER, READ_ONLY
from osbp.backend.commit_hold import hold_before_commit
from osbp.backend.database_url import parse_database
from osbp.backend.dialects import BUSY_TIMEOUT_MS, build_engine, reader, writer

__all__ = ["BUSY_TIMEOUT_MS", "EVENTS_QUEUED", "Database"]

#: The ``Session.info`` flag of a write transaction that queued a webhook event (`webhook_events.record`).
EVENTS_QUEUED = "osbp_events_queued"


class Database:
    """The engine plus transaction helpers."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.url = parse_database(path)
        self.in_memory = self.url.in_memory
        self.kind = self.url.kind
        self.engine = build_engine(self.url)
        # In memory, one shared connection: serialise whole transactions through it.
        self._lock: threading.RLock | None = threading.RLock() if self.in_memory else None
        self._reader = reader(self.engine)
        self._writer = writer(self.engine)
        #: Called after the commit of a write transaction that queued webhook events (wakes the worker).
        self.on_events_queued: Callable[[], None] | None = None

    def clear(self, session: Session) -> None:
        """Delete every row, children before parents (reset to seeds starts here)."""
        for table in reversed(SQLModel.metadata.sorted_tables):
            session.execute(table.delete())

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A read transaction (deferred BEGIN: one consistent snapshot), ended by closing the session.

        Marked read-only in ``session.info``, so catalog lookups may answer from the catalog snapshot.
        """
        with self._guard(), Session(self._reader, expire_on_commit=False, info={READ_ONLY: True}) as session:
            yield session

    @contextmanager
    def write(
        self, *, commit_on: tuple[type[BaseException], ...] = (), catalog_reader: bool = False
    ) -> Iterator[Session]:
        """A write transaction (BEGIN IMMEDIATE on SQLite): committed on success, rolled back on error.

        An exception of a `commit_on` type commits what the transaction wrote before it, then propagates:
        for a refusal that must keep its own record (a wrong verification code counts an attempt).
        ``catalog_reader`` promises the transaction writes no catalog row, so its catalog lookups may answer
        from the committed snapshot of the revision it sees (:data:`CATALOG_READER`).
        """
        info = {CATALOG_READER: True} if catalog_reader else {}
        with self._guard(), Session(self._writer, expire_on_commit=False, info=info) as session:
            try:
                try:
                    yield session
                except commit_on:
                    hold_before_commit()  # the slow-commit fault: the write lock is still held here
                    session.commit()
                    self._committed(session)
                    raise
                hold_before_commit()
                session.commit()
            except BaseException:
                session.rollback()
                raise
        self._committed(session)

    def _committed(self, session: Session) -> None:
        """After a commit: announce queued webhook events (only those: other writes wake nobody)."""
        if session.info.pop(EVENTS_QUEUED, False) and self.on_events_queued is not None:
            self.on_events_queued()

    def dispose(self) -> None:
        """Close pooled connections."""
        self.engine.dispose()

    def _guard(self) -> threading.RLock | nullcontext[None]:
        return self._lock if self._lock is not None else nullcontext()
