"""The demo's scenarios, read from ``scenarios.toml``: who asks for what, where, inside which mandate.

The data lives in the package's ``scenarios.toml`` (the four demo verticals, the merchants only the trace
gallery uses, and the gallery's runs); this module holds the pydantic models that validate it, the loader,
and :func:`build_mandate`, which turns a :class:`Vertical` into the
:class:`~osbp.protocol.models.BookingMandate` the agent builds, anchored to the platform's clock so a fixed
``--now`` gives the same mandate, dates and transcript every time. A malformed file is refused with a
:class:`ScenarioFileError` naming each offending field.
"""

from __future__ import annotations

import tomllib
from datetime import date, datetime, timedelta
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, ValidationError, model_validator

from osbp.protocol.models import BookingMandate, Customer, Money
from osbp.protocol.timeutil import format_instant, instant_to_wall_clock, load_zone, parse_wall_clock

__all__ = [
    "MANDATE_HORIZON_DAYS",
    "MANDATE_LIFETIME",
    "SCENARIOS",
    "SCENARIO_FILE",
    "VERTICALS",
    "GalleryEntry",
    "Grant",
    "Handoff",
    "HostAnswer",
    "Modality",
    "Outcome",
    "PlayName",
    "Refusal",
    "Region",
    "RequestOverride",
    "ScenarioFile",
    "ScenarioFileError",
    "Vertical",
    "build_mandate",
    "load_scenarios",
    "local_today",
    "read_scenarios",
]

#: How far ahead the user lets the agent book (merchant-local days after today).
MANDATE_HORIZON_DAYS = 14
#: How long the user's authorization holds after it was given.
MANDATE_LIFETIME = timedelta(days=14)
#: The scenario file shipped in this package.
SCENARIO_FILE = "scenarios.toml"

#: Where the service is delivered (the upstream trace gallery's values).
Modality = Literal["in_person", "remote"]
#: How a gallery run ends (the upstream trace gallery's ``happy_path`` names).
Outcome = Literal["booking_created", "no_booking_created", "same_receipt_replayed"]
#: The code that drives a gallery run (:mod:`osbp.demo.gallery` holds one play per name).
PlayName = Literal[
    "happy",
    "wrong_code_first",
    "idempotent_retry",
    "refusal",
    "outside_window",
    "slot_taken",
    "rate_limited",
    "host_confirmation",
]
#: What the user does with a confirmation form the host shows: confirm it, decline it, or dismiss it.
HostAnswer = Literal["accept", "decline", "cancel"]

Key = Annotated[str, StringConstraints(pattern=r"^[a-z][a-z0-9_]*$")]
Id = Annotated[str, StringConstraints(min_length=1)]
Text = Annotated[str, StringConstraints(min_length=1)]
MinorUnits = Annotated[int, Field(ge=0, strict=True)]


class ScenarioFileError(ValueError):
    """A scenario file that is not TOML or does not fit the models; the message names every problem."""


