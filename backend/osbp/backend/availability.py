"""Availability, computed (never stored), DST-correct.

For a service, a merchant-local date and optional location/provider, a slot is a start time that:
- starts on that local date, inside an opening period of the location (periods opening the day before
  and running past midnight count), on the organization's slot grid counted from the period's open;
- fits the whole duration (elapsed time) before the period closes;
- belongs to a provider who works at the location and offers the service, at a location that offers it;
- does not overlap any active appointment of that provider (any service, any location), unless the
  organization permits parallel bookings;
- starts strictly after the platform clock's now.

DST rule: a local time that does not exist (spring-forward gap) is never offered; a local time that
occurs twice (fall-back) means its first occurrence (fold=0, the earlier instant) and is offered once.

Overlap checks are bounded index range scans on (provider_id, starts_utc): no appointment lasts longer
than `MAX_DURATION_MINUTES`, so only starts within that much before the window can overlap it.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

from sqlmodel import Session, col, select

from osbp.backend.models import ACTIVE_STATUSES, Appointment, Location, Organization, Provider, Service
from osbp.backend.problems import ProblemError
from osbp.backend.tz import zone

__all__ = [
    "MAX_DURATION_MINUTES",
    "Opening",
    "Slot",
    "busy_intervals",
    "check_bookable",
    "eligible",
    "find_slots",
    "local_openings",
    "native_weekday",
    "to_instant",
]

#: The longest appointment the platform accepts; bounds every overlap query.
MAX_DURATION_MINUTES = 24 * 60


@dataclass(frozen=True)
class Opening:
    """One candidate start: wall-clock start and end (naive, local) and the UTC instants (epoch s).

    ``date``/``time`` and ``end_date``/``end_time`` are the wall-clock as the API writes it
    (``YYYY-MM-DD``, ``HH:MM``), rendered once with the opening.
    """

    local_start: datetime
    local_end: datetime
    start_utc: int
    end_utc: int
    date: str = field(init=False)
    time: str = field(init=False)
    end_date: str = field(init=False)
    end_time: str = field(init=False)

    def __post_init__(self) -> None:
        wall = {
            "date": self.local_start.date().isoformat(),
            "time": self.local_start.strftime("%H:%M"),
            "end_date": self.local_end.date().isoformat(),
            "end_time": self.local_end.strftime("%H:%M"),
        }
        for name, value in wall.items():
            object.__setattr__(self, name, value)  # a frozen dataclass's derived fields


@dataclass(frozen=True)
class Slot:
    """An offered slot: where, with whom, when."""

    location: Location
    provider: Provider
    opening: Opening


def native_weekday(day: date) -> int:
    """The platform's weekday number: 0 = Sunday … 6 = Saturday."""
    return (day.weekday() + 1) % 7


def to_instant(local: datetime, tz: ZoneInfo) -> datetime | None:
    """The UTC instant of a naive local time (first occurrence if ambiguous), or None if it does not exist."""
    aware = local.replace(tzinfo=tz, fold=0)
    instant = aware.astimezone(UTC)
    if instant.astimezone(tz).replace(tzinfo=None) != local:
        return None
    return instant


#: Weekly hours as a hashable key: ``(weekday, open, close)`` per entry, in the stored order.
_HoursKey = tuple[tuple[int | str, str, str], ...]


def _periods(hours: _HoursKey, day: date) -> list[tuple[datetime, datetime]]:
    """Opening periods (naive local open, close) that can hold a start on `day`."""
    periods = []
    for offset in (-1, 0):
        opening_day = day + timedelta(days=offset)
        for weekday, opens, closes in hours:
            if weekday != native_weekday(opening_day):
                continue
            open_t, close_t = time.fromisoformat(opens), time.fromisoformat(closes)
            start = datetime.combine(opening_day, open_t)
            end_day = opening_day if close_t > open_t else opening_day + timedelta(days=1)
            end = datetime.combine(end_day, close_t)
            if offset == 0 or end.date() == day:
                periods.append((start, end))
    return sorted(periods)


def local_openings(
    hours: Iterable[dict[str, str | int]], tz: ZoneInfo, day: date, grid_minutes: int, duration_minutes: int
) -> list[Opening]:
    """Every grid start on local `day` whose whole duration fits inside its opening period.

    A pure function of its arguments, so answers are memoized (keyed by every input): availability and
    every create ask for the same day's openings again and again.
    """
    key = tuple((entry["weekday"], str(entry["open"]), str(entry["close"])) for entry in hours)
    return list(_openings(key, tz, day, grid_minutes, duration_minutes))


