"""The local OSBP state file: one SQLite database for idempotency records, pending approvals, the
booking snapshots taken when a create settled (booking.status's documented not-fresh fallback), the
URL-mode confirmation pages (:mod:`osbp.protocol.confirmation_pages`, secrets kept as hashes only) and
the answered confirmation rounds (:mod:`osbp.protocol.confirmation_rounds`).

The file (default ``.osbp/state/osbp.sqlite3``, any path when configured) is
shared safely by threads and processes: WAL journaling, a busy timeout, and every read-then-write
transaction opened with ``BEGIN IMMEDIATE`` so two writers never interleave a check and its update. Times
are stored as integer microseconds since the Unix epoch, taken from the injected clock by the callers.

Connections are long-lived: a small pool of them per store and process, each configured once (busy
timeout, ``synchronous=NORMAL``) and lent to one thread at a time, so an operation pays neither a connect
nor the WAL checkpoint SQLite runs when a file's last connection closes (SQLite checkpoints on its own as
the WAL grows). A connection never crosses a fork: a child process that inherited a store opens its own,
and leaves the inherited ones untouched (closing them in the child could disturb the parent's locks).
:meth:`StateStore.close` closes the idle connections; a store stays usable after it, opening anew.

:meth:`StateStore.run` is how async callers use the file: an operation is tried on the event loop with
a zero busy timeout (an uncontended single-row transaction costs tens of microseconds and, in WAL mode
with ``synchronous=NORMAL``, no ``fsync``), and only when it meets another connection's lock is it run
again in a worker thread, where waiting is harmless. Operations passed to it are single transactions, so
the one that met the lock changed nothing before it is run again.

The file holds capabilities, so it is private: created ``0600`` (SQLite gives its ``-wal`` and ``-shm``
files the same mode) in a directory created ``0700``, and it never holds an approval token in clear, only
its :func:`secret_hash`. A file written before that rule is upgraded when opened.

Where several MCP server replicas share the state, it lives on PostgreSQL instead
(:mod:`osbp.protocol.store_postgres`); :func:`osbp.protocol.state.open_state_store` opens either from the
one location setting. Both stores lend connections speaking one SQL dialect (``?`` placeholders, ``ON
CONFLICT``); :attr:`StateStore.for_update` is the one fragment that differs.
"""

from __future__ import annotations

import errno
import hashlib
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TypeVar

import anyio.to_thread

__all__ = [
    "DEFAULT_STATE_PATH",
    "SCHEMA",
    "StateStore",
    "StateStoreError",
    "duration_micros",
    "secret_hash",
    "to_micros",
]

#: Where the state file lives unless configured otherwise (relative to the working directory).
DEFAULT_STATE_PATH = Path(".osbp/state/osbp.sqlite3")

#: The idempotency table: one record per key *within a scope* (:func:`osbp.protocol.principal.scope_of`,
#: the organization and the caller), so another organization or subject never meets a key it did not use.
#: ``scope`` '' holds the records of a file made before scopes existed (see :func:`_scope_idempotency`).
_IDEMPOTENCY = """CREATE TABLE {table} (
    scope          TEXT NOT NULL DEFAULT '',
    key            TEXT NOT NULL,
    payload_hash   TEXT NOT NULL,
    state          TEXT NOT NULL CHECK (state IN ('pending', 'settled')),
    receipt_json   TEXT,
    lease_id       TEXT,
    lease_expires  INTEGER,
    created_at     INTEGER NOT NULL,
    updated_at     INTEGER NOT NULL,
    lease_owner    TEXT,
    placing_json   TEXT,
    PRIMARY KEY (scope, key)
)"""

