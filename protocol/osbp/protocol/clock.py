"""The one injectable clock of the OSBP core.

Everything that needs "now" (mandate expiry, approval TTLs, idempotency leases, audit timestamps) takes a
:class:`Clock`. :class:`SystemClock` is the only place in the project that reads the wall clock;
:class:`FixedClock` freezes and advances time in tests.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "FixedClock", "SystemClock"]


@runtime_checkable
class Clock(Protocol):
    """A source of the current instant as an aware datetime."""

    def now(self) -> datetime:
        """The current instant, timezone-aware."""
        ...


class SystemClock:
    """The real clock: aware UTC ``datetime.now``."""

    def now(self) -> datetime:
        """The current instant in UTC."""
        return datetime.now(UTC)


class FixedClock:
    """A frozen clock that moves only when told to (thread-safe)."""

    def __init__(self, at: datetime) -> None:
        if at.tzinfo is None or at.utcoffset() is None:
            raise ValueError("FixedClock needs an aware datetime")
        self._at = at
        self._lock = threading.Lock()

    def now(self) -> datetime:
        """The frozen instant."""
        with self._lock:
            return self._at

    def advance(self, delta: timedelta) -> datetime:
        """Move the clock forward by ``delta`` and return the new instant."""
        with self._lock:
            self._at = self._at + delta
            return self._at

    def set(self, at: datetime) -> None:
        """Jump to ``at`` (aware)."""
        if at.tzinfo is None or at.utcoffset() is None:
            raise ValueError("FixedClock needs an aware datetime")
        with self._lock:
            self._at = at
