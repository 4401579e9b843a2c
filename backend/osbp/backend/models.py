"""The platform's tables (SQLModel on SQLite or PostgreSQL; the migrations in `migrations/` build them).

The webhook tables are an outbox: an event and its deliveries are inserted in the transaction that
changes the appointment, so a committed change always has its pending deliveries (none lost on restart).

Appointment times are stored twice: the merchant-local wall-clock the API speaks, and UTC epoch seconds
(`starts_utc`, `ends_utc`) so overlap checks are indexed range queries that never scan history. Two
backstops under the transactional check, on active exclusive appointments only (an organization allowing
parallel bookings stores `exclusive` false): a partial unique index on (provider, start), and on
PostgreSQL an exclusion constraint no two overlapping [start, end) ranges of one provider can pass.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, BigInteger, Column, Index, func, text
from sqlalchemy.dialects.postgresql import ExcludeConstraint
from sqlmodel import Field, SQLModel

__all__ = [
    "ACTIVE_STATUSES",
    "Appointment",
    "Customer",
    "IdempotencyRecord",
    "Location",
    "Organization",
    "OutboxMessage",
    "Provider",
    "Service",
    "VerificationChallenge",
    "WebhookAttempt",
    "WebhookDelivery",
    "WebhookEndpoint",
    "WebhookEvent",
]

#: Statuses that hold a provider's time.
ACTIVE_STATUSES = ("pending", "confirmed")
#: The rows the backstops cover: active appointments that hold their provider's time exclusively.
_HOLDS_TIME = "exclusive AND status IN ('pending', 'confirmed')"


class Organization(SQLModel, table=True):
    """A merchant."""

    id: str = Field(primary_key=True)
    name: str
    slug: str
    domain: str
    phone: str
    support_email: str
    time_zone: str
    currency: str
    country: str
    slot_interval_minutes: int
    verification_sandbox: bool = False
    parallel_bookings: bool = False


class Location(SQLModel, table=True):
    """A place (or an online room) with weekly hours; `hours` holds `{weekday, open, close}` entries."""

    id: str = Field(primary_key=True)
    organization_id: str = Field(index=True, foreign_key="organization.id")
    name: str
    kind: str
    time_zone: str
    address: dict[str, Any] | None = Field(default=None, sa_column=Column(JSON, nullable=True))
    latitude: float | None = None
    longitude: float | None = None
    hours: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))


class Provider(SQLModel, table=True):
    """A person whose time is booked."""

    id: str = Field(primary_key=True)
    organization_id: str = Field(index=True, foreign_key="organization.id")
    name: str
    title: str | None = None
    image_url: str | None = None
    location_ids: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    service_ids: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))


class Service(SQLModel, table=True):
    """A bookable service with its policy (amounts are major-unit strings in `currency`)."""

    id: str = Field(primary_key=True)
    organization_id: str = Field(index=True, foreign_key="organization.id")
    name: str
    description: str
    duration_minutes: int
    price_kind: str
    price_amount: str | None = None
    currency: str
    requires_consultation: bool = False
    location_ids: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    options: list[dict[str, Any]] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    cancellation_allowed: bool = True
    cancellation_window_minutes: int | None = None
    cancellation_fee: str | None = None
    cancellation_note: str = ""
    late_grace_minutes: int | None = None
    no_show_fee: str | None = None
    #: What moving an appointment of this service costs the customer (None: nothing).
    reschedule_fee: str | None = None
    payment_requirement: str = "none"
    deposit_amount: str | None = None
    verification: str = "none"


class Customer(SQLModel, table=True):
    """A person appointments are for, found again by phone or email within an organization."""

    id: str = Field(primary_key=True)
    organization_id: str = Field(index=True, foreign_key="organization.id")
    display_name: str
    given_name: str | None = None
    family_name: str | None = None
    phone: str | None = Field(default=None, index=True)
    email: str | None = Field(default=None, index=True)


class Appointment(SQLModel, table=True):
    """A booked appointment (status pending, confirmed, cancelled or no_show; completed is derived)."""

    __table_args__ = (
        Index("ix_appointment_provider_start", "provider_id", "starts_utc"),
        Index(
            "ux_appointment_provider_active_start",
            "provider_id",
            "starts_utc",
            unique=True,
            sqlite_where=text("exclusive = 1 AND status IN ('pending', 'confirmed')"),
            postgresql_where=text(_HOLDS_TIME),
        ),
        # btree_gist lets a GiST index compare the provider with `=`; int8range is the [start, end) of
        # the epoch seconds the overlap checks already use.
        ExcludeConstraint(
            (Column("provider_id"), "="),
            (func.int8range(Column("starts_utc"), Column("ends_utc")), "&&"),
            name="ex_appointment_provider_active_overlap",
            using="gist",
            where=text(_HOLDS_TIME),
        ).ddl_if(dialect="postgresql"),
    )

    id: str = Field(primary_key=True)
    organization_id: str = Field(index=True, foreign_key="organization.id")
    service_id: str
    location_id: str
    provider_id: str
    customer_id: str
    # The customer exactly as given on this booking (the customer record keeps only the latest names).
    customer_display_name: str
    customer_given_name: str | None = None
    customer_family_name: str | None = None
    customer_phone: str | None = None
    customer_email: str | None = None
    local_date: str
    local_time: str
    end_date: str
    end_time: str
    time_zone: str
    duration_minutes: int
    price_kind: str
    price_amount: str | None = None
    currency: str
    starts_utc: int = Field(sa_type=BigInteger)
    ends_utc: int = Field(sa_type=BigInteger)
    status: str
    exclusive: bool = True
    verified_by: str | None = None
    client_metadata: dict[str, str] = Field(default_factory=dict, sa_column=Column(JSON, nullable=False))
    created_utc: int = Field(sa_type=BigInteger)
    #: Bumped by every change of the status or the time: the appointment's `ETag` (`If-Match`) is its digest.
    version: int = 1
    #: The fee a customer's cancel charged, as the cancel answered it (None: not cancelled by the customer).
    cancellation_fee_charged: str | None = None


class VerificationChallenge(SQLModel, table=True):
    """An issued code, stored only as a salted hash; state open, consumed, locked or superseded."""

    __table_args__ = (Index("ix_challenge_lookup", "organization_id", "purpose", "contact"),)

    id: str = Field(primary_key=True)
    organization_id: str = Field(foreign_key="organization.id")
    purpose: str
    channel: str
    contact: str
    code_hash: str
    created_utc: int = Field(sa_type=BigInteger)
    expires_utc: int = Field(sa_type=BigInteger)
    attempts: int = 0
    state: str = "open"


class IdempotencyRecord(SQLModel, table=True):
    """One `Idempotency-Key` per organization: in flight, or completed with the stored response."""

    organization_id: str = Field(primary_key=True)
    key: str = Field(primary_key=True)
    fingerprint: str
    state: str
    status_code: int | None = None
    response_body: str | None = None
    created_utc: int = Field(sa_type=BigInteger)


class OutboxMessage(SQLModel, table=True):
    """A message handed to the (simulated) SMS/email gateway."""

    seq: int | None = Field(default=None, primary_key=True)
    id: str = Field(index=True)
    organization_id: str = Field(index=True)
    channel: str
    to: str
    purpose: str
    body: str
    code: str
    sent_utc: int = Field(sa_type=BigInteger)


class WebhookEndpoint(SQLModel, table=True):
    """A receiver URL an organization registered; `secret` (`whsec_…`) signs every delivery to it."""

    id: str = Field(primary_key=True)
    organization_id: str = Field(index=True, foreign_key="organization.id")
    url: str
    description: str = ""
    event_types: list[str] = Field(default_factory=list, sa_column=Column(JSON, nullable=False))
    secret: str
    created_utc: int = Field(sa_type=BigInteger)


class WebhookEvent(SQLModel, table=True):
    """One event as sent: its `id` is the `webhook-id`, `payload` the exact body bytes of every attempt."""

    seq: int | None = Field(default=None, primary_key=True)
    id: str = Field(index=True, unique=True)
    organization_id: str = Field(index=True)
    appointment_id: str
    type: str
    payload: str
    created_utc: int = Field(sa_type=BigInteger)


class WebhookDelivery(SQLModel, table=True):
    """An event owed to one endpoint: state pending, delivered, failed (attempts spent) or abandoned."""

    __table_args__ = (Index("ix_webhook_delivery_due", "state", "next_attempt_utc"),)

    id: str = Field(primary_key=True)
    organization_id: str = Field(index=True)
    endpoint_id: str = Field(index=True)
    event_seq: int = Field(index=True)
    appointment_id: str
    state: str = "pending"
    attempts: int = 0
    next_attempt_utc: float | None = None
    last_status_code: int | None = None
    last_error: str | None = None


class WebhookAttempt(SQLModel, table=True):
    """One attempt of a delivery, as logged: the receiver's status code, or the transport error."""

    seq: int | None = Field(default=None, primary_key=True)
    delivery_id: str = Field(index=True)
    attempt: int
    attempted_utc: float
    status_code: int | None = None
    error: str | None = None
