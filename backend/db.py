"""The database: one SQLAlchemy engine over SQLite, and read and write transactions.

A file database runs in WAL mode with a busy timeout so contending writers wait instead of failing.
Write transactions start with `BEGIN IMMEDIATE`, taking SQLite's write lock before the first read, so a
read-then-write (check the slot, then insert) can never interleave with another writer. `:memory:` (unit
tests) shares one connection guarded by a lock.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.pool import StaticPool
from sqlmodel import Session, SQLModel

from osbp.backend import models  # noqa: F401  registers the tables on SQLModel.metadata
from osbp.backend.catalog_snapshot import CATALOG_READER, READ_ONLY
from osbp.backend.commit_hold import hold_before_commit

__all__ = ["BUSY_TIMEOUT_MS", "Database"]

#: How long a writer waits for SQLite's lock before giving up.
BUSY_TIMEOUT_MS = 30_000


class Database:
    """The engine plus transaction helpers."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.in_memory = path == ":memory:"
        if self.in_memory:
            self.engine: Engine = create_engine(
                "sqlite://", connect_args={"check_same_thread": False}, poolclass=StaticPool
            )
            # One shared connection: serialise whole transactions through it.
            self._lock: threading.RLock | None = threading.RLock()
        else:
            Path(path).parent.mkdir(parents=True, exist_ok=True)
            self.engine = create_engine(
                f"sqlite:///{path}",
                connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000},
                pool_size=16,
                max_overflow=48,
                pool_timeout=60,
            )
            self._lock = None
        event.listen(self.engine, "connect", _on_connect)
        event.listen(self.engine, "begin", _on_begin)
        self._writer = self.engine.execution_options(sqlite_begin="IMMEDIATE")

    def create_all(self) -> None:
        """Create the tables and indexes if missing."""
        with self._guard():
            SQLModel.metadata.create_all(self.engine)

    def clear(self, session: Session) -> None:
        """Delete every row, children before parents (reset to seeds starts here)."""
        for table in reversed(SQLModel.metadata.sorted_tables):
            session.execute(table.delete())

    @contextmanager
    def read(self) -> Iterator[Session]:
        """A read transaction (deferred BEGIN: one consistent snapshot), ended by closing the session.

        Marked read-only in ``session.info``, so catalog lookups may answer from the catalog snapshot.
        """
        with self._guard(), Session(self.engine, expire_on_commit=False, info={READ_ONLY: True}) as session:
            yield session

    @contextmanager
    def write(
        self, *, commit_on: tuple[type[BaseException], ...] = (), catalog_reader: bool = False
    ) -> Iterator[Session]:
        """A write transaction opened with BEGIN IMMEDIATE: committed on success, rolled back on error.

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
                    raise
                hold_before_commit()
                session.commit()
            except BaseException:
                session.rollback()
                raise

    def dispose(self) -> None:
        """Close pooled connections."""
        self.engine.dispose()

    def _guard(self) -> threading.RLock | nullcontext[None]:
        return self._lock if self._lock is not None else nullcontext()


def _on_connect(dbapi_connection: Any, _record: Any) -> None:
    # Take transaction control away from the sqlite3 module so our own BEGIN is the only one emitted.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    cursor.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
    cursor.execute("PRAGMA foreign_keys = ON")
    _switch_to_wal(cursor)
    cursor.execute("PRAGMA synchronous = NORMAL")
    cursor.close()


def _switch_to_wal(cursor: Any) -> None:
    """Put the file in WAL mode (persistent), once, even when another process is creating it as well.

    SQLite answers a journal-mode change that meets another writer with "database is locked" at once,
    without its busy handler, so the switch is retried here for up to the busy timeout. A file already
    in WAL mode (every connection after the first) needs no lock; `:memory:` stays in memory mode.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    while True:
        try:
            cursor.execute("PRAGMA journal_mode = WAL")
            return
        except sqlite3.OperationalError as error:
            if error.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or time.monotonic() >= deadline:
                raise
            time.sleep(0.005)


def _on_begin(connection: Any) -> None:
    mode = connection.get_execution_options().get("sqlite_begin", "DEFERRED")
    # On the driver's own cursor: every request opens a transaction, and SQLAlchemy's statement
    # machinery costs more than the BEGIN itself.
    cursor = connection.connection.cursor()
    try:
        cursor.execute(f"BEGIN {mode}")
    finally:
        cursor.close()
