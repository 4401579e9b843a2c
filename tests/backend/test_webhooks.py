"""Webhook endpoints, the outbox and the delivery rules, in process (the worker itself: test_webhooks_e2e)."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import hmac
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlmodel import col, select
from standardwebhooks import Webhook

from osbp.backend.app import create_app
from osbp.backend.models import WebhookEvent
from osbp.backend.runtime import Runtime
from osbp.backend.webhook_delivery import Attempt, due, record_attempt, retry_delay, signed_headers
from tests.support.bookwell import NOW, booking, create, make_settings

ORG = "carolyns_dental"
HOOKS = f"/api/organizations/{ORG}/webhook-endpoints"
RECEIVER = "http://127.0.0.1:9/hook"


@pytest.fixture
def quiet() -> Iterator[TestClient]:
    """The app in process without its lifespan: no worker, so the outbox holds still for inspection."""
    app = create_app(make_settings())
    yield TestClient(app)
    app.state.runtime.db.dispose()


def _runtime(client: TestClient) -> Runtime:
    found: Runtime = client.app.state.runtime  # type: ignore[attr-defined]
    return found


def _register(client: TestClient, **body: object) -> dict[str, object]:
    answer = client.post(HOOKS, json={"url": RECEIVER} | body)
    assert answer.status_code == 201, answer.text
    found: dict[str, object] = answer.json()
    return found


def _log(client: TestClient, **query: str) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = client.get("/_testing/webhook-deliveries", params=query).json()[
        "deliveries"
    ]
    return found


def test_registration_shows_the_signing_secret_once(quiet):
    """Platform choice (as Standard Webhooks vendors do): the whsec_ secret is in the 201 answer only."""
    created = _register(quiet, description="front desk")
    assert str(created["secret"]).startswith("whsec_")
    assert len(base64.b64decode(str(created["secret"]).removeprefix("whsec_"))) == 24
    assert created["event_types"] == [
        "appointment.created",
        "appointment.cancelled",
        "appointment.status_changed",
        "appointment.rescheduled",
    ]
    listed = quiet.get(HOOKS).json()["endpoints"]
    read = quiet.get(f"{HOOKS}/{created['id']}").json()
    assert [item["id"] for item in listed] == [created["id"]]
    assert "secret" not in listed[0]
    assert "secret" not in read
    assert read["description"] == "front desk"


@pytest.mark.parametrize(
    "url", ["http://10.0.0.8/hook", "https://hooks.example.com/in", "http://[2001:db8::1]/x"]
)
def test_a_non_loopback_receiver_is_refused_by_default(quiet, url):
    """Platform choice: a sandbox delivers to loopback only unless --allow-non-loopback-webhooks."""
    refused = quiet.post(HOOKS, json={"url": url})
    assert (refused.status_code, refused.json()["code"]) == (400, "webhook_url_not_allowed")
    assert refused.headers["content-type"] == "application/problem+json"
    assert "--allow-non-loopback-webhooks" in refused.json()["detail"]


@pytest.mark.parametrize("url", ["http://localhost:9/hook", "http://[::1]:9/hook", "https://127.0.0.2/in"])
def test_loopback_receivers_are_accepted(quiet, url):
    """Platform choice: 127.0.0.0/8, ::1 and localhost are loopback."""
    assert _register(quiet, url=url)["url"] == url


@pytest.mark.parametrize(
    ("bound", "url", "elsewhere"),
    [
        (("127.0.0.1", 80), "http://localhost/api/health", "https://localhost/hook"),
        (("127.0.0.1", 443), "https://127.0.0.1/api/health", "http://127.0.0.1/hook"),
        (("127.0.0.1", 8400), "http://127.0.0.1:8400/api/health", "http://127.0.0.1:8401/hook"),
    ],
)
def test_a_receiver_on_the_platforms_own_port_is_refused_the_default_port_included(
    quiet, bound, url, elsewhere
):
    """Platform choice (fail closed): a URL's port, or its scheme's default, must not be the platform's."""
    _runtime(quiet).own_addresses.add(bound)
    refused = quiet.post(HOOKS, json={"url": url})
    assert (refused.status_code, refused.json()["code"]) == (400, "webhook_url_targets_platform")
    assert refused.json()["field"] == "body.url"
    assert _register(quiet, url=elsewhere)["url"] == elsewhere