#: The tables (SQLite types; the PostgreSQL store makes the same ones with 64-bit integers).
SCHEMA = (
    _IDEMPOTENCY.format(table="IF NOT EXISTS idempotency")
    + """;
CREATE TABLE IF NOT EXISTS approvals (
    token_hash     TEXT PRIMARY KEY,
    payload_hash   TEXT NOT NULL,
    summary_hash   TEXT NOT NULL,
    issued_at      INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL,
    spent_at       INTEGER,
    offer_json     TEXT
);
CREATE INDEX IF NOT EXISTS approvals_by_payload ON approvals (payload_hash, summary_hash);
CREATE TABLE IF NOT EXISTS booking_snapshots (
    booking_id     TEXT PRIMARY KEY,
    idempotency_key TEXT NOT NULL,
    booking_json   TEXT NOT NULL,
    recorded_at    INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS confirmation_pages (
    page_hash      TEXT PRIMARY KEY,
    subject_hash   TEXT NOT NULL,
    payload_hash   TEXT NOT NULL,
    summary_hash   TEXT NOT NULL,
    summary        TEXT NOT NULL,
    state          TEXT NOT NULL CHECK (state IN ('pending', 'confirmed', 'declined', 'used')),
    issued_at      INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL,
    answered_at    INTEGER
);
CREATE INDEX IF NOT EXISTS confirmation_pages_by_expiry ON confirmation_pages (expires_at);
CREATE INDEX IF NOT EXISTS approvals_by_expiry ON approvals (expires_at);
CREATE TABLE IF NOT EXISTS confirmation_rounds (
    round_hash     TEXT PRIMARY KEY,
    payload_hash   TEXT NOT NULL,
    answer         TEXT NOT NULL CHECK (answer IN ('accepted', 'declined')),
    answered_at    INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS confirmation_rounds_by_expiry ON confirmation_rounds (expires_at);
"""
)


#: Columns added to a table after its first release: a file made by an older version gains them on open.
_ADDED_COLUMNS = {
    "idempotency": ("lease_owner TEXT", "placing_json TEXT"),
    "approvals": ("offer_json TEXT",),
}


def _missing_columns(connection: sqlite3.Connection) -> list[tuple[str, str]]:
    missing = []
    for table, columns in _ADDED_COLUMNS.items():
        present = {row[1] for row in connection.execute(f"PRAGMA table_info({table})")}
        missing += [(table, column) for column in columns if column.split()[0] not in present]
    return missing


def _add_columns(connection: sqlite3.Connection) -> None:
    """Give a file made by an older version the columns added since (checked again under the write lock)."""
    if not _missing_columns(connection):
        return  # the usual open: one cheap read, no write lock
    connection.execute("BEGIN IMMEDIATE")
    try:
        for table, column in _missing_columns(connection):
            connection.execute(f"ALTER TABLE {table} ADD COLUMN {column}")
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


#: The columns an idempotency record had before scopes, copied as they are into the scoped table.
_UNSCOPED_COLUMNS = (
    "key, payload_hash, state, receipt_json, lease_id, lease_expires, created_at, updated_at, lease_owner,"
    " placing_json"
)


def _unscoped(connection: sqlite3.Connection) -> bool:
    return not any(row[1] == "scope" for row in connection.execute("PRAGMA table_info(idempotency)"))


def _scope_idempotency(connection: sqlite3.Connection) -> None:
    """Give a file made before scopes its ``scope`` column and the ``(scope, key)`` primary key.

    SQLite cannot change a primary key in place, so the table is rebuilt under the write lock (checked
    again there: of several processes opening an old file, one upgrades it), every record kept with the
    legacy scope ``''``: a retry of an attempt recorded before the upgrade still replays or resumes it
    (:class:`~osbp.protocol.idempotency.IdempotencyStore` adopts such a record into the caller's scope).
    """
    if not _unscoped(connection):
        return  # every file this version wrote: one cheap read, no write lock
    connection.execute("BEGIN IMMEDIATE")
    try:
        if _unscoped(connection):
            connection.execute("ALTER TABLE idempotency RENAME TO idempotency_unscoped")
            connection.execute(_IDEMPOTENCY.format(table="idempotency"))
            connection.execute(
                f"INSERT INTO idempotency (scope, {_UNSCOPED_COLUMNS})"  # noqa: S608  # constant fragment
                f" SELECT '', {_UNSCOPED_COLUMNS} FROM idempotency_unscoped"
            )
            connection.execute("DROP TABLE idempotency_unscoped")
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")


