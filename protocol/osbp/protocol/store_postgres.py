"""The OSBP state on PostgreSQL: the store several MCP server replicas share, on processes and machines.

Same tables and the same semantics as the SQLite file (:mod:`osbp.protocol.store`), for a ``postgresql://``
state location: the idempotency claims and leases, settled receipts, booking snapshots and pending
approvals. Where SQLite serialises every write transaction on the file's one lock, PostgreSQL locks rows:
a claim inserts its key with ``ON CONFLICT DO NOTHING`` (the loser waits for the winner's commit and then
sees its row) and re-reads a present key ``FOR UPDATE`` (:attr:`PostgresStateStore.for_update`), so one
claim wins however many replicas race, and claims of different keys never wait for each other. Approvals
need no lock of their own: the gate is only consulted under the payload's claimed key.

Connections are psycopg 3 connections in autocommit mode, pooled per store and process like the SQLite
ones (lent to one thread at a time, never used across a fork); a write is one explicit transaction. An
idle connection the server ended (a restart, ``pg_terminate_backend``) is dropped before it is lent
(:func:`_alive`), and a lent one found dead drops the idle ones with it; any driver error reaches the
caller as :class:`~osbp.protocol.store.StateStoreError`.
Operations run in a worker thread (:meth:`PostgresStateStore.run`): every statement is a network round
trip, so none blocks the event loop. psycopg is imported only when a PostgreSQL location is opened; it is
the ``postgres`` extra (in a checkout: ``.venv/bin/pip install -e '.[postgres]'``).
"""

from __future__ import annotations

import os
import select
import threading
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

import anyio.to_thread

from osbp.protocol.state import StateCursor, StateUnavailable, redacted
from osbp.protocol.store import SCHEMA, StateStoreError

try:
    import psycopg
    from psycopg.pq import TransactionStatus
except ImportError:  # pragma: no cover - exercised only where the extra is not installed
    psycopg = None  # type: ignore[assignment]

__all__ = ["POOL_SIZE", "PostgresStateStore"]

#: The SQLite file's tables, times as BIGINT (microseconds since the epoch outgrow a 32-bit INTEGER here).
_SCHEMA = SCHEMA.replace(" INTEGER", " BIGINT")

#: Any constant: the advisory lock that serialises schema creation among replicas starting together
#: (concurrent ``CREATE TABLE IF NOT EXISTS`` can collide in PostgreSQL's catalog).
_SCHEMA_LOCK = 0x05B9_57A7
#: Idle connections a store keeps for reuse.
POOL_SIZE = 4
#: Connections a forked child inherited: kept referenced, never used or closed there (closing one would
#: end the parent's session on the server).
_INHERITED: list[Any] = []

_T = TypeVar("_T")


def _one_line(error: BaseException) -> str:
    return " ".join(str(error).split()) or type(error).__name__


def _scope_idempotency(db: _Connection) -> None:
    """Give a database made before scopes the ``scope`` column and the ``(scope, key)`` primary key.

    Under the schema's advisory lock, in the opening transaction: of replicas starting together one
    upgrades it. Every record keeps the legacy scope ``''`` (as the SQLite file's upgrade does). Replicas
    of an older version cannot claim keys once the primary key changed (their ``ON CONFLICT (key)`` names
    no constraint): upgrade every replica together.
    """
    scoped = db.execute(
        "SELECT 1 FROM information_schema.columns WHERE table_schema = current_schema()"
        " AND table_name = 'idempotency' AND column_name = 'scope'"
    ).fetchone()
    if scoped is not None:
        return
    db.execute("ALTER TABLE idempotency ADD COLUMN scope TEXT NOT NULL DEFAULT ''")
    (primary,) = db.execute(
        "SELECT conname FROM pg_constraint WHERE conrelid = 'idempotency'::regclass AND contype = 'p'"
    ).fetchone()
    db.execute(f'ALTER TABLE idempotency DROP CONSTRAINT "{primary}"')
    db.execute("ALTER TABLE idempotency ADD PRIMARY KEY (scope, key)")


class _Connection:
    """A psycopg connection speaking the store's dialect: ``?`` placeholders become ``%s``."""

    __slots__ = ("_raw",)

    def __init__(self, raw: Any) -> None:
        self._raw = raw

    def execute(self, sql: str, parameters: Any = (), /) -> StateCursor:
        """Run one statement (the store's SQL holds no ``%`` and no literal ``?``)."""
        cursor: StateCursor = self._raw.execute(sql.replace("?", "%s"), parameters)
        return cursor


