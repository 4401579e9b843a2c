"""The garbage collector paused while a start-up builds long-lived objects, which are then frozen.

An import of the MCP SDK, pydantic models, FastAPI or the seed creates hundreds of thousands of objects and
next to no garbage, so the collector's passes over them are pure start-up cost; frozen (``gc.freeze``),
they are skipped by every later collection too, instead of being traversed by the first ones after the
pause. One helper for the ``osbp`` command, the MCP server and the demo; the platform (which imports
nothing of ours) has its own in ``osbp.backend.cli``.
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
