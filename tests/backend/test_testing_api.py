"""The test-only control surface: off by default; arm, outbox, clock, reset, stats."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient

from osbp.backend.app import create_app
from osbp.backend.settings import BackendSettings
from tests.support.bookwell import booking, create, make_settings


def test_surface_is_absent_unless_enabled():
    """Platform choice: the test-only surface is off by default."""
    assert BackendSettings().enable_testing is False
    with TestClient(create_app(make_settings(enable_testing=False))) as client:
        for path in ("/_testing/stats", "/_testing/outbox", "/_testing/clock"):
            assert client.get(path).status_code == 404
        assert client.post("/_testing/reset").status_code == 404


@pytest.mark.parametrize(
    ("outcome", "status"), [("slot_taken", 409), ("rate_limited", 429), ("requires_verification", 428)]
)
def test_armed_outcome_fails_the_next_create_once_without_writing(client, outcome, status):
    """Platform choice: arm the next create of an organization to fail that way, consumed once."""
    armed = client.post("/_testing/arm", json={"organization_id": "carolyns_dental", "outcome": outcome})
    assert armed.json() == {"organization_id": "carolyns_dental", "armed": outcome}
    failed = create(client, "carolyns_dental", booking(), key="a")
    assert (failed.status_code, failed.json()["code"]) == (status, outcome)
    if outcome == "rate_limited":
        assert failed.headers["retry-after"] == "1"
    stats = client.get("/_testing/stats", params={"organization_id": "carolyns_dental"}).json()
    assert (stats["appointments"], stats["create_requests"]) == (0, 1)
    assert create(client, "carolyns_dental", booking(), key="a").status_code == 201


def test_arming_is_per_organization(client):
    """Platform choice: arming one organization does not touch another's creates."""
    client.post("/_testing/arm", json={"organization_id": "gus_notary", "outcome": "slot_taken"})
    assert create(client, "carolyns_dental", booking()).status_code == 201


def test_arming_an_unknown_organization_or_outcome_is_refused(client):
    """Platform choice: arm validates its input."""
    assert (
        client.post("/_testing/arm", json={"organization_id": "x", "outcome": "slot_taken"}).status_code
        == 404
    )
    bad = client.post("/_testing/arm", json={"organization_id": "gus_notary", "outcome": "explode"})
    assert bad.status_code == 400


def test_stats_count_rows_and_create_requests_including_replays(client):
    """Contract with the conformance battery: stats prove whether a write or a request happened."""
    create(client, "carolyns_dental", booking(), key="a")
    create(client, "carolyns_dental", booking(), key="a")
    create(client, "carolyns_dental", booking(), key=None)
    stats = client.get("/_testing/stats", params={"organization_id": "carolyns_dental"}).json()
    assert stats == {
        "organization_id": "carolyns_dental",
        "appointments": 1,
        "active_appointments": 1,
        "create_requests": 3,
        "messages": 0,
    }
    assert (
        client.get("/_testing/stats", params={"organization_id": "gus_notary"}).json()["create_requests"] == 0
    )
    assert client.get("/_testing/stats").json()["create_requests"] == 3


@pytest.mark.parametrize("status", ["pending", "confirmed", "cancelled", "completed", "no_show"])
def test_an_appointment_can_be_given_any_native_status_and_reads_back_with_it(client, status):
    """Contract with the conformance battery (its status hook): the stored status is the one read back."""
    appointment = create(client, "carolyns_dental", booking()).json()
    body = {"organization_id": "carolyns_dental", "booking_id": appointment["id"], "status": status}
    changed = client.post("/_testing/appointment-status", json=body)
    assert changed.status_code == 200
    assert changed.json()["status"] == status
    read = client.get(f"/api/organizations/carolyns_dental/appointments/{appointment['id']}")
    assert read.json()["status"] == status


def test_setting_the_status_of_another_organizations_appointment_is_not_found(client):
    """Contract with the conformance battery: the hook is scoped to the organization it names."""
    appointment = create(client, "carolyns_dental", booking()).json()
    body = {"organization_id": "gus_notary", "booking_id": appointment["id"], "status": "cancelled"}
    refused = client.post("/_testing/appointment-status", json=body)
    assert refused.status_code == 404
    assert refused.json()["code"] == "appointment_not_found"
    unknown = client.post("/_testing/appointment-status", json={**body, "status": "exploded"})
    assert unknown.status_code == 400


def test_clock_can_be_set_and_advanced(client):
    """Platform choice (clock): set or advance the platform clock."""
    assert client.get("/_testing/clock").json() == {"now": "2026-05-04T12:00:00Z"}
    assert client.post("/_testing/clock", json={"now": "2030-05-01T08:00:00-04:00"}).json() == {
        "now": "2030-05-01T12:00:00Z"
    }
    assert client.post("/_testing/clock", json={"advance_seconds": 90}).json() == {
        "now": "2030-05-01T12:01:30Z"
    }
    assert client.post("/_testing/clock", json={"now": "2030-05-01T08:00:00"}).status_code == 400
    assert client.post("/_testing/clock", json={}).status_code == 400


