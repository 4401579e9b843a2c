"""Waking the webhook worker: from any thread (a `def` route runs in the thread pool) into its event loop."""

from __future__ import annotations

import asyncio
import threading

__all__ = ["Wakeup"]


class Wakeup:
    """Wake the worker's event loop from any thread (a `def` route runs in the thread pool)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._event: asyncio.Event | None = None

    def bind(self, loop: asyncio.AbstractEventLoop) -> asyncio.Event:
        """The event the worker on `loop` waits on (until `unbind`)."""
        with self._lock:
            self._loop, self._event = loop, asyncio.Event()
            return self._event

    @property
    def bound(self) -> bool:
        """Whether a worker is listening."""
        with self._lock:
            return self._loop is not None

    def unbind(self) -> None:
        """The worker stopped: wake-ups are dropped."""
        with self._lock:
            self._loop = self._event = None

    def set(self) -> None:
        """Ask the worker to look for due deliveries now."""
        with self._lock:
            if self._loop is not None and self._event is not None and not self._loop.is_closed():
                self._loop.call_soon_threadsafe(self._event.set)
