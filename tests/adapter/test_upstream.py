"""The one HTTP helper: pin and identity on every request, UpstreamMeta capture, lifecycle warnings."""

from __future__ import annotations

import asyncio
import json
import logging
import ssl
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any
from urllib.parse import quote

import anyio
import httpx2
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pydantic import SecretStr

from osbp.adapter import AdapterSettings
from osbp.adapter.bookwell import PLATFORM, VERSION_HEADER
from osbp.adapter.upstream import (
    LIFECYCLE_LOGGER,
    REDACTED,
    URL_CACHE_SIZE,
    LifecycleNotices,
    Upstream,
    UpstreamResponse,
    UpstreamUnavailable,
    redact_segment,
    user_agent,
)
from osbp.protocol.clock import FixedClock
from osbp.protocol.contract import Success
from osbp.protocol.models import (
    AvailabilityFindInput,
    BookingStatusInput,
    Customer,
    PolicyExplainInput,
    ServiceDescribeInput,
    VerificationSendInput,
)
from osbp.protocol.upstream import capture_upstream
from tests.support.logs import capture_logs, events, fields
from tests.support.reference import (
    CLEANING,
    DAY,
    NOW,
    ForwardingTransport,
    Platform,
    RecordingTransport,
    approved,
    create_input,
    make_adapter,
    token_of,
)

pytestmark = pytest.mark.anyio

Handler = Callable[[httpx2.Request], httpx2.Response]


def upstream_with(handler: Handler, notices: LifecycleNotices | None = None, **settings: object) -> Upstream:
    """An Upstream over a MockTransport answering with ``handler``."""
    configured = AdapterSettings(
        **{"platform_base_url": "http://platform.test", "organization_id": "carolyns_dental", **settings}
    )
    return Upstream(
        configured,
        platform=PLATFORM,
        version_header=VERSION_HEADER,
        transport=httpx2.MockTransport(handler),
        notices=notices or LifecycleNotices(),
    )


def ok(request: httpx2.Request) -> httpx2.Response:
    """A plain 200 with an empty JSON object."""
    return httpx2.Response(200, json={})


async def test_every_request_carries_the_version_pin_user_agent_and_source_marker() -> None:
    """OSBP spec, Platform Metadata and Versioning: send the pin on every request; self-declared identity."""
    seen: list[httpx2.Request] = []

    def record(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json={})

    upstream = upstream_with(record)
    await upstream.fetch("GET", "/api/organizations/{org}", path={"org": "a"})
    await upstream.fetch("POST", "/api/organizations/{org}/appointments", path={"org": "a"}, body={"x": 1})
    await upstream.aclose()
    assert len(seen) == 2
    for request in seen:
        assert request.headers["bookwell-version"] == "2026-04-01"
        assert request.headers["user-agent"] == user_agent()
        assert request.headers["x-osbp-source"] == "osbp-local-mcp"
        assert "authorization" not in request.headers


async def test_each_request_is_exactly_what_the_http_client_would_build_from_the_same_arguments() -> None:
    """Platform choice: requests are built with their URL parsed once per target, byte for byte as before."""
    seen: list[httpx2.Request] = []

    def record(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json={}, headers={"set-cookie": "session=kept; Path=/"})

    upstream = upstream_with(record, platform_base_url="http://platform.test/base/")
    await upstream.fetch("GET", "/api/{org}", path={"org": "a"})  # the platform sets a cookie
    calls: list[dict[str, Any]] = [
        {
            "method": "GET",
            "route": "/api/{org}/availability",
            "path": {"org": "a b"},
            "params": {"d": "x y&z"},
        },
        {
            "method": "GET",
            "route": "/api/{org}/availability",
            "path": {"org": "a b"},
            "params": {"d": "x y&z"},
        },
        {"method": "GET", "route": "/api/{org}/services/{id}", "path": {"org": "a", "id": "s/1"}},
        {
            "method": "POST",
            "route": "/api/{org}/appointments",
            "path": {"org": "a"},
            "body": {"name": "Zoë", "n": [1, 2]},
            "headers": {"Idempotency-Key": "k1", "If-Match": '"t"'},
        },
    ]
    for call in calls:
        await upstream.fetch(**call)
    await upstream.aclose()
    settings = AdapterSettings(platform_base_url="http://platform.test", organization_id="carolyns_dental")
    reference = httpx2.AsyncClient(
        base_url="http://platform.test/base",
        headers={
            VERSION_HEADER: PLATFORM.api_version,
            "user-agent": user_agent(),
            "x-osbp-source": settings.source,
            "accept": "application/json",
        },
        cookies={"session": "kept"},
        timeout=httpx2.Timeout(settings.read_timeout_s, connect=settings.connect_timeout_s),
    )
    assert "cookie" not in seen[0].headers
    for call, request in zip(calls, seen[1:], strict=True):
        url = call["route"].format(**{key: quote(value, safe="") for key, value in call["path"].items()})
        expected = reference.build_request(
            call["method"], url, params=call.get("params"), json=call.get("body"), headers=call.get("headers")
        )
        assert request.method == expected.method
        assert str(request.url) == str(expected.url)
        assert request.url.raw_path == expected.url.raw_path
        assert request.headers.raw == expected.headers.raw
        assert request.content == expected.content
        assert request.extensions == expected.extensions
    await reference.aclose()


