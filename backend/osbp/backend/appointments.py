"""Appointments: the atomic, idempotent create, reads, and the status transitions cancel and no-show.

Every change queues its webhook event in its own transaction (`osbp.backend.webhook_events`).

The create runs inside one write transaction: it resolves the ids, checks eligibility, verification and
the slot (including the provider's overlapping active appointments), and inserts, so no other writer can
slip in between check and insert (SQLite: `BEGIN IMMEDIATE`; PostgreSQL: advisory locks on the key, the
provider and the contact, in that order, see `dialects.serialise`). The partial unique index on
(provider, start), and on PostgreSQL the exclusion constraint on overlapping ranges, are the backstop:
if one ever fires, the answer is still 409 `slot_taken`. The platform never double-sells a
provider's time. A create sent with `If-Match` (the slot's `offer_token` from availability) is refused
with 412 `offer_changed`, in the same transaction, when the offer's facts changed since
(`osbp.backend.validators`); an idempotent replay answers first. The Idempotency-Key's lookup and record
are part of the same transaction, so a crash can never leave a key claimed without its appointment. A
refused create commits only what its checks recorded (a wrong verification code's attempt).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, time
from typing import Any

from sqlalchemy import Select, Table, bindparam, insert, select, update
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from osbp.backend import idempotency, webhook_events
from osbp.backend.availability import check_bookable, eligible
from osbp.backend.catalog import (
    get_location,
    get_organization,
    get_provider,
    get_service,
    not_found,
    service_price,
)
from osbp.backend.catalog_cache import catalog_version
from osbp.backend.contacts import check_email, check_phone
from osbp.backend.db import Database
from osbp.backend.dialects import serialise
from osbp.backend.models import Appointment, Customer, Organization, Service, VerificationChallenge
from osbp.backend.problems import ProblemError
from osbp.backend.tokens import TokenSource
from osbp.backend.validators import matches_any, offer_token
from osbp.backend.verification import check_code
from osbp.backend.wire import AppointmentCreate, AppointmentOut, CustomerOut

__all__ = [
    "Created",
    "appointment_out",
    "create",
    "find",
    "get",
    "native_status",
    "set_status",
]


#: The create's statements, built once (SQLAlchemy Core, values bound per call): each is one round trip,
#: without the unit of work, and compiled once per database.
_APPOINTMENTS: Table = Appointment.__table__  # type: ignore[attr-defined]
_CUSTOMERS: Table = Customer.__table__  # type: ignore[attr-defined]
_INSERT_APPOINTMENT = insert(_APPOINTMENTS)
_INSERT_CUSTOMER = insert(_CUSTOMERS)
_CUSTOMER_FIELDS = ("display_name", "given_name", "family_name", "phone", "email")
_UPDATE_CUSTOMER = (
    update(_CUSTOMERS)
    .where(_CUSTOMERS.c.id == bindparam("customer_id"))
    .values({name: bindparam(name) for name in _CUSTOMER_FIELDS})
)


def _customer_by(column: str) -> Select[Any]:
    """The organization's first customer with ``column`` equal to ``:contact``: id, phone, email."""
    return (
        select(_CUSTOMERS.c.id, _CUSTOMERS.c.phone, _CUSTOMERS.c.email)
        .where(
            _CUSTOMERS.c.organization_id == bindparam("organization_id"),
            _CUSTOMERS.c[column] == bindparam("contact"),
        )
        .limit(1)
    )


_CUSTOMER_BY_PHONE = _customer_by("phone")
_CUSTOMER_BY_EMAIL = _customer_by("email")


@dataclass(frozen=True)
class Created:
    """A successful create, fresh or replayed from its Idempotency-Key."""

    body: dict[str, Any]
    replayed: bool
    status_code: int = 201


def create(
    db: Database,
    *,
    organization_id: str,
    key: str,
    request: AppointmentCreate,
    now: datetime,
    tokens: TokenSource,
    if_match: str | None = None,
) -> Created:
    """Create an appointment exactly once per Idempotency-Key, or raise why not.

    The key's lookup, every check, the insert and the stored response are one transaction: whatever process
    dies when, the key is either free or bound to its committed appointment and 201. ``if_match`` (the
    request's ``If-Match``) is checked right after the replay lookup, before anything else.
    """
    digest = idempotency.fingerprint(request.model_dump(mode="json"))
    try:
        # A refusal commits what the checks recorded before it (a wrong verification code's attempt).
        # The create reads the catalog and never writes it: its lookups may use the revision's snapshot.
        with db.write(commit_on=(ProblemError,), catalog_reader=True) as session:
            # PostgreSQL: one writer at a time per key and per provider, across processes (SQLite's
            # BEGIN IMMEDIATE already admits one writer in all).
            serialise(
                session,
                f"idempotency:{organization_id}:{key}",
                f"provider:{organization_id}:{request.provider_id}",
            )
            replay = idempotency.lookup(
                session, organization_id=organization_id, key=key, digest=digest, now=now
            )
            if replay is not None:
                return Created(body=replay.body, replayed=True, status_code=replay.status_code)
            if if_match is not None:
                _check_offer(session, organization_id, request, if_match)
            outcome = _create_locked(
                session, organization_id=organization_id, request=request, now=now, tokens=tokens
            )
            webhook_events.record(
                session,
                event_type="appointment.created",
                appointment=outcome,
                actor="customer",
                now=now,
                tokens=tokens,
            )
            body = outcome.model_dump(mode="json")
            idempotency.store(
                session,
                organization_id=organization_id,
                key=key,
                digest=digest,
                now=now,
                status_code=201,
                body=body,
            )
        return Created(body=body, replayed=False)
    except IntegrityError:
        raise ProblemError("slot_taken", "The provider's time was booked by a concurrent request.") from None


