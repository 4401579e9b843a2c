"""The platform-neutral upstream-metadata capture channel for the audit trail.

The server wraps each tool call in :func:`capture_upstream`. The adapter's single HTTP helper calls
:func:`reserve_upstream` when it *issues* a request and fills the returned :class:`UpstreamSlot` with the
response's :class:`~osbp.protocol.models.UpstreamMeta` when the response arrives; a request that gets no
response leaves its slot empty. Positions are therefore in issue order, which is deterministic even when
an adapter awaits several reads at once (``asyncio.gather`` starts its awaitables in argument order),
while arrival order is a race. :func:`record_upstream` reserves and fills in one step, for adapters
without concurrent calls.

Capture is scoped by a ContextVar, so overlapping tool calls (separate asyncio tasks) never see each
other's metadata, while tasks a tool call spawns share its capture; reserving or recording outside a
capture is a no-op. ``capture.last`` is the spec's ``upstream``: the metadata of the last-issued upstream
call that got a response (``None`` when the tool answered locally or no call got a response).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

from osbp.protocol.models import UpstreamMeta

__all__ = ["UpstreamCapture", "UpstreamSlot", "capture_upstream", "record_upstream", "reserve_upstream"]


@dataclass
class UpstreamCapture:
    """The upstream calls of one tool call, one position per issued request, in issue order."""

    _positions: list[UpstreamMeta | None] = field(default_factory=list, init=False)

    def reserve(self) -> UpstreamSlot:
        """The next position, taken now (when the request is issued) and filled when it is answered."""
        self._positions.append(None)
        return UpstreamSlot(self, len(self._positions) - 1)

    def fill(self, position: int, meta: UpstreamMeta) -> None:
        """Put the response metadata of the request issued at ``position`` in its place."""
        self._positions[position] = meta

    @property
    def calls(self) -> list[UpstreamMeta]:
        """The answered calls' metadata in issue order (requests without a response are left out)."""
        return [meta for meta in self._positions if meta is not None]

    @property
    def last(self) -> UpstreamMeta | None:
        """The last-issued call that got a response, or ``None`` if the call answered locally."""
        return next((meta for meta in reversed(self._positions) if meta is not None), None)


@dataclass(frozen=True, slots=True)
class UpstreamSlot:
    """One issued request's position in the active capture (``capture`` is ``None`` outside one)."""

    capture: UpstreamCapture | None
    position: int

    def fill(self, meta: UpstreamMeta) -> None:
        """Record the response metadata at this request's position; a no-op outside a capture."""
        if self.capture is not None:
            self.capture.fill(self.position, meta)


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


def reserve_upstream() -> UpstreamSlot:
    """Take the next issue-order position in the active capture; call it just before sending a request."""
    capture = _current.get()
    return capture.reserve() if capture is not None else UpstreamSlot(None, -1)


def record_upstream(meta: UpstreamMeta) -> None:
    """Reserve and fill one position at once (a sequential call); a no-op outside :func:`capture_upstream`."""
    reserve_upstream().fill(meta)
