"""The status mapping: every platform answer the adapter knows, and the fallbacks for the rest."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import httpx2
import pytest

from osbp.adapter.native import NativeCode
from osbp.adapter.problems import from_response, unavailable
from osbp.adapter.upstream import UpstreamResponse, UpstreamUnavailable
from osbp.backend.problems import TITLES
from osbp.protocol.clock import FixedClock
from osbp.protocol.models import AvailabilityFindInput, ServiceDescribeInput, UpstreamMeta
from tests.support.reference import (
    CLEANING,
    DAY,
    NOW,
    ForwardingTransport,
    Platform,
    make_adapter,
    problem_of,
)

SECRET_DETAIL = "Customer Jane Customer +12125550199 already holds 2026-05-05 10:00 (row 42, node db-3)"


def response(
    status: int, code: str | None = None, headers: dict[str, str] | None = None, **extra: Any
) -> UpstreamResponse:
    """A platform problem response with a detail that must never leak."""
    body: dict[str, Any] | None = None
    if code is not None:
        body = {
            "type": "https://x/problems/x",
            "title": "T",
            "status": status,
            "code": code,
            "detail": SECRET_DETAIL,
        }
        body |= extra
    return UpstreamResponse(
        status=status,
        headers=httpx2.Headers(headers or {}),
        body=body,
        meta=UpstreamMeta(call="POST /api/x", status=status),
    )


@pytest.mark.parametrize(
    ("answer", "code", "retryable"),
    [
        (response(428, "requires_verification", channel="sms"), "requires_verification", True),
        (response(428), "requires_verification", True),
        (response(400, "verification_failed", reason="mismatch"), "verification_failed", False),
        (response(400, "verification_failed", reason="expired"), "verification_failed", False),
        (response(400, "verification_failed", reason="locked"), "verification_failed", False),
        (response(400, "verification_failed", reason="no_challenge"), "verification_failed", False),
        (response(409, "slot_taken"), "slot_taken", True),
        (response(409, "slot_unavailable"), "slot_taken", True),
        (response(422, "idempotency_key_reused"), "idempotency_conflict", False),
        (response(409, "idempotency_key_in_use"), "idempotency_in_progress", True),
        (response(429, "rate_limited", {"retry-after": "7"}), "rate_limited", True),
        (response(429, "verification_send_limited"), "rate_limited", True),
        (response(429), "rate_limited", True),
        (response(404, "appointment_not_found"), "booking_not_found", False),
        (response(404, "service_not_found"), "service_not_found", False),
        (response(404, "location_not_found"), "schedule_not_found", False),
        (response(404, "provider_not_found"), "provider_not_found", False),
        (response(404, "organization_not_found"), "organization_not_found", False),
        (response(422, "provider_not_eligible"), "provider_not_eligible", False),
        (response(400, "invalid_contact", field="customer.phone"), "invalid_customer", False),
        (
            response(
                400, "invalid_request", errors=[{"field": "body.customer.display_name", "message": "x"}]
            ),
            "invalid_customer",
            False,
        ),
        (response(400, "invalid_purpose"), "invalid_verification_purpose", False),
        (
            response(400, "invalid_request", errors=[{"field": "body.verification_code", "message": "bad"}]),
            "verification_failed",
            False,
        ),
        (response(500, "internal_error"), "upstream_unavailable", True),
        (response(502), "upstream_unavailable", True),
        (response(503), "upstream_unavailable", True),
        (
            response(400, "invalid_request", errors=[{"field": "body.date", "message": "x"}]),
            "internal_adapter_error",
            False,
        ),
        (response(400, "unsupported_version"), "internal_adapter_error", False),
        (response(418, "teapot"), "internal_adapter_error", False),
        (response(404), "internal_adapter_error", False),
    ],
)
def test_platform_answers_map_to_osbp_problems(answer: UpstreamResponse, code: str, retryable: bool) -> None:
    """OSBP spec, Problem codes and the adapter's status mapping (retryable where the spec says so)."""
    mapped = from_response(answer)
    assert (mapped.code, mapped.retryable) == (code, retryable)
    assert SECRET_DETAIL not in mapped.message
    assert "+12125550199" not in mapped.message
    assert "Jane" not in mapped.message


def test_rate_limited_message_carries_the_retry_after_seconds() -> None:
    """RFC 9110 Retry-After: the agent learns how long to back off."""
    assert (
        "Retry after 7 seconds" in from_response(response(429, "rate_limited", {"retry-after": "7"})).message
    )


def test_platform_idempotency_mismatch_is_never_slot_taken() -> None:
    """OSBP spec, Adapter Contract: the platform's own idempotency mismatch is idempotency_conflict, never
    slot_taken."""
    assert from_response(response(422, "idempotency_key_reused")).code == "idempotency_conflict"


def test_verification_channel_is_named_when_the_platform_reports_it() -> None:
    """OSBP spec, verification: tell the user only the method OSBP received."""
    assert "by sms" in from_response(response(428, "requires_verification", channel="sms")).message
    assert " by " not in from_response(response(428, "requires_verification", channel="pigeon")).message


