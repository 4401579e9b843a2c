"""Webhook delivery: which deliveries are due, how an attempt is signed, and what its outcome records.

Ordered per appointment and endpoint: only the oldest pending delivery of an (endpoint, appointment) pair
is ever due, so event n+1 of an appointment waits until n is acknowledged (any 2xx) or given up. A failed
attempt (another status, a timeout, a refused connection) is retried after `retry_delay`: the base delay
doubled per attempt, counted on the platform clock, so a frozen clock makes the schedule exact. After
`max_attempts` the delivery is `failed` and the next event of that appointment may go. Signatures follow
Standard Webhooks (`webhook-id`, `webhook-timestamp`, `webhook-signature: v1,<base64 HMAC-SHA256>` over
`id.timestamp.body`), made with the `standardwebhooks` reference library.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import ColumnElement, and_, exists
from sqlalchemy.orm import aliased
from sqlmodel import col, func, select
from standardwebhooks import Webhook

from osbp.backend.db import Database
from osbp.backend.models import WebhookAttempt, WebhookDelivery, WebhookEndpoint, WebhookEvent

__all__ = [
    "Attempt",
    "Due",
    "due",
    "next_due_utc",
    "pending_exists",
    "record_attempt",
    "retry_delay",
    "signed_headers",
]


@dataclass(frozen=True)
class Due:
    """A delivery whose next attempt may be made now."""

    delivery_id: str
    url: str
    secret: str
    event_id: str
    payload: str
    attempt: int


@dataclass(frozen=True)
class Attempt:
    """What one attempt came to: the receiver's status code, or the transport error."""

    status_code: int | None = None
    error: str | None = None

    @property
    def acknowledged(self) -> bool:
        """Any 2xx acknowledges the event."""
        return self.status_code is not None and 200 <= self.status_code < 300


def retry_delay(attempt: int, base_seconds: float) -> float:
    """Seconds after failed attempt number `attempt` (1-based) before the next: base, 2 x base, 4 x base..."""
    return float(base_seconds * 2 ** (attempt - 1))


def signed_headers(secret: str, event_id: str, timestamp: datetime, payload: str) -> dict[str, str]:
    """The Standard Webhooks headers for one attempt at `timestamp`."""
    signature = Webhook(secret).sign(msg_id=event_id, timestamp=timestamp, data=payload)
    return {
        "content-type": "application/json",
        "webhook-id": event_id,
        "webhook-timestamp": str(int(timestamp.timestamp())),
        "webhook-signature": signature,
    }


def _heads() -> ColumnElement[bool]:
    """Pending deliveries with no older pending delivery of the same appointment to the same endpoint."""
    older = aliased(WebhookDelivery)
    blocked = exists().where(
        and_(
            col(older.endpoint_id) == col(WebhookDelivery.endpoint_id),
            col(older.appointment_id) == col(WebhookDelivery.appointment_id),
            col(older.state) == "pending",
            col(older.event_seq) < col(WebhookDelivery.event_seq),
        )
    )
    return and_(col(WebhookDelivery.state) == "pending", ~blocked)


def due(db: Database, *, now: datetime, limit: int = 50) -> list[Due]:
    """The deliveries to attempt now, oldest due first."""
    query = (
        select(WebhookDelivery, WebhookEndpoint, WebhookEvent)
        .join(WebhookEndpoint, col(WebhookEndpoint.id) == col(WebhookDelivery.endpoint_id))
        .join(WebhookEvent, col(WebhookEvent.seq) == col(WebhookDelivery.event_seq))
        .where(_heads(), col(WebhookDelivery.next_attempt_utc) <= now.timestamp())
        .order_by(col(WebhookDelivery.next_attempt_utc), col(WebhookDelivery.event_seq))
        .limit(limit)
    )
    with db.read() as session:
        rows = session.exec(query).all()
    return [
        Due(
            delivery_id=delivery.id,
            url=endpoint.url,
            secret=endpoint.secret,
            event_id=event.id,
            payload=event.payload,
            attempt=delivery.attempts + 1,
        )
        for delivery, endpoint, event in rows
    ]


def next_due_utc(db: Database) -> float | None:
    """When the earliest pending delivery that may go next is due (epoch seconds), if there is one."""
    with db.read() as session:
        found = session.exec(select(func.min(WebhookDelivery.next_attempt_utc)).where(_heads())).one()
    return None if found is None else float(found)


def pending_exists(db: Database) -> bool:
    """Whether any delivery is pending at all (one lookup on the due index: the idle worker's check)."""
    query = select(WebhookDelivery.id).where(col(WebhookDelivery.state) == "pending").limit(1)
    with db.read() as session:
        return session.exec(query).first() is not None


def record_attempt(
    db: Database,
    item: Due,
    outcome: Attempt,
    *,
    attempted: datetime,
    max_attempts: int,
    retry_base_seconds: float,
) -> None:
    """Log the attempt and move the delivery on: delivered, failed (attempts spent), or retry later."""
    with db.write() as session:
        delivery = session.get(WebhookDelivery, item.delivery_id)
        if delivery is None:
            return  # cleared by a reset while the attempt ran
        session.add(
            WebhookAttempt(
                delivery_id=item.delivery_id,
                attempt=item.attempt,
                attempted_utc=attempted.timestamp(),
                status_code=outcome.status_code,
                error=outcome.error,
            )
        )
        if delivery.state != "pending":
            return  # abandoned: its endpoint was deleted while the attempt ran
        delivery.attempts = item.attempt
        delivery.last_status_code = outcome.status_code
        delivery.last_error = outcome.error
        if outcome.acknowledged:
            delivery.state, delivery.next_attempt_utc = "delivered", None
        elif item.attempt >= max_attempts:
            delivery.state, delivery.next_attempt_utc = "failed", None
        else:
            delivery.next_attempt_utc = attempted.timestamp() + retry_delay(item.attempt, retry_base_seconds)
        session.add(delivery)