def test_the_platform_flag_allows_a_non_loopback_receiver():
    """Platform choice: allow_non_loopback_webhooks lifts the loopback-only rule."""
    app = create_app(make_settings(allow_non_loopback_webhooks=True))
    answer = TestClient(app).post(HOOKS, json={"url": "https://hooks.example.com/in"})
    assert answer.status_code == 201


@pytest.mark.parametrize(
    "body",
    [
        {"url": "ftp://127.0.0.1/x"},
        {"url": "not a url"},
        {"url": RECEIVER, "event_types": ["appointment.moved"]},
    ],
)
def test_a_malformed_registration_is_400_invalid_request(quiet, body):
    """Platform choice: bad input is problem+json 400, never a 500."""
    refused = quiet.post(HOOKS, json=body)
    assert (refused.status_code, refused.json()["code"]) == (400, "invalid_request")


def test_unknown_organization_and_endpoint_are_404_with_specific_codes(quiet):
    """RFC 9457 problems: unknown ids name what was not found."""
    assert quiet.post("/api/organizations/nope/webhook-endpoints", json={"url": RECEIVER}).json()["code"] == (
        "organization_not_found"
    )
    assert quiet.get(f"{HOOKS}/whe_missing").json()["code"] == "webhook_endpoint_not_found"
    assert quiet.delete(f"{HOOKS}/whe_missing").status_code == 404


def test_a_create_queues_its_event_in_the_same_transaction(quiet):
    """Platform choice (transactional outbox): the committed create has its pending delivery."""
    endpoint = _register(quiet)
    created = create(quiet, ORG, booking())
    log = _log(quiet, organization_id=ORG)
    assert [(item["event_type"], item["state"], item["endpoint_id"]) for item in log] == [
        ("appointment.created", "pending", endpoint["id"])
    ]
    assert log[0]["appointment_id"] == created.json()["id"]
    assert log[0]["next_attempt_at"] == "2026-05-04T12:00:00.000Z"


def test_a_refused_or_replayed_create_queues_nothing(quiet):
    """Platform choice: a rolled-back change has no event; an idempotent replay is not a new change."""
    _register(quiet)
    assert create(quiet, ORG, booking(), key="a").status_code == 201
    assert create(quiet, ORG, booking(), key="a").headers["idempotent-replayed"] == "true"
    assert create(quiet, ORG, booking(), key="b").json()["code"] == "slot_taken"
    assert len(_log(quiet)) == 1


def test_without_a_subscribed_endpoint_nothing_is_queued(quiet):
    """Platform choice: an endpoint gets only the event types it registered for."""
    _register(quiet, event_types=["appointment.cancelled"])
    appointment = create(quiet, ORG, booking()).json()
    quiet.post(f"/api/organizations/{ORG}/appointments/{appointment['id']}/cancel")
    assert [item["event_type"] for item in _log(quiet)] == ["appointment.cancelled"]


def _events(client: TestClient) -> list[dict[str, Any]]:
    with _runtime(client).db.read() as session:
        events = session.exec(select(WebhookEvent).order_by(col(WebhookEvent.seq))).all()
    return [json.loads(event.payload) for event in events]


def _woken(client: TestClient, requests: Callable[[], object]) -> bool:
    """Whether running ``requests`` against the app woke its webhook worker (a bound, real `Wakeup`)."""
    loop = asyncio.new_event_loop()
    try:
        wake = _runtime(client).webhooks.bind(loop)
        requests()
        loop.run_until_complete(asyncio.sleep(0))  # runs the wake-ups the routes' threads scheduled
        return wake.is_set()
    finally:
        _runtime(client).webhooks.unbind()
        loop.close()


