"""Webhook events: written to the outbox inside the transaction that changes the appointment.

`record` runs in the caller's write transaction: the event row (its exact body, fixed now so every retry
sends the same bytes) and one pending delivery per endpoint subscribed to its type commit or roll back
with the change itself. A change nobody listens to writes nothing, and wakes nothing: only a transaction
that queued a delivery wakes the worker, once it commits (`Database.on_events_queued`). The body follows
Standard Webhooks: `{"type", "timestamp", "data"}`, and `data` holds the appointment document as it is
after the change, the `actor` (`customer` or `merchant`) and, per type, `previous_status`, `previous`
(where and when it was) or, for a customer's cancel, `cancellation_fee`.
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any, Literal

from sqlalchemy import Table, bindparam, select
from sqlmodel import Session

from osbp.backend.db import EVENTS_QUEUED
from osbp.backend.models import WebhookDelivery, WebhookEndpoint, WebhookEvent
from osbp.backend.tokens import TokenSource
from osbp.backend.wire import AppointmentOut

__all__ = ["EVENT_TYPES", "Actor", "EventType", "record", "status_event_type"]

EventType = Literal[
    "appointment.created", "appointment.cancelled", "appointment.status_changed", "appointment.rescheduled"
]
EVENT_TYPES: tuple[EventType, ...] = (
    "appointment.created",
    "appointment.cancelled",
    "appointment.status_changed",
    "appointment.rescheduled",
)
Actor = Literal["customer", "merchant"]

_ENDPOINTS: Table = WebhookEndpoint.__table__  # type: ignore[attr-defined]
#: An organization's subscriptions (built once; the organization bound per call).
_SUBSCRIPTIONS = select(_ENDPOINTS.c.id, _ENDPOINTS.c.event_types).where(
    _ENDPOINTS.c.organization_id == bindparam("organization_id")
)


def status_event_type(target: str) -> EventType:
    """The event a status change emits: a cancellation is `appointment.cancelled`, others status_changed."""
    return "appointment.cancelled" if target == "cancelled" else "appointment.status_changed"


def record(
    session: Session,
    *,
    event_type: EventType,
    appointment: AppointmentOut,
    actor: Actor,
    now: datetime,
    tokens: TokenSource,
    **extra: Any,
) -> str | None:
    """Queue the event for every endpoint of the organization subscribed to it; its id, or None if none is."""
    # Most changes have no listener: the subscriptions are read as two columns, not as endpoint objects.
    subscriptions = session.connection().execute(
        _SUBSCRIPTIONS, {"organization_id": appointment.organization_id}
    )
    targets = [endpoint_id for endpoint_id, event_types in subscriptions if event_type in event_types]
    if not targets:
        return None
    data = {"appointment": appointment.model_dump(mode="json", by_alias=True), "actor": actor, **extra}
    timestamp = now.astimezone(UTC).isoformat().replace("+00:00", "Z")
    payload = json.dumps({"type": event_type, "timestamp": timestamp, "data": data}, separators=(",", ":"))
    event = WebhookEvent(
        id=tokens.hex_id("msg"),
        organization_id=appointment.organization_id,
        appointment_id=appointment.id,
        type=event_type,
        payload=payload,
        created_utc=int(now.timestamp()),
    )
    session.add(event)
    session.flush()  # assigns `seq`, the order deliveries of one appointment keep
    assert event.seq is not None
    for endpoint_id in targets:
        session.add(
            WebhookDelivery(
                id=tokens.hex_id("dlv"),
                organization_id=appointment.organization_id,
                endpoint_id=endpoint_id,
                event_seq=event.seq,
                appointment_id=appointment.id,
                next_attempt_utc=now.timestamp(),
            )
        )
    session.info[EVENTS_QUEUED] = True
    return event.id
