"""Webhook endpoints: the receiver URLs an organization registers, each with its own signing secret.

The secret (`whsec_` + base64 of 24 random bytes, the Standard Webhooks form) is returned once, in the
answer to the registration, and never again: the platform keeps it only to sign deliveries. Only loopback
URLs (127.0.0.0/8, `::1`, `localhost`) are accepted unless the platform runs with
`allow_non_loopback_webhooks`: a sandbox must not be turned into a client for arbitrary hosts. Nor is a
URL that reaches the platform itself (its own listening address and port, in any spelling): a delivery
there would be a request to its own write routes. Deleting an endpoint abandons its pending deliveries.
"""

from __future__ import annotations

import base64
from datetime import UTC, datetime
from typing import Annotated

from pydantic import AnyHttpUrl, BaseModel, ConfigDict, Field, UrlConstraints
from sqlmodel import Session, col, select

from osbp.backend.catalog import get_organization, not_found
from osbp.backend.db import Database
from osbp.backend.listening import OwnAddresses, resolve
from osbp.backend.models import WebhookDelivery, WebhookEndpoint
from osbp.backend.problems import ProblemError
from osbp.backend.settings import is_loopback_host
from osbp.backend.text import PlainText
from osbp.backend.tokens import TokenSource
from osbp.backend.webhook_events import EVENT_TYPES, EventType

__all__ = [
    "EndpointCreate",
    "EndpointCreated",
    "EndpointList",
    "EndpointOut",
    "delete_endpoint",
    "get_endpoint",
    "list_endpoints",
    "register",
]

ReceiverUrl = Annotated[AnyHttpUrl, UrlConstraints(max_length=2000, allowed_schemes=["http", "https"])]


class EndpointCreate(BaseModel):
    """A registration: where to deliver, and which event types (all of them when omitted)."""

    model_config = ConfigDict(extra="forbid")

    url: ReceiverUrl = Field(examples=["http://127.0.0.1:9000/bookwell-events"])
    event_types: list[EventType] | None = Field(default=None, min_length=1)
    description: PlainText = Field(default="", max_length=200)


class EndpointOut(BaseModel):
    """A registered endpoint (without its secret)."""

    id: str = Field(examples=["whe_5d1c0a9e3b7f2468"])
    organization_id: str
    url: str
    event_types: list[str]
    description: str
    created_at: str


class EndpointCreated(EndpointOut):
    """The registration's answer: the endpoint and, this once, its signing secret."""

    secret: str = Field(examples=["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"])


class EndpointList(BaseModel):
    """An organization's endpoints, oldest first."""

    endpoints: list[EndpointOut]


def _out(endpoint: WebhookEndpoint) -> EndpointOut:
    created = datetime.fromtimestamp(endpoint.created_utc, UTC).isoformat().replace("+00:00", "Z")
    return EndpointOut(
        id=endpoint.id,
        organization_id=endpoint.organization_id,
        url=endpoint.url,
        event_types=list(endpoint.event_types),
        description=endpoint.description,
        created_at=created,
    )


def _secret(tokens: TokenSource) -> str:
    # Three 8-byte draws from the injected token source (`hex_id` is its only source of random bytes), so
    # tests that pin the randomness pin the secret as well.
    raw = b"".join(bytes.fromhex(tokens.hex_id("k").partition("_")[2]) for _ in range(3))
    return "whsec_" + base64.b64encode(raw).decode()


def _check_host(url: AnyHttpUrl, allow_non_loopback: bool, own: OwnAddresses) -> None:
    host = (url.host or "").strip("[]")
    if not allow_non_loopback and not is_loopback_host(host):
        raise ProblemError(
            "webhook_url_not_allowed",
            f"Webhook URLs must point at loopback (127.0.0.1, ::1 or localhost), not {host!r}: this "
            "platform delivers only to local receivers unless started with --allow-non-loopback-webhooks.",
            {"field": "body.url"},
        )
    # The URL's port, or its scheme's default (pydantic fills it in), on every address the host names.
    port = url.port or (443 if url.scheme == "https" else 80)
    if any(own.includes(address, port) for address in resolve(host, port)):
        raise ProblemError(
            "webhook_url_targets_platform",
            f"Webhook URL {host}:{port} reaches this platform itself (it listens on port {port}): a "
            "delivery there would be a request to its own API. Point the endpoint at your receiver.",
            {"field": "body.url"},
        )


def register(
    db: Database,
    *,
    organization_id: str,
    request: EndpointCreate,
    allow_non_loopback: bool,
    own: OwnAddresses,
    now: datetime,
    tokens: TokenSource,
) -> EndpointCreated:
    """Register a receiver for the organization's events and return it with its secret (shown once);
    `own` is where this platform listens, which a receiver URL must not reach."""
    _check_host(request.url, allow_non_loopback, own)
    endpoint = WebhookEndpoint(
        id=tokens.hex_id("whe"),
        organization_id=organization_id,
        url=str(request.url),
        description=request.description,
        event_types=list(dict.fromkeys(request.event_types or EVENT_TYPES)),
        secret=_secret(tokens),
        created_utc=int(now.timestamp()),
    )
    with db.write() as session:
        get_organization(session, organization_id)
        session.add(endpoint)
    return EndpointCreated(**_out(endpoint).model_dump(), secret=endpoint.secret)


def list_endpoints(db: Database, *, organization_id: str) -> EndpointList:
    """The organization's endpoints, oldest first."""
    with db.read() as session:
        get_organization(session, organization_id)
        rows = session.exec(
            select(WebhookEndpoint)
            .where(WebhookEndpoint.organization_id == organization_id)
            .order_by(col(WebhookEndpoint.created_utc), col(WebhookEndpoint.id))
        ).all()
    return EndpointList(endpoints=[_out(row) for row in rows])


def _find(session: Session, organization_id: str, endpoint_id: str) -> WebhookEndpoint:
    endpoint = session.get(WebhookEndpoint, endpoint_id)
    if endpoint is None or endpoint.organization_id != organization_id:
        detail = f"No webhook endpoint {endpoint_id!r} at {organization_id!r}."
        raise not_found(session, organization_id, "webhook_endpoint_not_found", detail)
    return endpoint


def get_endpoint(db: Database, *, organization_id: str, endpoint_id: str) -> EndpointOut:
    """One endpoint (without its secret)."""
    with db.read() as session:
        return _out(_find(session, organization_id, endpoint_id))


def delete_endpoint(db: Database, *, organization_id: str, endpoint_id: str) -> None:
    """Remove the endpoint; its pending deliveries are abandoned (the delivery log keeps them)."""
    with db.write() as session:
        endpoint = _find(session, organization_id, endpoint_id)
        pending = session.exec(
            select(WebhookDelivery).where(
                WebhookDelivery.endpoint_id == endpoint.id, WebhookDelivery.state == "pending"
            )
        ).all()
        for delivery in pending:
            delivery.state = "abandoned"
            delivery.next_attempt_utc = None
            session.add(delivery)
        session.delete(endpoint)
