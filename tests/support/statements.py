"""Counting what SQL a platform engine sends: the statements of a request, a worker, a round."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from sqlalchemy import Engine, event

__all__ = ["statements"]


@contextmanager
def statements(engine: Engine) -> Iterator[list[str]]:
    """The SQL statements ``engine`` sends while the block runs (from any thread), in order."""
    sent: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        sent.append(statement)

    event.listen(engine, "before_cursor_execute", record)
    try:
        yield sent
    finally:
        event.remove(engine, "before_cursor_execute", record)
