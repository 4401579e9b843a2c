"""Helpers for tests that drive the synthetic platform: its test settings and appointment-create requests."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import httpx2
from fastapi.testclient import TestClient

from osbp.backend.settings import BackendSettings

#: Monday 2026-05-04 08:00 in New York: the next day (Tuesday) is an ordinary open weekday everywhere.
NOW = datetime(2026, 5, 4, 12, 0, tzinfo=UTC)
DAY = "2026-05-05"


def make_settings(**overrides: Any) -> BackendSettings:
    """In-memory, frozen clock, test surface on, unless overridden."""
    values: dict[str, Any] = {"db": ":memory:", "port": 0, "now": NOW, "enable_testing": True} | overrides
    return BackendSettings(**values)


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


CREATE_PATH = "/api/organizations/carolyns_dental/appointments"


def race(base_urls: Sequence[str], bodies: list[dict[str, Any]], keys: list[str]) -> list[int]:
    """POST every body at once (one thread each, released together), round-robin over the platform
    processes at ``base_urls``: the status of each create, in order."""
    barrier = threading.Barrier(len(bodies))
    statuses: list[int] = [0] * len(bodies)

    def book(index: int) -> None:
        with httpx2.Client(base_url=base_urls[index % len(base_urls)], timeout=60) as client:
            barrier.wait(timeout=30)
            response = client.post(CREATE_PATH, json=bodies[index], headers={"Idempotency-Key": keys[index]})
            statuses[index] = response.status_code

    threads = [threading.Thread(target=book, args=(index,)) for index in range(len(bodies))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return statuses
