"""Native → OSBP translation: where Bookwell's dialect becomes exact OSBP values.

* **Money**: Bookwell sends major-unit decimal strings (``"120.00"`` USD, ``"12000"`` JPY, ``"12.500"``
  KWD); they are scaled to ``amount_minor`` by the currency's ISO 4217 exponent through
  :mod:`osbp.protocol.money`, which reads them strictly (ASCII digits, an optional ``.`` and at most the
  exponent's fractional digits). Non-fixed kinds (``insurance_dependent``, ``quote_required``,
  ``unknown``) become a Money with that ``type`` and no ``amount_minor``. A currency without a known
  exponent, an amount in any other form (``"+12.5"``, ``"1E2"``, ``"1_200.00"``, ``" 12.00"``,
  full-width digits, ``"NaN"``), one with more fractional digits than the exponent, or one past
  ``AMOUNT_MINOR_MAX`` minor units is :class:`UntranslatableData` (fail closed, never rounded).
* **Durations**: minutes → ISO 8601 (``PT45M``, ``PT1H``).
* **Weekdays**: Bookwell's ``0 = Sunday … 6 = Saturday`` → ISO ``1 = Monday … 7 = Sunday``.
* **Times**: merchant wall-clock ``date`` + ``time`` is emitted as ``starts_at_local`` and converted to
  the ``starts_at`` instant through the location's IANA zone; ``ends_at`` is the start plus the elapsed
  duration (exact across DST changes). An unknown zone leaves the instants and the timezone absent,
  never guessed.
* **Slots** are fully denormalized (organization, schedule with address/coordinates/hours/timezone,
  provider with name and image URL, service, price); online locations carry no address or coordinates.
  Slot ids read ``schedule:provider:service:local-start``. availability.find's answer then gives the
  repeated display context once (:mod:`osbp.adapter.availability`).
* **Booking status**: ``confirmed`` → booked, ``pending`` → pending, ``cancelled``, ``completed``,
  ``no_show`` as themselves, anything else → unknown.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache
from typing import get_args

from osbp.adapter.native import (
    NativeAddress,
    NativeAppointment,
    NativeHours,
    NativeLocation,
    NativeOrganization,
    NativePrice,
    NativeService,
    NativeSlot,
)
from osbp.protocol.models import (
    Booking,
    BookingStatus,
    Money,
    MoneyType,
    OperatingHours,
    PaymentRequirement,
    Policy,
    PolicyOrganization,
    Service,
    ServiceOption,
    Slot,
    VerificationMethod,
)
from osbp.protocol.money import MoneyError, minor_unit_exponent, money_from_major, money_from_minor
from osbp.protocol.timeutil import (
    combine_wall_clock,
    format_instant,
    format_wall_clock,
    instant_to_wall_clock,
    load_zone,
    minutes_to_duration,
    parse_instant,
    wall_clock_to_instant,
)

__all__ = [
    "UntranslatableData",
    "address_line",
    "booking",
    "booking_status",
    "duration",
    "iso_weekday",
    "money",
    "operating_hours",
    "policy",
    "service",
    "slot",
    "slot_from_request",
    "slot_id",
    "slots",
    "unknown_fees",
    "wall_clock",
]

_MONEY_TYPES: frozenset[str] = frozenset(get_args(MoneyType))
_PAYMENT_REQUIREMENTS: frozenset[str] = frozenset(get_args(PaymentRequirement))
_VERIFICATION_METHODS: frozenset[str] = frozenset({"sms", "email", "none"})
_STATUS: dict[str, BookingStatus] = {
    "confirmed": "booked",
    "pending": "pending",
    "cancelled": "cancelled",
    "completed": "completed",
    "no_show": "no_show",
}


class UntranslatableData(Exception):
    """The platform sent a value OSBP cannot represent safely (e.g. a currency with no known exponent)."""


def money(price: NativePrice) -> Money:
    """A native price as OSBP Money (fixed: exact ``amount_minor`` by the ISO 4217 exponent)."""
    if minor_unit_exponent(price.currency) is None:
        raise UntranslatableData(f"currency {price.currency!r} has no known ISO 4217 minor unit")
    if price.kind == "fixed":
        if price.amount is None:
            raise UntranslatableData("a fixed price without an amount")
        converted = money_from_major(price.amount, price.currency)
        if isinstance(converted, MoneyError):
            raise UntranslatableData(converted.reason)
        return converted
    kind = price.kind if price.kind in _MONEY_TYPES else "unknown"
    return Money(currency=price.currency, type=kind)  # type: ignore[arg-type]  # narrowed by _MONEY_TYPES


def duration(minutes: int) -> str:
    """Native minutes as an ISO 8601 duration."""
    return minutes_to_duration(minutes)


#: The ISO 8601 weekday (1 = Monday … 7 = Sunday) of each Bookwell weekday (0 = Sunday … 6 = Saturday).
_ISO_WEEKDAYS = (7, 1, 2, 3, 4, 5, 6)


def iso_weekday(native: int) -> int:
    """Bookwell's weekday (0 = Sunday … 6 = Saturday) as ISO 8601 (1 = Monday … 7 = Sunday)."""
    if native not in range(len(_ISO_WEEKDAYS)):
        raise UntranslatableData(f"weekday {native} is outside 0..6")
    return _ISO_WEEKDAYS[native]


