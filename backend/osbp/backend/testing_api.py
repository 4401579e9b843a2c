"""The test-only control surface under `/_testing/`, mounted only when `enable_testing` is set.

Arm an organization's next appointment create, cancel or reschedule to fail (consumed once) or to be
slow, make its whole API unreachable or those writes lose their answers until told otherwise, read the
outbox (the stand-in SMS/email gateway), set or advance the platform clock, reset to seeds, read counters
that prove a write did or did not happen, change a service's price or policy or a provider's name on the
running platform (as a merchant editing its catalog would), give one appointment a native status directly
(to grade a status mapping; no webhook event), read the webhook delivery log, and put a fault profile in
force (`/_testing/faults`, see `osbp.backend.faults`). The shapes are a contract with the conformance
battery and the demo.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated, Literal

from fastapi import APIRouter, Query
from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator
from sqlmodel import col, func, select

from osbp.backend.api.deps import RuntimeDep, problem_responses
from osbp.backend.appointments import appointment_out
from osbp.backend.catalog import get_location, get_organization, get_provider, get_service, not_found
from osbp.backend.fault_profile import FaultProfile, Operation, lost_response_rule, slow_rule
from osbp.backend.faults import endpoint_names
from osbp.backend.models import ACTIVE_STATUSES, Appointment, OutboxMessage
from osbp.backend.problems import ProblemError
from osbp.backend.runtime import ARMABLE_OUTCOMES, Runtime
from osbp.backend.webhook_log import DeliveryLog, delivery_log
from osbp.backend.wire import AppointmentOut, AppointmentStatus

__all__ = [
    "AppointmentStatusRequest",
    "ArmRequest",
    "ClockRequest",
    "FaultsOut",
    "LocationChange",
    "ProviderChange",
    "ServiceChange",
    "router",
]

router = APIRouter(prefix="/_testing", tags=["testing"])


class ArmRequest(BaseModel):
    """Arm the next appointment create (or cancel, or reschedule) of an organization."""

    model_config = ConfigDict(extra="forbid")

    organization_id: str = Field(min_length=1, max_length=100)
    #: ``unreachable``/``reachable`` are not armed: they put in force, or lift, the fault-profile rule that
    #: answers every native request of the organization with a 503 (see ``FaultInjector.cut_off``).
    #: ``lost_response`` puts first the rule that applies each of the organization's appointment creates
    #: and drops its answer, until ``reachable``; ``slow`` the one that holds its next create two seconds.
    outcome: Literal[
        "slot_taken",
        "rate_limited",
        "requires_verification",
        "unreachable",
        "reachable",
        "lost_response",
        "slow",
    ]
    #: Which appointment write the outcome applies to (``unreachable``/``reachable`` concern every request).
    #: For a cancel or reschedule, ``slow`` holds the commit's write lock, not the request.
    operation: Operation = "create"

    @model_validator(mode="after")
    def _armable(self) -> ArmRequest:
        connection = ("unreachable", "reachable", "lost_response", "slow")
        if self.outcome not in connection and self.outcome not in ARMABLE_OUTCOMES[self.operation]:
            raise ValueError(f"outcome {self.outcome!r} cannot be armed for the {self.operation} operation")
        return self


class AppointmentStatusRequest(BaseModel):
    """Give one appointment a native status, bypassing the cancel and no-show rules."""

    model_config = ConfigDict(extra="forbid")

    organization_id: str = Field(min_length=1, max_length=100)
    booking_id: str = Field(min_length=1, max_length=100)
    status: AppointmentStatus


class Armed(BaseModel):
    """What is armed."""

    organization_id: str
    armed: str


class ClockRequest(BaseModel):
    """Set the clock to an instant, or advance it by seconds."""

    model_config = ConfigDict(extra="forbid")

    now: AwareDatetime | None = None
    advance_seconds: float | None = Field(default=None, ge=-10 * 365 * 86400, le=10 * 365 * 86400)

    @model_validator(mode="after")
    def _exactly_one(self) -> ClockRequest:
        if (self.now is None) == (self.advance_seconds is None):
            raise ValueError("give exactly one of now or advance_seconds")
        return self


class ClockOut(BaseModel):
    """The platform clock's current instant."""

    now: str


class Message(BaseModel):
    """One outbox message."""

    id: str
    organization_id: str
    channel: str
    to: str
    purpose: str
    body: str
    code: str
    sent_at: str


class Outbox(BaseModel):
    """Outbox messages, oldest first."""

    messages: list[Message]


class Stats(BaseModel):
    """Counters proving whether writes and create requests happened."""

    organization_id: str | None
    appointments: int
    active_appointments: int
    create_requests: int
    #: Messages handed to the simulated SMS/email gateway (the outbox's length).
    messages: int


