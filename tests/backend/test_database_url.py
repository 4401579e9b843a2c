"""Which database a `--db` value names: SQLite paths and URLs, PostgreSQL URLs, and refusals."""

from __future__ import annotations

from pathlib import Path

import pytest

from osbp.backend.database_url import parse_database, redact


@pytest.mark.parametrize(
    ("value", "kind", "url", "path"),
    [
        ("backend.db", "sqlite", "sqlite:///backend.db", Path("backend.db")),
        (".osbp/backend.db", "sqlite", "sqlite:///.osbp/backend.db", Path(".osbp/backend.db")),
        (":memory:", "sqlite", "sqlite://", None),
        ("sqlite://", "sqlite", "sqlite://", None),
        ("sqlite:///data/b.db", "sqlite", "sqlite:///data/b.db", Path("data/b.db")),
        ("sqlite:////srv/b.db", "sqlite", "sqlite:////srv/b.db", Path("/srv/b.db")),
        (
            "postgresql://bw@127.0.0.1:5432/bookwell",
            "postgresql",
            "postgresql+psycopg://bw@127.0.0.1:5432/bookwell",
            None,
        ),
        (
            "postgres://bw:pw@db/bookwell?sslmode=disable",
            "postgresql",
            "postgresql+psycopg://bw:pw@db/bookwell?sslmode=disable",
            None,
        ),
        ("postgresql+psycopg://db/bookwell", "postgresql", "postgresql+psycopg://db/bookwell", None),
        ("postgresql:///bookwell", "postgresql", "postgresql+psycopg:///bookwell", None),
    ],
)
def test_a_path_or_supported_url_names_its_engine_and_sqlalchemy_url(value, kind, url, path):
    """Platform choice: --db takes a SQLite path or URL, or a PostgreSQL URL driven by psycopg 3."""
    parsed = parse_database(value)
    assert (parsed.kind, parsed.url, parsed.path) == (kind, url, path)


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("mysql://db/bookwell", "unsupported database 'mysql://db/bookwell'"),
        ("postgresql:/bookwell", "unsupported database 'postgresql:/bookwell'"),
        ("localhost:5432/bookwell", "unsupported database 'localhost:5432/bookwell'"),
        ("postgresql://db", "a PostgreSQL URL names its database"),
        ("postgresql://u:secret@db:99999/b", "'postgresql://u:***@db:99999/b': the port is not a number"),
        ("sqlite://relative.db", "a SQLite URL has three slashes"),
        ("  ", "no database given"),
    ],
)
def test_anything_else_is_refused_with_one_line_saying_what_is_accepted(value, message):
    """Platform choice: a value that is neither a path nor a supported URL never becomes a SQLite file."""
    with pytest.raises(ValueError, match="database") as raised:
        parse_database(value)
    assert message in str(raised.value)
    assert "\n" not in str(raised.value)
    assert "secret" not in str(raised.value)


def test_a_password_is_masked_when_the_url_is_shown():
    """Platform choice: messages and logs never carry the database password."""
    assert redact("postgresql://bw:hunter2@db/b") == "postgresql://bw:***@db/b"
    assert redact("postgresql://bw@db/b") == "postgresql://bw@db/b"
    assert redact("backend.db") == "backend.db"
