"""The platform's database: WAL set up even beside another writer; what a refused write transaction keeps."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from osbp.backend.db import Database
from osbp.backend.problems import ProblemError
from osbp.backend.schema import upgrade


def test_a_fresh_file_held_by_another_writer_is_waited_for_then_put_in_wal(tmp_path: Path) -> None:
    """SQLite refuses a journal-mode change beside another writer at once; the platform waits instead."""
    path = tmp_path / "platform.db"
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("CREATE TABLE other (x INTEGER)")
    holder.execute("BEGIN IMMEDIATE")
    release = threading.Timer(0.2, holder.execute, args=("COMMIT",))
    release.start()
    database = Database(str(path))
    try:
        with database.write() as session:
            session.execute(text("CREATE TABLE appointment (x INTEGER)"))
        with database.read() as session:
            mode = session.connection().execute(text("PRAGMA journal_mode")).scalar()
            tables = set(session.connection().execute(text("SELECT name FROM sqlite_master")).scalars())
    finally:
        release.join()
        holder.close()
        database.dispose()
    assert mode == "wal"
    assert {"appointment", "other"} <= tables


def test_an_in_memory_database_keeps_its_memory_journal() -> None:
    database = Database(":memory:")
    upgrade(database)
    with database.read() as session:
        mode = session.connection().execute(text("PRAGMA journal_mode")).scalar()
    assert mode == "memory"


def _counter_table(database: Database) -> None:
    with database.write() as session:
        session.execute(text("CREATE TABLE counter (n INTEGER)"))


def _insert_then_raise(database: Database, error: Exception, **write: Any) -> None:
    with database.write(**write) as session:
        session.execute(text("INSERT INTO counter VALUES (1)"))
        raise error


def _rows(database: Database) -> int:
    with database.read() as session:
        return int(session.execute(text("SELECT count(*) FROM counter")).scalar_one())


def test_a_refusal_raised_in_a_write_transaction_rolls_it_back() -> None:
    """Platform choice: a ProblemError is an error like any other to a write transaction."""
    database = Database(":memory:")
    _counter_table(database)
    with pytest.raises(ProblemError):
        _insert_then_raise(database, ProblemError("slot_taken", "taken"))
    assert _rows(database) == 0


def test_a_refusal_listed_in_commit_on_keeps_what_was_written_before_it() -> None:
    """Platform choice: a refusal that records its cause (a wrong code's attempt) commits, then propagates."""
    database = Database(":memory:")
    _counter_table(database)
    with pytest.raises(ProblemError):
        _insert_then_raise(database, ProblemError("verification_failed", "wrong"), commit_on=(ProblemError,))
    with pytest.raises(RuntimeError):
        _insert_then_raise(database, RuntimeError("a bug"), commit_on=(ProblemError,))
    assert _rows(database) == 1
