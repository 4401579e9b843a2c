"""Fixtures for the platform's tests: the app in process, and a real uvicorn server on loopback."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

from osbp.backend.app import create_app
from osbp.backend.runtime import Runtime
from osbp.backend.serving import PlatformServer
from osbp.backend.settings import BackendSettings

#: Monday 2026-05-04 08:00 in New York: the next day (Tuesday) is an ordinary open weekday everywhere.
NOW = datetime(2026, 5, 4, 12, 0, tzinfo=UTC)
DAY = "2026-05-05"


def make_settings(**overrides: Any) -> BackendSettings:
    """In-memory, frozen clock, test surface on, unless overridden."""
    values: dict[str, Any] = {"db": ":memory:", "port": 0, "now": NOW, "enable_testing": True} | overrides
    return BackendSettings(**values)


@pytest.fixture
def settings() -> BackendSettings:
    """The default test settings."""
    return make_settings()


@pytest.fixture
def client(settings: BackendSettings) -> Iterator[TestClient]:
    """The platform app in process."""
    app = create_app(settings)
    with TestClient(app) as test_client:
        yield test_client
    app.state.runtime.db.dispose()


@pytest.fixture
def runtime(client: TestClient) -> Runtime:
    """The in-process platform's runtime (database, clock, counters)."""
    found: Runtime = client.app.state.runtime  # type: ignore[attr-defined]
    return found


@pytest.fixture
def platform_server() -> Iterator[PlatformServer]:
    """The real platform under uvicorn on an ephemeral 127.0.0.1 port, in memory, test surface on."""
    with PlatformServer(make_settings()) as server:
        yield server


def booking(
    *,
    service_id: str = "carolyns_dental_cleaning",
    location_id: str = "carolyns_dental_midtown",
    provider_id: str = "carolyns_dental_dr_reyes",
    date: str = DAY,
    time: str = "10:00",
    customer: dict[str, Any] | None = None,
    **extra: Any,
) -> dict[str, Any]:
    """An appointment-create body (Carolyn's Dental cleaning by default)."""
    return {
        "service_id": service_id,
        "location_id": location_id,
        "provider_id": provider_id,
        "date": date,
        "time": time,
        "customer": customer or {"display_name": "Jane Customer", "phone": "+12125550199"},
        **extra,
    }


def create(client: TestClient, organization_id: str, body: dict[str, Any], key: str | None = "key-1") -> Any:
    """POST an appointment create with an Idempotency-Key."""
    headers = {} if key is None else {"Idempotency-Key": key}
    return client.post(f"/api/organizations/{organization_id}/appointments", json=body, headers=headers)
