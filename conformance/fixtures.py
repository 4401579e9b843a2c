"""The fixture file: what the battery needs to know about the platform behind the server it grades.

The battery is black-box, so everything it expects (ids, the bookable slot, the fixed prices and their
minor-unit amounts, which service plays which role) comes from this file, never from the server. The
file for this project's own conformance organization ships as `fixture_files/osbp-reference.json`.

The slot (`slot.date`, `slot.time`, `slot.duration_minutes`) is the merchant-local start and length of the
`fixed_usd` service at `schedule` with the in-scope provider; every service in the file must be bookable at
that date and time, and the platform must accept repeated bookings of it (the battery books it several
times, each under a fresh idempotency key).

`services.repriced` (optional) is a fixed-price service in the mandate currency that no other check uses:
the battery changes its price through the platform's catalog hook (`--catalog-url`) between an approval
challenge and the approved retry, so concurrent battery runs on one platform may each reprice it.

`approval_ttl_seconds` (optional) is how long the graded server's approval tokens live: the battery
retries with a token that old at the end of its run and expects a fresh challenge. A TTL longer than the
battery is willing to wait leaves that check skipped.

`services.verification.pre_verification` (optional) says whether the platform has an independent
pre-verification step, which decides what verification.verify must answer for the right code.

`native_statuses` (optional) maps each native appointment status the platform can give a booking to the
protocol status booking.status must answer; the battery sets each one through the platform's status hook
(`--status-url`) on a booking of its own and reads it back.
"""

from __future__ import annotations

import datetime as dt
import re
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator, model_validator

__all__ = [
    "REFERENCE_FIXTURES",
    "Customer",
    "DepositService",
    "FixedPriceService",
    "Fixtures",
    "Money",
    "Providers",
    "Schedule",
    "ServiceRef",
    "Services",
    "SlotFixture",
    "VerificationService",
    "load_fixtures",
    "reference_fixtures_path",
]

#: The file name of the fixture shipped for this project's conformance organization.
REFERENCE_FIXTURES = "osbp-reference.json"

Id = Annotated[str, StringConstraints(min_length=1)]
ProtocolStatus = Literal["booked", "cancelled", "completed", "no_show", "pending", "unknown"]
CurrencyCode = Annotated[str, StringConstraints(pattern=r"^[A-Z]{3}$")]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Money(_Strict):
    """A fixed amount in the currency's ISO 4217 minor unit."""

    amount_minor: int = Field(ge=0)
    currency: CurrencyCode


class ServiceRef(_Strict):
    """A service that plays one role in the battery."""

    id: Id


class FixedPriceService(ServiceRef):
    """A service with a fixed price whose exact minor-unit amount the battery expects."""

    price: Money


class DepositService(ServiceRef):
    """A service whose policy requires a deposit of this amount."""

    deposit: Money


class VerificationService(ServiceRef):
    """A service the platform books only after customer verification."""

    method: Literal["sms", "email"]
    #: The code the customer reads back; the battery plays the customer, so the platform must run this
    #: organization in a sandbox mode with a fixed code.
    code: Id
    #: Whether the platform has an independent pre-verification step that verification.verify uses
    #: (true: the code is verified; false: the tool is refused, as the spec says for a platform without
    #: one); unstated, the battery cannot grade verify's answer to the right code.
    pre_verification: bool | None = None


class Services(_Strict):
    """The service id for every role the checks need."""

    fixed_usd: FixedPriceService
    fixed_eur: FixedPriceService
    fixed_gbp: FixedPriceService
    fixed_jpy: FixedPriceService
    fixed_kwd: FixedPriceService
    insurance_dependent: ServiceRef
    quote_required: ServiceRef
    consultation: ServiceRef
    deposit: DepositService
    full_prepay: ServiceRef
    unknown_payment: ServiceRef
    verification: VerificationService
    #: A fixed-price service in the mandate currency reserved for the repricing check (optional).
    repriced: ServiceRef | None = None

    @model_validator(mode="after")
    def _currencies_match_roles(self) -> Services:
        for role, service in self.fixed().items():
            if role != service.price.currency:
                raise ValueError(
                    f"fixed_{role.lower()} must be priced in {role}, not {service.price.currency}"
                )
        return self

    def fixed(self) -> dict[str, FixedPriceService]:
        """The fixed-price services keyed by currency code."""
        return {
            "USD": self.fixed_usd,
            "EUR": self.fixed_eur,
            "GBP": self.fixed_gbp,
            "JPY": self.fixed_jpy,
            "KWD": self.fixed_kwd,
        }


