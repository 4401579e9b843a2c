"""Structured logs: one JSON object per line on stderr, each carrying the current request id.

Bodies, query strings, contact data and verification codes are never logged.
"""

from __future__ import annotations

import contextvars
import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

__all__ = ["LOGGER_NAME", "JsonFormatter", "configure_logging", "current_request_id", "logger"]

LOGGER_NAME = "osbp.backend"
#: The request being served on this task/thread, if any.
current_request_id: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "osbp_backend_request_id", default=None
)
logger = logging.getLogger(LOGGER_NAME)

_STANDARD = set(logging.LogRecord("", 0, "", 0, "", None, None).__dict__) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """Render a record as one JSON line: time, level, event, request id and any `extra` fields."""

    def format(self, record: logging.LogRecord) -> str:
        """Format the record as compact JSON."""
        payload: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "event": record.getMessage(),
        }
        request_id = current_request_id.get()
        if request_id is not None:
            payload["request_id"] = request_id
        for key, value in record.__dict__.items():
            if key not in _STANDARD and not key.startswith("_"):
                payload[key] = value
        if record.exc_info:
            # Server-side only: the traceback goes to the operator's log, never onto the wire.
            payload["exception"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str, separators=(",", ":"))


def configure_logging(level: str = "INFO") -> None:
    """Send the platform's logs to stderr as JSON lines (idempotent)."""
    for handler in list(logger.handlers):
        if getattr(handler, "_osbp_backend", False):
            logger.removeHandler(handler)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JsonFormatter())
    handler._osbp_backend = True  # type: ignore[attr-defined]  # marks our handler for idempotent setup
    logger.addHandler(handler)
    logger.setLevel(level.upper())
    logger.propagate = False
