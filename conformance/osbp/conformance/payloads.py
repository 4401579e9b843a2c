"""Mandates and booking.create payloads built from the fixtures.

Every logical booking attempt gets a fresh idempotency key and every mandate a fresh id, both carrying a
per-run nonce: a server's idempotency store may outlive one battery run (the reference keeps it in a
file), so keys must never collide across runs.
"""

from __future__ import annotations

import datetime as dt
import re
from typing import Any

from osbp.conformance.fixtures import Fixtures
from osbp.conformance.wallclock import format_instant, format_wall_clock

__all__ = ["CREATE", "TOKEN_PATTERN", "Payloads", "approval_token", "approved"]

#: The MCP name of booking.create, the tool nearly every check drives.
CREATE = "osbp_booking_create"

#: The machine-directed retry instruction the spec fixes: approval.token="<token>".
TOKEN_PATTERN = re.compile(r'approval\.token="([^"]+)"')


def approval_token(message: str) -> str | None:
    """The approval token embedded in a Problem message, or None."""
    match = TOKEN_PATTERN.search(message)
    return match.group(1) if match else None


def approved(payload: dict[str, Any], token: str, **extra: Any) -> dict[str, Any]:
    """The same payload retried with the final-confirmation approval (and any transient `extra`)."""
    return {**payload, "approval": {"confirmed": True, "token": token}, **extra}


class Payloads:
    """Builds protocol inputs for one battery run."""

    def __init__(self, fixtures: Fixtures, *, now: dt.datetime, nonce: str) -> None:
        self.fixtures = fixtures
        self.now = now
        self.nonce = nonce
        self._serial = 0

    def _next(self, prefix: str) -> str:
        self._serial += 1
        return f"{prefix}_conformance_{self.nonce}_{self._serial:03d}"

    def key(self) -> str:
        """A fresh idempotency key."""
        return self._next("idem")

    def mandate_id(self) -> str:
        """A fresh mandate id."""
        return self._next("mnd")

    def expires_at(self, *, days: int = 1) -> str:
        """An instant `days` after now (negative for the past)."""
        return format_instant(self.now + dt.timedelta(days=days))

    @property
    def day_start(self) -> str:
        """Midnight at the start of the fixture date, merchant wall-clock."""
        return format_wall_clock(dt.datetime.combine(self.fixtures.slot.date, dt.time()))

    @property
    def day_end(self) -> str:
        """Midnight at the end of the fixture date, merchant wall-clock."""
        return format_wall_clock(
            dt.datetime.combine(self.fixtures.slot.date, dt.time()) + dt.timedelta(days=1)
        )

    def mandate(self, service_id: str, **changes: Any) -> dict[str, Any]:
        """A mandate scoped to one service, the fixture provider and schedule, and the fixture day."""
        fixtures = self.fixtures
        cap = fixtures.max_price
        mandate: dict[str, Any] = {
            "id": self.mandate_id(),
            "expires_at": self.expires_at(),
            "allowed_actions": ["booking.create"],
            "organization_id": fixtures.organization_id,
            "service_ids": [service_id],
            "provider_ids": [fixtures.providers.in_scope],
            "schedule_ids": [fixtures.schedule.id],
            "earliest_start": self.day_start,
            "latest_end": self.day_end,
            "max_price": {"amount_minor": cap.amount_minor, "currency": cap.currency},
            "allow_policy_fee": False,
            "max_extra_fee": {"amount_minor": 0, "currency": cap.currency},
        }
        mandate.update(changes)
        return mandate

    def create(
        self, service_id: str, *, mandate: dict[str, Any] | None = None, **changes: Any
    ) -> dict[str, Any]:
        """A booking.create payload (without approval) for the fixture slot under a fresh key."""
        fixtures = self.fixtures
        customer = fixtures.customer.model_dump(exclude_none=True)
        payload: dict[str, Any] = {
            "mandate": mandate if mandate is not None else self.mandate(service_id),
            "idempotency_key": self.key(),
            "service_id": service_id,
            "schedule_id": fixtures.schedule.id,
            "provider_id": fixtures.providers.in_scope,
            "date": fixtures.slot.date.isoformat(),
            "time": fixtures.slot.time,
            "customer": customer,
        }
        payload.update(changes)
        return payload

    def with_mandate(self, service_id: str, **mandate_changes: Any) -> dict[str, Any]:
        """A create payload whose mandate differs from the default by `mandate_changes`."""
        return self.create(service_id, mandate=self.mandate(service_id, **mandate_changes))
