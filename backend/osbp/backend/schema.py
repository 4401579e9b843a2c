"""The schema: Alembic migrations (in `migrations/`), applied by `osbp backend migrate` or at start-up.

One set of migrations serves both engines. :func:`upgrade` brings a database to the newest revision; on
PostgreSQL it first takes a session advisory lock, so replicas started together with `--migrate` migrate
one after the other and the later ones find nothing to do. :func:`check` refuses a database that is not
at the newest revision, saying what to run. A SQLite file made before the platform had migrations (its
tables, no `alembic_version`) is adopted: when its tables and columns are the first revision's, it is
stamped with it and upgraded from there; otherwise the refusal says to delete it (it holds synthetic data
the platform seeds again).
"""

from __future__ import annotations

import functools
import sqlite3
import threading
from pathlib import Path
from typing import cast

from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, inspect, text
from sqlmodel import SQLModel

from osbp.backend.database_url import redact
from osbp.backend.db import Database

__all__ = [
    "BASELINE",
    "SchemaError",
    "check",
    "current_revision",
    "differences",
    "head_revision",
    "prepare",
    "upgrade",
]

MIGRATIONS = Path(__file__).with_name("migrations")
#: The first revision: the schema every pre-migration SQLite file has.
BASELINE = "0001"
#: Tables the migrations own that no model declares (the catalog revision counter) or Alembic's own.
UNMODELLED_TABLES = frozenset({"alembic_version", "catalog_revision", "catalog_epoch"})
# Any constant shared by every process that migrates the same database.
_MIGRATION_LOCK = 0x05B9_0001


class SchemaError(Exception):
    """The database's schema is not one this platform can run on; the message says what to do."""


def _config(connection: Connection) -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.attributes["connection"] = connection
    return config


@functools.cache
def head_revision() -> str:
    """The newest revision the shipped migrations define."""
    head = ScriptDirectory(str(MIGRATIONS)).get_current_head()
    assert head is not None, "the shipped migrations define no revision"
    return head


def current_revision(connection: Connection) -> str | None:
    """The revision the database is at (None: never migrated)."""
    return MigrationContext.configure(connection).get_current_revision()


def differences(connection: Connection) -> list[object]:
    """What Alembic's autogenerate finds between the database and the models (empty: they agree)."""

    def modelled(_obj: object, name: str | None, kind: str, _reflected: bool, _other: object) -> bool:
        return not (kind == "table" and name in UNMODELLED_TABLES)

    context = MigrationContext.configure(connection, opts={"compare_type": True, "include_object": modelled})
    return list(compare_metadata(context, SQLModel.metadata))


def upgrade(db: Database, revision: str = "head") -> tuple[str | None, str]:
    """Apply every pending migration up to ``revision`` (adopting a pre-migration SQLite file).

    Returns the revision before and after.
    """
    if db.in_memory and revision == "head":
        return _copy_memory_template(db)
    with db.engine.connect() as connection:
        postgres = connection.dialect.name == "postgresql"
        if postgres:
            connection.execute(text("SELECT pg_advisory_lock(:key)"), {"key": _MIGRATION_LOCK})
            connection.commit()
        try:
            before = current_revision(connection)
            if before is None and _has_tables(connection):
                _adopt(db, connection)
            command.upgrade(_config(connection), revision)
            connection.commit()
            after = current_revision(connection)
        finally:
            if postgres:
                connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": _MIGRATION_LOCK})
                connection.commit()
    assert after is not None
    return before, after


@functools.cache
def _memory_template() -> sqlite3.Connection:
    """A private in-memory database the migrations brought to the newest revision, once per process."""
    template = Database(":memory:")
    with template.engine.connect() as connection:
        command.upgrade(_config(connection), "head")
        connection.commit()
    raw = sqlite3.connect(":memory:", check_same_thread=False)
    with template.engine.connect() as connection:
        # The driver's own connection (SQLAlchemy types it as the generic DB-API protocol).
        source = cast(sqlite3.Connection, connection.connection.dbapi_connection)
        source.backup(raw)
    template.dispose()
    return raw


def _copy_memory_template(db: Database) -> tuple[str | None, str]:
    """A new in-memory database gets the migrated schema by copy: the same migrations, run once per process.

    (Unit tests build hundreds of in-memory platforms; running Alembic for each would cost seconds.)
    """
    template = _memory_template()
    with db.engine.connect() as connection:
        target = cast(sqlite3.Connection, connection.connection.dbapi_connection)
        with _template_lock:
            template.backup(target)
        # Each database draws its own catalog epoch (`catalog_cache`), as a migrated one does.
        connection.execute(text("UPDATE catalog_epoch SET epoch = lower(hex(randomblob(6)))"))
        connection.commit()
    return None, head_revision()


_template_lock = threading.Lock()


def prepare(db: Database, *, migrate: bool) -> None:
    """At start-up: migrate when asked, and always on SQLite (so `make demo` and the tests need no step);
    otherwise refuse a PostgreSQL database that is not at the newest revision.

    On a shared database, changing the schema is the operator's step (`osbp backend migrate`), not a side
    effect of whichever replica happens to start first.
    """
    if migrate or db.kind == "sqlite":
        upgrade(db)
    else:
        check(db)


def check(db: Database) -> None:
    """Raise SchemaError unless the database is at the newest revision."""
    with db.engine.connect() as connection:
        current = current_revision(connection)
        empty = current is None and not _has_tables(connection)
    head = head_revision()
    if current == head:
        return
    where = redact(db.path)
    if empty:
        state = "has no schema yet"
    elif current is None:
        state = "was made without migrations"
    else:
        state = f"is at schema revision {current}, this platform runs on {head}"
    raise SchemaError(
        f"the database {where} {state}: run `osbp backend migrate --db {where}` first "
        "(or start with --migrate)"
    )


def _has_tables(connection: Connection) -> bool:
    return bool(set(inspect(connection).get_table_names()) - {"alembic_version"})


def _shape(connection: Connection) -> dict[str, frozenset[str]]:
    """Each table's column names."""
    found = inspect(connection)
    return {
        table: frozenset(column["name"] for column in found.get_columns(table))
        for table in found.get_table_names()
    }


def _baseline_shape() -> dict[str, frozenset[str]]:
    """The tables and columns of the baseline revision, as the migrations build them on a scratch database."""
    scratch = Database(":memory:")
    try:
        with scratch.engine.connect() as connection:
            command.upgrade(_config(connection), BASELINE)
            connection.commit()
            shape = _shape(connection)
    finally:
        scratch.dispose()
    shape.pop("alembic_version", None)
    return shape


def _adopt(db: Database, connection: Connection) -> None:
    """Stamp a pre-migration file with the baseline when it has exactly the baseline's tables and columns."""
    if db.kind != "sqlite":
        raise SchemaError(
            f"the database {redact(db.path)} has tables but no migration history: give the platform an "
            "empty database (or one `osbp backend migrate` made)"
        )
    if _shape(connection) != _baseline_shape():
        raise SchemaError(
            f"the database file {db.path} was made by an older platform with a different schema: delete "
            "it (it holds synthetic data; the platform seeds a new one) or give another --db"
        )
    command.stamp(_config(connection), BASELINE)
    connection.commit()
