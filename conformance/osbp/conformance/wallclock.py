"""Time and duration formats as the battery grades them, independent of the host's zone files.

Merchant wall-clock strings carry no offset; instants carry Z or an offset; durations are ISO 8601. Zones
come from the `tzdata` package so a grade never depends on the machine running the battery.
"""

from __future__ import annotations

import datetime as dt
import re
from functools import cache
from importlib import resources
from zoneinfo import ZoneInfo

__all__ = [
    "clock_forms",
    "format_instant",
    "format_wall_clock",
    "iso_duration_seconds",
    "parse_instant",
    "parse_wall_clock",
    "wall_clock_to_instants",
    "zone",
]

_INSTANT = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})$")
_WALL_CLOCK = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d+)?)?$")
_DURATION = re.compile(
    r"^P(?!$)(?:(?P<y>\d+)Y)?(?:(?P<mo>\d+)M)?(?:(?P<w>\d+)W)?(?:(?P<d>\d+)D)?"
    r"(?:T(?=\d)(?:(?P<h>\d+)H)?(?:(?P<mi>\d+)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?$"
)


@cache
def zone(name: str) -> ZoneInfo:
    """The IANA zone `name` from the tzdata package (raises `ValueError` for an unknown name)."""
    parts = name.split("/")
    if not all(re.fullmatch(r"[A-Za-z0-9_+\-]+", part) for part in parts):
        raise ValueError(f"not an IANA zone name: {name!r}")
    try:
        with resources.files("tzdata.zoneinfo").joinpath(*parts).open("rb") as data:
            return ZoneInfo.from_file(data, key=name)
    except (FileNotFoundError, IsADirectoryError, ValueError) as exc:
        raise ValueError(f"unknown IANA zone {name!r}") from exc


def parse_instant(text: object) -> dt.datetime | None:
    """An RFC 3339 instant with Z or an offset, or None."""
    if not isinstance(text, str) or not _INSTANT.match(text):
        return None
    try:
        return dt.datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError:
        return None


def parse_wall_clock(text: object) -> dt.datetime | None:
    """A merchant wall-clock `YYYY-MM-DDTHH:MM[:SS]` with no offset, or None."""
    if not isinstance(text, str) or not _WALL_CLOCK.match(text):
        return None
    try:
        return dt.datetime.fromisoformat(text)
    except ValueError:
        return None


def format_wall_clock(value: dt.datetime) -> str:
    """`YYYY-MM-DDTHH:MM:SS`, the protocol's wall-clock form."""
    return value.strftime("%Y-%m-%dT%H:%M:%S")


def format_instant(value: dt.datetime) -> str:
    """A UTC instant with a Z suffix."""
    return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def wall_clock_to_instants(local: dt.datetime, timezone: str) -> set[dt.datetime]:
    """The instants a wall-clock can denote in `timezone` (two inside a DST fold, either accepted)."""
    tz = zone(timezone)
    return {local.replace(tzinfo=tz, fold=fold).astimezone(dt.UTC) for fold in (0, 1)}


def iso_duration_seconds(text: object) -> float | None:
    """The length of an ISO 8601 duration without years or months, or None when it is not one."""
    if not isinstance(text, str):
        return None
    match = _DURATION.match(text)
    if match is None or match["y"] or match["mo"]:
        return None
    parts = {key: float(value) for key, value in match.groupdict().items() if value}
    return (
        parts.get("w", 0) * 604800
        + parts.get("d", 0) * 86400
        + parts.get("h", 0) * 3600
        + parts.get("mi", 0) * 60
        + parts.get("s", 0)
    )


def clock_forms(value: dt.time) -> tuple[str, ...]:
    """How prose may write a time of day: 24-hour `14:30` or 12-hour `2:30`."""
    twelve = value.hour % 12 or 12
    return (
        f"{value.hour:02d}:{value.minute:02d}",
        f"{value.hour}:{value.minute:02d}",
        f"{twelve}:{value.minute:02d}",
    )
