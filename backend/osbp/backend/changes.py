"""The customer's changes of an appointment: the change quote, cancel and reschedule.

Fees are computed on the platform clock from the service's current policy: a cancel is free until the late
window (``cancellation_window_minutes`` before the start) and costs the policy's fee inside it (at any
time when the policy has a fee but no window); a reschedule costs the service's reschedule fee. The
transitions are :data:`osbp.backend.merchant.ACTIONS`, the one table of every surface.

A cancel or reschedule is one write transaction, as a create is: the ``Idempotency-Key``'s lookup, the
``If-Match`` check of the appointment's version (``412 appointment_changed``), the change and its stored
answer commit together, so a key is either free or bound to its committed change. The key is shared with
the organization's creates: a key reused for another operation or another appointment is ``422
idempotency_key_reused``.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo

from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from osbp.backend import idempotency, merchant
from osbp.backend.appointments import find, native_status
from osbp.backend.db import Database
from osbp.backend.dialects import serialise
from osbp.backend.merchant import ACTIONS, Slot
from osbp.backend.models import Appointment, Service
from osbp.backend.money import format_amount
from osbp.backend.problems import ProblemError
from osbp.backend.tokens import TokenSource
from osbp.backend.validators import appointment_tag, matches_any
from osbp.backend.wire import (
    AppointmentCancelled,
    AppointmentReschedule,
    AppointmentRescheduled,
    CancelQuote,
    ChangeQuoteOut,
    Price,
    RescheduleQuote,
    WallClock,
)

__all__ = ["Changed", "cancel", "not_cancellable", "quote", "reschedule"]

#: The customer surface's refusals of a transition the status table does not allow.
_REFUSALS = {
    "cancel": "The appointment is {status}; it cannot be cancelled.",
    "no-show": "Only a confirmed appointment that has started can be marked a no-show.",
}


def not_cancellable(action: str, appointment: Appointment, now: datetime) -> ProblemError:
    """409 ``appointment_not_cancellable``: the customer's cancel (or the deprecated no-show) refused."""
    status = native_status(appointment, now)
    return ProblemError("appointment_not_cancellable", _REFUSALS[action].format(status=status))


def _not_reschedulable(_action: str, appointment: Appointment, now: datetime) -> ProblemError:
    status = native_status(appointment, now)
    return ProblemError(
        "appointment_not_reschedulable",
        f"The appointment is {status}; only a pending or confirmed appointment that has not started can be "
        "moved.",
    )


@dataclass(frozen=True)
class Changed:
    """A customer change's answer: its body and ETag, fresh or replayed from its Idempotency-Key."""

    body: dict[str, Any]
    etag: str
    replayed: bool


def _money(amount: str | None, currency: str) -> Price:
    return Price(kind="fixed", amount=amount or format_amount("0", currency), currency=currency)


def _fee_from(appointment: Appointment, service: Service) -> int | None:
    """The epoch second from which a cancel costs the policy's fee (None: it never does)."""
    if service.cancellation_fee is None:
        return None
    if service.cancellation_window_minutes is None:
        return appointment.created_utc
    return appointment.starts_utc - service.cancellation_window_minutes * 60


def _cancellation_fee(appointment: Appointment, service: Service, now: datetime) -> Price:
    """The fee a cancel at ``now`` charges."""
    start = _fee_from(appointment, service)
    charged = start is not None and now.timestamp() >= start
    return _money(service.cancellation_fee if charged else None, service.currency)


def _can_cancel(appointment: Appointment, service: Service, now: datetime) -> bool:
    return service.cancellation_allowed and ACTIONS["cancel"].allowed(appointment, now)


def _wall_clock(epoch: int, time_zone: str) -> WallClock:
    local = datetime.fromtimestamp(epoch, ZoneInfo(time_zone))
    return WallClock(date=local.date().isoformat(), time=local.strftime("%H:%M"))


def quote(
    db: Database, *, organization_id: str, appointment_id: str, now: datetime
) -> tuple[ChangeQuoteOut, str]:
    """The terms of cancelling or moving the appointment at ``now``, and its ETag."""
    with db.read() as session:
        appointment, service = find(session, organization_id, appointment_id)
    start = _fee_from(appointment, service)
    terms = ChangeQuoteOut.model_validate(
        {
            "appointment_id": appointment.id,
            "organization_id": appointment.organization_id,
            "status": native_status(appointment, now),
            "version": appointment.version,
            "time_zone": appointment.time_zone,
            "cancel": CancelQuote(
                allowed=_can_cancel(appointment, service, now),
                fee=_cancellation_fee(appointment, service, now),
                fee_from=None if start is None else _wall_clock(start, appointment.time_zone),
                window_minutes=service.cancellation_window_minutes,
            ),
            "reschedule": RescheduleQuote(
                allowed=ACTIONS["reschedule"].allowed(appointment, now),
                fee=_money(service.reschedule_fee, service.currency),
            ),
        }
    )
    return terms, appointment_tag(appointment.id, appointment.version)


def _check_version(appointment: Appointment, if_match: str | None) -> None:
    """412 ``appointment_changed`` unless ``if_match`` (when sent) lists the appointment's current ETag."""
    if if_match is not None and not matches_any(
        if_match, appointment_tag(appointment.id, appointment.version), weak=False
    ):
        raise ProblemError(
            "appointment_changed",
            f"The appointment changed since it was read (it is at version {appointment.version}): read its "
            "change quote again and send the new ETag as If-Match.",
        )


