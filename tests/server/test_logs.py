"""The server's log pipeline: one JSON object per line, the event name as message, fields as fields."""

from __future__ import annotations

import io
import logging
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta

import pytest

from osbp.server.logs import configure_logging
from tests.support.logs import json_lines, restored_root


@pytest.fixture
def configured() -> Iterator[Callable[[str], io.StringIO]]:
    """``configure_logging(level)`` into a fresh stream; the root logger is restored afterwards."""
    with restored_root():

        def configure(level: str) -> io.StringIO:
            stream = io.StringIO()
            configure_logging(level, stream)
            return stream

        yield configure


def test_a_record_is_one_json_line_with_ts_level_logger_event_and_its_fields(configured) -> None:
    """Platform choice (structured logs): event name as message, extra fields as top-level keys."""
    stream = configured("INFO")
    before = datetime.now(UTC)
    logging.getLogger("osbp.server").info("serving_stdio", extra={"audit": "a.jsonl", "platform": {"v": 1}})
    [line] = json_lines(stream.getvalue())
    ts = datetime.fromisoformat(line.pop("ts"))
    assert ts.utcoffset() == timedelta(0)  # ISO-8601 in UTC
    assert before - timedelta(seconds=1) <= ts <= datetime.now(UTC)
    assert line == {
        "level": "INFO",
        "logger": "osbp.server",
        "event": "serving_stdio",
        "audit": "a.jsonl",
        "platform": {"v": 1},
    }


def test_a_logged_exception_carries_its_traceback_under_exception(configured) -> None:
    """Platform choice: a bug's traceback reaches the operator's log as one field of one line."""
    stream = configured("WARNING")
    try:
        raise RuntimeError("boom")
    except RuntimeError:
        logging.getLogger("osbp.server").exception("server_crashed")
    [line] = json_lines(stream.getvalue())
    assert (line["level"], line["event"]) == ("ERROR", "server_crashed")
    assert line["exception"].startswith("Traceback (most recent call last):")
    assert line["exception"].endswith("RuntimeError: boom")


def test_records_below_the_configured_level_are_not_written(configured) -> None:
    """Platform choice: ``--log-level`` sets the root level; quieter records are dropped."""
    stream = configured("ERROR")
    logging.getLogger("osbp.server").warning("quiet")
    logging.getLogger("osbp.server").error("loud")
    assert [line["event"] for line in json_lines(stream.getvalue())] == ["loud"]