def operating_hours(hours: list[NativeHours]) -> list[OperatingHours]:
    """Native weekly hours as OSBP OperatingHours, ordered by ISO weekday then opening time."""
    translated = [OperatingHours(day=iso_weekday(h.weekday), open=h.open, close=h.close) for h in hours]
    return sorted(translated, key=lambda h: (h.day, h.open))


# A day's slots repeat the same few starts and zones, call after call: the two pure conversions below
# are remembered (bounded) rather than parsed and formatted again for every slot.
_CONVERSIONS_KEPT = 4096


@lru_cache(maxsize=_CONVERSIONS_KEPT)
def wall_clock(date: str, time: str) -> str:
    """Native ``date`` + ``time`` as an OSBP merchant wall-clock string (``2026-05-05T09:00:00``)."""
    combined = combine_wall_clock(date, time)
    if combined is None:
        raise UntranslatableData("a native date/time is not YYYY-MM-DD / HH:MM")
    return combined


@lru_cache(maxsize=_CONVERSIONS_KEPT)
def _instants(start_local: str, minutes: int, timezone: str | None) -> tuple[str | None, str | None]:
    if timezone is None:  # unknown zone: leave the instants absent rather than guess
        return None, None
    starts_at = wall_clock_to_instant(start_local, timezone)
    if starts_at is None:
        return None, None
    start = parse_instant(starts_at)
    if start is None:  # unreachable: wall_clock_to_instant emits a valid instant
        return None, None
    return starts_at, format_instant(start + timedelta(minutes=minutes))


def _known_zone(timezone: str) -> str | None:
    return timezone if load_zone(timezone) is not None else None


def address_line(address: NativeAddress) -> str:
    """A one-line postal address (``100 Example Avenue, Suite 5, New York, NY 10001, US``)."""
    region = " ".join(part for part in (address.region, address.postal_code) if part)
    parts = (address.line1, address.line2, address.city, region, address.country)
    return ", ".join(part for part in parts if part)


def slot_id(schedule_id: str, provider_id: str, service_id: str, starts_at_local: str) -> str:
    """The slot id format ``schedule:provider:service:local-start``."""
    return f"{schedule_id}:{provider_id}:{service_id}:{starts_at_local}"


@dataclass(frozen=True, slots=True)
class _Place:
    """The schedule fields a Slot carries about its location."""

    name: str | None = None
    address: str | None = None
    latitude: float | None = None
    longitude: float | None = None
    hours: list[OperatingHours] | None = None


def _place(location: NativeLocation | None) -> _Place:
    if location is None:
        return _Place()
    # An online location has no street address or coordinates: omit them rather than send empties.
    in_person = location.kind != "online"
    coordinates = location.coordinates if in_person else None
    return _Place(
        name=location.name,
        address=address_line(location.address) if in_person and location.address else None,
        latitude=coordinates.latitude if coordinates else None,
        longitude=coordinates.longitude if coordinates else None,
        hours=operating_hours(location.hours),
    )