def test_reads_and_a_write_nobody_subscribed_to_do_not_wake_the_worker(quiet):
    """Platform choice: only a committed write that queued a delivery wakes the webhook worker."""

    def unsubscribed() -> None:
        assert quiet.get(f"/api/organizations/{ORG}").status_code == 200
        created = create(quiet, ORG, booking())
        assert created.status_code == 201
        assert quiet.get(f"/api/organizations/{ORG}/appointments/{created.json()['id']}").status_code == 200
        assert (
            quiet.post(f"/api/organizations/{ORG}/appointments/{created.json()['id']}/cancel").status_code
            == 200
        )

    assert _woken(quiet, unsubscribed) is False
    _register(quiet)
    assert _woken(quiet, lambda: create(quiet, ORG, booking(time="11:00"), key="key-2")) is True
    assert _woken(quiet, lambda: create(quiet, ORG, booking(time="11:00"), key="key-2")) is False  # a replay


def test_the_customer_cancel_event_carries_the_appointment_and_actor(quiet):
    """Standard Webhooks payload shape: type, timestamp, data (the appointment after the change)."""
    _register(quiet)
    appointment = create(quiet, ORG, booking()).json()
    quiet.post(f"/api/organizations/{ORG}/appointments/{appointment['id']}/cancel")
    cancelled = _events(quiet)[1]
    assert cancelled["type"] == "appointment.cancelled"
    assert cancelled["timestamp"] == "2026-05-04T12:00:00Z"
    assert (cancelled["data"]["actor"], cancelled["data"]["appointment"]["status"]) == (
        "customer",
        "cancelled",
    )


def test_a_merchant_status_change_names_the_status_it_replaced(quiet):
    """Platform choice: appointment.status_changed carries previous_status and the merchant actor."""
    _register(quiet)
    appointment = create(quiet, ORG, booking()).json()
    quiet.post("/_testing/clock", json={"now": "2026-05-05T14:10:00Z"})
    assert (
        quiet.post(f"/api/organizations/{ORG}/merchant/appointments/{appointment['id']}/complete").status_code
        == 200
    )
    changed = _events(quiet)[1]
    assert changed["type"] == "appointment.status_changed"
    assert (changed["data"]["previous_status"], changed["data"]["actor"]) == ("confirmed", "merchant")
    assert changed["data"]["appointment"]["status"] == "completed"
    assert changed["timestamp"] == "2026-05-05T14:10:00Z"


def test_deleting_an_endpoint_abandons_its_pending_deliveries(quiet):
    """Platform choice: no delivery is attempted to an endpoint that no longer exists."""
    endpoint = _register(quiet)
    create(quiet, ORG, booking())
    assert quiet.delete(f"{HOOKS}/{endpoint['id']}").status_code == 204
    assert [item["state"] for item in _log(quiet)] == ["abandoned"]
    assert quiet.get(HOOKS).json()["endpoints"] == []
    assert due(_runtime(quiet).db, now=NOW + timedelta(days=1)) == []


def test_only_the_oldest_pending_event_of_an_appointment_is_due(quiet):
    """Platform choice (ordered per appointment): event n+1 waits until n is acknowledged or given up."""
    _register(quiet)
    first = create(quiet, ORG, booking(time="10:00"), key="1").json()
    other = create(quiet, ORG, booking(time="12:00"), key="2").json()
    quiet.post(f"/api/organizations/{ORG}/appointments/{first['id']}/cancel")
    db = _runtime(quiet).db
    heads = due(db, now=NOW)
    assert [item.event_id for item in heads] == [entry["webhook_id"] for entry in _log(quiet)[:2]]
    record_attempt(
        db, heads[0], Attempt(status_code=204), attempted=NOW, max_attempts=3, retry_base_seconds=5
    )
    log = {(item["appointment_id"], item["event_type"]): item for item in _log(quiet)}
    assert log[(first["id"], "appointment.created")]["state"] == "delivered"
    assert [item.event_id for item in due(db, now=NOW)] == [
        log[(other["id"], "appointment.created")]["webhook_id"],
        log[(first["id"], "appointment.cancelled")]["webhook_id"],
    ]


