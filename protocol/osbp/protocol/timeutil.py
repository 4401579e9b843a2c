"""Time discipline: merchant wall-clock ↔ RFC 3339 instants, zone loading, ISO 8601 durations.

**Zones.** :func:`load_zone` is the one zone loader of the OSBP core. It reads the IANA data shipped in
the ``tzdata`` package through ``ZoneInfo.from_file`` (cached), so results never depend on the host's
system zone files or ``TZ``; an unknown zone name gives ``None`` and callers leave instants absent
rather than guess.

**Two conventions, never mixed.** Wall-clock strings (``2026-05-05T13:00:00``; also ``…T13:00``) carry no
offset and are interpreted in the merchant's IANA zone; :func:`parse_wall_clock` rejects any ``Z`` or
offset. Instants are RFC 3339 with ``Z`` or an explicit ``±HH:MM`` offset; :func:`parse_instant` rejects
naked strings. Emitted instants are UTC with ``Z`` and whole seconds (``2026-05-05T20:00:00Z``); emitted
wall-clock values are ``YYYY-MM-DDTHH:MM:SS`` with no offset.

**DST rule** (the "compatible" disambiguation of RFC 5545 and JavaScript Temporal):

* *ambiguous* local times (a repeated hour, autumn) resolve to the **earlier** instant (``fold=0``);
* *nonexistent* local times (a skipped gap, spring) are **shifted forward by the length of the gap**:
  the wall-clock is read with the offset in force before the transition. 02:30 on 2026-03-08 in
  America/New_York becomes 03:30 EDT (07:30Z); Australia/Lord_Howe's 30-minute gap shifts by 30 minutes.

**Durations** are emitted in hours-and-minutes normal form: ``PT45M``, ``PT1H``, ``PT1H30M``, ``PT6H``
(``PT0M`` for zero); :func:`parse_duration_minutes` also reads the spec's ``PT60M`` and day forms.
"""

from __future__ import annotations

import re
from datetime import UTC, date, datetime, time, timedelta, tzinfo
from functools import lru_cache
from importlib.resources import files
from zoneinfo import ZoneInfo

__all__ = [
    "combine_wall_clock",
    "format_instant",
    "format_wall_clock",
    "has_offset",
    "instant_to_wall_clock",
    "load_zone",
    "minutes_to_duration",
    "parse_date",
    "parse_duration_minutes",
    "parse_instant",
    "parse_time",
    "parse_wall_clock",
    "resolve_local",
    "wall_clock_to_instant",
]

_ZONE_NAME = re.compile(r"^[A-Za-z0-9_+\-]+(/[A-Za-z0-9_+\-]+)*$")
_WALL_CLOCK = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?$")
_INSTANT = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d+)?(Z|[+-]\d{2}:\d{2})$", re.IGNORECASE)
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")
_TIME = re.compile(r"^\d{2}:\d{2}(:\d{2})?$")
_OFFSET_TAIL = re.compile(r"(Z|[+-]\d{2}(:?\d{2})?)$", re.IGNORECASE)
_DURATION = re.compile(r"^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)S)?)?$")


@lru_cache(maxsize=256)
def load_zone(name: str) -> ZoneInfo | None:
    """The IANA zone ``name`` from the ``tzdata`` package (cached), or ``None`` if there is no such zone."""
    if not _ZONE_NAME.match(name) or ".." in name:
        return None
    resource = files("tzdata").joinpath("zoneinfo", *name.split("/"))
    if not resource.is_file():
        return None
    with resource.open("rb") as handle:
        try:
            return ZoneInfo.from_file(handle, key=name)
        except ValueError:  # a data file that is not a TZif zone (e.g. a table like "zone.tab")
            return None


def has_offset(value: str) -> bool:
    """True when a date-time string ends in ``Z`` or a UTC offset (the mark of an instant)."""
    _, separator, tail = value.upper().partition("T")
    return bool(separator) and bool(_OFFSET_TAIL.search(tail))


def parse_wall_clock(value: str) -> datetime | None:
    """A naive datetime from a merchant wall-clock string; ``None`` if malformed or carrying an offset."""
    if not _WALL_CLOCK.match(value):
        return None
    try:
        return datetime.fromisoformat(value)
    except ValueError:
        return None


