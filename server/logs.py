"""Structured JSON-line logs on stderr (stdout belongs to the MCP protocol in this process)."""

from __future__ import annotations

import json
import logging
import sys
import traceback
from datetime import UTC, datetime
from typing import Any, TextIO

__all__ = ["JsonFormatter", "configure_logging"]

# Attributes every LogRecord has; anything else was passed through `extra=` and is logged as a field.
_STANDARD = frozenset(vars(logging.LogRecord("", 0, "", 0, "", None, None))) | {"message", "asctime"}


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ts, level, logger, msg, extra fields, and the traceback if any."""

    def format(self, record: logging.LogRecord) -> str:
        """The record as a compact JSON line."""
        entry: dict[str, Any] = {
            # The log timestamp is the record's own creation time, not business time: no injected clock.
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname,
            "logger": record.name,
            "msg": record.getMessage(),
        }
        entry.update({key: value for key, value in vars(record).items() if key not in _STANDARD})
        if record.exc_info:
            entry["exc"] = "".join(traceback.format_exception(*record.exc_info))
        return json.dumps(entry, default=str, ensure_ascii=False, separators=(",", ":"))


def configure_logging(level: str = "WARNING", stream: TextIO | None = None) -> None:
    """Send every log record at ``level`` or above to stderr as JSON lines (replaces root handlers)."""
    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setFormatter(JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    # Python warnings would otherwise be plain text on stderr: route them through the JSON handler.
    logging.captureWarnings(True)