def test_failed_attempts_back_off_by_doubling_on_the_platform_clock_and_give_up(quiet):
    """Platform choice: retry after base, 2 x base, ... (platform clock), failed after max attempts."""
    _register(quiet)
    create(quiet, ORG, booking())
    db = _runtime(quiet).db
    when = NOW
    for attempt, outcome in enumerate([Attempt(status_code=500), Attempt(error="ConnectError")], start=1):
        (item,) = due(db, now=when)
        assert item.attempt == attempt
        record_attempt(db, item, outcome, attempted=when, max_attempts=3, retry_base_seconds=5)
        assert due(db, now=when + timedelta(seconds=retry_delay(attempt, 5) - 0.001)) == []
        when += timedelta(seconds=retry_delay(attempt, 5))
    (entry,) = _log(quiet)
    assert (entry["attempts"], entry["state"], entry["next_attempt_at"]) == (
        2,
        "pending",
        "2026-05-04T12:00:15.000Z",
    )
    (item,) = due(db, now=when)
    record_attempt(db, item, Attempt(status_code=410), attempted=when, max_attempts=3, retry_base_seconds=5)
    (entry,) = _log(quiet)
    assert (entry["state"], entry["next_attempt_at"], entry["last_status_code"]) == ("failed", None, 410)
    assert [(row["attempt"], row["status_code"], row["error"]) for row in entry["attempt_log"]] == [
        (1, 500, None),
        (2, None, "ConnectError"),
        (3, 410, None),
    ]


def test_retry_delays_double_from_the_base():
    """Platform choice: exponential backoff without jitter, so a frozen clock makes it exact."""
    assert [retry_delay(attempt, 2.5) for attempt in (1, 2, 3, 4)] == [2.5, 5.0, 10.0, 20.0]


def test_signed_headers_follow_standard_webhooks_and_verify_with_its_library():
    """Standard Webhooks: v1 = base64 HMAC-SHA256 of `id.timestamp.body` under the decoded secret."""
    secret = "whsec_" + base64.b64encode(b"k" * 24).decode()
    body = '{"type":"appointment.created"}'
    headers = signed_headers(secret, "msg_1", NOW, body)
    expected = hmac.new(b"k" * 24, f"msg_1.{int(NOW.timestamp())}.{body}".encode(), hashlib.sha256).digest()
    assert headers["webhook-signature"] == "v1," + base64.b64encode(expected).decode()
    assert (headers["webhook-id"], headers["webhook-timestamp"]) == ("msg_1", str(int(NOW.timestamp())))
    fresh = signed_headers(secret, "msg_2", datetime.now(UTC), body)
    assert Webhook(secret).verify(body, fresh) == {"type": "appointment.created"}


def test_the_worker_runs_for_the_lifespan_unless_webhooks_are_paused():
    """Platform choice: pause_webhooks queues events but starts no delivery worker."""
    for paused in (False, True):
        app = create_app(make_settings(pause_webhooks=paused))
        with TestClient(app) as client:
            assert _runtime(client).webhooks.bound is not paused
        assert _runtime(client).webhooks.bound is False
        app.state.runtime.db.dispose()


def test_the_delivery_log_is_test_surface_only():
    """Platform choice: /_testing paths are absent unless enable_testing."""
    app = create_app(make_settings(enable_testing=False))
    assert TestClient(app).get("/_testing/webhook-deliveries").status_code == 404
