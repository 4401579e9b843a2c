"""Everything that differs between the platform's two database engines, SQLite and PostgreSQL, in one place.

Which engine a `--db` value names is `osbp.backend.database_url`; how each engine connects, begins its
transactions and keeps writers apart is here.

Writers are serialised differently. SQLite has one writer at a time: every write transaction starts with
`BEGIN IMMEDIATE`, so a read-then-write can never interleave with another writer, and :func:`serialise`
has nothing left to do. PostgreSQL runs writers side by side (READ COMMITTED): a write that re-checks
before it writes (the slot of one provider, one Idempotency-Key, one appointment's status, one contact's
verification codes) first takes a transaction-scoped advisory lock per thing it re-checks, in the order it
names them, so the re-check of a second writer starts only after the first one's commit, across processes
and machines.
The exclusion constraint on active appointments (see `models`) is the backstop under that re-check.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.pool import StaticPool
from sqlmodel import Session

from osbp.backend.database_url import DatabaseUrl

__all__ = [
    "BUSY_TIMEOUT_MS",
    "POSTGRES_DRIVER_MISSING",
    "build_engine",
    "reader",
    "serialise",
    "writer",
]

#: How long a SQLite writer waits for the file's lock before giving up.
BUSY_TIMEOUT_MS = 30_000
#: The one line a PostgreSQL URL gets where psycopg is not installed.
POSTGRES_DRIVER_MISSING = (
    "PostgreSQL needs the psycopg driver, an optional part of osbp: install the postgres extra "
    "(in a checkout: .venv/bin/pip install -e '.[postgres]')"
)


def build_engine(database: DatabaseUrl) -> Engine:
    """The engine for `database`, with the engine's own connection set-up and transaction start."""
    if database.kind == "postgresql":
        try:
            import psycopg  # noqa: F401  only to say clearly when the optional driver is missing
        except ImportError:
            raise RuntimeError(POSTGRES_DRIVER_MISSING) from None
        # Enough connections for a process's worker threads; several processes share the server's limit.
        return create_engine(database.url, pool_size=16, max_overflow=16, pool_timeout=60, pool_pre_ping=True)
    if database.path is None:
        engine = create_engine("sqlite://", connect_args={"check_same_thread": False}, poolclass=StaticPool)
    else:
        database.path.parent.mkdir(parents=True, exist_ok=True)
        engine = create_engine(
            database.url,
            connect_args={"check_same_thread": False, "timeout": BUSY_TIMEOUT_MS / 1000},
            pool_size=16,
            max_overflow=48,
            pool_timeout=60,
        )
    event.listen(engine, "connect", _sqlite_on_connect)
    event.listen(engine, "begin", _sqlite_on_begin)
    return engine


def reader(engine: Engine) -> Engine:
    """The engine read transactions run on: PostgreSQL's see one snapshot, as SQLite's deferred BEGIN does."""
    if engine.dialect.name == "postgresql":
        return engine.execution_options(isolation_level="REPEATABLE READ", postgresql_readonly=True)
    return engine


def writer(engine: Engine) -> Engine:
    """The engine write transactions run on: SQLite's opens them with BEGIN IMMEDIATE."""
    if engine.dialect.name == "sqlite":
        return engine.execution_options(sqlite_begin="IMMEDIATE")
    return engine


def serialise(session: Session, *scopes: str) -> None:
    """Hold a transaction-scoped lock per scope, in the order given (no-op on SQLite: its writers are one).

    Every caller names its scopes in the same order (Idempotency-Key, then appointment, then provider, then
    contact), so two transactions can never wait on each other in a cycle.
    """
    if session.get_bind().dialect.name != "postgresql":
        return
    for scope in scopes:
        session.execute(text("SELECT pg_advisory_xact_lock(hashtextextended(:scope, 0))"), {"scope": scope})


def _sqlite_on_connect(dbapi_connection: Any, _record: Any) -> None:
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


def _sqlite_on_begin(connection: Any) -> None:
    mode = connection.get_execution_options().get("sqlite_begin", "DEFERRED")
    # On the driver's own cursor: every request opens a transaction, and SQLAlchemy's statement
    # machinery costs more than the BEGIN itself.
    cursor = connection.connection.cursor()
    try:
        cursor.execute(f"BEGIN {mode}")
    finally:
        cursor.close()