class PostgresStateStore:
    """A handle on a PostgreSQL state database with its connection pool; shared by replicas."""

    #: A claim re-reads a present key with its row locked until the claim's transaction ends.
    for_update = " FOR UPDATE"

    def __init__(self, url: str, *, connect_timeout_s: float = 10.0, lock_timeout_s: float = 10.0) -> None:
        if psycopg is None:
            raise StateUnavailable(
                "a postgresql:// state location needs psycopg: install the postgres extra "
                "(in a checkout: .venv/bin/pip install -e '.[postgres]')"
            )
        self.url = url
        self.location = redacted(url)
        self._connect_timeout_s = connect_timeout_s
        self._lock_timeout_ms = int(lock_timeout_s * 1000)
        self._idle = _Idle()
        # A store dropped without close() does not leave its idle sessions open on the server.
        weakref.finalize(self, self._idle.close)
        try:
            with self.write() as db:
                db.execute(f"SELECT pg_advisory_xact_lock({_SCHEMA_LOCK})")
                for statement in filter(str.strip, _SCHEMA.split(";")):
                    db.execute(statement)
                _scope_idempotency(db)
        except StateStoreError as error:
            raise StateUnavailable(str(error)) from error.__cause__

    def _open(self) -> Any:
        # autocommit: a read is one statement; a write opens its transaction explicitly (``write``).
        # lock_timeout: a row lock is held only for a short transaction, so a long wait means a stuck
        # holder; fail like SQLite's busy timeout instead of hanging.
        return psycopg.connect(
            self.url,
            autocommit=True,
            connect_timeout=max(1, round(self._connect_timeout_s)),
            options=f"-c lock_timeout={self._lock_timeout_ms}",
        )

    def _acquire(self) -> Any:
        return self._idle.take() or self._open()

    def _release(self, raw: Any) -> None:
        # A broken connection (the server restarted, the network dropped) is closed, not lent again.
        reusable = not raw.closed and raw.info.transaction_status == TransactionStatus.IDLE
        self._idle.give_back(raw, reusable=reusable)

    @contextmanager
    def _lent(self) -> Iterator[Any]:
        try:
            raw = self._acquire()
        except psycopg.Error as error:  # the server is down, refuses connections, or cannot be reached
            raise StateStoreError(f"PostgreSQL says {_one_line(error)}") from error
        try:
            yield raw
        except psycopg.Error as error:
            if raw.closed or raw.broken:
                # The session itself was lost (a restart, an operator's pg_terminate_backend, a network
                # cut): the idle ones most likely went with it, so none of them is lent again either.
                self._idle.close()
            raise StateStoreError(f"PostgreSQL says {_one_line(error)}") from error
        finally:
            self._release(raw)

    @contextmanager
    def write(self) -> Iterator[_Connection]:
        """One transaction: committed on success, rolled back on any exception."""
        with self._lent() as raw, raw.transaction():
            yield _Connection(raw)

    @contextmanager
    def read(self) -> Iterator[_Connection]:
        """A pooled connection for a single consistent read (each statement its own snapshot)."""
        with self._lent() as raw:
            yield _Connection(raw)

    async def run(self, operation: Callable[[], _T]) -> _T:
        """Run one single-transaction ``operation`` in a worker thread (it talks to the network)."""
        return await anyio.to_thread.run_sync(operation)

    def close(self) -> None:
        """Close the idle pooled connections (the store reopens on its next use)."""
        self._idle.close()


def _alive(raw: Any) -> bool:
    """Whether an idle connection may be lent: open, and nothing arrived on its socket while it was idle.

    An idle session in autocommit mode is sent nothing by a live server; a server that ended it (a
    restart, ``pg_terminate_backend``, ``idle_session_timeout``) sent its FATAL error and closed the socket,
    which leaves it readable. The check is one ``poll`` with no wait and no round trip; the rare idle
    message of a live server (a notice, a parameter change after a reload) only costs a reconnect.
    """
    if raw.closed or raw.broken:
        return False
    poller = select.poll()
    poller.register(raw.fileno(), select.POLLIN | select.POLLPRI)
    return not poller.poll(0)


class _Idle:
    """The idle connections of one store in one process; closed when the store is collected."""

    def __init__(self) -> None:
        self.connections: list[Any] = []
        self.lock = threading.Lock()
        self.pid = os.getpid()

    def _forked(self) -> bool:
        """Whether this is a forked child: then the connections are the parent's; set them aside."""
        if self.pid == os.getpid():
            return False
        _INHERITED.extend(self.connections)
        self.connections, self.pid = [], os.getpid()
        return True

    def take(self) -> Any:
        """An idle connection that is still alive, or ``None`` (the dead ones are closed on the way)."""
        while True:
            with self.lock:
                self._forked()
                if not self.connections:
                    return None
                raw = self.connections.pop()
            if _alive(raw):
                return raw
            raw.close()

    def give_back(self, raw: Any, *, reusable: bool) -> None:
        with self.lock:
            if self._forked():
                _INHERITED.append(raw)  # lent out before a fork: the parent's, never closed here
                return
            if reusable and len(self.connections) < POOL_SIZE:
                self.connections.append(raw)
                return
        raw.close()

    def close(self) -> None:
        with self.lock:
            idle = [] if self._forked() else self.connections
            self.connections = []
        for raw in idle:
            raw.close()
