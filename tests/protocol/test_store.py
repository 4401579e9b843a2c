"""The state file's opening: WAL and schema set up safely while other threads and processes open it too;
private modes, and no approval token in clear, on a fresh file and on one written before that rule."""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
import threading
from collections import Counter
from contextlib import closing
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from osbp.protocol.approval import APPROVAL_TOKEN_PATTERN, ApprovalGate, Approved
from osbp.protocol.canonical import sha256_hex
from osbp.protocol.clock import FixedClock
from osbp.protocol.idempotency import booking_payload_hash
from osbp.protocol.models import BookingCreateInput, Problem
from osbp.protocol.state import open_state_store
from osbp.protocol.store import StateStore, duration_micros, secret_hash, to_micros
from tests.support.processes import spawn_together
from tests.support.state import stored_text

TABLES = {"approvals", "booking_snapshots", "confirmation_pages", "confirmation_rounds", "idempotency"}


def held_writer(path: Path) -> sqlite3.Connection:
    """A connection holding the write lock on a fresh rollback-journal file, as another opener would."""
    connection = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    connection.execute("CREATE TABLE other (x INTEGER)")
    connection.execute("BEGIN IMMEDIATE")
    return connection


def tables_and_mode(path: Path) -> tuple[set[str], str]:
    with closing(sqlite3.connect(path)) as connection:
        names = {row[0] for row in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")}
        mode = connection.execute("PRAGMA journal_mode").fetchone()[0]
    return names, mode


def test_opening_waits_for_another_connection_instead_of_failing(tmp_path: Path) -> None:
    """Switching to WAL while another connection writes fails at once in SQLite (no busy handler for
    that conflict); the store waits it out instead of failing with 'database is locked'."""
    path = tmp_path / "s.sqlite3"
    holder = held_writer(path)
    release = threading.Timer(0.2, holder.execute, args=("COMMIT",))
    release.start()
    try:
        StateStore(path, busy_timeout_s=10)
    finally:
        release.join()
        holder.close()
    names, mode = tables_and_mode(path)
    assert names >= TABLES
    assert mode == "wal"


def test_opening_gives_up_with_a_clear_error_after_the_busy_timeout(tmp_path: Path) -> None:
    path = tmp_path / "s.sqlite3"
    with closing(held_writer(path)), pytest.raises(sqlite3.OperationalError, match="locked"):
        StateStore(path, busy_timeout_s=0.1)


def open_together(path: Path, count: int) -> Counter[str]:
    """``count`` threads open one state file at the same moment; what each one got."""
    barrier = threading.Barrier(count)
    outcomes: list[str] = []
    lock = threading.Lock()

    def open_store() -> None:
        barrier.wait(10)
        try:
            StateStore(path)
            outcome = "ok"
        except sqlite3.Error as error:
            outcome = repr(error)
        with lock:
            outcomes.append(outcome)

    threads = [threading.Thread(target=open_store) for _ in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return Counter(outcomes)


def test_threads_opening_a_fresh_file_together_all_succeed(tmp_path: Path) -> None:
    for round_number in range(20):
        path = tmp_path / f"s{round_number}.sqlite3"
        assert open_together(path, 8) == {"ok": 8}
        assert tables_and_mode(path) == (TABLES, "wal")


def _open_in_process(path: str, start: Any, results: Any) -> None:
    start.wait(30)
    try:
        StateStore(path)
        results.put("ok")
    except sqlite3.Error as error:
        results.put(repr(error))


@pytest.mark.integration
def test_processes_opening_a_fresh_file_together_all_succeed(tmp_path: Path) -> None:
    """Two servers started at once on a new state file: neither fails with 'database is locked'."""
    path = tmp_path / "fresh.sqlite3"
    assert spawn_together(_open_in_process, str(path), 6) == {"ok": 6}
    assert tables_and_mode(path) == (TABLES, "wal")


# --- Secrets at rest --------------------------------------------------------------------------------

NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)
CREATE = BookingCreateInput.model_validate(
    {
        "mandate": {
            "id": "mnd_1",
            "expires_at": "2026-07-31T23:59:59Z",
            "allowed_actions": ["booking.create"],
            "organization_id": "org_1",
        },
        "idempotency_key": "idem_1",
        "service_id": "svc_1",
        "schedule_id": "sch_1",
        "provider_id": "prov_1",
        "date": "2026-07-07",
        "time": "09:00",
        "customer": {"display_name": "Jane Customer"},
    }
)


def approved(token: str) -> BookingCreateInput:
    return BookingCreateInput.model_validate(
        {**CREATE.to_wire(), "approval": {"confirmed": True, "token": token}}
    )


def challenged_token(result: Approved | Problem) -> str:
    assert isinstance(result, Problem)
    found = APPROVAL_TOKEN_PATTERN.search(result.message)
    assert found is not None
    return found.group(1)


def on_disk(path: Path) -> bytes:
    """Every byte SQLite keeps for the state file: the database, its WAL, shared memory and journal."""
    siblings = [path, *(path.with_name(path.name + suffix) for suffix in ("-wal", "-shm", "-journal"))]
    return b"".join(sibling.read_bytes() for sibling in siblings if sibling.exists())


def another_reader(path: Path) -> sqlite3.Connection:
    """A connection kept open, as another server's would be: SQLite then leaves the WAL in place."""
    connection = sqlite3.connect(path, isolation_level=None)
    connection.execute("SELECT count(*) FROM approvals").fetchone()
    return connection


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_the_state_file_never_holds_an_issued_token_only_its_hash(tmp_path: Path) -> None:
    """OSBP spec, Security and Privacy: durable secrets are never stored in clear (a copy of the file
    cannot be replayed as approvals); issued, approved and spent, the token is not in any of its files."""
    path = tmp_path / "state.sqlite3"
    gate = ApprovalGate(StateStore(path), clock=FixedClock(NOW))
    with closing(another_reader(path)):
        token = challenged_token(gate.evaluate(CREATE, "Book it."))
        assert gate.evaluate(approved(token), "Book it.") == Approved(token)
        gate.mark_spent(token)
        assert path.with_name(path.name + "-wal").stat().st_size > 0
        stored = on_disk(path)
    assert secret_hash(token).encode() in stored  # the bytes checked are the live ones
    assert token.encode() not in stored


def test_the_state_database_never_holds_an_issued_token_only_its_hash(postgres_url: str) -> None:
    """OSBP spec, Security and Privacy: durable secrets are never stored in clear, in a database either."""
    gate = ApprovalGate(open_state_store(postgres_url), clock=FixedClock(NOW))
    token = challenged_token(gate.evaluate(CREATE, "Book it."))
    assert gate.evaluate(approved(token), "Book it.") == Approved(token)
    gate.mark_spent(token)
    stored = stored_text(postgres_url)
    assert secret_hash(token) in stored
    assert token not in stored


def test_a_fresh_state_file_is_private_in_a_private_directory(tmp_path: Path) -> None:
    """OSBP spec, Security and Privacy: the file holds capabilities; 0600 in a 0700 directory, its WAL
    and shared-memory files too, whatever the umask lets through (platform choice, as the audit log)."""
    path = tmp_path / "new" / "state" / "osbp.sqlite3"
    previous = os.umask(0o022)
    try:
        gate = ApprovalGate(StateStore(path), clock=FixedClock(NOW))
        with closing(another_reader(path)):
            gate.evaluate(CREATE, "Book it.")
            modes = {name: mode(path.with_name(name)) for name in os.listdir(path.parent)}
    finally:
        os.umask(previous)
    assert mode(path.parent) == 0o700
    assert modes == {"osbp.sqlite3": 0o600, "osbp.sqlite3-wal": 0o600, "osbp.sqlite3-shm": 0o600}


def test_an_existing_state_file_readable_by_others_is_made_private(tmp_path: Path) -> None:
    """A file created 0644 before this rule is tightened on opening; an existing directory, which the
    operator chose (it may be shared), is left alone (OSBP spec, Security and Privacy)."""
    path = tmp_path / "state.sqlite3"
    path.touch(mode=0o644)
    path.chmod(0o644)
    tmp_path.chmod(0o755)
    StateStore(path)
    assert mode(path) == 0o600
    assert mode(tmp_path) == 0o755


OLD_APPROVALS = (
    "CREATE TABLE approvals (token TEXT PRIMARY KEY, payload_hash TEXT NOT NULL, summary_hash TEXT NOT NULL,"
    " issued_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, spent_at INTEGER)"
)


def old_state_file(path: Path, *tokens: str) -> None:
    """A state file as the previous version wrote it: WAL, pending tokens in clear in ``approvals.token``."""
    issued = to_micros(NOW)
    expires = issued + duration_micros(timedelta(minutes=10))
    payload, summary = booking_payload_hash(CREATE), sha256_hex("Book it.")
    with closing(sqlite3.connect(path, isolation_level=None)) as db:
        db.execute("PRAGMA journal_mode=WAL")
        db.execute(OLD_APPROVALS)
        db.execute("CREATE INDEX approvals_by_payload ON approvals (payload_hash, summary_hash)")
        db.executemany(
            "INSERT INTO approvals VALUES (?, ?, ?, ?, ?, NULL)",
            [(token, payload, summary, issued, expires) for token in tokens],
        )


def test_an_old_state_file_is_upgraded_and_its_pending_tokens_still_approve(tmp_path: Path) -> None:
    """Upgrading keeps an unspent approval working (the agent holding it is not re-challenged), but
    only its hash stays: not in the table, the free pages or the WAL (OSBP spec, Security and Privacy)."""
    path = tmp_path / "state.sqlite3"
    pending, spent = "apv_" + "p" * 43, "apv_" + "s" * 43
    old_state_file(path, pending, spent)
    assert pending.encode() in on_disk(path)
    gate = ApprovalGate(StateStore(path), clock=FixedClock(NOW))
    gate.mark_spent(spent)  # spends both: the same payload
    with closing(sqlite3.connect(path)) as db:
        columns = [row[1] for row in db.execute("PRAGMA table_info(approvals)")]
        hashes = {row[0] for row in db.execute("SELECT token_hash FROM approvals")}
    assert "token" not in columns
    assert hashes == {secret_hash(pending), secret_hash(spent)}
    stored = on_disk(path)
    assert pending.encode() not in stored
    assert spent.encode() not in stored
    result = gate.evaluate(approved(pending), "Book it.")
    assert isinstance(result, Problem)
    assert "already used" in result.message


def test_a_pending_token_of_an_old_state_file_approves_after_the_upgrade(tmp_path: Path) -> None:
    """The upgrade hashes the clear tokens rather than dropping them (platform choice)."""
    path = tmp_path / "state.sqlite3"
    token = "apv_" + "t" * 43
    old_state_file(path, token)
    gate = ApprovalGate(StateStore(path), clock=FixedClock(NOW))
    assert gate.evaluate(approved(token), "Book it.") == Approved(token)


def test_an_upgraded_state_file_opens_again_unchanged(tmp_path: Path) -> None:
    """Opening an upgraded file is a no-op: the upgrade never hashes a hash (platform choice)."""
    path = tmp_path / "state.sqlite3"
    token = "apv_" + "t" * 43
    old_state_file(path, token)
    StateStore(path)
    StateStore(path)
    gate = ApprovalGate(StateStore(path), clock=FixedClock(NOW))
    assert gate.evaluate(approved(token), "Book it.") == Approved(token)


# --- Long-lived connections ---------------------------------------------------------------------------


def test_operations_reuse_one_pooled_connection(tmp_path: Path) -> None:
    """Platform choice: one operation after another on a thread reuses the same configured connection
    instead of connecting, setting pragmas and closing each time."""
    store = StateStore(tmp_path / "s.sqlite3")
    with store.read() as first:
        pass
    with store.write() as second:
        second.execute("DELETE FROM approvals")
    with store.read() as third:
        pass
    assert first is second is third


def test_an_operation_leaves_the_wal_in_place_instead_of_checkpointing_it(tmp_path: Path) -> None:
    """Platform choice: SQLite checkpoints and deletes the WAL when a file's last connection closes; a
    pooled connection stays open, so a write is not followed by a checkpoint (SQLite's own automatic
    checkpoint still runs as the WAL grows)."""
    path = tmp_path / "s.sqlite3"
    gate = ApprovalGate(StateStore(path), clock=FixedClock(NOW))
    gate.evaluate(CREATE, "Book it.")
    assert path.with_name(path.name + "-wal").stat().st_size > 0


def test_threads_using_the_store_at_once_each_get_their_own_connection(tmp_path: Path) -> None:
    """Platform choice: a pooled connection is lent to one thread at a time; a second thread inside an
    operation meanwhile gets another one, and both go back to the pool."""
    store = StateStore(tmp_path / "s.sqlite3")
    inside, release = threading.Event(), threading.Event()
    seen: list[sqlite3.Connection] = []

    def hold() -> None:
        with store.read() as connection:
            seen.append(connection)
            inside.set()
            release.wait(10)

    holder = threading.Thread(target=hold)
    holder.start()
    assert inside.wait(10)
    with store.write() as connection:
        seen.append(connection)
    release.set()
    holder.join(10)
    assert seen[0] is not seen[1]
    with store.read() as first, store.read() as second:
        assert {id(first), id(second)} == {id(seen[0]), id(seen[1])}


def test_a_failed_transaction_rolls_back_and_its_connection_stays_usable(tmp_path: Path) -> None:
    """A write that raises is rolled back before its connection goes back to the pool, so the next
    operation does not inherit a half-done transaction."""
    store = StateStore(tmp_path / "s.sqlite3")
    lent: list[sqlite3.Connection] = []

    def failing_write() -> None:
        with store.write() as connection:
            lent.append(connection)
            connection.execute("INSERT INTO booking_snapshots VALUES ('bk_1', 'k', '{}', 0)")
            raise RuntimeError("boom")

    with pytest.raises(RuntimeError):
        failing_write()
    connection = lent[0]
    assert not connection.in_transaction
    with store.write() as again:
        assert again is connection
        assert not again.execute("SELECT 1 FROM booking_snapshots").fetchall()


def test_closing_the_store_closes_its_idle_connections_and_it_reopens_on_use(tmp_path: Path) -> None:
    """Closing the core closes the state file's connections; a later operation simply opens a new one."""
    store = StateStore(tmp_path / "s.sqlite3")
    with store.read() as connection:
        pass
    store.close()
    with pytest.raises(sqlite3.ProgrammingError):
        connection.execute("SELECT 1")
    with store.read() as reopened:
        assert reopened is not connection
        assert reopened.execute("SELECT count(*) FROM idempotency").fetchone() == (0,)


def _forked_child_write(store: StateStore, parent_connection_id: int, results: Any) -> None:
    with store.write() as connection:
        connection.execute(
            "INSERT INTO booking_snapshots VALUES ('bk_child', 'k', '{}', 0)",
        )
        results.put(id(connection) != parent_connection_id)


def test_a_forked_child_never_uses_the_parents_connection(tmp_path: Path) -> None:
    """SQLite: an open connection must not be carried across fork(); a child that inherited the store
    opens its own connection, and the parent's keeps working after the child wrote and exited."""
    import multiprocessing

    store = StateStore(tmp_path / "s.sqlite3")
    with store.read() as parent_connection:
        pass
    context = multiprocessing.get_context("fork")
    results = context.Queue()
    child = context.Process(target=_forked_child_write, args=(store, id(parent_connection), results))
    child.start()
    assert results.get(timeout=30) is True
    child.join(30)
    assert child.exitcode == 0
    with store.read() as connection:
        assert connection is parent_connection
        assert connection.execute("SELECT booking_id FROM booking_snapshots").fetchall() == [("bk_child",)]


# --- Async use: on the event loop unless a lock must be waited for ---------------------------------------


@pytest.mark.anyio
async def test_an_uncontended_operation_runs_on_the_calling_thread_without_a_hand_off(tmp_path: Path) -> None:
    """Platform choice: a state operation that finds the file's lock free runs on the event loop (tens
    of microseconds, no fsync in WAL mode) instead of paying a worker-thread hand-off."""
    store = StateStore(tmp_path / "s.sqlite3")
    ran_on: list[threading.Thread] = []

    def write() -> int:
        ran_on.append(threading.current_thread())
        with store.write() as connection:
            return connection.execute("DELETE FROM approvals").rowcount

    assert await store.run(write) == 0
    assert ran_on == [threading.current_thread()]


@pytest.mark.anyio
async def test_an_operation_tried_on_the_event_loop_runs_only_its_own_statements(tmp_path: Path) -> None:
    """Platform choice: the no-wait busy timeout is set once per connection, never switched off and on
    around each operation (two statements more per operation)."""
    store = StateStore(tmp_path / "s.sqlite3")
    traced: list[str] = []

    def write() -> None:
        with store.write() as connection:
            connection.set_trace_callback(traced.append)
            connection.execute("DELETE FROM approvals")

    await store.run(write)
    await store.run(write)  # the traced connection again, from the pool
    assert traced == ["DELETE FROM approvals", "COMMIT", "BEGIN IMMEDIATE", "DELETE FROM approvals", "COMMIT"]
    with store.read() as connection:  # outside run: a connection that waits for locks
        assert connection.execute("PRAGMA busy_timeout").fetchone() == (10_000,)


@pytest.mark.anyio
async def test_an_operation_meeting_another_connections_lock_waits_for_it_in_a_worker_thread(
    tmp_path: Path,
) -> None:
    """Platform choice: the event loop never waits for another process's write lock; the operation
    that met it changed nothing and runs again in a worker thread, which waits (busy timeout)."""
    path = tmp_path / "s.sqlite3"
    store = StateStore(path)
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    ran_on: list[threading.Thread] = []

    def write() -> None:
        ran_on.append(threading.current_thread())
        if len(ran_on) == 2:
            threading.Timer(0.05, holder.execute, args=("COMMIT",)).start()  # the other writer finishes
        with store.write() as connection:
            connection.execute("INSERT INTO booking_snapshots VALUES ('bk_1', 'k', '{}', 0)")

    try:
        await store.run(write)
    finally:
        holder.close()
    assert ran_on[0] is threading.current_thread()
    assert ran_on[1] is not threading.current_thread()
    with store.read() as connection:
        assert connection.execute("SELECT booking_id FROM booking_snapshots").fetchall() == [("bk_1",)]
        assert connection.execute("PRAGMA busy_timeout").fetchone() == (10_000,)


@pytest.mark.anyio
async def test_an_operation_whose_new_connection_meets_a_lock_waits_for_it_in_a_worker_thread(
    tmp_path: Path,
) -> None:
    """Platform choice: a connection opened on the event loop reads the file in its first statements, so
    it can meet another connection's lock before the operation starts; that is a wait (in a worker thread),
    never a state failure answered to the agent."""
    path = tmp_path / "s.sqlite3"
    store = StateStore(path)
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("PRAGMA locking_mode=EXCLUSIVE")  # no other connection may even read the file
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("DELETE FROM booking_snapshots")
    holder.execute("COMMIT")  # in exclusive mode the lock stays held after the commit
    attempts: list[threading.Thread] = []

    def read() -> int:
        attempts.append(threading.current_thread())
        if len(attempts) == 2:
            threading.Timer(0.05, holder.close).start()  # the other connection lets go
        with store.read() as connection:
            count: int = connection.execute("SELECT count(*) FROM booking_snapshots").fetchone()[0]
        return count

    try:
        assert await store.run(read) == 0
    finally:
        holder.close()
    assert attempts[0] is threading.current_thread()
    assert attempts[1] is not threading.current_thread()


@pytest.mark.anyio
async def test_closing_the_core_closes_the_state_files_connections(tmp_path: Path) -> None:
    """Platform choice: a server that stops closes its adapter and then the state store's connections."""
    from osbp.protocol.core import OsbpCore
    from tests.support.memory_adapter import MemoryAdapter

    store = StateStore(tmp_path / "s.sqlite3")
    core = OsbpCore(MemoryAdapter(clock=FixedClock(NOW)), state=store, clock=FixedClock(NOW))
    with store.read() as connection:
        pass
    await core.aclose()
    with pytest.raises(sqlite3.ProgrammingError):
        connection.execute("SELECT 1")


LOCK_PROBE = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], timeout=0, isolation_level=None)
try:
    print(db.execute("PRAGMA journal_mode=DELETE").fetchone()[0])
except sqlite3.OperationalError as error:
    print(error)
"""


def test_opening_the_file_again_in_this_process_keeps_the_live_connections_locks(tmp_path: Path) -> None:
    """SQLite's "How To Corrupt" §2.2 (POSIX advisory locks cancelled by a close): a second store on one
    file in one process (the HTTP app's beside the core's) must not close a descriptor of it, or another
    process could take the file from under a live connection of ours (here: switch it out of WAL)."""
    path = tmp_path / "osbp.sqlite3"
    first = StateStore(path)
    with first.write() as db:  # a pooled connection stays open, in WAL, holding its shared lock
        db.execute("DELETE FROM approvals")
    second = StateStore(path)
    try:
        probe = subprocess.run(
            [sys.executable, "-c", LOCK_PROBE, str(path)],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        )
        assert probe.stdout.strip() == "database is locked"
    finally:
        first.close()
        second.close()
