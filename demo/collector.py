"""The garbage collector paused while a start-up builds long-lived objects, which are then frozen.

Importing and building the platform's web stack (the demo starts it in a thread) creates hundreds of
thousands of objects (pydantic models and their validators, FastAPI's routes, SQLAlchemy's mappers, the
seed) and next to no garbage, so the collector's passes over them are pure start-up cost. The demo's own
imports get the same treatment from ``osbp.cli``, which imports every subcommand this way. Frozen
(``gc.freeze``), they are skipped by every later collection too, instead of being traversed by the first
ones after the pause.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """No garbage collection inside the block; what exists at its end is frozen, and collection resumes."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if collecting:
            gc.enable()
