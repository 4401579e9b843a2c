"""The state file's opening: WAL and schema set up safely while other threads and processes open it too."""

from __future__ import annotations

import sqlite3
import threading
from collections import Counter
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from osbp.protocol.store import StateStore
from tests.support.processes import spawn_together

TABLES = {"approvals", "booking_snapshots", "idempotency"}


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
