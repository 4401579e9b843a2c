"""The availability.find answer: the day's slots in start order, display context once, pages on request.

* **Order**: slots by merchant-local start; slots sharing a start keep the platform's order.
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
  on the first slot of each provider. Everything else stays on every slot: the create-ready ids, the
  instants, the wall-clock, the timezone, the price, the names, and the address and coordinates (their
  absence is how a slot says it is online).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from osbp.adapter import translate
from osbp.adapter.native import NativeOrganization, NativeSlot
from osbp.protocol.models import RuntimeDiagnostics, Slot
from osbp.protocol.timeutil import format_wall_clock, parse_wall_clock

__all__ = ["Page", "display_once", "page"]


@dataclass(frozen=True, slots=True)
class Page:
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


def page(
    natives: Sequence[NativeSlot],
    organization: NativeOrganization,
    *,
    earliest_start: str | None,
    limit: int | None,
) -> Page:
    """The slots of ``natives`` starting at or after ``earliest_start``: all of them without ``limit``, else
    the page of that size; only what is shown is translated."""
    # The page is chosen on the native slots' own wall-clock starts (the translation's starts_at_local,
    # written YYYY-MM-DDTHH:MM:SS, so text order is time order), so a busy day's later slots cost nothing
    # to leave out. The sort is stable: slots sharing a start keep the platform's order.
    ordered = sorted(
        ((translate.wall_clock(native.date, native.time), native) for native in natives),
        key=lambda pair: pair[0],
    )
    cut = parse_wall_clock(earliest_start) if earliest_start is not None else None
    if cut is not None:
        # Whole seconds: a start in the same second as a fractional bound is before it, so round up.
        floor = format_wall_clock(cut)
        ordered = [pair for pair in ordered if pair[0] > floor or (pair[0] == floor and not cut.microsecond)]
    end = len(ordered) if limit is None else min(limit, len(ordered))
    while 0 < end < len(ordered) and ordered[end][0] == ordered[end - 1][0]:
        end += 1
    next_start = ordered[end][0] if end < len(ordered) else None
    shown = translate.slots([native for _, native in ordered[:end]], organization)
    return Page(slots=display_once(shown), total=len(ordered), next_start=next_start)


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