def test_stats_count_the_outbox_messages_of_the_organization_asked_for(client):
    """Platform choice: one stats read says whether a message was sent, like the outbox's length."""
    for phone in ("+12125550142", "+12125550143"):
        sent = client.post(
            "/api/organizations/gus_notary/verifications",
            json={"purpose": "booking:gus_notary", "phone": phone},
        )
        assert sent.status_code == 202
    gus = client.get("/_testing/stats", params={"organization_id": "gus_notary"}).json()
    outbox = client.get("/_testing/outbox", params={"organization_id": "gus_notary"}).json()["messages"]
    assert (gus["messages"], len(outbox)) == (2, 2)
    dental = client.get("/_testing/stats", params={"organization_id": "carolyns_dental"}).json()
    assert dental["messages"] == 0
    assert client.get("/_testing/stats").json()["messages"] == 2


def test_reset_restores_seeds_and_clears_outbox_counters_and_clock(client):
    """Platform choice: reset to seeds."""
    create(client, "carolyns_dental", booking())
    client.post(
        "/api/organizations/gus_notary/verifications",
        json={"purpose": "booking:gus_notary", "phone": "+12125550142"},
    )
    client.post("/_testing/clock", json={"advance_seconds": 3600})
    client.post("/_testing/arm", json={"organization_id": "carolyns_dental", "outcome": "slot_taken"})
    assert client.post("/_testing/reset").json() == {"reset": True}
    assert client.get("/_testing/stats").json()["appointments"] == 0
    assert client.get("/_testing/stats").json()["create_requests"] == 0
    assert client.get("/_testing/stats").json()["messages"] == 0
    assert client.get("/_testing/outbox").json() == {"messages": []}
    assert client.get("/_testing/clock").json() == {"now": "2026-05-04T12:00:00Z"}
    assert create(client, "carolyns_dental", booking()).status_code == 201
    assert len(client.get("/api/organizations").json()["organizations"]) == 5


def test_an_unreachable_organization_answers_503_until_reachable_and_others_are_served(client):
    """Contract with the conformance battery (docs/conformance.md, scenario URL): `unreachable` cuts one
    organization's native API off with 503s, `reachable` restores it; other organizations are served."""
    made = create(client, "carolyns_dental", booking(), key="before").json()
    cut = client.post("/_testing/arm", json={"organization_id": "carolyns_dental", "outcome": "unreachable"})
    assert cut.json() == {"organization_id": "carolyns_dental", "armed": "unreachable"}
    appointment = f"/api/organizations/carolyns_dental/appointments/{made['id']}"
    assert client.get(appointment).status_code == 503
    assert create(client, "carolyns_dental", booking(), key="during").status_code == 503
    assert client.get("/api/organizations/gus_notary").status_code == 200
    assert client.get("/_testing/stats", params={"organization_id": "carolyns_dental"}).status_code == 200
    client.post("/_testing/arm", json={"organization_id": "carolyns_dental", "outcome": "reachable"})
    assert client.get(appointment).status_code == 200
    assert client.get("/_testing/faults").json()["rules"] == []


def test_reachable_lifts_only_the_outage_and_keeps_the_rest_of_the_fault_profile(client):
    """Platform choice (fault profile): the outage is one rule put first; lifting it leaves the profile's
    other rules, and their hit counts, in force; cutting off twice is one rule."""
    latency = {"organization_id": "gus_notary", "mode": "latency", "latency_ms": 1}
    client.put("/_testing/faults", json={"rules": [latency]})
    for _ in range(2):
        client.post("/_testing/arm", json={"organization_id": "carolyns_dental", "outcome": "unreachable"})
    client.get("/api/organizations/gus_notary")
    profile = client.get("/_testing/faults").json()
    assert [rule["organization_id"] for rule in profile["rules"]] == ["carolyns_dental", "gus_notary"]
    assert profile["hits"] == [0, 1]
    client.post("/_testing/arm", json={"organization_id": "carolyns_dental", "outcome": "reachable"})
    profile = client.get("/_testing/faults").json()
    assert ([rule["mode"] for rule in profile["rules"]], profile["hits"]) == (["latency"], [1])


@pytest.mark.parametrize(
    ("outcome", "operation"),
    [("requires_verification", "cancel"), ("slot_taken", "cancel"), ("requires_verification", "reschedule")],
)
def test_an_outcome_a_change_cannot_have_is_refused_for_it(client, outcome, operation):
    """Platform choice (docs/backend-api.md): only the outcomes a cancel or reschedule can meet are armed."""
    body = {"organization_id": "carolyns_dental", "outcome": outcome, "operation": operation}
    refused = client.post("/_testing/arm", json=body)
    assert (refused.status_code, refused.json()["code"]) == (400, "invalid_request")


def test_an_armed_rate_limit_refuses_the_next_cancel_once_and_not_the_create(client):
    """Platform choice: an outcome armed for the cancel waits for the cancel."""
    body = {"organization_id": "carolyns_dental", "outcome": "rate_limited", "operation": "cancel"}
    assert client.post("/_testing/arm", json=body).status_code == 200
    appointment = create(client, "carolyns_dental", booking()).json()
    cancel = f"/api/organizations/carolyns_dental/appointments/{appointment['id']}/cancel"
    limited = client.post(cancel)
    assert (limited.status_code, limited.headers["retry-after"]) == (429, "1")
    assert client.post(cancel).json()["status"] == "cancelled"


def test_the_status_hook_gives_the_appointment_a_new_version(client):
    """docs/lifecycle.md (booking_changed): any change of the stored status bumps the version, so a
    customer change holding the old ETag is refused."""
    appointment = create(client, "carolyns_dental", booking()).json()
    body = {"organization_id": "carolyns_dental", "booking_id": appointment["id"], "status": "no_show"}
    assert (
        client.post("/_testing/appointment-status", json=body).json()["version"] == appointment["version"] + 1
    )