#: Serialises opening (journal mode and schema) among this process's threads.
_OPEN_LOCK = threading.Lock()
#: Idle connections a store keeps for reuse, of each kind (waiting, and tried without waiting on the event
#: loop); more threads than this at once open and close extra ones.
POOL_SIZE = 4
#: Connections a forked child inherited: kept referenced, never used or closed there (see the module).
_INHERITED: list[sqlite3.Connection] = []

_T = TypeVar("_T")


class StateStoreError(Exception):
    """A state operation failed in the engine (a lost connection, ``database is locked``, a disk I/O error).

    Both stores raise it, from the driver's error, for any failure of an operation on a lent connection
    (:mod:`osbp.protocol.store_postgres` too): its transaction committed or not, the caller cannot tell.
    It is an infrastructure failure, never an adapter's bug: the booking pipeline answers it with one
    retryable Problem (:mod:`osbp.protocol.booking`). Re-exported by :mod:`osbp.protocol.state`.
    """


class _WouldWait(Exception):
    """An operation tried on the event loop met a lock another connection holds (SQLITE_BUSY)."""


def _is_busy(error: BaseException) -> bool:
    return isinstance(error, sqlite3.OperationalError) and error.sqlite_errorcode & 0xFF in (
        sqlite3.SQLITE_BUSY,
        sqlite3.SQLITE_LOCKED,
    )


def to_micros(moment: datetime) -> int:
    """An aware datetime as integer microseconds since the Unix epoch."""
    if moment.tzinfo is None or moment.utcoffset() is None:
        raise ValueError("state times must be aware datetimes")
    return duration_micros(moment.astimezone(UTC) - datetime(1970, 1, 1, tzinfo=UTC))


def duration_micros(delta: timedelta) -> int:
    """A timedelta as integer microseconds (exact, no float rounding)."""
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def secret_hash(secret: str) -> str:
    """What the state keeps of a secret (an approval token, a confirmation page's URL secret): the hex
    SHA-256 of its UTF-8 bytes.

    A plain hash is enough, no salt or slow KDF: the secrets are 256 random bits, so there is no dictionary
    to precompute and no search to slow down; the hash only has to be one-way, so a copy of the state (a
    backup, another local user) cannot be replayed as approvals or answers.
    """
    return hashlib.sha256(secret.encode()).hexdigest()


def _create_private(path: Path) -> None:
    """Create the state file ``0600``, its directory ``0700`` when it makes it; tighten an existing file.

    The open error (a directory in the way, no permission) propagates with the operating system's reason,
    which SQLite alone would reduce to "unable to open database file".
    """
    directory = path.parent
    if not directory.exists():
        # exist_ok: another process may create it between the check and here.
        directory.mkdir(parents=True, mode=0o700, exist_ok=True)
        # mkdir's mode is filtered by the umask; the state directory is private regardless.
        directory.chmod(0o700)
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        # An existing file is checked by its path, never opened: this process may already hold SQLite
        # connections to it, and closing any descriptor of a file drops every POSIX lock the process holds
        # on it (fcntl locks belong to the process and the inode), so a replica could write under a
        # transaction of ours. A mode made 0644 before this rule is tightened, as the audit log's is.
        if path.is_dir():
            raise IsADirectoryError(errno.EISDIR, os.strerror(errno.EISDIR), str(path)) from None
        if not os.access(path, os.R_OK | os.W_OK):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), str(path)) from None
        if path.stat().st_mode & 0o077:
            path.chmod(0o600)
        return
    try:
        # The open mode is filtered by the umask: enforce it.
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
    finally:
        os.close(fd)


