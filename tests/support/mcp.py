"""Helpers for MCP server tests: the frozen instant, the in-memory merchant's tool arguments, audit reads."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from tests.support.memory_adapter import ORG, PROVIDER, SCHEDULE, SERVICE

NOW = datetime(2026, 5, 1, 16, 0, tzinfo=UTC)


def read_events(path: Path) -> list[dict[str, Any]]:
    """Every audit record in the log, in order."""
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


def mandate(**overrides: Any) -> dict[str, Any]:
    """A mandate that allows the in-memory merchant's haircut in May 2026 up to $100."""
    base: dict[str, Any] = {
        "id": "mnd_test_001",
        "expires_at": "2026-05-31T23:59:59-07:00",
        "allowed_actions": ["booking.create"],
        "organization_id": ORG,
        "service_ids": [SERVICE],
        "provider_ids": [PROVIDER],
        "schedule_ids": [SCHEDULE],
        "earliest_start": "2026-05-01T09:00:00",
        "latest_end": "2026-05-14T18:00:00",
        "max_price": {"amount_minor": 10000, "currency": "USD"},
        "allow_policy_fee": False,
        "max_extra_fee": {"amount_minor": 0, "currency": "USD"},
    }
    return base | overrides


def create_args(**overrides: Any) -> dict[str, Any]:
    """booking.create arguments for 2026-05-05 13:00 with a customer carrying a name and contacts."""
    base: dict[str, Any] = {
        "mandate": mandate(),
        "idempotency_key": "idem_test_001",
        "service_id": SERVICE,
        "schedule_id": SCHEDULE,
        "provider_id": PROVIDER,
        "date": "2026-05-05",
        "time": "13:00",
        "customer": {
            "display_name": "Jane Customer",
            "given_name": "Jane",
            "family_name": "Customer",
            "phone": "+15555550100",
            "email": "jane@example.com",
        },
    }
    return base | overrides
