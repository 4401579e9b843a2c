"""The webhook worker at rest: no delivery query while nothing is pending, yet no event is left behind."""

from __future__ import annotations

from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlmodel import col, select

from osbp.backend import webhook_worker
from osbp.backend.app import create_app
from osbp.backend.models import WebhookDelivery
from osbp.backend.runtime import Runtime
from tests.support.bookwell import booking, create, make_settings
from tests.support.statements import statements
from tests.support.webhooks import eventually

ORG = "carolyns_dental"
#: A loopback port nothing listens on: an attempt there is refused at once and recorded as an error.
REFUSING = "http://127.0.0.1:9/hook"


def _deliveries(sent: list[str]) -> list[str]:
    return [statement for statement in sent if "webhookdelivery" in statement]


@pytest.fixture
def fast_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    """Idle polls every 10 ms, so a test sees several within its deadline."""
    monkeypatch.setattr(webhook_worker, "IDLE_POLL_SECONDS", 0.01)


@pytest.mark.usefixtures("fast_polls")
def test_an_idle_worker_queries_nothing_in_memory_and_one_lookup_a_poll_on_a_shared_file(tmp_path: Path):
    """Platform choice: with nothing pending, only a database other processes share is polled, cheaply."""
    private = create_app(make_settings())
    shared = create_app(make_settings(db=str(tmp_path / "bookwell.sqlite3")))
    with (
        statements(private.state.runtime.db.engine) as private_sent,
        statements(shared.state.runtime.db.engine) as shared_sent,
        TestClient(private),
        TestClient(shared),
    ):
        # Both start with one full round (due, then the next due time), which finds nothing pending.
        startup = eventually(
            lambda: _deliveries(private_sent) if len(_deliveries(private_sent)) >= 2 else None
        )
        polls = eventually(
            lambda: _deliveries(shared_sent)[2:] if len(_deliveries(shared_sent)) >= 7 else None,
            what="five idle polls of the shared database",
        )
        # In the time the shared database was polled five times, the in-memory one was not polled once.
        assert _deliveries(private_sent) == startup
    assert len(startup) == 2
    assert all("LIMIT" in poll and "EXISTS" not in poll and "JOIN" not in poll for poll in polls)
    private.state.runtime.db.dispose()
    shared.state.runtime.db.dispose()


@pytest.mark.usefixtures("fast_polls")
def test_an_idle_worker_attempts_a_delivery_another_process_queued_on_its_database(tmp_path: Path):
    """Platform choice: an event queued by another process on a shared database is still delivered."""
    database = str(tmp_path / "bookwell.sqlite3")
    worker = create_app(make_settings(db=database))
    other = create_app(make_settings(db=database, pause_webhooks=True))
    runtime: Runtime = worker.state.runtime
    with TestClient(worker), TestClient(other) as client:
        registered = client.post(f"/api/organizations/{ORG}/webhook-endpoints", json={"url": REFUSING})
        assert registered.status_code == 201
        assert create(client, ORG, booking()).status_code == 201  # wakes only `other`, which runs no worker

        def attempted() -> WebhookDelivery | None:
            query = select(WebhookDelivery).where(col(WebhookDelivery.attempts) >= 1)
            with runtime.db.read() as session:
                found: WebhookDelivery | None = session.exec(query).first()
            return found

        delivery = eventually(attempted, what="the worker's attempt")
    assert (delivery.state, delivery.last_error) == ("pending", "ConnectError")
    worker.state.runtime.db.dispose()
    other.state.runtime.db.dispose()