def _begin(
    session: Session,
    *,
    organization_id: str,
    appointment_id: str,
    key: str | None,
    digest: str,
    now: datetime,
) -> idempotency.Replay | None:
    """Take the change's locks (key, then appointment) and look the key up: its stored answer, if any."""
    if key is not None:
        serialise(session, f"idempotency:{organization_id}:{key}")
    merchant.lock_appointment(session, organization_id, appointment_id)
    if key is None:
        return None
    return idempotency.lookup(session, organization_id=organization_id, key=key, digest=digest, now=now)


def _store(
    session: Session,
    *,
    organization_id: str,
    key: str | None,
    digest: str,
    now: datetime,
    body: dict[str, Any],
) -> None:
    if key is not None:
        idempotency.store(
            session,
            organization_id=organization_id,
            key=key,
            digest=digest,
            now=now,
            status_code=200,
            body=body,
        )


def _replayed(replay: idempotency.Replay) -> Changed:
    body = replay.body
    return Changed(body, appointment_tag(str(body.get("id", "")), int(body.get("version", 1))), replayed=True)


def cancel(
    db: Database,
    *,
    organization_id: str,
    appointment_id: str,
    key: str | None,
    if_match: str | None,
    now: datetime,
    tokens: TokenSource,
) -> Changed:
    """Cancel the appointment as its customer, charging the fee that applies now, or raise why not.

    A cancelled appointment answers unchanged, with the fee its cancel charged, before ``if_match`` is
    checked: the change already holds (RFC 9110 §13.1.1), so a retry without a key after a lost answer is
    safe.
    """
    digest = idempotency.fingerprint({"operation": "cancel", "appointment_id": appointment_id})
    with db.write() as session:
        replay = _begin(
            session,
            organization_id=organization_id,
            appointment_id=appointment_id,
            key=key,
            digest=digest,
            now=now,
        )
        if replay is not None:
            return _replayed(replay)
        appointment, service = find(session, organization_id, appointment_id)
        action = ACTIONS["cancel"]
        if appointment.status != action.target:
            _check_version(appointment, if_match)
            if not service.cancellation_allowed:
                raise ProblemError(
                    "appointment_not_cancellable",
                    "The service's policy does not allow the customer to cancel; the merchant can.",
                )
            fee = _cancellation_fee(appointment, service, now)
            appointment.cancellation_fee_charged = fee.amount
            changed = merchant.apply(
                session,
                appointment,
                service,
                action=action,
                now=now,
                tokens=tokens,
                actor="customer",
                refusal=not_cancellable,
                cancellation_fee=fee.model_dump(mode="json"),
            )
        else:
            changed = merchant.apply(
                session,
                appointment,
                service,
                action=action,
                now=now,
                tokens=tokens,
                actor="customer",
                refusal=not_cancellable,
            )
        charged = _money(appointment.cancellation_fee_charged, service.currency)
        answer = AppointmentCancelled(**changed.model_dump(), cancellation_fee=charged)
        body = answer.model_dump(mode="json", by_alias=True)
        _store(session, organization_id=organization_id, key=key, digest=digest, now=now, body=body)
    return Changed(body, appointment_tag(answer.id, answer.version), replayed=False)


def reschedule(
    db: Database,
    *,
    organization_id: str,
    appointment_id: str,
    key: str,
    if_match: str | None,
    request: AppointmentReschedule,
    now: datetime,
    tokens: TokenSource,
) -> Changed:
    """Move the appointment (the same id) to the new slot as its customer, or raise why not, changing nothing.

    The new slot is charged at the service's current price, as availability offers it; the answer names
    the reschedule fee and where the appointment was.
    """
    digest = idempotency.fingerprint(
        {"operation": "reschedule", "appointment_id": appointment_id} | request.model_dump(mode="json")
    )
    try:
        with db.write() as session:
            replay = _begin(
                session,
                organization_id=organization_id,
                appointment_id=appointment_id,
                key=key,
                digest=digest,
                now=now,
            )
            if replay is not None:
                return _replayed(replay)
            appointment, service = find(session, organization_id, appointment_id)
            _check_version(appointment, if_match)
            slot = Slot(request.location_id, request.provider_id, request.date, request.time)
            moved = merchant.move(
                session,
                appointment,
                service,
                slot=slot,
                now=now,
                tokens=tokens,
                actor="customer",
                refusal=_not_reschedulable,
                reprice=True,
            )
            fee = _money(service.reschedule_fee if moved.changed else None, service.currency)
            answer = AppointmentRescheduled(
                **moved.appointment.model_dump(), reschedule_fee=fee, previous=moved.previous
            )
            body = answer.model_dump(mode="json", by_alias=True)
            _store(session, organization_id=organization_id, key=key, digest=digest, now=now, body=body)
        return Changed(body, appointment_tag(answer.id, answer.version), replayed=False)
    except IntegrityError:
        raise ProblemError(
            "slot_taken",
            "The provider's time was booked by a concurrent request; the appointment is unchanged.",
        ) from None
