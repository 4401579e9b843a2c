"""Shared fixtures for the MCP server tests: an in-memory adapter, a temporary audit log, a client."""

from __future__ import annotations

import itertools
import json
import os
from collections.abc import AsyncIterator, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from osbp.protocol.clock import FixedClock
from osbp.protocol.core import OsbpCore
from osbp.server.app import create_server
from osbp.server.audit import AuditLog
from tests.server.memory_adapter import ORG, PROVIDER, SCHEDULE, SERVICE, MemoryAdapter

NOW = datetime(2026, 5, 1, 16, 0, tzinfo=UTC)


@pytest.fixture
def no_osbp_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No OSBP_* variable from the developer's shell leaks into a settings or CLI test."""
    for key in list(os.environ):
        if key.startswith("OSBP_"):
            monkeypatch.delenv(key)


@pytest.fixture
def clock() -> FixedClock:
    """A frozen clock at 2026-05-01T16:00Z (09:00 in the merchant's Los Angeles)."""
    return FixedClock(NOW)


@pytest.fixture
def adapter(clock: FixedClock) -> MemoryAdapter:
    """The in-memory platform adapter (tests read its counters)."""
    return MemoryAdapter(clock=clock)


@pytest.fixture
def core(adapter: MemoryAdapter, tmp_path: Path, clock: FixedClock) -> OsbpCore:
    """The in-memory adapter inside the protocol core, its state file in a temporary directory."""
    return OsbpCore(adapter, state=tmp_path / "state" / "osbp.sqlite3", clock=clock)


@pytest.fixture
def audit_path(tmp_path: Path) -> Path:
    """Where the audit log of this test goes."""
    return tmp_path / "audit" / "events.jsonl"


@pytest.fixture
def audit(audit_path: Path) -> Iterator[AuditLog]:
    """The test's audit log."""
    log = AuditLog(audit_path)
    yield log
    log.close()


@pytest.fixture
async def client(core: OsbpCore, audit: AuditLog, clock: FixedClock) -> AsyncIterator[Client]:
    """An in-memory MCP client connected to a server over the in-memory adapter."""
    counter = itertools.count(1)
    server = create_server(core, audit, clock=clock, new_event_id=lambda: f"aud_test_{next(counter):04d}")
    async with Client(server) as connected:
        yield connected


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
