"""The seed file `seed.toml` (package data): its strict models, and loading it.

Unknown keys are refused, types are not coerced, every referenced id must be defined in its
organization, ids are unique, zones and currencies must exist and amounts carry exactly their
currency's minor digits. A malformed file is a `SeedError` naming the file and the place, each list
item by its id (`organization[gus_notary].location[gus_notary_online].kind: ...`).
"""

from __future__ import annotations

import tomllib
from collections import Counter
from importlib import resources
from importlib.resources.abc import Traversable
from typing import Annotated, Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    NonNegativeInt,
    PositiveInt,
    ValidationError,
    model_validator,
)

from osbp.backend.money import exponent, format_amount
from osbp.backend.tz import UnknownZoneError, zone

__all__ = ["SEED_FILE", "LocationSeed", "SeedError", "SeedFile", "load_seed"]

#: The shipped seed file.
SEED_FILE: Traversable = resources.files("osbp.backend") / "seed.toml"

WallClock = Annotated[str, Field(pattern=r"^([01][0-9]|2[0-3]):[0-5][0-9]$")]
Id = Annotated[str, Field(min_length=1, max_length=100)]


class SeedError(ValueError):
    """The seed file is not valid TOML or does not match the seed models."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


def _known_currency(code: str) -> None:
    try:
        exponent(code)
    except ValueError:
        raise ValueError(f"currency {code!r} is not an ISO 4217 code") from None


def _known_zone(name: str) -> None:
    try:
        zone(name)
    except UnknownZoneError:
        raise ValueError(f"time_zone {name!r} is not an IANA time zone") from None


class HoursSeed(_Strict):
    """Opening hours shared by several native weekdays (0 = Sunday)."""

    days: list[Annotated[int, Field(ge=0, le=6)]] = Field(min_length=1)
    open: WallClock
    close: WallClock


class AddressSeed(_Strict):
    """A postal address (the field order is the stored order)."""

    line1: str
    line2: str | None = None
    city: str
    region: str
    postal_code: str
    country: str


class LocationSeed(_Strict):
    """A location with its weekly hours."""

    id: Id
    name: str
    kind: Literal["in_person", "online"]
    time_zone: str
    latitude: float | None = None
    longitude: float | None = None
    address: AddressSeed | None = None
    hours: list[HoursSeed]

    @model_validator(mode="after")
    def _zone(self) -> LocationSeed:
        _known_zone(self.time_zone)
        return self


class ProviderSeed(_Strict):
    """A person whose time is booked."""

    id: Id
    name: str
    title: str | None = None
    image_url: str | None = None
    location_ids: list[str]
    service_ids: list[str]


class OptionSeed(_Strict):
    """A service add-on (the field order is the stored order)."""

    id: Id
    name: str
    duration_minutes: PositiveInt
    amount: str


class ServiceSeed(_Strict):
    """A service with its policy: the top-level and organization `service_defaults` merged under it."""

    id: Id
    name: str
    description: str
    duration_minutes: PositiveInt
    price_kind: Literal["fixed", "insurance_dependent", "quote_required"]
    price_amount: str | None = None
    currency: str
    requires_consultation: bool = False
    location_ids: list[str] = Field(min_length=1)
    options: list[OptionSeed] = Field(default_factory=list, alias="option")
    cancellation_allowed: bool = True
    cancellation_window_minutes: NonNegativeInt | None = None
    cancellation_fee: str | None = None
    cancellation_note: str = ""
    late_grace_minutes: NonNegativeInt | None = None
    no_show_fee: str | None = None
    reschedule_fee: str | None = None
    payment_requirement: Literal["none", "deposit", "full_prepay", "unknown"] = "none"
    deposit_amount: str | None = None
    verification: Literal["none", "sms", "email"] = "none"

    @model_validator(mode="after")
    def _amounts(self) -> ServiceSeed:
        _known_currency(self.currency)
        if (self.price_kind == "fixed") != (self.price_amount is not None):
            raise ValueError("price_amount is required for a fixed price and only for one")
        if (self.payment_requirement == "deposit") != (self.deposit_amount is not None):
            raise ValueError("deposit_amount is required for a deposit requirement and only for one")
        amounts = {
            "price_amount": self.price_amount,
            "deposit_amount": self.deposit_amount,
            "cancellation_fee": self.cancellation_fee,
            "no_show_fee": self.no_show_fee,
            "reschedule_fee": self.reschedule_fee,
        } | {f"option {option.id} amount": option.amount for option in self.options}
        for name, amount in amounts.items():
            if amount is not None and _canonical(amount, self.currency) != amount:
                example = format_amount("12", self.currency)
                raise ValueError(f"{name} {amount!r} is not a {self.currency} amount such as {example!r}")
        return self


def _canonical(amount: str, currency: str) -> str | None:
    try:
        return format_amount(amount, currency)
    except (ArithmeticError, ValueError):  # decimal.InvalidOperation (not a number) is an ArithmeticError
        return None


class OrganizationSeed(_Strict):
    """A merchant with its locations, providers and services."""

    id: Id
    name: str
    slug: str
    domain: str
    phone: str
    support_email: str
    time_zone: str
    currency: str
    country: str
    slot_interval_minutes: PositiveInt
    verification_sandbox: bool = False
    parallel_bookings: bool = False
    service_defaults: dict[str, Any] = Field(default_factory=dict)  # merged into `services` on load
    locations: list[LocationSeed] = Field(min_length=1, alias="location")
    providers: list[ProviderSeed] = Field(min_length=1, alias="provider")
    services: list[ServiceSeed] = Field(min_length=1, alias="service")

    @model_validator(mode="after")
    def _references(self) -> OrganizationSeed:
        _known_zone(self.time_zone)
        _known_currency(self.currency)
        locations = {location.id for location in self.locations}
        services = {service.id for service in self.services}
        for kind, item_id, wanted, known in [
            *(("service", item.id, item.location_ids, locations) for item in self.services),
            *(("provider", item.id, item.location_ids, locations) for item in self.providers),
            *(("provider", item.id, item.service_ids, services) for item in self.providers),
        ]:
            unknown = [name for name in wanted if name not in known]
            if unknown:
                raise ValueError(
                    f"{kind} {item_id} names ids {self.id} does not define: {', '.join(unknown)}"
                )
        return self


def _service_defaults(defaults: Any, where: str) -> dict[str, Any]:
    if not isinstance(defaults, dict):
        raise ValueError(f"{where} must be a table")
    allowed = {field.alias or name for name, field in ServiceSeed.model_fields.items()} - {"id"}
    unknown = sorted(set(defaults) - allowed)
    if unknown:
        raise ValueError(f"{where} has unknown keys: {', '.join(unknown)}")
    return defaults


def _merged(defaults: dict[str, Any], service: dict[str, Any]) -> dict[str, Any]:
    """A service's own keys over `defaults`, without the defaults its `unset` list names (a default a
    service must not have, such as a cancellation window: TOML has no null)."""
    unset = service.get("unset", [])
    if not isinstance(unset, list):
        raise ValueError(f"service {service.get('id')}: unset must be a list of keys")
    kept = {key: value for key, value in defaults.items() if key not in unset}
    return kept | {key: value for key, value in service.items() if key != "unset"}


class SeedFile(_Strict):
    """The whole seed file."""

    service_defaults: dict[str, Any] = Field(default_factory=dict)  # merged into every service on load
    organizations: list[OrganizationSeed] = Field(min_length=1, alias="organization")

    @model_validator(mode="before")
    @classmethod
    def _merge_service_defaults(cls, data: Any) -> Any:
        """Each service's own keys over its organization's `service_defaults` over the file's."""
        if not isinstance(data, dict) or not isinstance(data.get("organization"), list):
            return data
        top = _service_defaults(data.get("service_defaults", {}), "service_defaults")
        organizations = []
        for item in data["organization"]:
            if isinstance(item, dict) and isinstance(item.get("service"), list):
                where = f"organization[{item.get('id')}].service_defaults"
                defaults = top | _service_defaults(item.get("service_defaults", {}), where)
                services = [
                    _merged(defaults, service) if isinstance(service, dict) else service
                    for service in item["service"]
                ]
                item = item | {"service": services}
            organizations.append(item)
        return data | {"organization": organizations}

    @model_validator(mode="after")
    def _unique_ids(self) -> SeedFile:
        ids = Counter(
            (kind, item.id)
            for organization in self.organizations
            for kind, items in (
                ("organization", [organization]),
                ("location", organization.locations),
                ("provider", organization.providers),
                ("service", organization.services),
            )
            for item in items
        )
        repeated = sorted(f"{kind} {item_id}" for (kind, item_id), count in ids.items() if count > 1)
        if repeated:
            raise ValueError(f"ids defined more than once: {', '.join(repeated)}")
        return self


def load_seed(source: Traversable = SEED_FILE) -> SeedFile:
    """The seed file parsed and validated, or a `SeedError` naming the file and the place."""
    name = str(source)
    try:
        data = tomllib.loads(source.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as error:
        raise SeedError(f"{name}: not valid TOML: {error}") from None
    try:
        return SeedFile.model_validate(data)
    except ValidationError as error:
        problems = [f"{_place(data, item['loc'])}: {_message(item['msg'])}" for item in error.errors()]
        raise SeedError(f"{name}: " + "; ".join(problems)) from None


def _place(data: Any, location: tuple[int | str, ...]) -> str:
    """A pydantic error location as a path, each list index shown as the item's id when it has one."""
    place, node = "", data
    for part in location:
        if isinstance(part, int):
            item = node[part] if isinstance(node, list) and part < len(node) else None
            label = item.get("id") if isinstance(item, dict) else None
            place += f"[{label if isinstance(label, str) else part}]"
            node = item
        else:
            place += f".{part}" if place else part
            node = node.get(part) if isinstance(node, dict) else None
    return place or "(top level)"


def _message(message: str) -> str:
    return message.removeprefix("Value error, ")
