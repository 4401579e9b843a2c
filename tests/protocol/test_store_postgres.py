"""The OSBP state on PostgreSQL: opening (schema made once while replicas start together), the pooled
connections, a broken connection replaced, an unreachable database refused in one line, and no approval
token in clear (the engine-neutral semantics run on both engines in test_idempotency and test_approval)."""

from __future__ import annotations

import socket
import threading
import time
from collections import Counter
from datetime import UTC, datetime

import psycopg
import pytest

from osbp.protocol.clock import FixedClock
from osbp.protocol.idempotency import Claimed, IdempotencyStore
from osbp.protocol.state import StateStoreError, StateUnavailable, open_state_store
from osbp.protocol.store_postgres import PostgresStateStore

NOW = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


def backend_pid(store: PostgresStateStore) -> int:
    with store.read() as db:
        pid: int = db.execute("SELECT pg_backend_pid()").fetchone()[0]
    return pid


def session_count(admin: psycopg.Connection[tuple[int]], pid: int) -> int:
    """How many server sessions with backend ``pid`` the server lists now (0 or 1)."""
    row = admin.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = %s", (pid,)).fetchone()
    assert row is not None
    return int(row[0])


def test_an_unreachable_database_is_refused_with_one_line() -> None:
    """Platform choice: a database that cannot be reached is one clear error, never a traceback."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(StateUnavailable) as refused:
        PostgresStateStore(f"postgresql://osbp:secret@127.0.0.1:{port}/osbp", connect_timeout_s=2)
    assert str(refused.value).startswith("PostgreSQL says connection failed")
    assert "\n" not in str(refused.value)


def test_replicas_opening_a_fresh_database_together_all_succeed(postgres_url: str) -> None:
    """Platform choice: replicas starting at once make the schema once (serialised by an advisory lock)."""
    start, outcomes, lock = threading.Barrier(6), Counter[str](), threading.Lock()

    def open_store() -> None:
        start.wait(10)
        try:
            PostgresStateStore(postgres_url).close()
            outcome = "opened"
        except Exception as error:  # counted in the assertion below, not lost in a thread
            outcome = repr(error)
        with lock:
            outcomes[outcome] += 1

    threads = [threading.Thread(target=open_store) for _ in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert outcomes == {"opened": 6}


def test_operations_reuse_one_pooled_connection(postgres_url: str) -> None:
    """Platform choice: an operation pays no connect; the store lends the same session again."""
    store = PostgresStateStore(postgres_url)
    assert backend_pid(store) == backend_pid(store)
    store.close()


def two_pooled_sessions(store: PostgresStateStore) -> set[int]:
    """The backend pids of two sessions used at once, both idle in the store's pool afterwards."""
    with store.read() as first, store.read() as second:
        pids = {db.execute("SELECT pg_backend_pid()").fetchone()[0] for db in (first, second)}
    assert len(pids) == 2
    return pids


def terminate(url: str, pids: set[int]) -> None:
    """End the server sessions ``pids`` as an operator would, and wait (bounded) until they are gone."""
    deadline = time.monotonic() + 10
    with psycopg.connect(url, autocommit=True) as admin:
        for pid in pids:
            admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
        while any(session_count(admin, pid) for pid in pids):
            assert time.monotonic() < deadline, "the sessions did not end"
            time.sleep(0.01)


def test_idle_connections_the_server_dropped_are_not_lent_again(postgres_url: str) -> None:
    """Platform choice: sessions the server ended while idle (a restart, an operator) are dropped before
    use, so the next operations succeed on new sessions instead of failing once per dead connection."""
    store = PostgresStateStore(postgres_url)
    pids = two_pooled_sessions(store)
    terminate(postgres_url, pids)
    assert two_pooled_sessions(store).isdisjoint(pids)
    store.close()


def test_a_session_lost_mid_operation_is_a_state_store_error_and_its_idle_siblings_go_too(
    postgres_url: str,
) -> None:
    """Platform choice: a lost session is the engine-neutral StateStoreError (answered retryable by the
    booking pipeline), and the idle sessions are dropped with it (a restart ends them all)."""
    store = PostgresStateStore(postgres_url)
    pids = two_pooled_sessions(store)
    lost: list[int] = []

    def read_while_the_session_ends() -> None:
        with store.read() as db:
            lost.append(db.execute("SELECT pg_backend_pid()").fetchone()[0])
            terminate(postgres_url, set(lost))
            db.execute("SELECT 1")

    with pytest.raises(StateStoreError, match=r"^PostgreSQL says "):
        read_while_the_session_ends()
    [sibling] = pids - set(lost)
    assert backend_pid(store) not in {*lost, sibling}
    store.close()


def test_closing_the_store_ends_its_idle_sessions(postgres_url: str) -> None:
    """Platform choice: close() ends the pooled sessions on the server; the store reopens on use."""
    store = PostgresStateStore(postgres_url)
    pid = backend_pid(store)
    store.close()
    # The server's backend ends on its own once the client's terminate message arrives: wait for that
    # (bounded), since pg_stat_activity may still list it for a moment after close() returned.
    deadline = time.monotonic() + 10
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        while (alive := session_count(admin, pid)) and time.monotonic() < deadline:
            time.sleep(0.01)
    assert alive == 0
    assert backend_pid(store) != pid
    store.close()


def test_a_released_key_taken_over_by_two_replicas_at_once_has_one_holder(postgres_url: str) -> None:
    """OSBP spec, booking.create idempotency: a present key is re-read FOR UPDATE, so two replicas retrying
    a released attempt together never both hold it."""
    first = IdempotencyStore(open_state_store(postgres_url), clock=FixedClock(NOW), wait_timeout_s=0.3)
    claim = first.claim("idem_pg", "hash")
    assert isinstance(claim, Claimed)
    first.release(claim.lease)
    start, outcomes, lock = threading.Barrier(8), Counter[str](), threading.Lock()

    def retry() -> None:
        store = IdempotencyStore(open_state_store(postgres_url), clock=FixedClock(NOW), wait_timeout_s=0.3)
        start.wait(10)
        outcome = store.claim("idem_pg", "hash")
        with lock:
            outcomes[type(outcome).__name__] += 1

    threads = [threading.Thread(target=retry) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert outcomes["Claimed"] == 1, outcomes
    assert sum(outcomes.values()) == 8