@functools.lru_cache(maxsize=512)  # a few hundred (hours, day, grid, duration) combinations in use
def _openings(
    hours: _HoursKey, tz: ZoneInfo, day: date, grid_minutes: int, duration_minutes: int
) -> tuple[Opening, ...]:
    grid, duration = timedelta(minutes=grid_minutes), timedelta(minutes=duration_minutes)
    openings: dict[datetime, Opening] = {}
    for period_open, period_close in _periods(hours, day):
        close_instant = period_close.replace(tzinfo=tz, fold=0).astimezone(UTC)
        cursor = period_open
        while cursor < period_close:
            if cursor.date() == day and cursor not in openings:
                start = to_instant(cursor, tz)
                if start is not None and start + duration <= close_instant:
                    end = start + duration
                    openings[cursor] = Opening(
                        local_start=cursor,
                        local_end=end.astimezone(tz).replace(tzinfo=None),
                        start_utc=int(start.timestamp()),
                        end_utc=int(end.timestamp()),
                    )
            cursor += grid
    return tuple(openings[key] for key in sorted(openings))


def busy_intervals(
    session: Session, provider_ids: Sequence[str], lo_utc: int, hi_utc: int
) -> dict[str, list[tuple[int, int]]]:
    """Active appointments of these providers overlapping [lo, hi), as (start, end) epoch pairs."""
    busy: dict[str, list[tuple[int, int]]] = {provider_id: [] for provider_id in provider_ids}
    if not provider_ids:
        return busy
    horizon = lo_utc - MAX_DURATION_MINUTES * 60
    query = select(Appointment.provider_id, Appointment.starts_utc, Appointment.ends_utc).where(
        col(Appointment.provider_id).in_(provider_ids),
        col(Appointment.starts_utc) >= horizon,
        col(Appointment.starts_utc) < hi_utc,
        col(Appointment.ends_utc) > lo_utc,
        col(Appointment.status).in_(ACTIVE_STATUSES),
    )
    for provider_id, starts, ends in session.exec(query):
        busy[provider_id].append((starts, ends))
    return busy


def _overlaps(opening: Opening, intervals: Iterable[tuple[int, int]]) -> bool:
    return any(start < opening.end_utc and end > opening.start_utc for start, end in intervals)


def eligible(service: Service, location: Location, provider: Provider) -> bool:
    """True when the location offers the service and the provider works there and offers it."""
    return (
        location.id in service.location_ids
        and location.id in provider.location_ids
        and service.id in provider.service_ids
    )


def find_slots(
    session: Session,
    *,
    organization: Organization,
    service: Service,
    locations: Sequence[Location],
    providers: Sequence[Provider],
    day: date,
    now: datetime,
) -> list[Slot]:
    """The offered slots for `service` on local `day` among these locations and providers."""
    now_epoch = now.timestamp()
    candidates: list[Slot] = []
    by_id = sorted(providers, key=lambda item: item.id)
    for location in sorted(locations, key=lambda item: item.id):
        staff = [provider for provider in by_id if eligible(service, location, provider)]
        if not staff:
            continue
        openings = local_openings(
            location.hours,
            zone(location.time_zone),
            day,
            organization.slot_interval_minutes,
            service.duration_minutes,
        )
        for opening in openings:
            if opening.start_utc > now_epoch:
                candidates.extend(Slot(location, provider, opening) for provider in staff)
    if not candidates or organization.parallel_bookings:
        return candidates
    lo = min(slot.opening.start_utc for slot in candidates)
    hi = max(slot.opening.end_utc for slot in candidates)
    busy = busy_intervals(session, sorted({slot.provider.id for slot in candidates}), lo, hi)
    return [slot for slot in candidates if not _overlaps(slot.opening, busy[slot.provider.id])]


def check_bookable(
    session: Session,
    *,
    organization: Organization,
    service: Service,
    location: Location,
    provider: Provider,
    day: date,
    start: time,
    now: datetime,
) -> Opening:
    """The opening for this exact request, or why it cannot be booked (422, 409 unavailable/taken)."""
    if not eligible(service, location, provider):
        raise ProblemError(
            "provider_not_eligible",
            f"Provider {provider.id} does not offer {service.id} at {location.id}.",
        )
    wanted = datetime.combine(day, start)
    tz = zone(location.time_zone)
    if to_instant(wanted, tz) is None:
        raise ProblemError(
            "slot_unavailable", f"{wanted:%Y-%m-%d %H:%M} does not exist in {location.time_zone}."
        )
    openings = local_openings(
        location.hours, tz, day, organization.slot_interval_minutes, service.duration_minutes
    )
    opening = next((item for item in openings if item.local_start == wanted), None)
    if opening is None:
        raise ProblemError(
            "slot_unavailable",
            f"{wanted:%Y-%m-%d %H:%M} is not an offered start for {service.id} at {location.id} "
            "(closed, outside opening hours, or off the slot grid).",
        )
    if opening.start_utc <= now.timestamp():
        raise ProblemError("slot_unavailable", f"{wanted:%Y-%m-%d %H:%M} is in the past.")
    if not organization.parallel_bookings:
        busy = busy_intervals(session, [provider.id], opening.start_utc, opening.end_utc)
        if _overlaps(opening, busy[provider.id]):
            raise ProblemError(
                "slot_taken",
                f"Provider {provider.id} already has an appointment overlapping {wanted:%Y-%m-%d %H:%M}.",
            )
    return opening
