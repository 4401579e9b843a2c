"""The webhook delivery log, as the test surface shows it: every delivery with its attempts, oldest first."""

from __future__ import annotations

from collections import defaultdict
from datetime import UTC, datetime

from pydantic import BaseModel
from sqlmodel import col, select

from osbp.backend.db import Database
from osbp.backend.models import WebhookAttempt, WebhookDelivery, WebhookEvent

__all__ = ["AttemptOut", "DeliveryLog", "DeliveryOut", "delivery_log"]


class AttemptOut(BaseModel):
    """One attempt: when (platform clock), the receiver's status code or the transport error."""

    attempt: int
    attempted_at: str
    status_code: int | None
    error: str | None


class DeliveryOut(BaseModel):
    """One event owed to one endpoint, and where its delivery stands."""

    id: str
    organization_id: str
    endpoint_id: str
    webhook_id: str
    event_type: str
    appointment_id: str
    state: str
    attempts: int
    last_status_code: int | None
    last_error: str | None
    next_attempt_at: str | None
    attempt_log: list[AttemptOut]


class DeliveryLog(BaseModel):
    """Deliveries in event order."""

    deliveries: list[DeliveryOut]


def _iso(epoch: float | None) -> str | None:
    if epoch is None:
        return None
    return datetime.fromtimestamp(epoch, UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def delivery_log(
    db: Database, *, organization_id: str | None = None, appointment_id: str | None = None
) -> DeliveryLog:
    """Deliveries (of one organization or appointment, or all) in event order, each with its attempts."""
    query = (
        select(WebhookDelivery, WebhookEvent)
        .join(WebhookEvent, col(WebhookEvent.seq) == col(WebhookDelivery.event_seq))
        .order_by(col(WebhookDelivery.event_seq), col(WebhookDelivery.endpoint_id))
    )
    if organization_id is not None:
        query = query.where(WebhookDelivery.organization_id == organization_id)
    if appointment_id is not None:
        query = query.where(WebhookDelivery.appointment_id == appointment_id)
    with db.read() as session:
        rows = session.exec(query).all()
        ids = [delivery.id for delivery, _event in rows]
        attempts = session.exec(
            select(WebhookAttempt)
            .where(col(WebhookAttempt.delivery_id).in_(ids))
            .order_by(col(WebhookAttempt.seq))
        ).all()
    by_delivery: defaultdict[str, list[AttemptOut]] = defaultdict(list)
    for attempt in attempts:
        by_delivery[attempt.delivery_id].append(
            AttemptOut(
                attempt=attempt.attempt,
                attempted_at=_iso(attempt.attempted_utc) or "",
                status_code=attempt.status_code,
                error=attempt.error,
            )
        )
    return DeliveryLog(
        deliveries=[
            DeliveryOut(
                id=delivery.id,
                organization_id=delivery.organization_id,
                endpoint_id=delivery.endpoint_id,
                webhook_id=event.id,
                event_type=event.type,
                appointment_id=delivery.appointment_id,
                state=delivery.state,
                attempts=delivery.attempts,
                last_status_code=delivery.last_status_code,
                last_error=delivery.last_error,
                next_attempt_at=_iso(delivery.next_attempt_utc),
                attempt_log=by_delivery[delivery.id],
            )
            for delivery, event in rows
        ]
    )
