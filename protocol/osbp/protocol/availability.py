"""availability.find's protocol rules, applied by the core to whatever slots the platform port returns.

* **Input**: ``date`` a merchant-local ``YYYY-MM-DD``; ``earliest_start``, when given, a merchant-local
  wall-clock ``YYYY-MM-DDTHH:MM:SS`` with no offset. Checked before the port is called (``invalid_input``).
* **Order**: slots by merchant-local start; slots sharing a start keep the port's order.
* **earliest_start** (optional input): only slots starting at or after that merchant-local wall-clock
  value (inclusive, as the mandate's field of that name).
* **Without limit, the whole day**: every slot from ``earliest_start`` (or the day's first) to its last,
  as v0.1.0 defines the answer (a plain array of the day's slots). A v0.1.0 agent reads nothing but that
  array, so a shortened one would tell it the later slots do not exist.
* **limit** (optional input, an extension): a page holds that many slots, plus any more that share the
  last one's start, so a page always ends between two start times and the next page, from the first
  start not shown, resumes exactly there: across pages every slot comes exactly once.
* **A partial page says so** in ``osbp_runtime.message``, the one field v0.1.0 defines for how an answer
  was produced: how many slots there were, that the later ones are not shown (never that they are
  taken), and the exact ``earliest_start="<starts_at_local>"`` that gets the next page (a fixed form a
  program can match, as the approval gate's ``approval.token="<token>"``). Only an agent that asked for
  a page gets one; a complete answer carries no notice.
* **Display context once**: ``schedule_hours`` on the first slot of each schedule, ``provider_image_url``
  on the first slot of each provider, on each answer. Everything else stays on every slot.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from osbp.protocol.models import AvailabilityFindInput, Problem, RuntimeDiagnostics, Slot
from osbp.protocol.problems import ExtensionCode, ProblemCode, problem
from osbp.protocol.timeutil import parse_date, parse_wall_clock

__all__ = ["AvailabilityPage", "check_find_input", "display_once", "page_slots"]

_DATE_FORMAT = "date must be a merchant-local date YYYY-MM-DD."
_EARLIEST_START_FORMAT = (
    "earliest_start must be a merchant-local wall-clock YYYY-MM-DDTHH:MM:SS with no offset, such as a slot's "
    "starts_at_local."
)


@dataclass(frozen=True, slots=True)
class AvailabilityPage:
    """One answer's slots and, when later slots were left out, the notice that says how to get them."""

    slots: list[Slot]
    total: int
    next_start: str | None = None

    @property
    def notice(self) -> RuntimeDiagnostics | None:
        """The ``osbp_runtime`` of a partial answer (``None`` when the answer holds every slot)."""
        if self.next_start is None:
            return None
        shown, rest = len(self.slots), self.total - len(self.slots)
        return RuntimeDiagnostics(
            message=(
                f"Partial list: the first {shown} of {self.total} open slots. The {rest} later slots, from "
                f"{self.next_start} merchant-local, are not shown here, not taken: to see them, call "
                "availability.find again with the same arguments plus "
                f'earliest_start="{self.next_start}".'
            )
        )


def check_find_input(inp: AvailabilityFindInput) -> Problem | None:
    """Why availability.find's ``date`` or ``earliest_start`` is malformed, or ``None`` when both are fine."""
    if parse_date(inp.date) is None:
        return problem(ExtensionCode.INVALID_INPUT, _DATE_FORMAT)
    if inp.earliest_start is not None and parse_wall_clock(inp.earliest_start) is None:
        return problem(ExtensionCode.INVALID_INPUT, _EARLIEST_START_FORMAT)
    return None


def page_slots(
    slots: Sequence[Slot], *, earliest_start: str | None, limit: int | None
) -> AvailabilityPage | Problem:
    """The slots starting at or after ``earliest_start`` in start order: all of them without ``limit``, else
    the page of that size, display context once. A slot whose ``starts_at_local`` is not a merchant
    wall-clock is the adapter's bug (``internal_adapter_error``)."""
    starts: list[tuple[datetime, Slot]] = []
    for slot in slots:
        start = parse_wall_clock(slot.starts_at_local)
        if start is None:
            return problem(
                ProblemCode.INTERNAL_ADAPTER_ERROR,
                "The adapter returned a slot whose starts_at_local is not a merchant-local wall-clock "
                "YYYY-MM-DDTHH:MM:SS; the failure was recorded.",
            )
        starts.append((start, slot))
    # The sort is stable: slots sharing a start keep the port's order.
    ordered = sorted(starts, key=lambda pair: pair[0])
    cut = parse_wall_clock(earliest_start) if earliest_start is not None else None
    if cut is not None:
        ordered = [pair for pair in ordered if pair[0] >= cut]
    end = len(ordered) if limit is None else min(limit, len(ordered))
    while 0 < end < len(ordered) and ordered[end][0] == ordered[end - 1][0]:
        end += 1
    next_start = ordered[end][1].starts_at_local if end < len(ordered) else None
    shown = display_once([slot for _, slot in ordered[:end]])
    return AvailabilityPage(slots=shown, total=len(ordered), next_start=next_start)


def display_once(slots: Sequence[Slot]) -> list[Slot]:
    """``slots`` with each piece of repeated display context kept only where it first appears."""
    schedules: set[str] = set()
    providers: set[str | None] = set()
    out: list[Slot] = []
    for slot in slots:
        drop: dict[str, None] = {}
        if slot.schedule_id in schedules:
            drop["schedule_hours"] = None
        if slot.provider_id in providers:
            drop["provider_image_url"] = None
        schedules.add(slot.schedule_id)
        providers.add(slot.provider_id)
        out.append(slot.model_copy(update=drop) if drop else slot)
    return out