class _Data(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Region(_Data):
    """Where the merchant is: ISO 3166-1 country, ISO 4217 currency, IANA timezone."""

    country: Annotated[str, StringConstraints(pattern=r"^[A-Z]{2}$")]
    currency: Annotated[str, StringConstraints(pattern=r"^[A-Z]{3}$")]
    timezone: str

    @model_validator(mode="after")
    def _known_zone(self) -> Region:
        if load_zone(self.timezone) is None:
            raise ValueError(f"timezone {self.timezone!r} is not an IANA Time Zone Database name")
        return self


class Vertical(_Data):
    """One merchant and the user's request there: the services the user allows and the price cap."""

    key: Key
    title: Text
    organization_id: Id
    organization_name: Text
    #: A snake_case label (``dental_clinic``), as the upstream trace gallery writes it.
    business_type: Key
    modality: Modality
    region: Region
    intent: Text
    user_request: Text
    service_id: Id
    schedule_id: Id
    customer: Customer
    #: The services the user allows (the mandate's service_ids).
    allowed_service_ids: tuple[Id, ...] = Field(min_length=1)
    #: The price cap in the currency's minor unit.
    max_price_minor: MinorUnits
    #: The slot the user prefers: the first one at or after this merchant-local "HH:MM".
    preferred_time: Annotated[str, StringConstraints(pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$")] = "10:00"
    #: A service inside the mandate's service list that costs more than the cap (the fail-closed coda).
    over_cap_service_id: Id | None = None
    #: What the user asks for in the coda.
    over_cap_request: Text | None = None
    #: How the user confirms the booking: the approval token through the agent (the spec's path), or in
    #: the host's own dialog (MCP elicitation; the agent never holds anything to confirm with).
    confirmation: Literal["token", "elicitation"] = "token"

    @model_validator(mode="after")
    def _consistent(self) -> Vertical:
        if self.service_id not in self.allowed_service_ids:
            raise ValueError(f"service_id {self.service_id!r} is not in allowed_service_ids")
        over_cap = self.over_cap_service_id
        if over_cap is not None and over_cap not in self.allowed_service_ids:
            raise ValueError(f"over_cap_service_id {over_cap!r} is not in allowed_service_ids")
        if self.over_cap_request is not None and self.over_cap_service_id is None:
            raise ValueError("over_cap_request needs over_cap_service_id")
        return self

    @property
    def mandate_id(self) -> str:
        """A readable, deterministic mandate id."""
        return f"mnd_demo_{self.key}"


class RequestOverride(_Data):
    """What a gallery run's user asks for instead of the vertical's request."""

    user_request: Text | None = None
    intent: Text | None = None


class Grant(_Data):
    """Mandate scope a gallery run's user grants instead of the vertical's."""

    service_ids: tuple[Id, ...] | None = None
    max_price_minor: MinorUnits | None = None


class Handoff(_Data):
    """The handoff.request the agent sends after a refusal."""

    reason: Id
    message: Text


class Refusal(_Data):
    """A refusal run: the service the agent tries, the scope granted, the handoff afterwards."""

    service_id: Id
    grant: Grant = Grant()
    handoff: Handoff | None = None


class GalleryEntry(_Data):
    """One trace of the gallery: its file name, what it claims, which vertical, which play."""

    id: Key
    title: Text
    claim: Text
    vertical: Key
    play: PlayName
    outcome: Outcome
    guardrails: tuple[Id, ...] = ()
    request: RequestOverride = RequestOverride()
    refusal: Refusal | None = None
    #: ``play = "host_confirmation"`` only: the user's answers to the host's forms, in order.
    host_answers: tuple[HostAnswer, ...] = ()

    @model_validator(mode="after")
    def _refusal_only_for_the_refusal_play(self) -> GalleryEntry:
        if (self.play == "refusal") != (self.refusal is not None):
            raise ValueError('a refusal block is required for play = "refusal" and allowed for it only')
        if (self.play == "host_confirmation") != bool(self.host_answers):
            raise ValueError(
                'host_answers are required for play = "host_confirmation" and allowed for it only'
            )
        return self


class ScenarioFile(_Data):
    """The whole file: demo verticals (in demo order), gallery-only verticals, gallery runs (in order)."""

    verticals: dict[Key, Vertical] = Field(min_length=1)
    gallery_verticals: dict[Key, Vertical] = Field(default_factory=dict)
    gallery: tuple[GalleryEntry, ...] = ()

    @model_validator(mode="before")
    @classmethod
    def _keys_from_tables(cls, data: Any) -> Any:
        # A vertical's key is its table name ([verticals.dental]); writing it again would only let it drift.
        if not isinstance(data, dict):
            return data
        keyed = dict(data)
        for table in ("verticals", "gallery_verticals"):
            if isinstance(data.get(table), dict):
                keyed[table] = {
                    key: {"key": key, **body} if isinstance(body, dict) else body
                    for key, body in data[table].items()
                }
        return keyed

    @model_validator(mode="after")
    def _references_resolve(self) -> ScenarioFile:
        shared = sorted(set(self.verticals) & set(self.gallery_verticals))
        if shared:
            raise ValueError(f"vertical keys defined twice: {', '.join(shared)}")
        ids = [entry.id for entry in self.gallery]
        repeated = sorted({entry_id for entry_id in ids if ids.count(entry_id) > 1})
        if repeated:
            raise ValueError(f"gallery ids used twice: {', '.join(repeated)}")
        for index, entry in enumerate(self.gallery):
            if entry.vertical not in self.verticals and entry.vertical not in self.gallery_verticals:
                raise ValueError(f"gallery[{index}] ({entry.id}): unknown vertical {entry.vertical!r}")
        return self

    def vertical(self, key: str) -> Vertical:
        """The demo or gallery-only vertical named ``key``."""
        return self.verticals.get(key) or self.gallery_verticals[key]


def _location(loc: tuple[int | str, ...]) -> str:
    text = ""
    for part in loc:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else str(part)
    return text or "(top level)"


def load_scenarios(text: str, *, source: str = SCENARIO_FILE) -> ScenarioFile:
    """Parse and validate a scenario file's text; :class:`ScenarioFileError` names every problem."""
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise ScenarioFileError(f"{source}: not valid TOML: {error}") from None
    try:
        return ScenarioFile.model_validate(data)
    except ValidationError as error:
        reasons = "; ".join(f"{_location(item['loc'])}: {item['msg']}" for item in error.errors())
        raise ScenarioFileError(f"{source}: {reasons}") from None


def read_scenarios(path: Path | None = None) -> ScenarioFile:
    """The scenario file at ``path``, by default the one shipped in this package."""
    if path is not None:
        return load_scenarios(path.read_text(encoding="utf-8"), source=str(path))
    shipped = resources.files(__package__ or "osbp.demo").joinpath(SCENARIO_FILE)
    return load_scenarios(shipped.read_text(encoding="utf-8"))


#: The shipped scenarios, and the demo's verticals in demo order.
SCENARIOS = read_scenarios()
VERTICALS: dict[str, Vertical] = dict(SCENARIOS.verticals)


def local_today(now: datetime, timezone: str) -> date:
    """The merchant-local calendar date at instant ``now``."""
    wall = instant_to_wall_clock(now, timezone)
    parsed = parse_wall_clock(wall) if wall else None
    if parsed is None:
        raise ValueError(f"unknown timezone {timezone!r}")
    return parsed.date()


def build_mandate(
    vertical: Vertical,
    now: datetime,
    *,
    mandate_id: str | None = None,
    service_ids: tuple[str, ...] | None = None,
    max_price_minor: int | None = None,
    currency: str | None = None,
    earliest_start: str | None = None,
    latest_end: str | None = None,
    allow_policy_fee: bool = False,
) -> BookingMandate:
    """The BookingMandate the agent builds from the user's request (defaults: the vertical's scope)."""
    today = local_today(now, vertical.region.timezone)
    first, last = today + timedelta(days=1), today + timedelta(days=MANDATE_HORIZON_DAYS)
    cap_currency = currency or vertical.region.currency
    return BookingMandate(
        id=mandate_id or vertical.mandate_id,
        expires_at=format_instant(now + MANDATE_LIFETIME),
        allowed_actions=["booking.create"],
        organization_id=vertical.organization_id,
        service_ids=list(service_ids if service_ids is not None else vertical.allowed_service_ids),
        schedule_ids=[vertical.schedule_id],
        earliest_start=earliest_start or f"{first.isoformat()}T00:00:00",
        latest_end=latest_end or f"{last.isoformat()}T23:59:59",
        max_price=Money(
            amount_minor=vertical.max_price_minor if max_price_minor is None else max_price_minor,
            currency=cap_currency,
        ),
        allow_policy_fee=allow_policy_fee,
        max_extra_fee=Money(amount_minor=0, currency=cap_currency),
    )
