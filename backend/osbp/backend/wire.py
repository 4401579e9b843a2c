"""The native API's wire shapes (pydantic): requests the platform accepts and documents it returns.

This is the platform's own dialect: major-unit price strings, minutes, weekday 0 = Sunday, wall-clock
`date`/`time` plus `time_zone`. Request models forbid unknown fields, and their strings refuse control
characters (`PlainText`; phone and email are left to the contact checks, which refuse them as
`invalid_contact`).
"""

from __future__ import annotations

from datetime import date as date_type
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from osbp.backend.text import PlainText

__all__ = [
    "Address",
    "AppointmentCancelled",
    "AppointmentCreate",
    "AppointmentOut",
    "AppointmentReschedule",
    "AppointmentRescheduled",
    "AppointmentStatus",
    "AppointmentTimes",
    "AvailabilityOut",
    "CancelQuote",
    "CancellationOut",
    "ChangeQuoteOut",
    "Coordinates",
    "CustomerIn",
    "CustomerOut",
    "HoursEntry",
    "LocationOut",
    "OptionOut",
    "OrganizationList",
    "OrganizationOut",
    "OrganizationSummary",
    "PaymentOut",
    "PolicyOut",
    "Price",
    "ProviderOut",
    "RescheduleQuote",
    "ServiceList",
    "ServiceOut",
    "SlotOut",
    "VerificationOut",
    "VerificationSend",
    "WallClock",
]

PriceKind = Literal["fixed", "insurance_dependent", "quote_required", "unknown"]
DATE_PATTERN = r"^\d{4}-\d{2}-\d{2}$"
TIME_PATTERN = r"^([01]\d|2[0-3]):[0-5]\d$"


class Price(BaseModel):
    """A native price: major-unit decimal string with the currency's minor digits, or a non-fixed kind."""

    kind: PriceKind
    amount: str | None = Field(examples=["120.00"])
    currency: str = Field(examples=["USD"])


class HoursEntry(BaseModel):
    """One opening period; weekday 0 = Sunday; close earlier than open runs past midnight."""

    weekday: int = Field(ge=0, le=6)
    open: str
    close: str


class Address(BaseModel):
    """A postal address."""

    line1: str
    line2: str | None = None
    city: str
    region: str
    postal_code: str
    country: str


class Coordinates(BaseModel):
    """WGS 84 coordinates."""

    latitude: float
    longitude: float


class LocationOut(BaseModel):
    """A location (online locations have no address or coordinates)."""

    id: str
    name: str
    kind: Literal["in_person", "online"]
    time_zone: str
    address: Address | None
    coordinates: Coordinates | None
    hours: list[HoursEntry]


class ProviderOut(BaseModel):
    """A provider, where they work and what they offer."""

    id: str
    name: str
    title: str | None
    image_url: str | None
    location_ids: list[str]
    service_ids: list[str]


class OrganizationSummary(BaseModel):
    """An organization in the directory."""

    id: str
    name: str
    slug: str
    time_zone: str
    currency: str
    country: str


class OrganizationList(BaseModel):
    """The organization directory."""

    organizations: list[OrganizationSummary]


class OrganizationOut(OrganizationSummary):
    """An organization with its locations and providers."""

    domain: str
    phone: str
    support_email: str
    slot_interval_minutes: int
    verification_sandbox: bool
    parallel_bookings: bool
    locations: list[LocationOut]
    providers: list[ProviderOut]


class OptionOut(BaseModel):
    """An add-on shown with a service (not bookable on its own)."""

    id: str
    name: str
    duration_minutes: int
    price: Price


class CancellationOut(BaseModel):
    """Cancellation terms."""

    allowed: bool
    window_minutes: int | None
    fee: Price | None
    note: str


class PaymentOut(BaseModel):
    """What must be paid when booking."""

    requirement: Literal["none", "deposit", "full_prepay", "unknown"]
    deposit: Price | None


class PolicyOut(BaseModel):
    """A service's booking policy."""

    cancellation: CancellationOut
    late_grace_minutes: int | None
    no_show_fee: Price | None
    #: What the customer's reschedule of an appointment of this service costs (null: nothing).
    reschedule_fee: Price | None
    payment: PaymentOut
    verification: Literal["sms", "email", "none"]


class ServiceOut(BaseModel):
    """A service with its policy."""

    id: str
    organization_id: str
    name: str
    description: str
    duration_minutes: int
    price: Price
    requires_consultation: bool
    location_ids: list[str]
    options: list[OptionOut]
    policy: PolicyOut


class ServiceList(BaseModel):
    """An organization's services."""

    services: list[ServiceOut]


class SlotOut(BaseModel):
    """A bookable opening, in merchant-local wall-clock."""

    location_id: str
    location_name: str
    time_zone: str
    provider_id: str
    provider_name: str
    provider_image_url: str | None
    service_id: str
    date: str
    time: str
    end_date: str
    end_time: str
    duration_minutes: int
    price: Price
    #: The validator of this offer: send it as ``If-Match`` on the create (412 ``offer_changed`` if stale).
    offer_token: str


class AvailabilityOut(BaseModel):
    """The slots of one service on one local date."""

    organization_id: str
    service_id: str
    date: str
    slots: list[SlotOut]


class CustomerIn(BaseModel):
    """The person the appointment is for (contacts are checked by the platform: E.164 phone, email)."""

    model_config = ConfigDict(extra="forbid")

    display_name: PlainText = Field(min_length=1, max_length=200)
    given_name: PlainText | None = Field(default=None, max_length=100)
    family_name: PlainText | None = Field(default=None, max_length=100)
    phone: str | None = Field(default=None, max_length=32)
    email: str | None = Field(default=None, max_length=320)