class Schedule(_Strict):
    """The schedule (location) the slot belongs to."""

    id: Id
    #: Whether the location has coordinates, so that slots must carry them.
    has_coordinates: bool = True


class Providers(_Strict):
    """One provider the mandate allows and one it does not."""

    in_scope: Id
    other: Id


class SlotFixture(_Strict):
    """The bookable merchant-local slot of the `fixed_usd` service."""

    date: dt.date
    time: Annotated[str, StringConstraints(pattern=r"^([01]\d|2[0-3]):[0-5]\d$")]
    duration_minutes: int = Field(gt=0, le=720)

    @property
    def start(self) -> dt.datetime:
        """The naive merchant-local start."""
        return dt.datetime.combine(self.date, dt.time.fromisoformat(self.time))

    @property
    def end(self) -> dt.datetime:
        """The naive merchant-local end."""
        return self.start + dt.timedelta(minutes=self.duration_minutes)


class Customer(_Strict):
    """A synthetic customer; the battery plays this person."""

    display_name: Id
    phone: Annotated[str, StringConstraints(pattern=r"^\+[1-9]\d{6,14}$")]
    email: Annotated[str, StringConstraints(pattern=r"^[^@\s]+@[^@\s]+$")]
    given_name: str | None = None
    family_name: str | None = None


class Fixtures(_Strict):
    """Everything the battery knows about the graded server's platform."""

    osbp_version: Literal["0.1.0"] = "0.1.0"
    organization_id: Id
    #: The schedule's IANA timezone, in which the slot's wall-clock is interpreted.
    timezone: Id
    schedule: Schedule
    providers: Providers
    slot: SlotFixture
    customer: Customer
    #: A cap in the mandate currency that covers every fixed price of the services booked in that currency.
    max_price: Money
    services: Services
    #: Native appointment status -> the protocol status booking.status must report for it.
    native_statuses: dict[Id, ProtocolStatus] = Field(default_factory=dict)
    #: How many seconds the graded server's approval tokens stay valid, when known (optional).
    approval_ttl_seconds: float | None = Field(default=None, gt=0)

    @model_validator(mode="before")
    @classmethod
    def _drop_comment(cls, data: Any) -> Any:
        # A `$comment` key documents a fixture file, as in JSON Schema.
        if isinstance(data, dict):
            return {key: value for key, value in data.items() if key != "$comment"}
        return data

    @field_validator("timezone")
    @classmethod
    def _iana_name(cls, value: str) -> str:
        if not re.fullmatch(r"[A-Za-z_]+(/[A-Za-z0-9_+\-]+)*", value):
            raise ValueError("timezone must be an IANA Time Zone Database name")
        return value

    @model_validator(mode="after")
    def _cap_covers_the_slot_service(self) -> Fixtures:
        price = self.services.fixed_usd.price
        if self.max_price.currency != price.currency or self.max_price.amount_minor < price.amount_minor:
            raise ValueError("max_price must be in USD and cover the fixed_usd price")
        return self


def reference_fixtures_path() -> Path:
    """The path of the fixture file for this project's conformance organization."""
    return Path(str(resources.files("osbp.conformance") / "fixture_files" / REFERENCE_FIXTURES))


def load_fixtures(path: str | Path) -> Fixtures:
    """Read and validate a fixture file (raises `ValueError` with the reason when it is malformed)."""
    return Fixtures.model_validate_json(Path(path).read_text(encoding="utf-8"))
