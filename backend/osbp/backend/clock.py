"""The platform clock: the one place that reads the wall clock.

Real by default; frozen at an instant when configured (`--now`) so demos and traces are deterministic. The
test-only surface can set or advance it. Availability, verification expiry, idempotency retention and
appointment status all read this clock; nothing else reads the time of day.
"""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

__all__ = ["PlatformClock"]


class PlatformClock:
    """A thread-safe clock: real time shifted by an offset, or a frozen instant."""

    def __init__(self, fixed: datetime | None = None) -> None:
        self._lock = threading.Lock()
        self._initial = fixed
        self._fixed = fixed
        self._offset = timedelta(0)

    def now(self) -> datetime:
        """The platform's current instant (aware, UTC)."""
        with self._lock:
            if self._fixed is not None:
                return self._fixed
            return datetime.now(UTC) + self._offset

    def set(self, instant: datetime) -> datetime:
        """Freeze the clock at `instant` and return it."""
        with self._lock:
            self._fixed = instant.astimezone(UTC)
            return self._fixed

    def advance(self, seconds: float) -> datetime:
        """Move the clock forward (or back) by `seconds`, frozen or not, and return the new instant."""
        with self._lock:
            if self._fixed is not None:
                self._fixed += timedelta(seconds=seconds)
            else:
                self._offset += timedelta(seconds=seconds)
        return self.now()

    def restore(self) -> None:
        """Return to the starting setting (frozen at the configured instant, or real time)."""
        with self._lock:
            self._fixed = self._initial
            self._offset = timedelta(0)