class StateStore:
    """A handle on the state file with its connection pool; safe to share across threads and processes."""

    #: SQLite locks the whole file for a write transaction (``BEGIN IMMEDIATE``): no row lock to ask for.
    for_update = ""

    def __init__(self, path: str | Path = DEFAULT_STATE_PATH, *, busy_timeout_s: float = 10.0) -> None:
        self.path = Path(path)
        self.location = str(self.path)
        self.busy_timeout_s = busy_timeout_s
        #: Idle connections by whether they wait for locks: the busy timeout is set once per connection,
        #: not switched off and on again around every operation tried on the event loop.
        self._pools: dict[bool, list[sqlite3.Connection]] = {True: [], False: []}
        self._pool_lock = threading.Lock()
        self._pid = os.getpid()
        #: Per thread: whether an operation is being tried without waiting for locks (``run``).
        self._trying = threading.local()
        _create_private(self.path)
        # Opening is serialised among this process's threads; other processes are waited out (below).
        with _OPEN_LOCK, closing(self._open(waits=True)) as connection:
            self._use_wal(connection)
            # IMMEDIATE: the schema check and its creation are one write transaction, never a deferred
            # read that fails to upgrade when another opener got there first.
            connection.executescript(f"BEGIN IMMEDIATE;{SCHEMA}COMMIT;")
            _add_columns(connection)
            _scope_idempotency(connection)
            _hash_clear_tokens(connection)

    def _use_wal(self, connection: sqlite3.Connection) -> None:
        """Switch the file to WAL (persistent in the file), waiting out other openers.

        Changing the journal mode needs an exclusive lock, and SQLite reports a conflict at once instead
        of calling the busy handler; so a fresh file opened by several processes together is retried here
        until the busy timeout. A file already in WAL needs no lock at all.
        """
        deadline = time.monotonic() + self.busy_timeout_s
        while True:
            try:
                connection.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as error:
                if error.sqlite_errorcode & 0xFF != sqlite3.SQLITE_BUSY or time.monotonic() >= deadline:
                    raise
                time.sleep(0.005)

    def _open(self, *, waits: bool) -> sqlite3.Connection:
        # isolation_level=None: we issue BEGIN ourselves, so every transaction boundary is explicit.
        # check_same_thread=False: a pooled connection serves one thread at a time, but not always the
        # same one (the pool hands it over under its lock, and SQLite is built thread-safe).
        timeout = self.busy_timeout_s if waits else 0.0
        connection = sqlite3.connect(
            self.path, timeout=timeout, isolation_level=None, check_same_thread=False
        )
        connection.execute(f"PRAGMA busy_timeout={int(timeout * 1000)}")
        connection.execute("PRAGMA synchronous=NORMAL")
        # Freed bytes are zeroed: a summary cleared from an answered page, or a row the purge deleted
        # (osbp.protocol.retention), does not linger in the file's free space.
        connection.execute("PRAGMA secure_delete=ON")
        return connection

    def _forget_inherited(self) -> None:
        """In a forked child: the pools' connections are the parent's; keep them alive, unused, start over."""
        for pool in self._pools.values():
            _INHERITED.extend(pool)
            pool.clear()
        self._pid = os.getpid()

    def _acquire(self, *, waits: bool) -> sqlite3.Connection:
        with self._pool_lock:
            if self._pid != os.getpid():
                self._forget_inherited()
            pool = self._pools[waits]
            if pool:
                return pool.pop()
        return self._open(waits=waits)

    def _release(self, connection: sqlite3.Connection, *, waits: bool) -> None:
        with self._pool_lock:
            pool = self._pools[waits]
            if self._pid == os.getpid() and not connection.in_transaction and len(pool) < POOL_SIZE:
                pool.append(connection)
                return
            if self._pid != os.getpid():
                _INHERITED.append(connection)  # lent out before a fork: the parent's, never closed here
                return
        connection.close()

    @contextmanager
    def _lent(self) -> Iterator[sqlite3.Connection]:
        # Tried on the event loop (``run``): a connection with no busy timeout, which fails at once on a lock.
        waits = not getattr(self._trying, "on", False)
        try:
            connection = self._acquire(waits=waits)
        except sqlite3.Error as error:
            # A new connection's first statements read the file, so they can meet a lock too; else the
            # file cannot be opened (a removed directory, no permission).
            if not waits and _is_busy(error):
                raise _WouldWait from error
            raise StateStoreError(f"SQLite says {error}") from error
        try:
            yield connection
        except BaseException as error:
            # A connection whose state is unknown (a failed rollback, a broken file) is not lent again;
            # closing it rolls its transaction back, so an operation that met a lock changed nothing.
            if connection.in_transaction:
                connection.close()
            else:
                self._release(connection, waits=waits)
            if not waits and _is_busy(error):
                raise _WouldWait from error
            if isinstance(error, sqlite3.Error):
                # "database is locked" after the busy timeout, a disk I/O error, a full disk.
                raise StateStoreError(f"SQLite says {error}") from error
            raise
        self._release(connection, waits=waits)

    async def run(self, operation: Callable[[], _T]) -> _T:
        """Run one single-transaction ``operation``: on the event loop if it need not wait, else in a thread.

        ``operation`` must not sleep or poll (a bounded wait belongs in a worker thread from the start).
        """
        self._trying.on = True
        try:
            return operation()
        except _WouldWait:
            pass  # another connection holds the lock: wait for it where waiting blocks nothing
        finally:
            self._trying.on = False
        return await anyio.to_thread.run_sync(operation)

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A ``BEGIN IMMEDIATE`` transaction: committed on success, rolled back on any exception."""
        with self._lent() as connection:
            connection.execute("BEGIN IMMEDIATE")
            try:
                yield connection
            except BaseException:
                connection.execute("ROLLBACK")
                raise
            connection.execute("COMMIT")

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A pooled connection for a single consistent read (outside any transaction)."""
        with self._lent() as connection:
            yield connection

    def checkpoint(self) -> bool:
        """Copy the WAL into the file and truncate it (the purge's last step: deleted rows' old versions
        leave the WAL too); ``False`` when a reader's snapshot kept it from completing (the next one will)."""
        with self._lent() as connection:
            busy: int = connection.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
        return busy == 0

    def close(self) -> None:
        """Close the idle pooled connections (the store reopens on its next use)."""
        with self._pool_lock:
            if self._pid != os.getpid():
                self._forget_inherited()
            idle = [connection for pool in self._pools.values() for connection in pool]
            for pool in self._pools.values():
                pool.clear()
        for connection in idle:
            connection.close()


