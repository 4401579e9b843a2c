"""Structured logs: one JSON object per line on stderr, each carrying the current request id.

Lines are written by python-json-logger with the keys every osbp process uses: ``level`` (Python's
name), ``logger``, ``event`` (the message: an event name such as ``request``), ``request_id`` while a
request is being served, the fields passed with ``extra=``, ``exception`` when there is one, and ``ts``
(ISO-8601, UTC). The platform is a foreign system and imports nothing of osbp's: it configures the same
library itself.

Bodies, query strings, contact data and verification codes are never logged.
"""

from __future__ import annotations

import contextvars
import functools
import json
import logging
import sys
from typing import TextIO

from pythonjsonlogger.json import JsonFormatter

__all__ = ["LOGGER_NAME", "configure_logging", "current_request_id", "json_formatter", "logger"]

LOGGER_NAME = "osbp.backend"
#: The request being served on this task/thread, if any.
current_request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "osbp_backend_request_id", default=None
)


class _RequestId(logging.Filter):
    """Stamps the request being served onto each record (as ``request_id``) when there is one."""

    def filter(self, record: logging.LogRecord) -> bool:
        request_id = current_request_id.get()
        if request_id is not None and not hasattr(record, "request_id"):
            record.request_id = request_id
        return True


logger = logging.getLogger(LOGGER_NAME)
# On the logger, not on a handler: every record the platform makes carries the id, whoever handles it.
logger.addFilter(_RequestId())


def json_formatter() -> JsonFormatter:
    """The formatter of this process's log lines."""
    return JsonFormatter(
        ["levelname", "name", "message"],
        rename_fields={"levelname": "level", "name": "logger", "message": "event", "exc_info": "exception"},
        # The record's own creation time (not the platform's possibly frozen clock), an aware UTC instant.
        timestamp="ts",
        json_ensure_ascii=False,
        json_serializer=functools.partial(json.dumps, separators=(",", ":")),  # one compact line
    )


def configure_logging(level: str = "INFO", stream: TextIO | None = None) -> None:
    """Send every record at ``level`` or above (uvicorn's too) to stderr as JSON lines (idempotent)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(json_formatter())
    root = logging.getLogger()
    # The platform's process owns its root logger: replacing the handlers makes a second call a no-op.
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    # Alembic narrates every migration step at INFO ("Context impl SQLiteImpl."), on each start-up that
    # checks the schema: noise on the platform's one-JSON-line-per-event stderr, so only its warnings pass.
    logging.getLogger("alembic").setLevel(max(logging.WARNING, root.level))
