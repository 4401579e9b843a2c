"""Webhook delivery end to end: a real platform process, a real loopback receiver, restarts included, and
no webhook to the platform itself."""

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
from osbp.backend.serving import PlatformServer
from tests.support.bookwell import DAY, NOW, booking, make_settings
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


def _status(http: httpx2.Client, appointment_id: str) -> str:
    answer = http.get(f"{API}/appointments/{appointment_id}")
    assert answer.status_code == 200, answer.text
    status: str = answer.json()["status"]
    return status


def _cancel_url(base_url: str, appointment_id: str) -> str:
    return f"{base_url}{API}/appointments/{appointment_id}/cancel"


def _spelled(base_url: str, spelling: str) -> str:
    """The platform's own base URL with its host spelled otherwise."""
    port = base_url.rsplit(":", 1)[1]
    return f"http://{spelling}:{port}"


@pytest.mark.parametrize(
    ("spelling", "allow_non_loopback"),
    [
        ("127.0.0.1", False),
        ("localhost", False),
        ("[::1]", False),
        ("127.0.0.2", False),
        ("127.1", False),
        ("2130706433", False),
        ("[::ffff:127.0.0.1]", False),
        ("0.0.0.0", True),  # noqa: S104  a URL naming the unspecified address, not a bind
        ("[::]", True),
    ],
)
def test_a_webhook_to_the_platforms_own_cancel_route_is_refused_at_registration(spelling, allow_non_loopback):
    """Platform choice (fail closed): no webhook may target the platform's own port, in any spelling."""
    settings = make_settings(allow_non_loopback_webhooks=allow_non_loopback)
    with PlatformServer(settings) as server, httpx2.Client(base_url=server.base_url, timeout=30) as http:
        victim = _book(http, "victim-1", date=DAY)
        url = _cancel_url(_spelled(server.base_url, spelling), victim)
        refused = http.post(f"{API}/webhook-endpoints", json={"url": url})
        assert refused.status_code == 400, refused.text
        assert refused.headers["content-type"] == "application/problem+json"
        problem = refused.json()
        assert (problem["code"], problem["field"]) == ("webhook_url_targets_platform", "body.url")
        assert problem["type"] == "https://developer.bookwell.example/problems/webhook-url-targets-platform"
        assert http.get(f"{API}/webhook-endpoints").json()["endpoints"] == []
        assert _status(http, victim) == "confirmed"


def test_a_webhook_that_reaches_the_platform_only_at_delivery_is_not_delivered_to_it(tmp_path: Path):
    """Platform choice (fail closed, defence in depth): a delivery whose connection lands on the delivering
    platform itself is refused before it sends a byte, however the registration got past the check."""
    shared = {"db": str(tmp_path / "platform.db"), "now": NOW, "enable_testing": True}
    # The platform that will deliver, and a second process on the same database that registers the hook:
    # it listens elsewhere, so nothing at registration says the URL is a platform's (nor does it deliver).
    with (
        PlatformProcess(**shared) as target,
        PlatformProcess(**shared, pause_webhooks=True) as front,
        _client(target) as at_target,
        _client(front) as at_front,
    ):
        victim = _book(at_front, "victim-1", date=DAY, time="10:00")
        hook = {"url": _cancel_url(target.base_url, victim), "event_types": ["appointment.created"]}
        registered = at_front.post(f"{API}/webhook-endpoints", json=hook)
        assert registered.status_code == 201, registered.text
        _book(at_target, "trigger-1", date=DAY, time="14:00")
        (entry,) = eventually(lambda: _attempted(at_target, 1), what="the first attempt")
        assert [(row["status_code"], row["error"]) for row in entry["attempt_log"]] == [
            (None, "target_is_platform")
        ]
        assert _status(at_target, victim) == "confirmed"


def test_a_receivers_redirect_to_the_platform_is_not_followed():
    """Platform choice: a delivery goes to exactly the registered URL; a 3xx is a failed attempt."""
    settings = make_settings(webhook_retry_base_seconds=3600)
    with (
        Receiver([307]) as receiver,
        PlatformServer(settings) as server,
        httpx2.Client(base_url=server.base_url, timeout=30) as http,
    ):
        victim = _book(http, "victim-1", date=DAY, time="10:00")
        receiver.answer_headers = {"location": _cancel_url(server.base_url, victim)}
        _register(http, receiver)
        _book(http, "trigger-1", date=DAY, time="14:00")
        receiver.wait_for(lambda seen: len(seen) == 1)
        (entry,) = eventually(lambda: _attempted(http, 1), what="the first attempt")
        assert (entry["state"], entry["last_status_code"]) == ("pending", 307)
        assert _status(http, victim) == "confirmed"
