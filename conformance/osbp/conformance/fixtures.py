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

`policy_cases` (optional) lists services the battery only challenges, never books (payment none, a fixed
price in the cap's currency, bookable at the fixture slot), chosen so their summaries state other policies
(cancellation not allowed, no deadline or grace, one-unit spans); see `summary_facts`.

`bound_facts` (optional) names, for each summary fact the binding checks change through the platform's
hooks (a fee, the cancellation window, a provider's or schedule's name), a service no other check books,
with the provider and schedule to book it with; see `BoundFacts`.

`services.verification.pre_verification` (optional) says whether the platform has an independent
pre-verification step, which decides what verification.verify must answer for the right code.

`native_statuses` (optional) maps each native appointment status the platform can give a booking to the
protocol status booking.status must answer; the battery sets each one through the platform's status hook
(`--status-url`) on a booking of its own and reads it back.

**Format 2** (`"fixture_format": 2`) makes the file the battery's oracle: the facts a right server states
(each service's name, duration, price with type and display, fees, payment requirement, deposit,
consultation flag, cancellation window and verification; each schedule's name and ISO-weekday opening
hours; the providers' names; chosen slots' exact instants, among them a DST gap and fold on a 24-hour
schedule). Checks grade the server against these facts, never against its own other answers. Every new
member is optional, so a format-1 file (no `fixture_format`) still loads and the checks needing a fact it
lacks are skipped; a format-1 file that states a format-2 member is refused. docs/conformance.md describes
every field.
"""

from __future__ import annotations

import datetime as dt
import re
from importlib import resources
from pathlib import Path
from typing import Annotated, Any, Literal
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StringConstraints,
    field_validator,
    model_validator,
)

__all__ = [
    "FIXTURE_FORMAT",
    "REFERENCE_FIXTURES",
    "AllDaySchedule",
    "BoundFact",
    "BoundFacts",
    "Customer",
    "DepositService",
    "FeesService",
    "FixedPriceService",
    "Fixtures",
    "FullDay",
    "Money",
    "OpeningHours",
    "OptionFact",
    "OracleSlot",
    "OvernightSlot",
    "Providers",
    "QuotedPrice",
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
#: The newest fixture format this module reads (1: ids and roles; 2: the oracle's expected facts).
FIXTURE_FORMAT = 2

Id = Annotated[str, StringConstraints(min_length=1)]
ProtocolStatus = Literal["booked", "cancelled", "completed", "no_show", "pending", "unknown"]
CurrencyCode = Annotated[str, StringConstraints(pattern=r"^[A-Z]{3}$")]
#: An ISO 8601 duration as the spec writes them ("PT45M", "PT6H", "P1D").
_DURATION = re.compile(r"P(\d+D)?(T(\d+H)?(\d+M)?(\d+S)?)?")


def _iso_duration(value: str) -> str:
    if not _DURATION.fullmatch(value) or value in ("P", "PT") or value.endswith("T"):
        raise ValueError(f"{value!r} is not an ISO 8601 duration such as PT45M")
    return value


Duration = Annotated[str, AfterValidator(_iso_duration)]
HourMinute = Annotated[str, StringConstraints(pattern=r"^([01]\d|2[0-3]):[0-5]\d$")]
WallClock = Annotated[str, StringConstraints(pattern=r"^\d{4}-\d{2}-\d{2}T([01]\d|2[0-3]):[0-5]\d:[0-5]\d$")]
Instant = Annotated[
    str,
    StringConstraints(
        pattern=r"^\d{4}-\d{2}-\d{2}T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]([01]\d|2[0-3]):[0-5]\d)$"
    ),
]
PaymentRequirement = Literal["none", "deposit", "full_prepay", "unknown"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Money(_Strict):
    """A fixed amount in the currency's ISO 4217 minor unit (format 2: with its type and display text)."""

    amount_minor: int = Field(ge=0)
    currency: CurrencyCode
    #: Format 2: always "fixed" when stated (a price without an amount is a `QuotedPrice`).
    type: Literal["fixed"] | None = None
    #: Format 2: the display string a right server gives this amount ("$95.00", "¥12,000").
    display: Annotated[str, StringConstraints(min_length=1)] | None = None


class QuotedPrice(_Strict):
    """Format 2: a price with no fixed amount (its type says why)."""

    currency: CurrencyCode
    type: Literal["insurance_dependent", "quote_required", "unknown"]


class OptionFact(_Strict):
    """Format 2: a display-only option or add-on of a service, as service.describe states it."""

    id: Id
    name: Annotated[str, StringConstraints(min_length=1)] | None = None
    duration: Duration | None = None
    price: Money | None = None


class ServiceRef(_Strict):
    """A service that plays one role in the battery, with the facts a right server states about it.

    Every fact is optional (format 1 states none); a stated one is graded. A fee or `verification`
    stated as "none" says the service has none; null (or absent) states nothing.
    """

    id: Id
    name: Annotated[str, StringConstraints(min_length=1)] | None = None
    duration: Duration | None = None
    price: Money | QuotedPrice | None = None
    payment_requirement: PaymentRequirement | None = None
    deposit: Money | None = None
    cancellation_fee: Money | Literal["none"] | None = None
    no_show_fee: Money | Literal["none"] | None = None
    cancellation_window: Duration | None = None
    #: Format 2: the ISO 8601 grace period policy.explain states as late_grace.
    late_grace: Duration | None = None
    requires_consultation: bool | None = None
    verification: Literal["sms", "email", "none"] | None = None
    #: Format 2: options service.describe lists (each stated one graded; others not).
    options: list[OptionFact] | None = None

    def states(self, fact: str) -> bool:
        """Whether the file states `fact` for this service ("none" is a statement: no such fee)."""
        return getattr(self, fact) is not None

    def fees(self) -> dict[str, Money]:
        """The fees the service carries, by the Policy member that states them."""
        fees = {"cancellation_fee": self.cancellation_fee, "no_show_fee": self.no_show_fee}
        return {name: fee for name, fee in fees.items() if isinstance(fee, Money)}


class FixedPriceService(ServiceRef):
    """A service with a fixed price whose exact minor-unit amount the battery expects."""

    price: Money


class DepositService(ServiceRef):
    """A service whose policy requires a deposit of this amount."""

    deposit: Money


class FeesService(FixedPriceService):
    """Format 2: a fixed-price service with a cancellation fee and a no-show fee, distinct from each other
    and from the price, and no payment up front (it books without allow_policy_fee)."""

    cancellation_fee: Money
    no_show_fee: Money

    @model_validator(mode="after")
    def _distinct_fees(self) -> FeesService:
        amounts = {self.price.amount_minor, self.cancellation_fee.amount_minor, self.no_show_fee.amount_minor}
        currencies = {self.price.currency, self.cancellation_fee.currency, self.no_show_fee.currency}
        if len(amounts) != 3 or len(currencies) != 1:
            raise ValueError("fees: the price and both fees must be distinct amounts in one currency")
        if self.payment_requirement not in (None, "none"):
            raise ValueError("fees: the service must need no payment up front")
        return self


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
    #: Format 2: a free service (fixed, 0 USD, no payment, no fees, not a consultation).
    free: FixedPriceService | None = None
    #: Format 2: a service with a cancellation fee and a no-show fee.
    fees: FeesService | None = None

    @model_validator(mode="after")
    def _currencies_match_roles(self) -> Services:
        for role, service in self.fixed().items():
            if role != service.price.currency:
                raise ValueError(
                    f"fixed_{role.lower()} must be priced in {role}, not {service.price.currency}"
                )
        free = self.free
        if free is not None and (
            (free.price.amount_minor, free.price.currency) != (0, "USD")
            or free.fees()
            or free.payment_requirement not in (None, "none")
            or free.requires_consultation
        ):
            raise ValueError("free must cost 0 USD, need no payment, carry no fees and not be a consultation")
        return self

    def roles(self) -> dict[str, ServiceRef]:
        """Every service the file names, keyed by its role."""
        return {role: service for role in type(self).model_fields if (service := getattr(self, role))}

    def fixed(self) -> dict[str, FixedPriceService]:
        """The fixed-price services keyed by currency code."""
        return {
            "USD": self.fixed_usd,
            "EUR": self.fixed_eur,
            "GBP": self.fixed_gbp,
            "JPY": self.fixed_jpy,
            "KWD": self.fixed_kwd,
        }


class OpeningHours(_Strict):
    """Format 2: one opening period, ISO weekday (1 = Monday … 7 = Sunday) and wall-clock "HH:MM"."""

    day: int = Field(ge=1, le=7)
    open: HourMinute
    close: HourMinute


class Schedule(_Strict):
    """The schedule (location) the slot belongs to."""

    id: Id
    #: Whether the location has coordinates, so that slots must carry them.
    has_coordinates: bool = True
    #: Format 2: the schedule's display name.
    name: Annotated[str, StringConstraints(min_length=1)] | None = None
    #: Format 2: the typical opening hours a right server reports, in the order it reports them.
    opening_hours: list[OpeningHours] | None = None
    #: Format 2: the one-line postal address its slots carry as schedule_address.
    address: Annotated[str, StringConstraints(min_length=1)] | None = None


class FullDay(_Strict):
    """Format 2: a date on the all-day schedule and how many slots a right server offers on it."""

    date: dt.date
    slot_count: int = Field(gt=0)


class AllDaySchedule(Schedule):
    """Format 2: a 24-hour schedule (DST gap and fold slots; a day with more slots than one page)."""

    timezone: Id
    #: A fixed-price service in the mandate currency bookable there.
    service: Id
    #: A provider the default mandate allows who works there.
    provider: Id
    #: A day whose offered slots the paging check counts (optional).
    full_day: FullDay | None = None


class Providers(_Strict):
    """One provider the mandate allows and one it does not."""

    in_scope: Id
    other: Id
    #: Format 2: provider id -> the display name a right server gives it.
    names: dict[Id, Annotated[str, StringConstraints(min_length=1)]] = Field(default_factory=dict)


class OracleSlot(_Strict):
    """Format 2: a slot a right server offers, with its exact instant (and optionally its end)."""

    schedule_id: Id
    service_id: Id
    provider_id: Id
    starts_at_local: WallClock
    #: The exact instant; compared as an instant, so any offset that names it is right.
    starts_at: Instant
    ends_at_local: WallClock | None = None
    ends_at: Instant | None = None

    @property
    def local_start(self) -> dt.datetime:
        """The naive merchant-local start."""
        return dt.datetime.fromisoformat(self.starts_at_local)

    @property
    def instant(self) -> dt.datetime:
        """The aware start instant."""
        return dt.datetime.fromisoformat(self.starts_at.replace("Z", "+00:00"))


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


class BoundFact(_Strict):
    """A fixed-price service in the cap's currency, payment none, bookable at the fixture date and time at
    `schedule` (default: the fixture schedule) with `provider` (default: the in-scope provider), that no
    other check books: a binding check changes one of its summary facts at any time."""

    service: Id
    schedule: Id | None = None
    provider: Id | None = None


class BoundFacts(_Strict):
    """The service each summary-binding check changes a fact of (each optional: absent, its check is SKIP).

    The provider of `provider_name` and the schedule of `location_name` are renamed, so both must be named
    and be used by no other check.
    """

    cancellation_fee: BoundFact | None = None
    no_show_fee: BoundFact | None = None
    cancellation_window: BoundFact | None = None
    provider_name: BoundFact | None = None
    location_name: BoundFact | None = None

    @model_validator(mode="after")
    def _renamed_entities_named(self) -> BoundFacts:
        if self.provider_name is not None and self.provider_name.provider is None:
            raise ValueError("bound_facts.provider_name must name the provider it renames")
        if self.location_name is not None and self.location_name.schedule is None:
            raise ValueError("bound_facts.location_name must name the schedule it renames")
        return self


class OvernightSlot(_Strict):
    """Format 2: a slot the battery only challenges, at a schedule whose zone is not the organization's,
    ending on the day after it starts (the summary must name that zone and the end's date)."""

    schedule_id: Id
    service_id: Id
    provider_id: Id
    timezone: Id
    starts_at_local: WallClock
    ends_at_local: WallClock

    @model_validator(mode="after")
    def _ends_the_next_day(self) -> OvernightSlot:
        start, end = (
            dt.datetime.fromisoformat(self.starts_at_local),
            dt.datetime.fromisoformat(self.ends_at_local),
        )
        if end.date() <= start.date() or end <= start:
            raise ValueError("overnight: the slot must end on a later date than it starts")
        return self


class Customer(_Strict):
    """A synthetic customer; the battery plays this person."""

    display_name: Id
    phone: Annotated[str, StringConstraints(pattern=r"^\+[1-9]\d{6,14}$")]
    email: Annotated[str, StringConstraints(pattern=r"^[^@\s]+@[^@\s]+$")]
    given_name: str | None = None
    family_name: str | None = None


#: The members only format 2 may state (a format-1 file stating one is refused: it forgot to say so).
_FORMAT_2_MEMBERS = ("all_day", "slots", "overnight")


class Fixtures(_Strict):
    """Everything the battery knows about the graded server's platform."""

    #: 1 when absent (the original format); 2 states the oracle's expected facts.
    fixture_format: Literal[1, 2] = 1
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
    #: The services whose summary facts the binding checks change, one per fact (optional).
    bound_facts: BoundFacts | None = None
    #: Native appointment status -> the protocol status booking.status must report for it.
    native_statuses: dict[Id, ProtocolStatus] = Field(default_factory=dict)
    #: How many seconds the graded server's approval tokens stay valid, when known (optional).
    approval_ttl_seconds: float | None = Field(default=None, gt=0)
    #: Format 2: the 24-hour schedule.
    all_day: AllDaySchedule | None = None
    #: Format 2: named slots with their exact instants (`dst_gap`, `dst_fold`, ...).
    slots: dict[Id, OracleSlot] = Field(default_factory=dict)
    #: Services the battery only challenges, never books (optional): each a fixed price in the cap's
    #: currency, payment none, bookable at the fixture slot, whose policy reaches another branch of the
    #: summary's policy prose; their summaries are graded against their policy.explain answers.
    policy_cases: list[Id] = Field(default_factory=list)
    #: Format 2: a slot in another zone than the organization's that ends the next day (optional).
    overnight: OvernightSlot | None = None

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

    @model_validator(mode="after")
    def _format_2_members_declared(self) -> Fixtures:
        if self.fixture_format < 2:
            # A dumped format-1 file writes the members empty (null, {}): only a value states one.
            stated = [name for name in _FORMAT_2_MEMBERS if getattr(self, name)]
            if self.services.free is not None or self.services.fees is not None:
                stated.append("services.free/fees")
            if self.schedule.opening_hours is not None or self.schedule.address or self.providers.names:
                stated.append("schedule.opening_hours/providers.names")
            if stated:
                raise ValueError(f'{", ".join(stated)} need "fixture_format": 2')
        return self

    @model_validator(mode="after")
    def _slot_instants_are_their_wall_clocks(self) -> Fixtures:
        # A typo in an oracle instant would fail a right server; each instant must be one of its
        # wall-clock's occurrences in the schedule's zone (which one, at a fold, is the file's statement).
        for name, slot in self.slots.items():
            zone_name = self.zone_of(slot.schedule_id)
            if zone_name is None:
                raise ValueError(f"slots.{name}: schedule {slot.schedule_id!r} is not in the file")
            try:
                zone = ZoneInfo(zone_name)
            except (ZoneInfoNotFoundError, ValueError):
                raise ValueError(f"slots.{name}: unknown timezone {zone_name!r}") from None
            if slot.instant.astimezone(zone).replace(tzinfo=None) != slot.local_start:
                raise ValueError(
                    f"slots.{name}: {slot.starts_at} is not {slot.starts_at_local} in {zone_name}"
                )
        return self

    def zone_of(self, schedule_id: str) -> str | None:
        """The IANA zone of a schedule the file names (None for an unknown id)."""
        if schedule_id == self.schedule.id:
            return self.timezone
        if self.all_day is not None and schedule_id == self.all_day.id:
            return self.all_day.timezone
        return None

    def schedules(self) -> list[Schedule]:
        """Every schedule the file names."""
        return [self.schedule, *([self.all_day] if self.all_day is not None else [])]


def reference_fixtures_path() -> Path:
    """The path of the fixture file for this project's conformance organization."""
    return Path(str(resources.files("osbp.conformance") / "fixture_files" / REFERENCE_FIXTURES))


def load_fixtures(path: str | Path) -> Fixtures:
    """Read and validate a fixture file (raises `ValueError` with the reason when it is malformed)."""
    return Fixtures.model_validate_json(Path(path).read_text(encoding="utf-8"))