@pytest.mark.parametrize("reason", ["timeout", "connect", "transport"])
def test_no_response_is_a_retryable_upstream_unavailable(reason: str) -> None:
    """OSBP spec, Adapter Contract: timeouts and refused connections map to a retryable adapter-specific
    Problem."""
    mapped = unavailable(UpstreamUnavailable("GET /api/x", reason))  # type: ignore[arg-type]
    assert (mapped.code, mapped.retryable) == ("upstream_unavailable", True)


def test_mapped_problems_are_fresh_values() -> None:
    """Platform choice: a caller that edits one Problem never changes the next answer."""
    first = from_response(response(404, "service_not_found"))
    first.message = "changed"
    assert from_response(response(404, "service_not_found")).message != "changed"


class NativePriceTransport(ForwardingTransport):
    """The real platform, except that every native price amount it sends is replaced with ``amount``."""

    def __init__(self, amount: str) -> None:
        super().__init__()
        self.amount = amount

    def _rewrite(self, node: Any) -> Any:
        if isinstance(node, dict):
            if node.get("kind") == "fixed" and "amount" in node:
                return node | {"amount": self.amount}
            return {key: self._rewrite(value) for key, value in node.items()}
        if isinstance(node, list):
            return [self._rewrite(item) for item in node]
        return node

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send for real; rewrite the prices on the way back."""
        response = await super().handle_async_request(request)
        body = json.loads(await response.aread())
        # The platform's own headers, except the length of the body this replaces.
        headers = [(name, value) for name, value in response.headers.items() if name != "content-length"]
        return httpx2.Response(response.status_code, headers=headers, json=self._rewrite(body))


@pytest.mark.parametrize("amount", ["99999999999999999999", "120.001", "１２０.００", "1E2", "NaN"])
@pytest.mark.anyio
async def test_a_native_price_osbp_cannot_represent_is_untranslatable_platform_data(
    platform: Platform, tmp_path: Path, caplog: pytest.LogCaptureFixture, amount: str
) -> None:
    """OSBP spec, Money (fail closed); docs/adapter.md: bad platform data is a Problem, not a throw."""
    transport = NativePriceTransport(amount)
    adapter = make_adapter(platform.base_url, tmp_path / "s.sqlite3", FixedClock(NOW), transport=transport)
    try:
        with caplog.at_level(logging.ERROR, logger="osbp.adapter"):
            described = problem_of(await adapter.describe_service(ServiceDescribeInput(service_id=CLEANING)))
            where = AvailabilityFindInput(service_id=CLEANING, date=DAY)
            found = problem_of(await adapter.find_availability(where))
    finally:
        await adapter.aclose()
    for failure in (described, found):
        assert (failure.problem.code, failure.problem.retryable) == ("untranslatable_platform_data", False)
        assert amount not in failure.problem.message
    assert [record.getMessage() for record in caplog.records] == ["untranslatable_platform_data"] * 2


@pytest.mark.anyio
async def test_a_platform_url_ending_in_api_is_an_adapter_error_the_operator_is_told_how_to_fix(
    platform: Platform, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """Platform choice: `--platform-url …/api` reaches no endpoint (the adapter adds /api/…): the agent
    gets internal_adapter_error, and the operator's log names the call and the setting to fix."""
    adapter = make_adapter(platform.base_url + "/api", tmp_path / "s.sqlite3", FixedClock(NOW))
    try:
        with caplog.at_level(logging.ERROR, logger="osbp.adapter"):
            failure = problem_of(await adapter.describe_service(ServiceDescribeInput(service_id=CLEANING)))
    finally:
        await adapter.aclose()
    assert (failure.problem.code, failure.problem.message) == (
        "internal_adapter_error",
        "The platform answered HTTP 404 unexpectedly. The failure was recorded for the operator.",
    )
    logged = [record for record in caplog.records if record.getMessage() == "upstream_route_not_found"]
    assert len(logged) == 1
    assert "OSBP_PLATFORM_BASE_URL" in logged[0].__dict__["detail"]
    assert logged[0].__dict__["call"].startswith("GET /api/")


#: Native codes the adapter maps although Bookwell never sends them: a platform that serializes creates
#: under one key may answer 409 ``idempotency_key_in_use``; Bookwell's concurrent duplicate waits for the
#: write lock and replays instead (backend/idempotency.py).
_MAPPED_BEYOND_BOOKWELL = {NativeCode.IDEMPOTENCY_KEY_IN_USE}


def test_every_native_code_the_adapter_branches_on_is_one_the_platform_documents():
    """Platform choice (one table per system): the adapter's reading of the platform's codes is a subset
    of the platform's own table, so a renamed platform code cannot be silently unmapped."""
    assert {code for code in NativeCode if code not in _MAPPED_BEYOND_BOOKWELL} <= set(TITLES)
    assert not _MAPPED_BEYOND_BOOKWELL & set(TITLES)
