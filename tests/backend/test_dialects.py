"""Engine differences: PostgreSQL's advisory locks hold writers apart; the optional driver is named."""

from __future__ import annotations

import sys

import pytest
from sqlalchemy import event, text
from sqlalchemy.exc import OperationalError

from osbp.backend.db import Database
from osbp.backend.dialects import POSTGRES_DRIVER_MISSING, serialise


def test_a_postgresql_url_without_the_driver_installed_says_which_extra_to_install(monkeypatch):
    """Platform choice: psycopg is the optional `osbp[postgres]` extra; its absence is one clear line."""
    monkeypatch.setitem(sys.modules, "psycopg", None)  # what an absent package looks like to import
    with pytest.raises(RuntimeError) as missing:
        Database("postgresql://bookwell@127.0.0.1:5432/bookwell")
    assert str(missing.value) == POSTGRES_DRIVER_MISSING
    assert ".venv/bin/pip install -e '.[postgres]'" in POSTGRES_DRIVER_MISSING


def _take(db: Database, scope: str) -> None:
    """Serialise ``scope`` in a write transaction that waits at most 100 ms for it."""
    with db.write() as session:
        session.execute(text("SET LOCAL lock_timeout = '100ms'"))
        serialise(session, scope)


def test_a_scope_serialised_by_one_postgresql_transaction_is_held_until_it_commits(postgres_url):
    """Platform choice: on PostgreSQL a re-check's scope admits one writer at a time, across connections."""
    reyes, okafor = "provider:carolyns_dental:dr_reyes", "provider:carolyns_dental:dr_okafor"
    db = Database(postgres_url)
    try:
        with db.write() as holder:
            serialise(holder, reyes)
            with pytest.raises(OperationalError, match="lock timeout"):
                _take(db, reyes)
            _take(db, okafor)  # another provider is not held up
        _take(db, reyes)  # committed: the scope is free again
    finally:
        db.dispose()


def test_serialise_takes_no_lock_on_sqlite_whose_writers_are_already_one_at_a_time():
    """Platform choice: SQLite's BEGIN IMMEDIATE already admits one writer; nothing more is issued."""
    db = Database(":memory:")
    statements: list[str] = []
    event.listen(db.engine, "before_cursor_execute", lambda *args: statements.append(args[2]))
    with db.write() as session:
        serialise(session, "provider:x")
    db.dispose()
    assert statements == []
