"""IANA time zones read from the `tzdata` package, so results never depend on the host's zone files."""

from __future__ import annotations

import functools
import importlib.resources
from zoneinfo import ZoneInfo

__all__ = ["UnknownZoneError", "zone"]


class UnknownZoneError(LookupError):
    """The name is not an IANA zone shipped in `tzdata` (a seed-data bug, never user input)."""


@functools.cache
def zone(name: str) -> ZoneInfo:
    """The zone called `name`, loaded from the bundled `tzdata` package (cached)."""
    parts = name.split("/")
    if not name or any(part in {"", ".", ".."} for part in parts):
        raise UnknownZoneError(name)
    resource = importlib.resources.files("tzdata.zoneinfo").joinpath(*parts)
    try:
        with resource.open("rb") as handle:
            return ZoneInfo.from_file(handle, key=name)
    except (FileNotFoundError, IsADirectoryError, ValueError) as error:
        raise UnknownZoneError(name) from error
