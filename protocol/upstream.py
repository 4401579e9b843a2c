"""The platform-neutral upstream-metadata capture channel for the audit trail.

The server wraps each tool call in :func:`capture_upstream`; the adapter's single HTTP helper calls
:func:`record_upstream` for every response. Capture is scoped by a ContextVar, so overlapping tool calls
(separate asyncio tasks) never see each other's metadata, and recording outside a capture is a no-op.
``capture.last`` is the spec's ``upstream`` (the most recent upstream call observed during the tool call;
``None`` when the tool answered locally).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from osbp.protocol.models import UpstreamMeta

__all__ = ["UpstreamCapture", "capture_upstream", "record_upstream"]


@dataclass
class UpstreamCapture:
    """The upstream responses observed during one tool call, in order."""

    calls: list[UpstreamMeta] = field(default_factory=list)

    @property
    def last(self) -> UpstreamMeta | None:
        """The most recent upstream response, or ``None`` if the call answered locally."""
        return self.calls[-1] if self.calls else None


_current: ContextVar[UpstreamCapture | None] = ContextVar("osbp_upstream_capture", default=None)


@contextmanager
def capture_upstream() -> Iterator[UpstreamCapture]:
    """Collect the UpstreamMeta recorded inside this block (nested captures each see their own calls)."""
    capture = UpstreamCapture()
    token = _current.set(capture)
    try:
        yield capture
    finally:
        _current.reset(token)


def record_upstream(meta: UpstreamMeta) -> None:
    """Record one upstream response into the active capture; a no-op outside :func:`capture_upstream`."""
    capture = _current.get()
    if capture is not None:
        capture.calls.append(meta)
