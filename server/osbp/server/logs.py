"""Structured JSON-line logs on stderr (stdout belongs to the MCP protocol in this process).

One line per record, written by python-json-logger: ``level`` (Python's name, as ``--log-level`` spells
it), ``logger``, ``event`` (the message: an event name such as ``serving_stdio``), every field passed
with ``extra=``, ``exception`` (the traceback) when there is one, and ``ts`` (ISO-8601, UTC). The
platform process (``osbp.backend.logs``) writes the same keys.
"""

from __future__ import annotations

import functools
import json
import logging
import sys
from typing import TextIO

from pythonjsonlogger.json import JsonFormatter

__all__ = ["configure_logging", "json_formatter"]


def json_formatter() -> JsonFormatter:
    """The formatter of this process's log lines."""
    return JsonFormatter(
        ["levelname", "name", "message"],
        rename_fields={"levelname": "level", "name": "logger", "message": "event", "exc_info": "exception"},
        # The record's own creation time (not business time, so no injected clock), as an aware UTC instant.
        timestamp="ts",
        json_ensure_ascii=False,
        json_serializer=functools.partial(json.dumps, separators=(",", ":")),  # one compact line
    )


def configure_logging(level: str = "WARNING", stream: TextIO | None = None) -> None:
    """Send every log record at ``level`` or above to stderr as JSON lines (replaces root handlers)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(json_formatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # Python warnings would otherwise be plain text on stderr: route them through the JSON handler.
    logging.captureWarnings(True)
