"""The schema: migrations equal to the models on both engines, `osbp backend migrate`, start-up policy."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from sqlalchemy import text

from osbp.backend.cli import main
from osbp.backend.db import Database
from osbp.backend.runtime import Runtime
from osbp.backend.schema import BASELINE, SchemaError, current_revision, differences, head_revision, upgrade
from tests.support.bookwell import make_settings


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """An empty database on each engine: a SQLite file, or a fresh PostgreSQL database."""
    if request.param == "postgresql":
        return str(request.getfixturevalue("postgres_url"))
    return str(tmp_path / "platform.db")


def test_the_migrations_build_exactly_the_models_schema(database_url):
    """Platform choice: Alembic's autogenerate finds nothing between the migrated database and the models,
    on either engine (a model change without its migration fails here)."""
    db = Database(database_url)
    try:
        assert upgrade(db) == (None, head_revision())
        with db.engine.connect() as connection:
            assert differences(connection) == []
    finally:
        db.dispose()


def test_migrate_applies_pending_revisions_once_and_then_says_it_is_current(database_url, capsys):
    """Platform choice: `osbp backend migrate` reports in one line what it did."""
    assert main(["migrate", "--db", database_url]) == 0
    assert main(["migrate", "--db", database_url]) == 0
    first, second = capsys.readouterr().out.splitlines()
    assert first.endswith(f": migrated empty -> {head_revision()}")
    assert second.endswith(f": already at schema revision {head_revision()}")


def test_a_postgresql_platform_refuses_an_unmigrated_database_until_migrated(postgres_url, capsys):
    """Platform choice: on a shared database the schema changes by the operator's step, not at start-up."""
    with pytest.raises(SchemaError) as refused:
        Runtime.build(make_settings(db=postgres_url))
    assert str(refused.value) == (
        f"the database {postgres_url} has no schema yet: run `osbp backend migrate --db {postgres_url}` "
        "first (or start with --migrate)"
    )
    assert main(["migrate", "--db", postgres_url]) == 0
    runtime = Runtime.build(make_settings(db=postgres_url))
    try:
        with runtime.db.read() as session:
            assert session.execute(text("SELECT count(*) FROM organization")).scalar_one() > 0
    finally:
        runtime.db.dispose()


def test_replicas_migrating_together_apply_each_revision_once(postgres_url):
    """Platform choice: `--migrate` on several replicas at once: an advisory lock lets one migrate."""
    outcomes: list[tuple[str | None, str]] = []
    barrier = threading.Barrier(3)

    def migrate() -> None:
        db = Database(postgres_url)
        try:
            barrier.wait(timeout=30)
            outcomes.append(upgrade(db))
        finally:
            db.dispose()

    threads = [threading.Thread(target=migrate) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    head = head_revision()
    assert sorted(outcomes, key=str) == sorted([(None, head), (head, head), (head, head)], key=str)


def _pre_migration_file(path: Path) -> None:
    """A file as the platform made it before it had migrations: the baseline's tables, no alembic_version."""
    db = Database(str(path))
    upgrade(db, BASELINE)
    db.dispose()
    raw = sqlite3.connect(path)
    raw.execute("DROP TABLE alembic_version")
    raw.execute(
        "INSERT INTO organization VALUES ('old', 'Old', 'old', 'old.example', '+12125550100', "
        "'a@old.example', 'UTC', 'USD', 'US', 15, 0, 0)"
    )
    raw.commit()
    raw.close()


def test_a_sqlite_file_made_before_migrations_is_adopted_and_keeps_its_rows(tmp_path):
    """Platform choice: an older platform's file is stamped with the baseline and upgraded, rows kept."""
    path = tmp_path / "old.db"
    _pre_migration_file(path)
    runtime = Runtime.build(make_settings(db=str(path)))
    try:
        with runtime.db.read() as session:
            assert current_revision(session.connection()) == head_revision()
            assert (
                session.execute(text("SELECT name FROM organization WHERE id = 'old'")).scalar_one() == "Old"
            )
    finally:
        runtime.db.dispose()


def test_a_sqlite_file_of_another_schema_is_refused_saying_to_delete_it(tmp_path):
    """Platform choice: a file whose tables are not the baseline's is never guessed at."""
    path = tmp_path / "other.db"
    raw = sqlite3.connect(path)
    raw.execute("CREATE TABLE appointment (id TEXT PRIMARY KEY)")
    raw.commit()
    raw.close()
    assert main(["migrate", "--db", str(path)]) == 2
    with pytest.raises(SchemaError, match="was made by an older platform with a different schema: delete it"):
        Runtime.build(make_settings(db=str(path)))