def _check_offer(session: Session, organization_id: str, request: AppointmentCreate, if_match: str) -> None:
    """412 ``offer_changed`` unless ``if_match`` lists the requested slot's offer token as of now."""
    current = offer_token(
        catalog_version(session),
        location_id=request.location_id,
        provider_id=request.provider_id,
        service_id=request.service_id,
        date=request.date,
        time=request.time,
    )
    if not matches_any(if_match, f'"{current}"', weak=False):
        raise ProblemError(
            "offer_changed",
            "The offer changed since it was read (price, policy or catalog details): read availability "
            "again and create with the new offer_token.",
        )


def _create_locked(
    session: Session, *, organization_id: str, request: AppointmentCreate, now: datetime, tokens: TokenSource
) -> AppointmentOut:
    organization = get_organization(session, organization_id)
    service = get_service(session, organization_id, request.service_id)
    location = get_location(session, organization_id, request.location_id)
    provider = get_provider(session, organization_id, request.provider_id)
    if not eligible(service, location, provider):
        raise ProblemError(
            "provider_not_eligible", f"Provider {provider.id} does not offer {service.id} at {location.id}."
        )
    phone, email = _contacts(request)
    # The customer record and the contact's verification challenge are read, then written.
    serialise(session, *(f"contact:{organization_id}:{contact}" for contact in (phone, email) if contact))
    challenge = _verify(
        session,
        service=service,
        organization=organization,
        phone=phone,
        email=email,
        code=request.verification_code,
        now=now,
    )
    opening = check_bookable(
        session,
        organization=organization,
        service=service,
        location=location,
        provider=provider,
        day=date.fromisoformat(request.date),
        start=time.fromisoformat(request.time),
        now=now,
    )
    customer_id = _customer(session, organization_id, request, phone, email, tokens)
    fields: dict[str, Any] = {
        "id": tokens.hex_id("apt"),
        "organization_id": organization_id,
        "service_id": service.id,
        "location_id": location.id,
        "provider_id": provider.id,
        "customer_id": customer_id,
        "customer_display_name": request.customer.display_name,
        "customer_given_name": request.customer.given_name,
        "customer_family_name": request.customer.family_name,
        "customer_phone": phone,
        "customer_email": email,
        "local_date": opening.local_start.date().isoformat(),
        "local_time": opening.local_start.strftime("%H:%M"),
        "end_date": opening.local_end.date().isoformat(),
        "end_time": opening.local_end.strftime("%H:%M"),
        "time_zone": location.time_zone,
        "duration_minutes": service.duration_minutes,
        "price_kind": service.price_kind,
        "price_amount": service.price_amount if service.price_kind == "fixed" else None,
        "currency": service.currency,
        "starts_utc": opening.start_utc,
        "ends_utc": opening.end_utc,
        "status": "pending" if service.requires_consultation else "confirmed",
        "exclusive": not organization.parallel_bookings,
        "verified_by": challenge.channel if challenge is not None else None,
        "client_metadata": dict(request.metadata),
        "created_utc": int(now.timestamp()),
        "version": 1,
    }
    if challenge is not None:
        challenge.state = "consumed"
        session.add(challenge)
    # One INSERT statement, not the unit of work: the row is written (and the unique index and, on
    # PostgreSQL, the exclusion constraint checked) right here; only a consumed challenge waits for the
    # commit's flush.
    session.connection().execute(_INSERT_APPOINTMENT, fields)
    appointment = Appointment(**fields)  # the document's source, never added to the session
    return appointment_out(appointment, service, now)


def _contacts(request: AppointmentCreate) -> tuple[str | None, str | None]:
    phone = email = None
    if request.customer.phone is not None:
        phone = check_phone(request.customer.phone, "customer.phone")
    if request.customer.email is not None:
        email = check_email(request.customer.email, "customer.email")
    if phone is None and email is None:
        raise ProblemError(
            "invalid_contact", "customer.phone or customer.email is required.", {"field": "customer.phone"}
        )
    return phone, email


