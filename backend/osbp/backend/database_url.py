"""Which database a `--db` value names: a SQLite file or memory, or a PostgreSQL server (stdlib only).

Accepted: a file path, `:memory:`, `sqlite:///PATH` (`sqlite://` alone is memory), and
`postgresql://[USER[:PASSWORD]@][HOST][:PORT]/DBNAME[?…]` (no host: libpq's local socket; also
`postgres://` and `postgresql+psycopg://`), written `postgresql+psycopg://` for SQLAlchemy (psycopg 3).
Anything else is refused with one line, so a mistyped URL can never quietly become a SQLite file named
like it. Parsing imports nothing heavy: the settings check it before the application is loaded.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

__all__ = ["DatabaseUrl", "Kind", "parse_database", "redact"]

Kind = Literal["sqlite", "postgresql"]
_POSTGRES_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg")
_ACCEPTED = "give a SQLite file path, :memory:, sqlite:///PATH or postgresql://USER@HOST:PORT/DBNAME"


@dataclass(frozen=True)
class DatabaseUrl:
    """A parsed `--db` value: which engine, and the SQLAlchemy URL that reaches it."""

    kind: Kind
    #: The SQLAlchemy URL (`sqlite:///PATH`, `sqlite://` in memory, `postgresql+psycopg://…`).
    url: str
    #: The SQLite file, or None (in memory, or PostgreSQL).
    path: Path | None = None

    @property
    def in_memory(self) -> bool:
        """True for SQLite's `:memory:`: one private database per process."""
        return self.kind == "sqlite" and self.path is None


def parse_database(value: str) -> DatabaseUrl:
    """The database `value` names, or ValueError with one line saying what is accepted."""
    value = value.strip()
    if not value:
        raise ValueError(f"no database given: {_ACCEPTED}")
    if value == ":memory:":
        return DatabaseUrl("sqlite", "sqlite://")
    scheme, separator, rest = value.partition("://")
    if not separator:
        if ":" in value.split("/", 1)[0] and not Path(value).exists():
            # `postgresql:/db`, `localhost:5432/db`: a mistyped URL, not a file anyone means to create.
            raise ValueError(_unsupported(value))
        return DatabaseUrl("sqlite", f"sqlite:///{value}", Path(value))
    scheme = scheme.lower()
    if scheme == "sqlite":
        path = rest[1:] if rest.startswith("/") else rest
        if rest and not rest.startswith("/"):
            raise ValueError(
                f"database {value!r}: a SQLite URL has three slashes before a path: sqlite:///PATH"
            )
        if not path or path == ":memory:":
            return DatabaseUrl("sqlite", "sqlite://")
        return DatabaseUrl("sqlite", f"sqlite:///{path}", Path(path))
    if scheme in _POSTGRES_SCHEMES:
        return _postgres(value)
    raise ValueError(_unsupported(value))


def _postgres(value: str) -> DatabaseUrl:
    parts = urlsplit(value)
    try:
        parts.port  # noqa: B018  a non-numeric or out-of-range port raises here
    except ValueError:
        raise ValueError(f"database {redact(value)!r}: the port is not a number 0-65535") from None
    if parts.path.strip("/") == "":
        raise ValueError(
            f"database {redact(value)!r}: a PostgreSQL URL names its database: postgresql://HOST/DBNAME"
        )
    # The scheme swapped by hand: urlunsplit drops the `//` of an empty host (the local-socket form).
    return DatabaseUrl("postgresql", "postgresql+psycopg://" + value.partition("://")[2])


def _unsupported(value: str) -> str:
    return f"unsupported database {redact(value)!r}: {_ACCEPTED}"


def redact(value: str) -> str:
    """The database value with any password masked, for messages and logs."""
    if "://" not in value:
        return value
    parts = urlsplit(value)
    if parts.password is None:
        return value
    netloc = parts.netloc.replace(f":{parts.password}@", ":***@", 1)
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))
