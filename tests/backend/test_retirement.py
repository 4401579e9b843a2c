"""Endpoint retirement: the deprecated availability endpoint answers 410 Gone after its Sunset instant."""

from __future__ import annotations

from osbp.backend.headers import AVAILABILITY_SUNSET_AT

AVAILABILITY = "/api/organizations/carolyns_dental/availability"
PARAMS = {"service_id": "carolyns_dental_cleaning", "date": "2032-10-05"}
NOTICE = "https://developer.bookwell.example/deprecations/availability-v1"


def move_clock(client, instant: str) -> None:
    """Set the platform clock through the test surface."""
    assert client.post("/_testing/clock", json={"now": instant}).status_code == 200


def test_the_deprecated_endpoint_serves_until_its_sunset_instant(client):
    """RFC 8594: before the Sunset instant the endpoint still answers, with its lifecycle headers."""
    assert AVAILABILITY_SUNSET_AT.isoformat() == "2032-10-01T00:00:00+00:00"
    move_clock(client, "2032-09-30T23:59:59Z")
    served = client.get(AVAILABILITY, params=PARAMS)
    assert served.status_code == 200
    assert served.headers["sunset"] == "Fri, 01 Oct 2032 00:00:00 GMT"


def test_after_its_sunset_the_endpoint_is_gone_with_a_problem_pointing_at_its_successor(client):
    """RFC 8594 section 3 / RFC 9110 section 15.5.11: after the Sunset instant (platform clock) the
    endpoint answers 410 Gone, a problem naming the sunset and where the successor is described."""
    move_clock(client, "2032-10-01T00:00:00Z")
    gone = client.get(AVAILABILITY, params=PARAMS)
    assert gone.status_code == 410
    assert gone.headers["content-type"] == "application/problem+json"
    body = gone.json()
    assert (body["code"], body["sunset"], body["successor"]) == (
        "endpoint_retired",
        "2032-10-01T00:00:00Z",
        NOTICE,
    )
    assert body["request_id"] == gone.headers["x-request-id"]
    assert gone.headers["link"].startswith(f"<{NOTICE}>")


def test_other_endpoints_are_untouched_by_a_retirement(client):
    """Platform choice: only the retired endpoint is gone."""
    move_clock(client, "2033-01-01T00:00:00Z")
    assert client.get("/api/organizations/carolyns_dental/services").status_code == 200
