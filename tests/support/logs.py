"""Capture log records as data (structlog's ``capture_logs`` idea) instead of matching text.

``capture_logs()`` collects every record that reaches the root logger's handlers while the block runs,
optionally under a given root level (what ``--log-level`` sets), and ``fields(record)`` gives the fields a
call passed with ``extra=``. ``restored_root()`` lets a test call a process's ``configure_logging`` and
leaves the root logger as it found it.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["capture_logs", "events", "fields", "json_lines", "restored_root"]

_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class _Collect(logging.Handler):
    def __init__(self, records: list[logging.LogRecord]) -> None:
        super().__init__(logging.NOTSET)
        self.records = records

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextmanager
def capture_logs(root_level: int | None = None) -> Iterator[list[logging.LogRecord]]:
    """The records the root logger's handlers receive in the block (the root level restored after)."""
    records: list[logging.LogRecord] = []
    handler = _Collect(records)
    root = logging.getLogger()
    saved = root.level
    root.addHandler(handler)
    if root_level is not None:
        root.setLevel(root_level)
    try:
        yield records
    finally:
        root.removeHandler(handler)
        root.setLevel(saved)


@contextmanager
def restored_root() -> Iterator[None]:
    """Undo, after the block, what a process-wide ``configure_logging`` does to the root logger."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    try:
        yield
    finally:
        root.handlers[:] = handlers
        root.setLevel(level)
        logging.captureWarnings(False)


def events(records: list[logging.LogRecord], event: str) -> list[logging.LogRecord]:
    """The records whose message is the event name ``event``."""
    return [record for record in records if record.getMessage() == event]


def fields(record: logging.LogRecord) -> dict[str, Any]:
    """The fields a log call passed with ``extra=``."""
    return {key: value for key, value in vars(record).items() if key not in _STANDARD}


def json_lines(text: str) -> list[dict[str, Any]]:
    """Every line of a process's log output, each parsed as one JSON object (fails on any other line)."""
    parsed = [json.loads(line) for line in text.splitlines()]
    assert all(isinstance(line, dict) for line in parsed), text
    return parsed
