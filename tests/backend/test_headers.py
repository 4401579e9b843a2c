"""Edge headers on every response: Server, request id, version echo, RateLimit, lifecycle headers."""

from __future__ import annotations

import uuid
from email.utils import parsedate_to_datetime
from typing import Any

import http_sf
import pytest
from fastapi.testclient import TestClient

from osbp.backend.app import create_app
from osbp.backend.headers import DEFAULT_VERSION, SUPPORTED_VERSIONS
from osbp.backend.ratelimit import RateLimiter
from tests.support.bookwell import DAY, booking, create, make_settings

AVAILABILITY = "/api/organizations/carolyns_dental/availability"
STANDARD = ("server", "x-request-id", "bookwell-version", "ratelimit-policy", "ratelimit")


@pytest.mark.parametrize(
    ("method", "path", "status"),
    [
        ("GET", "/api/organizations", 200),
        ("GET", "/api/organizations/nobody", 404),
        ("GET", "/nowhere", 404),
        ("DELETE", "/api/organizations", 405),
        ("POST", "/api/organizations/carolyns_dental/appointments", 400),
        ("GET", "/health", 200),
        ("GET", "/openapi.json", 200),
    ],
)
def test_every_response_carries_the_standard_headers(client, method, path, status):
    """Platform choice: Server, request id, version echo and RateLimit headers on every response, errors
    included."""
    response = client.request(method, path)
    assert response.status_code == status
    for name in STANDARD:
        assert name in response.headers, name
    assert response.headers["server"] == "Bookwell/0.1.0"
    assert response.headers["bookwell-version"] == DEFAULT_VERSION


def test_no_pin_is_served_the_default_version_and_a_pin_is_echoed(client):
    """Platform choice (versioning): no pin → the default, echoed; a supported pin → echoed as served."""
    assert client.get("/api/organizations").headers["bookwell-version"] == "2026-04-01"
    pinned = client.get("/api/organizations", headers={"Bookwell-Version": SUPPORTED_VERSIONS[0]})
    assert pinned.status_code == 200
    assert pinned.headers["bookwell-version"] == "2025-10-01"


@pytest.mark.parametrize("pin", ["2024-01-01", "latest", "", "2026-04-01x"])
def test_unknown_version_pin_is_400_and_still_echoes_a_version(client, pin):
    """Platform choice (versioning): a request pinned to an unknown version gets 400; errors echo the version
    too."""
    response = client.get("/api/organizations", headers={"Bookwell-Version": pin})
    assert response.status_code == 400
    assert response.json()["code"] == "unsupported_version"
    assert response.json()["supported_versions"] == list(SUPPORTED_VERSIONS)
    assert response.headers["bookwell-version"] == DEFAULT_VERSION
    assert response.headers["content-type"] == "application/problem+json"


def test_request_id_is_a_fresh_uuid_or_the_clients_well_formed_one(client):
    """Platform choice: a fresh UUID per response; a well-formed client request id is echoed."""
    first = client.get("/health").headers["x-request-id"]
    second = client.get("/health").headers["x-request-id"]
    assert first != second
    assert uuid.UUID(first)
    sent = str(uuid.uuid4())
    assert client.get("/health", headers={"X-Request-Id": sent}).headers["x-request-id"] == sent
    forged = client.get("/health", headers={"X-Request-Id": "<script>"}).headers["x-request-id"]
    assert forged != "<script>"
    assert uuid.UUID(forged)


def test_problem_bodies_carry_the_request_id_of_their_response(client):
    """Platform choice: a problem names the request id so operators can find the log line."""
    response = client.get("/api/organizations/nobody")
    assert response.json()["request_id"] == response.headers["x-request-id"]


@pytest.mark.parametrize("params", [{"service_id": "carolyns_dental_cleaning", "date": DAY}, {}])
def test_deprecated_endpoint_announces_deprecation_sunset_and_link(client, params):
    """RFC 9745 / RFC 8594: structured-date Deprecation, later HTTP-date Sunset, Link rel=deprecation."""
    response = client.get(AVAILABILITY, params=params)
    parsed: Any = http_sf.parse(response.headers["deprecation"].encode(), tltype="item")
    deprecation = parsed[0]
    sunset = response.headers["sunset"]
    assert response.headers["deprecation"] == "@1781308800"
    assert sunset == "Fri, 01 Oct 2032 00:00:00 GMT"  # the IMF-fixdate form of an HTTP-date
    assert parsedate_to_datetime(sunset) >= deprecation
    assert response.headers["link"].startswith("<https://developer.bookwell.example/deprecations/")
    assert 'rel="deprecation"' in response.headers["link"]


def test_other_endpoints_are_not_deprecated(client):
    """RFC 9745: only the announced endpoint carries lifecycle headers."""
    response = client.get("/api/organizations/carolyns_dental")
    assert "deprecation" not in response.headers
    assert "sunset" not in response.headers


class FakeMonotonic:
    """A hand-driven monotonic clock."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def test_ratelimit_headers_count_down_and_429_carries_retry_after():
    """IETF RateLimit headers draft: r counts down, t counts to the reset; spent quota → 429 + Retry-After."""
    app = create_app(make_settings(rate_limit_quota=3, rate_limit_window_seconds=60))
    ticks = FakeMonotonic()
    app.state.runtime.limiter = RateLimiter(3, 60, monotonic=ticks)
    with TestClient(app) as client:
        policies: list[Any] = []
        limits: list[Any] = []
        for step in range(3):
            ticks.now = 1000.0 + step * 10
            response = client.get("/health")
            policies.append(http_sf.parse(response.headers["ratelimit-policy"].encode(), tltype="list"))
            limits.append(http_sf.parse(response.headers["ratelimit"].encode(), tltype="list"))
        assert policies[0] == [("default", {"q": 3, "w": 60})]
        assert [item[0][1] for item in limits] == [{"r": 2, "t": 60}, {"r": 1, "t": 50}, {"r": 0, "t": 40}]
        ticks.now = 1035.5
        refused = client.get("/api/organizations")
        assert refused.status_code == 429
        assert refused.json()["code"] == "rate_limited"
        assert refused.headers["retry-after"] == "25"
        assert refused.headers["ratelimit"] == '"default";r=0;t=25'
        assert refused.headers["bookwell-version"] == DEFAULT_VERSION
        ticks.now = 1060.0
        assert client.get("/health").headers["ratelimit"] == '"default";r=2;t=60'


def test_rate_limited_create_makes_no_write(client, runtime):
    """Platform choice: a 429 is refused at the edge, before the route runs."""
    runtime.limiter = RateLimiter(1, 60)
    assert client.get("/health").status_code == 200
    assert create(client, "carolyns_dental", booking()).status_code == 429
    runtime.limiter = RateLimiter(100, 60)
    assert client.get("/_testing/stats").json()["appointments"] == 0