async def test_the_parsed_urls_kept_are_bounded_however_many_targets_are_asked_for() -> None:
    """Platform choice: a parsed URL is kept per target, at most URL_CACHE_SIZE of them, oldest out first."""
    upstream = upstream_with(ok)
    route = "/api/{org}/appointments/{id}"
    for index in range(URL_CACHE_SIZE + 5):
        await upstream.fetch("GET", route, path={"org": "a", "id": f"apt_{index}"})
    await upstream.fetch("GET", route, path={"org": "a", "id": f"apt_{URL_CACHE_SIZE + 4}"})
    await upstream.aclose()
    kept = [url for url, _ in upstream._urls]  # the cache itself: its size is the promise under test
    assert len(kept) == URL_CACHE_SIZE
    assert "/api/a/appointments/apt_4" not in kept
    assert kept[0] == "/api/a/appointments/apt_5"
    assert kept[-1] == f"/api/a/appointments/apt_{URL_CACHE_SIZE + 4}"


def test_user_agent_names_osbp_the_adapter_and_the_python_version() -> None:
    """OSBP spec, Security: caller identity is a self-declared User-Agent (OSBP, adapter, runtime)."""
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert user_agent() == f"OSBP/0.1.0 osbp-bookwell-adapter/0.1.0 python/{python}"