class ServiceChange(BaseModel):
    """New values for some of a service's price and policy fields (the fields given are changed)."""

    model_config = ConfigDict(extra="forbid")

    organization_id: str = Field(min_length=1, max_length=100)
    service_id: str = Field(min_length=1, max_length=100)
    name: str | None = Field(default=None, min_length=1, max_length=200)
    price_amount: str | None = Field(default=None, pattern=r"^\d+\.\d{2}$")
    cancellation_allowed: bool | None = None
    cancellation_window_minutes: int | None = Field(default=None, ge=0)
    cancellation_fee: str | None = Field(default=None, pattern=r"^\d+\.\d{2}$")
    no_show_fee: str | None = Field(default=None, pattern=r"^\d+\.\d{2}$")
    reschedule_fee: str | None = Field(default=None, pattern=r"^\d+\.\d{2}$")


class ProviderChange(BaseModel):
    """A provider's new display name."""

    model_config = ConfigDict(extra="forbid")

    organization_id: str = Field(min_length=1, max_length=100)
    provider_id: str = Field(min_length=1, max_length=100)
    name: str = Field(min_length=1, max_length=200)


class LocationChange(BaseModel):
    """A location's new display name."""

    model_config = ConfigDict(extra="forbid")

    organization_id: str = Field(min_length=1, max_length=100)
    location_id: str = Field(min_length=1, max_length=100)
    name: str = Field(min_length=1, max_length=200)


class FaultsOut(FaultProfile):
    """The fault profile in force, with how many requests each rule has hit since it was set."""

    hits: list[int]


class Changed(BaseModel):
    """What changed."""

    id: str
    changed: list[str]


