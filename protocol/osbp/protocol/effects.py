"""The write-ahead seam: what the caller records, durably, before the core sends an effect to the platform.

A mutation that cannot be explained must not happen. So right before booking.create's platform create
(:meth:`~osbp.protocol.booking.BookingPipeline`, each time it calls ``place_booking``) the core awaits
:func:`before_effect`; the caller (the MCP server, per tool call) installs the journal that answers it with
:func:`journaling`. The journal makes the record that authorizes the effect durable and returns ``None``,
or returns the Problem to answer instead, and then nothing is sent. Scoped by a ContextVar, so overlapping
calls never see each other's journal; without one (in-process use, tests) every effect simply proceeds.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Protocol, runtime_checkable

from osbp.protocol.models import Problem, ToolName

__all__ = ["EffectJournal", "before_effect", "journaling"]


@runtime_checkable
class EffectJournal(Protocol):
    """Records, before it happens, that the call in progress is about to send an effect to the platform."""

    async def intend(self, tool: ToolName) -> Problem | None:
        """``None`` once the authorizing record is durable; else the Problem to answer (nothing is sent)."""
        ...


_current: ContextVar[EffectJournal | None] = ContextVar("osbp_effect_journal", default=None)


@contextmanager
def journaling(journal: EffectJournal) -> Iterator[EffectJournal]:
    """Run the enclosed call with ``journal`` recording its effects before they are sent."""
    reset = _current.set(journal)
    try:
        yield journal
    finally:
        _current.reset(reset)


async def before_effect(tool: ToolName) -> Problem | None:
    """Ask the installed journal to record the effect about to be sent (``None``: go ahead)."""
    journal = _current.get()
    return None if journal is None else await journal.intend(tool)
