"""Webhook delivery end to end: a real platform process, a real loopback receiver, restarts included."""

from __future__ import annotations

import os
import signal
from datetime import timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest
from standardwebhooks import Webhook

from osbp.backend.process import PlatformProcess
from tests.support.bookwell import DAY, NOW, booking
from tests.support.paths import REPO
from tests.support.webhooks import Receiver, eventually

pytestmark = pytest.mark.integration

ORG = "carolyns_dental"
API = f"/api/organizations/{ORG}"
#: A Tuesday far ahead of the real clock: Carolyn's Dental is open 09:00-17:00.
FUTURE_DAY = "2030-05-07"


def _documented_verify() -> Any:
    """The standard-library verification recipe of docs/backend-api.md, run as written."""
    text = (REPO / "docs" / "backend-api.md").read_text()
    recipe = text.split("With the standard library only:\n\n```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(recipe, namespace)  # noqa: S102  our own documentation's code block, the point of the test
    return namespace["verify"]


def _client(platform: PlatformProcess) -> httpx2.Client:
    return httpx2.Client(base_url=platform.base_url, timeout=30)


def _register(http: httpx2.Client, receiver: Receiver) -> str:
    answer = http.post(f"{API}/webhook-endpoints", json={"url": receiver.url})
    assert answer.status_code == 201, answer.text
    secret: str = answer.json()["secret"]
    return secret


def _book(http: httpx2.Client, key: str, **fields: Any) -> str:
    answer = http.post(f"{API}/appointments", json=booking(**fields), headers={"Idempotency-Key": key})
    assert answer.status_code == 201, answer.text
    appointment_id: str = answer.json()["id"]
    return appointment_id


def _merchant(http: httpx2.Client, appointment_id: str, action: str, **body: str) -> None:
    answer = http.post(f"{API}/merchant/appointments/{appointment_id}/{action}", json=body or None)
    assert answer.status_code == 200, answer.text


def _log(http: httpx2.Client) -> list[dict[str, Any]]:
    deliveries: list[dict[str, Any]] = http.get("/_testing/webhook-deliveries").json()["deliveries"]
    return deliveries


def _delivered(http: httpx2.Client) -> list[dict[str, Any]] | None:
    """The delivery log once every delivery in it is delivered."""
    found = _log(http)
    return found if found and all(entry["state"] == "delivered" for entry in found) else None


def _attempted(http: httpx2.Client, attempts: int) -> list[dict[str, Any]] | None:
    """The delivery log once its first delivery has recorded `attempts` attempts."""
    found = _log(http)
    return found if found and found[0]["attempts"] == attempts else None


def test_events_arrive_signed_in_order_each_after_the_one_before_is_acknowledged(tmp_path):
    """Standard Webhooks signature (library and the documented recipe); platform choice: ordered, retried."""
    settings = {
        "db": str(tmp_path / "platform.db"),
        "enable_testing": True,
        "webhook_retry_base_seconds": 0.2,
    }
    with Receiver([500, 503]) as receiver, PlatformProcess(**settings) as platform, _client(platform) as http:
        secret = _register(http, receiver)
        appointment = _book(http, "e2e-1", date=FUTURE_DAY, time="10:00")
        _merchant(http, appointment, "reschedule", date=FUTURE_DAY, time="11:00")
        _merchant(http, appointment, "cancel")
        got = receiver.wait_for(lambda seen: sum(item.status == 200 for item in seen) == 3)
        log = eventually(lambda: _delivered(http))
    assert [(item.event["type"], item.status) for item in got] == [
        ("appointment.created", 500),
        ("appointment.created", 503),
        ("appointment.created", 200),
        ("appointment.rescheduled", 200),
        ("appointment.cancelled", 200),
    ]
    documented_verify = _documented_verify()
    for item in got:
        assert Webhook(secret).verify(item.body, item.headers) == item.event
        assert documented_verify(secret, item.headers, item.body) is True
        assert documented_verify(secret, item.headers, item.body + b" ") is False
    assert len({item.webhook_id for item in got[:3]}) == 1
    assert [item.webhook_id for item in got[2:]] == [entry["webhook_id"] for entry in log]
    assert [entry["attempts"] for entry in log] == [3, 1, 1]
    moved = got[3].event["data"]
    assert (moved["previous"]["time"], moved["appointment"]["time"], moved["actor"]) == (
        "10:00",
        "11:00",
        "merchant",
    )


def test_a_failed_attempt_is_retried_after_the_base_delay_on_the_platform_clock():
    """Platform choice: retries are scheduled on the platform clock, so a frozen clock makes them exact."""
    settings = {"db": ":memory:", "now": NOW, "enable_testing": True, "webhook_retry_base_seconds": 30}
    with Receiver([500]) as receiver, PlatformProcess(**settings) as platform, _client(platform) as http:
        secret = _register(http, receiver)
        _book(http, "frozen-1", date=DAY)
        receiver.wait_for(lambda seen: len(seen) == 1)
        (entry,) = eventually(lambda: _attempted(http, 1))
        assert (entry["state"], entry["last_status_code"]) == ("pending", 500)
        assert entry["next_attempt_at"] == "2026-05-04T12:00:30.000Z"
        http.post("/_testing/clock", json={"advance_seconds": 30})
        first, second = receiver.wait_for(lambda seen: len(seen) == 2)
        (entry,) = eventually(lambda: _delivered(http))
    retried_at = NOW + timedelta(seconds=30)
    assert (first.headers["webhook-timestamp"], second.headers["webhook-timestamp"]) == (
        str(int(NOW.timestamp())),
        str(int(retried_at.timestamp())),
    )
    assert second.webhook_id == first.webhook_id
    assert second.body == first.body
    expected = Webhook(secret).sign(msg_id=second.webhook_id, timestamp=retried_at, data=second.body.decode())
    assert second.headers["webhook-signature"] == expected
    assert [(row["attempt"], row["status_code"]) for row in entry["attempt_log"]] == [(1, 500), (2, 200)]


def test_a_platform_killed_mid_delivery_delivers_everything_after_a_restart(tmp_path: Path):
    """Platform choice (outbox in the database): no event is lost across a crash; a duplicate keeps its id."""
    settings = {"db": str(tmp_path / "platform.db"), "enable_testing": True}
    with Receiver() as receiver:
        receiver.hold()
        crashed = PlatformProcess(**settings).start()
        try:
            with _client(crashed) as http:
                _register(http, receiver)
                first = _book(http, "crash-1", date=FUTURE_DAY, time="10:00")
                second = _book(http, "crash-2", date=FUTURE_DAY, time="14:00")
                _merchant(http, first, "reschedule", date=FUTURE_DAY, time="11:00")
                _merchant(http, first, "cancel")
                queued = [entry["webhook_id"] for entry in _log(http)]
            receiver.wait_for(lambda seen: len(seen) == 1)  # the first attempt is in flight, unanswered
            os.kill(crashed.pid, signal.SIGKILL)
        finally:
            crashed.stop()
        receiver.release()
        with PlatformProcess(**settings) as restarted, _client(restarted) as http:
            log = eventually(lambda: _delivered(http))
            got = receiver.wait_for(lambda seen: {item.webhook_id for item in seen} >= set(queued))
    assert [entry["webhook_id"] for entry in log] == queued
    assert len(queued) == 4
    assert got[0].webhook_id == got[1].webhook_id == queued[0]  # the one in flight, delivered again
    order: dict[str, list[str]] = {first: [], second: []}
    for item in got[1:]:
        order[item.event["data"]["appointment"]["id"]].append(item.event["type"])
    assert order == {
        first: ["appointment.created", "appointment.rescheduled", "appointment.cancelled"],
        second: ["appointment.created"],
    }