def _hash_clear_tokens(connection: sqlite3.Connection) -> None:
    """Upgrade an approvals table that kept tokens in clear (a ``token`` column) to token hashes.

    Pending approvals keep working across the upgrade (an agent holding a token is not re-challenged).
    The check runs under the write lock, so of several processes opening an old file one upgrades it.
    ``secure_delete`` zeroes the freed pages and the checkpoint empties the WAL, so the clear tokens do
    not linger in the file's free space (best effort for the WAL: a reader still holding an old snapshot
    keeps the checkpoint from truncating it; the next checkpoint overwrites those frames).
    """
    if not _keeps_clear_tokens(connection):
        return  # every file this version wrote: one cheap read, no write lock
    connection.execute("PRAGMA secure_delete=ON")
    connection.execute("BEGIN IMMEDIATE")
    try:
        # Checked again under the write lock: another process may have upgraded the file meanwhile.
        if _keeps_clear_tokens(connection):
            connection.execute("ALTER TABLE approvals RENAME COLUMN token TO token_hash")
            connection.create_function("osbp_token_hash", 1, secret_hash, deterministic=True)
            connection.execute("UPDATE approvals SET token_hash = osbp_token_hash(token_hash)")
    except BaseException:
        connection.execute("ROLLBACK")
        raise
    connection.execute("COMMIT")
    connection.execute("PRAGMA wal_checkpoint(TRUNCATE)")


def _keeps_clear_tokens(connection: sqlite3.Connection) -> bool:
    return any(row[1] == "token" for row in connection.execute("PRAGMA table_info(approvals)"))
