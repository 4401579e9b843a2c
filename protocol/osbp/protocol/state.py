"""Where the OSBP state lives and what its users need of it: one location setting, two engines.

The location is a file path (or ``sqlite:///PATH``), the SQLite state file of :mod:`osbp.protocol.store`,
or a ``postgresql://`` URL, the database that MCP server replicas share (:mod:`osbp.protocol.store_postgres`,
psycopg imported only then); :func:`open_state_store` opens either. :class:`StateBackend` is what the
idempotency store and the approval gate use of both: transactions on connections that take ``?``
placeholders, and the one SQL fragment that differs (``for_update``).
"""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any, Protocol, TypeVar
from urllib.parse import urlsplit, urlunsplit

from osbp.protocol.store import StateStore, StateStoreError

__all__ = [
    "StateBackend",
    "StateConnection",
    "StateCursor",
    "StateStoreError",
    "StateUnavailable",
    "open_state_store",
    "parse_state_location",
    "redacted",
]

_T = TypeVar("_T")


class StateCursor(Protocol):
    """What a statement answers: its rows one at a time and how many rows it changed."""

    @property
    def rowcount(self) -> int:
        """Rows inserted, updated or deleted by the statement."""
        ...

    def fetchone(self) -> Any:
        """The next row as a tuple, or None."""
        ...

    def fetchall(self) -> list[Any]:
        """The remaining rows as tuples."""
        ...


class StateConnection(Protocol):
    """A lent connection: ``execute`` with ``?`` placeholders, whichever engine is behind it."""

    def execute(self, sql: str, parameters: Any = ..., /) -> StateCursor:
        """Run one statement."""
        ...


class StateBackend(Protocol):
    """The state store as its users see it (the SQLite file or a PostgreSQL database)."""

    #: Appended to a SELECT that a write transaction goes on to update (row lock where the engine has one).
    for_update: str
    #: Where the state lives, for messages (a path, or a URL without its password).
    location: str

    def write(self) -> AbstractContextManager[StateConnection]:
        """A read-then-write transaction: committed on success, rolled back on any exception."""
        ...

    def read(self) -> AbstractContextManager[StateConnection]:
        """A connection for a single consistent read."""
        ...

    async def run(self, operation: Callable[[], _T]) -> _T:
        """Run one single-transaction ``operation`` without blocking the event loop for long."""
        ...

    def close(self) -> None:
        """Close the idle connections (the store reopens on its next use)."""
        ...


class StateUnavailable(Exception):
    """The state store cannot be opened (an unreachable database, a missing driver): why, in one line."""


_URL_SCHEMES = ("postgresql", "postgres")


def parse_state_location(value: str | Path) -> str | Path:
    """The state location setting: a file path (or ``sqlite:///PATH``) as a Path, a PostgreSQL URL as is.

    Any other ``scheme://`` value is refused (a URL is never silently taken for a file name).
    """
    if isinstance(value, Path):
        return value
    scheme, separator, rest = value.partition("://")
    if not separator or "/" in scheme:
        return Path(value)
    if scheme == "sqlite":
        # SQLAlchemy's form: sqlite:///relative/path, sqlite:////absolute/path.
        if not rest.startswith("/") or rest == "/":
            raise ValueError("be sqlite:///PATH (three slashes, then the path)")
        return Path(rest[1:])
    if scheme not in _URL_SCHEMES:
        raise ValueError(f"be a file path or a postgresql:// URL, not a {scheme}:// URL")
    parts = urlsplit(value)
    try:
        parts.port  # noqa: B018  # validates the port
    except ValueError:
        raise ValueError("be a postgresql:// URL with a numeric port") from None
    if not parts.path.strip("/"):
        raise ValueError("be a postgresql:// URL naming its database, like postgresql://user@host/osbp")
    return value


def redacted(url: str) -> str:
    """``url`` without its password, for messages and logs (any other text unchanged)."""
    parts = urlsplit(url)
    try:
        password = parts.password
    except ValueError:
        return url
    if password is None:
        return url
    host = parts.netloc.rpartition("@")[2]
    return urlunsplit(parts._replace(netloc=f"{parts.username or ''}:***@{host}"))


def open_state_store(location: str | Path) -> StateBackend:
    """The state store at ``location`` (see :func:`parse_state_location`), opened and its schema in place."""
    where = parse_state_location(location)
    if isinstance(where, Path):
        return StateStore(where)
    from osbp.protocol.store_postgres import PostgresStateStore  # psycopg only when asked

    return PostgresStateStore(where)
