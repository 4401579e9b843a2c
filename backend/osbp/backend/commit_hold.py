"""The slow-commit fault's hook: hold a write transaction's lock for a while before it commits.

:func:`holding_commits` (used by the ``slow_commit`` fault, :mod:`osbp.backend.faults`) marks the request
being served; :func:`hold_before_commit`, called by every write transaction just before its commit, sleeps
that long while the transaction still holds SQLite's write lock, so concurrent writers really wait.
A context variable carries the mark, so it follows the request into the worker thread and no further.
"""

from __future__ import annotations

import contextvars
import time
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["hold_before_commit", "holding_commits"]

_HOLD_S: contextvars.ContextVar[float] = contextvars.ContextVar("bookwell_commit_hold_s", default=0.0)


@contextmanager
def holding_commits(seconds: float) -> Iterator[None]:
    """Within the block, each write transaction holds its lock ``seconds`` before committing."""
    token = _HOLD_S.set(seconds)
    try:
        yield
    finally:
        _HOLD_S.reset(token)


def hold_before_commit() -> None:
    """Sleep the held time, if the request being served is under a slow-commit fault."""
    seconds = _HOLD_S.get()
    if seconds > 0:
        # A real sleep on purpose: the transaction (and its write lock) is held in this worker thread.
        time.sleep(seconds)