def _keys_as_property_names(schema: dict[str, Any]) -> None:
    # pydantic writes a key pattern as `patternProperties`, which leaves other keys unconstrained; the
    # rule is on every key, which JSON Schema says with `propertyNames`.
    for pattern, values in schema.pop("patternProperties", {}).items():
        schema["propertyNames"] = {"pattern": pattern}
        schema["additionalProperties"] = values


class AppointmentCreate(BaseModel):
    """The body of an appointment create."""

    model_config = ConfigDict(extra="forbid")

    service_id: PlainText = Field(min_length=1, max_length=100)
    location_id: PlainText = Field(min_length=1, max_length=100)
    provider_id: PlainText = Field(min_length=1, max_length=100)
    date: str = Field(pattern=DATE_PATTERN, examples=["2026-05-05"])
    time: str = Field(pattern=TIME_PATTERN, examples=["13:00"])
    customer: CustomerIn
    verification_code: PlainText | None = Field(default=None, max_length=32)
    metadata: dict[PlainText, PlainText] = Field(
        default_factory=dict, max_length=20, json_schema_extra=_keys_as_property_names
    )

    @field_validator("date")
    @classmethod
    def _real_date(cls, value: str) -> str:
        date_type.fromisoformat(value)
        return value

    @field_validator("metadata")
    @classmethod
    def _bounded(cls, value: dict[str, str]) -> dict[str, str]:
        for key, item in value.items():
            if not 1 <= len(key) <= 64 or len(item) > 500:
                raise ValueError("metadata keys are 1-64 characters and values at most 500")
        return value


class CustomerOut(BaseModel):
    """The customer as stored."""

    id: str
    display_name: str
    given_name: str | None
    family_name: str | None
    phone: str | None
    email: str | None


#: Every native appointment status. `archived` is the merchant's housekeeping state for a record taken out of
#: the day's book; it says nothing about whether the visit happened (a status clients may not know).
AppointmentStatus = Literal["pending", "confirmed", "cancelled", "completed", "no_show", "archived"]


class AppointmentOut(BaseModel):
    """An appointment, in merchant-local wall-clock."""

    id: str
    organization_id: str
    status: AppointmentStatus
    service_id: str
    service_name: str
    location_id: str
    provider_id: str
    date: str
    time: str
    end_date: str
    end_time: str
    time_zone: str
    duration_minutes: int
    price: Price
    customer: CustomerOut
    verified_by: Literal["sms", "email"] | None
    metadata: dict[str, str]
    #: Bumped by every change of its status or time; the ETag of the appointment's answers is its digest.
    version: int = Field(ge=1)


class AppointmentReschedule(BaseModel):
    """The body of a customer's reschedule: the new slot, as a create names it (same service)."""

    model_config = ConfigDict(extra="forbid")

    location_id: PlainText = Field(min_length=1, max_length=100)
    provider_id: PlainText = Field(min_length=1, max_length=100)
    date: str = Field(pattern=DATE_PATTERN, examples=["2026-05-06"])
    time: str = Field(pattern=TIME_PATTERN, examples=["14:00"])

    @field_validator("date")
    @classmethod
    def _real_date(cls, value: str) -> str:
        date_type.fromisoformat(value)
        return value


class WallClock(BaseModel):
    """A merchant-local wall-clock moment (in the appointment's `time_zone`)."""

    date: str
    time: str


class AppointmentTimes(BaseModel):
    """Where and when an appointment was, before a reschedule moved it."""

    location_id: str
    provider_id: str
    date: str
    time: str
    end_date: str
    end_time: str
    time_zone: str


class AppointmentCancelled(AppointmentOut):
    """A cancelled appointment, with the cancellation fee the customer's cancel charged (zero when free)."""

    cancellation_fee: Price


class AppointmentRescheduled(AppointmentOut):
    """A moved appointment (the same id), with the fee the move charged and where it was before."""

    reschedule_fee: Price
    previous: AppointmentTimes


class CancelQuote(BaseModel):
    """What a customer's cancel would do now, on the platform clock."""

    #: Whether a cancel now cancels it (the status table and the service's policy allow it).
    allowed: bool
    #: The fee a cancel now charges: the policy's fee inside the late window, else zero.
    fee: Price
    #: When the policy's fee starts applying (merchant-local; the booking's own time when the policy has no
    #: free window); null when the policy charges no cancellation fee.
    fee_from: WallClock | None
    #: The policy's late window before the start, in minutes (null: none).
    window_minutes: int | None


class RescheduleQuote(BaseModel):
    """What a customer's reschedule would do now."""

    allowed: bool
    #: The fee a reschedule charges (the service's reschedule fee; zero when it has none).
    fee: Price


class ChangeQuoteOut(BaseModel):
    """The terms of cancelling or moving an appointment now, at the appointment's `version`."""

    appointment_id: str
    organization_id: str
    status: AppointmentStatus
    version: int
    time_zone: str
    cancel: CancelQuote
    reschedule: RescheduleQuote


class VerificationSend(BaseModel):
    """Ask the platform to send a verification code."""

    model_config = ConfigDict(extra="forbid")

    purpose: PlainText = Field(min_length=1, max_length=200, examples=["booking:gus_notary"])
    channel: Literal["sms", "email"] | None = None
    phone: str | None = Field(default=None, max_length=32)
    email: str | None = Field(default=None, max_length=320)


class VerificationOut(BaseModel):
    """A sent challenge (the code itself never appears)."""

    id: str
    organization_id: str
    purpose: str
    channel: Literal["sms", "email"]
    destination: str
    expires_in_seconds: int