def _find_location(organization: NativeOrganization, location_id: str) -> NativeLocation | None:
    return next((loc for loc in organization.locations if loc.id == location_id), None)


class _Denormalizer:
    """One answer's shared translations: each location's place and each distinct price, made once.

    A day of availability repeats the same location (hours, address) and price on every slot; these
    translations are pure, so sharing them changes nothing but the time spent.
    """

    def __init__(self, organization: NativeOrganization) -> None:
        self.organization = organization
        self._places: dict[str, _Place] = {}
        self._prices: dict[tuple[str, str | None, str], Money] = {}

    def place(self, location_id: str) -> _Place:
        found = self._places.get(location_id)
        if found is None:
            found = self._places[location_id] = _place(_find_location(self.organization, location_id))
        return found

    def price(self, native: NativePrice) -> Money:
        key = (native.kind, native.amount, native.currency)
        found = self._prices.get(key)
        if found is None:
            found = self._prices[key] = money(native)
        return found


def slot(native: NativeSlot, organization: NativeOrganization) -> Slot:
    """A native availability slot, denormalized with its organization and location."""
    return _slot(native, _Denormalizer(organization))


def slots(natives: Sequence[NativeSlot], organization: NativeOrganization) -> list[Slot]:
    """Native availability slots, each as :func:`slot` makes it (shared parts translated once)."""
    shared = _Denormalizer(organization)
    return [_slot(native, shared) for native in natives]


def _slot(native: NativeSlot, shared: _Denormalizer) -> Slot:
    organization = shared.organization
    start_local = wall_clock(native.date, native.time)
    timezone = _known_zone(native.time_zone)
    starts_at, ends_at = _instants(start_local, native.duration_minutes, timezone)
    place = shared.place(native.location_id)
    return Slot(
        id=slot_id(native.location_id, native.provider_id, native.service_id, start_local),
        organization_id=organization.id,
        organization_name=organization.name,
        schedule_id=native.location_id,
        schedule_name=native.location_name,
        schedule_address=place.address,
        schedule_latitude=place.latitude,
        schedule_longitude=place.longitude,
        schedule_hours=place.hours,
        schedule_timezone=timezone,
        provider_id=native.provider_id,
        provider_name=native.provider_name,
        provider_image_url=native.provider_image_url,
        service_id=native.service_id,
        starts_at=starts_at,
        ends_at=ends_at,
        starts_at_local=start_local,
        ends_at_local=wall_clock(native.end_date, native.end_time),
        price=shared.price(native.price),
    )


def slot_from_request(
    organization: NativeOrganization,
    native_service: NativeService,
    *,
    schedule_id: str,
    provider_id: str,
    starts_at_local: str,
) -> Slot:
    """The Slot a booking.create asks for, built from the catalog when availability does not offer it.

    Mandate scope and window checks need a slot even when the time is no longer offered (scope problems
    win over availability), and a slot that is not offered is never shown nor booked: it carries what the
    mandate checks (ids, times, zone, price) and no display context. The end is the start plus the service
    duration in elapsed time.
    """
    location = _find_location(organization, schedule_id)
    timezone = _known_zone(location.time_zone if location else organization.time_zone)
    minutes = native_service.duration_minutes
    starts_at, ends_at = _instants(starts_at_local, minutes, timezone)
    zoned_end = instant_to_wall_clock(ends_at, timezone) if ends_at and timezone else None
    ends_at_local = zoned_end or _naive_end(starts_at_local, minutes)
    return Slot(
        id=slot_id(schedule_id, provider_id, native_service.id, starts_at_local),
        organization_id=organization.id,
        schedule_id=schedule_id,
        schedule_timezone=timezone,
        provider_id=provider_id,
        service_id=native_service.id,
        starts_at=starts_at,
        ends_at=ends_at,
        starts_at_local=starts_at_local,
        ends_at_local=ends_at_local,
        price=money(native_service.price),
    )