def _verify(
    session: Session,
    *,
    service: Service,
    organization: Organization,
    phone: str | None,
    email: str | None,
    code: str | None,
    now: datetime,
) -> VerificationChallenge | None:
    if service.verification == "none":
        return None
    contact, field = (phone, "customer.phone") if service.verification == "sms" else (email, "customer.email")
    if contact is None:
        raise ProblemError(
            "invalid_contact",
            f"{field} is required: this service verifies by {service.verification}.",
            {"field": field},
        )
    if code is None:
        raise ProblemError(
            "requires_verification",
            f"This service requires {service.verification} verification: send a code, then "
            "repeat the create with verification_code.",
            {"channel": service.verification},
        )
    return check_code(session, organization=organization, contact=contact, code=code, now=now)


def _customer(
    session: Session,
    organization_id: str,
    request: AppointmentCreate,
    phone: str | None,
    email: str | None,
    tokens: TokenSource,
) -> str:
    """The id of the customer found by phone, then email (created if new), now with the latest names."""
    connection = session.connection()
    found = None
    for query, value in ((_CUSTOMER_BY_PHONE, phone), (_CUSTOMER_BY_EMAIL, email)):
        if value is not None and found is None:
            found = connection.execute(query, {"organization_id": organization_id, "contact": value}).first()
    names = {
        "display_name": request.customer.display_name,
        "given_name": request.customer.given_name,
        "family_name": request.customer.family_name,
    }
    if found is None:
        customer_id = tokens.hex_id("cus")
        values = {"id": customer_id, "organization_id": organization_id, "phone": phone, "email": email}
        connection.execute(_INSERT_CUSTOMER, values | names)
        return customer_id
    contacts = {"phone": phone or found.phone, "email": email or found.email}
    connection.execute(_UPDATE_CUSTOMER, {"customer_id": found.id} | names | contacts)
    return str(found.id)


def appointment_out(appointment: Appointment, service: Service, now: datetime) -> AppointmentOut:
    """The native appointment document, with its status at `now` (see `native_status`)."""
    price = service_price(service).model_copy(
        update={"amount": appointment.price_amount, "currency": appointment.currency}
    )
    return AppointmentOut.model_validate(
        {
            "id": appointment.id,
            "organization_id": appointment.organization_id,
            "status": native_status(appointment, now),
            "service_id": appointment.service_id,
            "service_name": service.name,
            "location_id": appointment.location_id,
            "provider_id": appointment.provider_id,
            "date": appointment.local_date,
            "time": appointment.local_time,
            "end_date": appointment.end_date,
            "end_time": appointment.end_time,
            "time_zone": appointment.time_zone,
            "duration_minutes": appointment.duration_minutes,
            "price": price,
            "customer": CustomerOut(
                id=appointment.customer_id,
                display_name=appointment.customer_display_name,
                given_name=appointment.customer_given_name,
                family_name=appointment.customer_family_name,
                phone=appointment.customer_phone,
                email=appointment.customer_email,
            ),
            "verified_by": appointment.verified_by,
            "metadata": dict(appointment.client_metadata),
            "version": appointment.version,
        }
    )


def native_status(appointment: Appointment, now: datetime) -> str:
    """The status at `now`: a confirmed appointment whose end has passed is `completed`."""
    if appointment.status == "confirmed" and appointment.ends_utc <= now.timestamp():
        return "completed"
    return appointment.status


def find(session: Session, organization_id: str, appointment_id: str) -> tuple[Appointment, Service]:
    """The organization's appointment and its service, or 404 `appointment_not_found`."""
    appointment = session.get(Appointment, appointment_id)
    if appointment is None or appointment.organization_id != organization_id:
        detail = f"No appointment {appointment_id!r} at {organization_id!r}."
        raise not_found(session, organization_id, "appointment_not_found", detail)
    return appointment, get_service(session, organization_id, appointment.service_id)


def get(db: Database, *, organization_id: str, appointment_id: str, now: datetime) -> AppointmentOut:
    """Read one appointment."""
    with db.read() as session:
        return appointment_out(*find(session, organization_id, appointment_id), now)


def set_status(
    session: Session,
    appointment: Appointment,
    service: Service,
    *,
    target: str,
    actor: webhook_events.Actor,
    now: datetime,
    tokens: TokenSource,
    **event: Any,
) -> AppointmentOut:
    """Store `target` (a new version) and queue its event in the caller's transaction; the appointment as
    it is now.

    A status change other than a cancellation names the stored status it replaced (`previous_status`);
    ``event`` adds members to the event's `data`.
    """
    previous = appointment.status
    appointment.status = target
    appointment.version += 1
    session.add(appointment)
    changed = appointment_out(appointment, service, now)
    webhook_events.record(
        session,
        event_type=webhook_events.status_event_type(target),
        appointment=changed,
        actor=actor,
        now=now,
        tokens=tokens,
        **({} if target == "cancelled" else {"previous_status": previous}),
        **event,
    )
    return changed
