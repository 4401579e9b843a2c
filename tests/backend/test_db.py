"""The platform's database file: WAL set up even while another process holds the fresh file."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

from sqlalchemy import text

from osbp.backend.db import Database


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
        database.create_all()
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
    database.create_all()
    with database.read() as session:
        mode = session.connection().execute(text("PRAGMA journal_mode")).scalar()
    assert mode == "memory"
