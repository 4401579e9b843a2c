"""The state location: one setting naming the SQLite file or the PostgreSQL database, and how it opens."""

from __future__ import annotations

import pytest

from osbp.protocol.state import open_state_store, parse_state_location, redacted
from osbp.protocol.store import StateStore
from osbp.protocol.store_postgres import PostgresStateStore


def test_a_postgresql_url_opens_the_postgresql_store(postgres_url: str) -> None:
    """Platform choice: one location setting; a postgresql:// URL is the shared database, not a file name."""
    store = open_state_store(postgres_url)
    assert isinstance(store, PostgresStateStore)
    assert store.for_update == " FOR UPDATE"
    store.close()


@pytest.mark.parametrize(
    ("given", "parsed"),
    [
        ("state/osbp.sqlite3", "state/osbp.sqlite3"),
        ("sqlite:///state/osbp.sqlite3", "state/osbp.sqlite3"),
        ("sqlite:////srv/osbp/state.sqlite3", "/srv/osbp/state.sqlite3"),
    ],
)
def test_a_path_or_a_sqlite_url_is_the_state_file(given: str, parsed: str) -> None:
    """Platform choice: a plain path and sqlite:///PATH (SQLAlchemy's form) both name the state file."""
    assert str(parse_state_location(given)) == parsed


def test_a_path_opens_the_sqlite_state_file(tmp_path) -> None:
    """Platform choice: the default engine is the SQLite file, with no row-lock fragment."""
    store = open_state_store(tmp_path / "state.sqlite3")
    assert isinstance(store, StateStore)
    assert store.for_update == ""
    assert store.location == str(tmp_path / "state.sqlite3")


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://osbp:hunter2@db:5432/osbp", "postgresql://osbp:***@db:5432/osbp"),
        ("postgresql://osbp@db/osbp", "postgresql://osbp@db/osbp"),
        ("state/osbp.sqlite3", "state/osbp.sqlite3"),
    ],
)
def test_a_locations_password_is_never_shown(url: str, shown: str) -> None:
    """OSBP spec, Security and Privacy: messages and logs name the database without its password."""
    assert redacted(url) == shown