async def test_configured_credential_is_sent_but_never_captured_into_meta() -> None:
    """OSBP spec, Platform Metadata: credentials attached in the one helper, never in UpstreamMeta."""
    seen: list[httpx2.Request] = []

    def record(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        return httpx2.Response(200, json={}, headers={"x-request-id": "r-1"})

    upstream = upstream_with(record, platform_api_key="sk_live_secret_value")
    outcome = await upstream.fetch("GET", "/api/organizations/{org}", path={"org": "a"})
    await upstream.aclose()
    assert seen[0].headers["authorization"] == "Bearer sk_live_secret_value"
    assert isinstance(outcome, UpstreamResponse)
    assert "sk_live_secret_value" not in outcome.meta.to_wire_json()


def test_platform_api_key_is_hidden_in_the_settings_repr() -> None:
    """OSBP spec, Security: durable secrets stay server-side and out of observability."""
    settings = AdapterSettings(
        platform_base_url="http://platform.test",
        organization_id="carolyns_dental",
        platform_api_key=SecretStr("sk_live_secret_value"),
    )
    assert "sk_live_secret_value" not in repr(settings)


async def test_meta_captures_every_spec_field_from_the_response_headers() -> None:
    """OSBP spec, Audit: call, status, server, request_id, api_version, deprecation, sunset, ratelimit."""
    headers = [
        ("server", "cdn-edge/7.1"),
        ("x-amzn-trace", "t"),
        ("x-correlation-request-id", "first-id"),
        ("x-request-id", "second-id"),
        ("bookwell-version", "2026-04-01"),
        ("deprecation", "@1781308800"),
        ("sunset", "Fri, 01 Oct 2032 00:00:00 GMT"),
        ("retry-after", "3"),
        ("RateLimit", '"default";r=0;t=3'),
        ("RateLimit-Policy", '"default";q=1000;w=60'),
        ("X-RateLimit-Remaining", "0"),
    ]
    upstream = upstream_with(lambda request: httpx2.Response(429, headers=headers, json={}))
    with capture_upstream() as capture:
        outcome = await upstream.fetch(
            "GET", "/api/organizations/{org}/availability", path={"org": "a"}, params={"date": DAY}
        )
    await upstream.aclose()
    assert isinstance(outcome, UpstreamResponse)
    assert capture.calls == [outcome.meta]
    assert outcome.meta.to_wire() == {
        "call": "GET /api/organizations/a/availability",
        "status": 429,
        "server": "cdn-edge/7.1",
        "request_id": "first-id",
        "api_version": "2026-04-01",
        "deprecation": "@1781308800",
        "sunset": "Fri, 01 Oct 2032 00:00:00 GMT",
        "ratelimit": {
            "retry-after": "3",
            "ratelimit": '"default";r=0;t=3',
            "ratelimit-policy": '"default";q=1000;w=60',
            "x-ratelimit-remaining": "0",
        },
    }


async def test_meta_call_has_no_query_string_and_redacts_contact_segments() -> None:
    """OSBP spec, Audit: query strings omitted, contact-bearing path segments redacted."""
    upstream = upstream_with(ok)
    outcome = await upstream.fetch(
        "GET",
        "/api/customers/{contact}/history/{other}",
        path={"contact": "jane@example.com", "other": "+1 (212) 555-0199"},
        params={"phone": "+12125550199"},
    )
    await upstream.aclose()
    assert isinstance(outcome, UpstreamResponse)
    assert outcome.meta.call == f"GET /api/customers/{REDACTED}/history/{REDACTED}"


@given(
    st.emails()
    | st.from_regex(r"\+[1-9][0-9]{7,14}", fullmatch=True)
    | st.from_regex(r"\([0-9]{3}\) [0-9]{3}-[0-9]{4}", fullmatch=True)
)
def test_contact_shaped_segments_are_always_redacted(contact: str) -> None:
    """OSBP spec, Audit: contact-bearing segments never reach UpstreamMeta.call."""
    assert redact_segment(contact) == REDACTED


@pytest.mark.parametrize("segment", ["carolyns_dental", "apt_7c1e2b9d04f3a6e1", "2026-05-05", "v1"])
def test_ordinary_ids_are_kept_in_the_call(segment: str) -> None:
    """Platform choice: ids are correlation data, not contact data, and stay readable in the audit."""
    assert redact_segment(segment) == segment


async def test_meta_without_optional_headers_omits_those_fields() -> None:
    """OSBP spec, Audit: absent headers are absent fields, never null."""
    upstream = upstream_with(ok)
    outcome = await upstream.fetch("GET", "/api/organizations/{org}", path={"org": "a"})
    await upstream.aclose()
    assert isinstance(outcome, UpstreamResponse)
    assert outcome.meta.to_wire() == {"call": "GET /api/organizations/a", "status": 200}


@pytest.mark.parametrize(
    ("error", "reason"),
    [
        (httpx2.ConnectError("refused"), "connect"),
        (httpx2.ReadTimeout("slow"), "timeout"),
        (httpx2.ConnectTimeout("slow"), "timeout"),
        (httpx2.RemoteProtocolError("broken"), "transport"),
    ],
)
async def test_transport_failures_are_typed_outcomes_not_exceptions(error: Exception, reason: str) -> None:
    """Platform choice (httpx's split): no response is a value the caller maps to a retryable Problem."""

    def fail(request: httpx2.Request) -> httpx2.Response:
        raise error

    upstream = upstream_with(fail)
    with capture_upstream() as capture:
        outcome = await upstream.fetch("GET", "/api/organizations/{org}", path={"org": "a"})
    await upstream.aclose()
    assert outcome == UpstreamUnavailable("GET /api/organizations/a", reason)  # type: ignore[arg-type]
    assert capture.calls == []


async def test_a_non_json_body_is_read_as_no_body() -> None:
    """Platform choice: a proxy's HTML error page never becomes data or a message."""
    upstream = upstream_with(lambda request: httpx2.Response(502, text="<html>bad gateway</html>"))
    outcome = await upstream.fetch("GET", "/api/organizations/{org}", path={"org": "a"})
    await upstream.aclose()
    assert isinstance(outcome, UpstreamResponse)
    assert (outcome.status, outcome.body) == (502, None)


def _deprecation_warnings(records: list[logging.LogRecord]) -> list[dict[str, Any]]:
    return [
        fields(record)
        for record in events(records, "upstream_endpoint_deprecated")
        if record.name == LIFECYCLE_LOGGER
    ]


async def test_deprecation_warns_once_per_endpoint_per_process() -> None:
    """RFC 9745 / RFC 8594 and OSBP spec: surface lifecycle headers loudly, once per endpoint per process."""
    lifecycle = {"deprecation": "@1781308800", "sunset": "Fri, 01 Oct 2032 00:00:00 GMT"}
    upstream = upstream_with(lambda request: httpx2.Response(200, headers=lifecycle, json={}))
    with capture_logs() as records:
        for org in ("a", "b", "c"):
            await upstream.fetch("GET", "/api/organizations/{org}/availability", path={"org": org})
        await upstream.fetch("GET", "/api/organizations/{org}/services", path={"org": "a"})
    await upstream.aclose()
    warnings = _deprecation_warnings(records)
    assert [warning["endpoint"] for warning in warnings] == [
        "GET /api/organizations/{org}/availability",
        "GET /api/organizations/{org}/services",
    ]
    assert warnings[0]["deprecation"] == "@1781308800"
    assert warnings[0]["sunset"] == "Fri, 01 Oct 2032 00:00:00 GMT"
    assert warnings[0]["call"] == "GET /api/organizations/a/availability"
    assert "link" not in warnings[0]  # absent headers are left out, not logged as null
    assert [record.levelno for record in records] == [logging.WARNING, logging.WARNING]


async def test_the_lifecycle_warning_passes_a_root_log_level_of_error() -> None:
    """OSBP spec, Platform Metadata and Versioning: "MUST surface it loudly" - a host's log level
    (``--log-level ERROR`` sets the root logger's) does not silence it, and it stays a warning."""
    lifecycle = {"sunset": "Fri, 01 Oct 2032 00:00:00 GMT"}
    upstream = upstream_with(lambda request: httpx2.Response(200, headers=lifecycle, json={}))
    with capture_logs(root_level=logging.ERROR) as records:
        logging.getLogger("osbp.adapter").warning("ordinary_warning")
        await upstream.fetch("GET", "/api/organizations/{org}/availability", path={"org": "a"})
    await upstream.aclose()
    [record] = records  # the ordinary warning is filtered by the level; the lifecycle notice is not
    assert (record.name, record.levelno, record.getMessage()) == (
        LIFECYCLE_LOGGER,
        logging.WARNING,
        "upstream_endpoint_deprecated",
    )
    assert fields(record)["sunset"] == "Fri, 01 Oct 2032 00:00:00 GMT"


async def test_notices_are_shared_across_clients_of_one_process() -> None:
    """OSBP spec: "at least once per endpoint per process" - a second client does not repeat it."""
    lifecycle = {"sunset": "Fri, 01 Oct 2032 00:00:00 GMT"}
    notices = LifecycleNotices()
    with capture_logs() as records:
        for _ in range(2):
            upstream = upstream_with(
                lambda request: httpx2.Response(200, headers=lifecycle, json={}), notices
            )
            await upstream.fetch("GET", "/api/x/{org}", path={"org": "a"})
            await upstream.aclose()
    assert len(_deprecation_warnings(records)) == 1


async def test_real_availability_deprecation_is_warned_once_and_never_in_results(
    platform: Platform, tmp_path: Path
) -> None:
    """RFC 9745 and OSBP spec: a lifecycle announcement is not a failure and never reaches agent output."""
    adapter = make_adapter(platform.base_url, tmp_path / "s.sqlite3", FixedClock(NOW))
    with capture_logs() as records:
        results = [
            await adapter.find_availability(AvailabilityFindInput(service_id=CLEANING, date=DAY))
            for _ in range(3)
        ]
    await adapter.aclose()
    assert all(isinstance(result, Success) and result.value for result in results)
    [warning] = _deprecation_warnings(records)
    assert warning["link"].endswith('rel="deprecation"; type="text/html"')
    for result in results:
        assert isinstance(result, Success)
        text = json.dumps([slot.to_wire() for slot in result.value])
        assert "1781308800" not in text
        assert "2032" not in text
        assert "deprecat" not in text.lower()


async def test_every_request_to_the_real_platform_is_pinned_and_identified(
    platform: Platform, tmp_path: Path
) -> None:
    """OSBP spec, Platform Metadata: the pin on every request; never rely on the platform's default."""
    transport = RecordingTransport()
    adapter = make_adapter(platform.base_url, tmp_path / "s.sqlite3", FixedClock(NOW), transport=transport)
    gus = make_adapter(
        platform.base_url,
        tmp_path / "g.sqlite3",
        FixedClock(NOW),
        organization_id="gus_notary",
        transport=transport,
    )
    inp = create_input()
    await adapter.describe_service(ServiceDescribeInput(service_id=CLEANING))
    await adapter.find_availability(AvailabilityFindInput(service_id=CLEANING, date=DAY))
    await adapter.explain_policy(PolicyExplainInput(service_id=CLEANING))
    await gus.send_verification(VerificationSendInput(customer=Customer(phone="+12125550142")))
    created = await adapter.create_booking(approved(inp, token_of(await adapter.create_booking(inp))))
    assert isinstance(created, Success)
    await adapter.get_booking(BookingStatusInput(booking_id=created.value.booking_id))
    await adapter.aclose()
    await gus.aclose()
    methods = {(request.method, request.url.path.rsplit("/", 1)[-1]) for request in transport.requests}
    assert ("POST", "appointments") in methods
    assert ("POST", "verifications") in methods
    assert len(transport.requests) >= 9  # the canonical loop's 7, and verification's 2
    for request in transport.requests:
        assert request.headers["bookwell-version"] == PLATFORM.api_version
        assert request.headers["user-agent"] == user_agent()
        assert request.headers["x-osbp-source"] == "osbp-local-mcp"


async def test_concurrent_fetches_answered_in_reverse_order_keep_issue_order() -> None:
    """OSBP spec, Audit: the audit's upstream is the last-issued call, whichever response arrives first."""
    second_done = anyio.Event()

    async def answer(request: httpx2.Request) -> httpx2.Response:
        if request.url.path.endswith("/first"):
            with anyio.fail_after(5):
                await second_done.wait()
        return httpx2.Response(200, json={})

    upstream = upstream_with(answer)  # type: ignore[arg-type]  # MockTransport awaits async handlers too

    async def second() -> None:
        await upstream.fetch("GET", "/api/{org}/second", path={"org": "a"})
        second_done.set()

    with capture_upstream() as capture:
        await asyncio.gather(upstream.fetch("GET", "/api/{org}/first", path={"org": "a"}), second())
    await upstream.aclose()
    assert [meta.call for meta in capture.calls] == ["GET /api/a/first", "GET /api/a/second"]
    assert capture.last is not None
    assert capture.last.call == "GET /api/a/second"


class OrganizationLastTransport(ForwardingTransport):
    """The real network transport, holding organization reads until an availability read was answered."""

    def __init__(self) -> None:
        super().__init__()
        self._availability_answered = anyio.Event()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send for real; an organization read is sent only after the availability response is read."""
        if request.url.path.endswith("/availability"):
            response = await self._inner.handle_async_request(request)
            await response.aread()
            self._availability_answered.set()
            return response
        if "/services" not in request.url.path:
            with anyio.fail_after(5):
                await self._availability_answered.wait()
        return await self._inner.handle_async_request(request)


async def test_availability_find_audits_the_availability_response_even_when_it_arrives_first(
    platform: Platform, tmp_path: Path
) -> None:
    """RFC 9745, OSBP spec Audit: availability.find's upstream is the availability call, Sunset included."""
    adapter = make_adapter(
        platform.base_url, tmp_path / "s.sqlite3", FixedClock(NOW), transport=OrganizationLastTransport()
    )
    with capture_upstream() as capture:
        result = await adapter.find_availability(AvailabilityFindInput(service_id=CLEANING, date=DAY))
    await adapter.aclose()
    assert isinstance(result, Success)
    assert [meta.call for meta in capture.calls] == [
        "GET /api/organizations/carolyns_dental",
        "GET /api/organizations/carolyns_dental/availability",
    ]
    assert capture.last is not None
    assert capture.last.call == "GET /api/organizations/carolyns_dental/availability"
    assert (capture.last.deprecation, capture.last.sunset) == ("@1781308800", "Fri, 01 Oct 2032 00:00:00 GMT")


async def test_an_https_platform_goes_through_httpx2s_verifying_transport_never_the_plain_one() -> None:
    """Platform choice: only a plain-http platform gets the lean HTTP/1.1 transport; an https one keeps
    httpx2's own, which verifies the certificate against the trusted authorities."""
    settings = AdapterSettings(
        platform_base_url="https://platform.example/api", organization_id="carolyns_dental"
    )
    upstream = Upstream(settings, platform=PLATFORM, version_header=VERSION_HEADER)
    try:
        transport = upstream._client._transport
        assert type(transport) is httpx2.AsyncHTTPTransport
        context = transport._pool._ssl_context
        assert context is not None
        assert context.verify_mode is ssl.CERT_REQUIRED
        assert context.cert_store_stats()["x509_ca"] > 0
    finally:
        await upstream.aclose()