def _iso(epoch: int | float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")


@router.post("/arm", response_model=Armed, responses=problem_responses("organization_not_found"))
def arm(body: ArmRequest, runtime: RuntimeDep) -> Armed:
    """Make the organization's next appointment create (or the `operation` given: cancel, reschedule) fail
    with `outcome`, once; make the organization's whole native API unreachable (`unreachable`, every request
    a 503), or drop the answer of each of its creates (cancels, reschedules) after applying it
    (`lost_response`), until `reachable`; or hold its next create two seconds before serving it, or its next
    cancel's or reschedule's commit two seconds (`slow`)."""
    with runtime.db.read() as session:
        get_organization(session, body.organization_id)
    if body.outcome == "unreachable":
        runtime.faults.cut_off(body.organization_id)
    elif body.outcome == "reachable":
        runtime.faults.reconnect(body.organization_id)
    elif body.outcome == "lost_response":
        runtime.faults.put_first(lost_response_rule(body.organization_id, body.operation))
    elif body.outcome == "slow":
        runtime.faults.put_first(slow_rule(body.organization_id, body.operation))
    else:
        runtime.arm(body.organization_id, body.outcome, body.operation)
    return Armed(organization_id=body.organization_id, armed=body.outcome)


@router.get("/outbox", response_model=Outbox)
def outbox(
    runtime: RuntimeDep, organization_id: Annotated[str | None, Query(max_length=100)] = None
) -> Outbox:
    """Messages handed to the simulated SMS/email gateway, oldest first."""
    query = select(OutboxMessage).order_by(col(OutboxMessage.seq))
    if organization_id is not None:
        query = query.where(OutboxMessage.organization_id == organization_id)
    with runtime.db.read() as session:
        rows = session.exec(query).all()
    return Outbox(
        messages=[
            Message(
                id=row.id,
                organization_id=row.organization_id,
                channel=row.channel,
                to=row.to,
                purpose=row.purpose,
                body=row.body,
                code=row.code,
                sent_at=_iso(row.sent_utc),
            )
            for row in rows
        ]
    )


@router.get("/clock", response_model=ClockOut)
def read_clock(runtime: RuntimeDep) -> ClockOut:
    """The platform clock."""
    return ClockOut(now=_iso(runtime.clock.now().timestamp()))


@router.post("/clock", response_model=ClockOut)
def set_clock(body: ClockRequest, runtime: RuntimeDep) -> ClockOut:
    """Freeze the clock at `now`, or move it by `advance_seconds`."""
    if body.now is not None:
        instant = runtime.clock.set(body.now)
    else:
        instant = runtime.clock.advance(body.advance_seconds or 0.0)
    runtime.webhooks.set()  # a retry may have fallen due
    return ClockOut(now=_iso(instant.timestamp()))


def _faults_out(runtime: Runtime) -> FaultsOut:
    profile = runtime.faults.profile
    return FaultsOut(seed=profile.seed, rules=profile.rules, hits=runtime.faults.hits())


@router.get("/faults", response_model=FaultsOut)
def read_faults(runtime: RuntimeDep) -> FaultsOut:
    """The fault profile in force and each rule's hit count."""
    return _faults_out(runtime)


@router.put("/faults", response_model=FaultsOut)
def put_faults(body: FaultProfile, runtime: RuntimeDep) -> FaultsOut:
    """Put a fault profile in force (replacing the one before; its draws and counts start afresh)."""
    try:
        runtime.faults.check_endpoints(endpoint_names(), body)
    except ValueError as error:
        raise ProblemError("invalid_request", str(error)) from None
    runtime.faults.set(body)
    return _faults_out(runtime)


@router.delete("/faults", response_model=FaultsOut)
def clear_faults(runtime: RuntimeDep) -> FaultsOut:
    """No fault in force."""
    runtime.faults.clear()
    return _faults_out(runtime)


@router.post("/reset")
def reset(runtime: RuntimeDep) -> dict[str, bool]:
    """Back to seeds: data, outbox, arms, counters, rate-limit windows, clock, fault profile."""
    runtime.reset()
    return {"reset": True}


@router.get("/stats", response_model=Stats)
def stats(runtime: RuntimeDep, organization_id: Annotated[str | None, Query(max_length=100)] = None) -> Stats:
    """Appointment rows, create requests and outbox messages (for one organization, or all)."""
    total = select(func.count()).select_from(Appointment)
    active = total.where(col(Appointment.status).in_(ACTIVE_STATUSES))
    messages = select(func.count()).select_from(OutboxMessage)
    if organization_id is not None:
        total = total.where(Appointment.organization_id == organization_id)
        active = active.where(Appointment.organization_id == organization_id)
        messages = messages.where(OutboxMessage.organization_id == organization_id)
    with runtime.db.read() as session:
        appointments, active_appointments = session.exec(total).one(), session.exec(active).one()
        sent = session.exec(messages).one()
    return Stats(
        organization_id=organization_id,
        appointments=appointments,
        active_appointments=active_appointments,
        create_requests=runtime.create_requests(organization_id),
        messages=sent,
    )


@router.post(
    "/service",
    response_model=Changed,
    responses=problem_responses("organization_not_found", "service_not_found"),
)
def change_service(body: ServiceChange, runtime: RuntimeDep) -> Changed:
    """Change the given fields of a service (a catalog change: bumps the catalog version)."""
    fields = sorted(body.model_fields_set - {"organization_id", "service_id"})
    with runtime.db.write() as session:
        service = get_service(session, body.organization_id, body.service_id)
        for name in fields:
            setattr(service, name, getattr(body, name))
        session.add(service)
    return Changed(id=body.service_id, changed=fields)


@router.post(
    "/provider",
    response_model=Changed,
    responses=problem_responses("organization_not_found", "provider_not_found"),
)
def change_provider(body: ProviderChange, runtime: RuntimeDep) -> Changed:
    """Rename a provider (a catalog change: bumps the catalog version)."""
    with runtime.db.write() as session:
        provider = get_provider(session, body.organization_id, body.provider_id)
        provider.name = body.name
        session.add(provider)
    return Changed(id=body.provider_id, changed=["name"])


@router.post(
    "/location",
    response_model=Changed,
    responses=problem_responses("organization_not_found", "location_not_found"),
)
def change_location(body: LocationChange, runtime: RuntimeDep) -> Changed:
    """Rename a location (a catalog change: bumps the catalog version)."""
    with runtime.db.write() as session:
        location = get_location(session, body.organization_id, body.location_id)
        location.name = body.name
        session.add(location)
    return Changed(id=body.location_id, changed=["name"])


@router.post(
    "/appointment-status",
    response_model=AppointmentOut,
    responses=problem_responses("organization_not_found", "appointment_not_found"),
)
def set_appointment_status(body: AppointmentStatusRequest, runtime: RuntimeDep) -> AppointmentOut:
    """Store `status` on the appointment as is (its native read reports it), for status-mapping checks."""
    with runtime.db.write() as session:
        appointment = session.get(Appointment, body.booking_id)
        if appointment is None or appointment.organization_id != body.organization_id:
            detail = f"No appointment {body.booking_id!r} at {body.organization_id!r}."
            raise not_found(session, body.organization_id, "appointment_not_found", detail)
        appointment.status = body.status
        appointment.version += 1
        session.add(appointment)
        service = get_service(session, body.organization_id, appointment.service_id)
        return appointment_out(appointment, service, runtime.clock.now())


@router.get("/webhook-deliveries", response_model=DeliveryLog)
def webhook_deliveries(
    runtime: RuntimeDep,
    organization_id: Annotated[str | None, Query(max_length=100)] = None,
    appointment_id: Annotated[str | None, Query(max_length=100)] = None,
) -> DeliveryLog:
    """Webhook deliveries in event order, each with its state, next attempt and attempt log."""
    return delivery_log(runtime.db, organization_id=organization_id, appointment_id=appointment_id)