def parse_instant(value: str) -> datetime | None:
    """An aware datetime from an RFC 3339 instant; ``None`` if malformed or missing ``Z``/offset."""
    match = _INSTANT.match(value)
    if match is None:
        return None
    whole, fraction, offset = match.groups()
    # Sub-microsecond digits are truncated: Python datetimes stop at microseconds.
    micro = (fraction or "")[:7]
    text = f"{whole}{micro}{'+00:00' if offset.upper() == 'Z' else offset}"
    try:
        return datetime.fromisoformat(text.replace("t", "T"))
    except ValueError:
        return None


def parse_date(value: str) -> date | None:
    """A calendar date from ``YYYY-MM-DD``; ``None`` otherwise."""
    if not _DATE.match(value):
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        return None


def parse_time(value: str) -> time | None:
    """A wall-clock time from ``HH:MM`` or ``HH:MM:SS`` (no offset); ``None`` otherwise."""
    if not _TIME.match(value):
        return None
    try:
        return time.fromisoformat(value)
    except ValueError:
        return None


def combine_wall_clock(day: str, clock: str) -> str | None:
    """booking.create ``date`` + ``time`` as one wall-clock string (``2026-05-05T13:00:00``), or ``None``."""
    parsed_day, parsed_time = parse_date(day), parse_time(clock)
    if parsed_day is None or parsed_time is None:
        return None
    return format_wall_clock(datetime.combine(parsed_day, parsed_time))


def format_wall_clock(value: datetime) -> str:
    """``YYYY-MM-DDTHH:MM:SS`` of the wall-clock fields of ``value`` (tzinfo ignored, never printed)."""
    return value.replace(tzinfo=None, microsecond=0).isoformat(timespec="seconds")


def format_instant(value: datetime) -> str:
    """An aware datetime as a UTC RFC 3339 instant with ``Z`` (``2026-05-05T20:00:00Z``)."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError("format_instant needs an aware datetime")
    return value.astimezone(UTC).replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")


def resolve_local(local: datetime, zone: tzinfo) -> datetime:
    """The aware instant of a naive merchant wall-clock under the module's DST rule (earlier / shift)."""
    # fold=0 gives the earlier of two ambiguous instants, and for a gap time the pre-transition offset,
    # which is exactly "shift forward by the gap" once normalised through UTC.
    return local.replace(tzinfo=zone, fold=0).astimezone(UTC)


def wall_clock_to_instant(local: str | datetime, timezone: str) -> str | None:
    """Merchant wall-clock + IANA zone -> UTC RFC 3339 instant; ``None`` if either is invalid or unknown."""
    zone = load_zone(timezone)
    naive = parse_wall_clock(local) if isinstance(local, str) else local
    if zone is None or naive is None or naive.tzinfo is not None:
        return None
    return format_instant(resolve_local(naive, zone))


def instant_to_wall_clock(instant: str | datetime, timezone: str) -> str | None:
    """RFC 3339 instant -> merchant wall-clock in the IANA zone; ``None`` if either is invalid or unknown."""
    zone = load_zone(timezone)
    aware = parse_instant(instant) if isinstance(instant, str) else instant
    if zone is None or aware is None or aware.utcoffset() is None:
        return None
    return format_wall_clock(aware.astimezone(zone))


def minutes_to_duration(minutes: int) -> str:
    """An ISO 8601 duration in hours-and-minutes normal form (``PT45M``, ``PT1H30M``, ``PT6H``)."""
    if minutes < 0:
        raise ValueError("durations are never negative")
    hours, rest = divmod(minutes, 60)
    if hours and rest:
        return f"PT{hours}H{rest}M"
    if hours:
        return f"PT{hours}H"
    return f"PT{rest}M"


def parse_duration_minutes(value: str) -> int | None:
    """Whole minutes of an ISO 8601 day/time duration (``PT60M``, ``PT1H30M``, ``P1D``); else ``None``."""
    match = _DURATION.match(value)
    if match is None or value in ("P", "PT") or value.endswith("T"):
        return None
    days, hours, minutes, seconds = (int(part) if part else 0 for part in match.groups())
    total = timedelta(days=days, hours=hours, minutes=minutes, seconds=seconds)
    whole, remainder = divmod(int(total.total_seconds()), 60)
    return whole if remainder == 0 else None