def _naive_end(starts_at_local: str, minutes: int) -> str:
    # The requested start is the mandate pre-check's own wall-clock string (precheck_mandate formats it).
    return format_wall_clock(datetime.fromisoformat(starts_at_local) + timedelta(minutes=minutes))


def service(native: NativeService) -> Service:
    """A native service as an OSBP Service (options are display-only add-ons)."""
    options = [
        ServiceOption(
            id=option.id,
            name=option.name,
            duration=duration(option.duration_minutes) if option.duration_minutes is not None else None,
            price=money(option.price) if option.price is not None else None,
        )
        for option in native.options
    ]
    return Service(
        id=native.id,
        name=native.name,
        description=native.description,
        duration=duration(native.duration_minutes),
        price=money(native.price),
        requires_consultation=native.requires_consultation,
        options=options or None,
    )


def unknown_fees(native: NativeService) -> list[str]:
    """The conditional fees the platform reports without an amount: omitted from the Policy, and a
    booking refuses them (OSBP spec, Security: unknown fee amounts refuse or hand off)."""
    rules = native.policy
    fees = (("cancellation fee", rules.cancellation.fee), ("no-show fee", rules.no_show_fee))
    return [name for name, fee in fees if fee is not None and _fee(fee) is None]


def _fee(native: NativePrice | None) -> Money | None:
    """A conditional fee, surfaced only when the platform reports its amount (OSBP spec, policy.explain)."""
    if native is None:
        return None
    fee = money(native)
    return fee if fee.amount_minor is not None else None


def policy(native: NativeService, organization: NativeOrganization) -> Policy:
    """A native service policy plus the organization block as an OSBP Policy."""
    rules = native.policy
    requirement = rules.payment.requirement
    payment: PaymentRequirement = requirement if requirement in _PAYMENT_REQUIREMENTS else "unknown"  # type: ignore[assignment]  # narrowed by the set
    deposit: Money | None = None
    if payment == "deposit":
        deposit = money(rules.payment.deposit) if rules.payment.deposit is not None else None
    elif payment == "none":
        zero = money_from_minor(0, organization.currency)
        deposit = None if isinstance(zero, MoneyError) else zero
    method: VerificationMethod = (
        rules.verification if rules.verification in _VERIFICATION_METHODS else "unknown"  # type: ignore[assignment]  # narrowed by the set
    )
    window = rules.cancellation.window_minutes
    return Policy(
        service_id=native.id,
        cancellation_enabled=rules.cancellation.allowed,
        cancellation_window=duration(window) if window is not None else None,
        cancellation_note=rules.cancellation.note,
        late_grace=duration(rules.late_grace_minutes) if rules.late_grace_minutes is not None else None,
        cancellation_fee=_fee(rules.cancellation.fee),
        no_show_fee=_fee(rules.no_show_fee),
        payment_requirement=payment,
        deposit=deposit,
        verification_method=method,
        organization=PolicyOrganization(
            id=organization.id,
            name=organization.name,
            timezone=_known_zone(organization.time_zone),
            currency=organization.currency,
            country=organization.country,
        ),
    )


def booking_status(native_status: str) -> BookingStatus:
    """A native appointment status as an OSBP Booking.status (unrecognized → ``unknown``)."""
    return _STATUS.get(native_status, "unknown")


def booking(native: NativeAppointment) -> Booking:
    """A native appointment as an OSBP Booking (current platform state)."""
    start_local = wall_clock(native.date, native.time)
    timezone = _known_zone(native.time_zone)
    starts_at, ends_at = _instants(start_local, native.duration_minutes, timezone)
    return Booking(
        id=native.id,
        status=booking_status(native.status),
        organization_id=native.organization_id,
        service_id=native.service_id,
        schedule_id=native.location_id,
        provider_id=native.provider_id,
        starts_at=starts_at,
        ends_at=ends_at,
        starts_at_local=start_local,
        ends_at_local=wall_clock(native.end_date, native.end_time),
        schedule_timezone=timezone,
    )
