"""Arming platform outcomes through the scenario URL contract."""

from __future__ import annotations

import json
import socket

import pytest

from osbp.conformance.scenario import (
    appointments,
    arm,
    change_service,
    create_requests,
    rename,
    set_native_status,
    set_price,
)
from tests.conformance.arming import scenario_endpoint

pytestmark = pytest.mark.anyio


async def test_a_2xx_answer_means_armed(tmp_path):
    """Platform choice (docs/conformance.md): POST {"organization_id", "outcome"}; 2xx means armed for the
    next create."""
    with scenario_endpoint(tmp_path / "armed") as endpoint:
        assert await arm(endpoint.url, "conformance_co", "slot_taken", call_timeout=5) is None
        assert endpoint.requests == [{"organization_id": "conformance_co", "outcome": "slot_taken"}]
        assert endpoint.arm_file.read_text(encoding="utf-8") == "slot_taken"


async def test_a_refusal_is_reported_with_its_status(tmp_path):
    """Platform choice (docs/conformance.md): anything but 2xx is not armed."""
    with scenario_endpoint(tmp_path / "armed", organization_id="elsewhere") as endpoint:
        problem = await arm(endpoint.url, "conformance_co", "rate_limited", call_timeout=5)
    assert problem == "the scenario URL answered HTTP 422 when arming rate_limited"


async def test_an_unreachable_url_is_reported_not_raised():
    """Platform choice: a dead scenario surface fails the armed checks with a reason."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    problem = await arm(
        f"http://127.0.0.1:{port}/_testing/arm", "conformance_co", "slot_taken", call_timeout=2
    )
    assert problem is not None
    assert problem.startswith("could not reach the scenario URL")


async def test_the_stats_hook_answers_the_create_request_count(tmp_path):
    """Platform choice (docs/conformance.md): GET <stats-url> answers {"create_requests": n}."""
    with scenario_endpoint(tmp_path / "armed") as endpoint:
        assert await create_requests(endpoint.stats_url, call_timeout=5) == 0
        assert endpoint.stats_file is not None
        endpoint.stats_file.write_text("3", encoding="utf-8")
        assert await create_requests(endpoint.stats_url, call_timeout=5) == 3
        wrong = await create_requests(endpoint.url.replace("/arm", "/missing"), call_timeout=5)
    assert wrong == "the stats URL answered HTTP 404"


async def test_the_status_hook_sets_a_native_status_or_says_why_not(tmp_path):
    """Platform choice (docs/conformance.md): POST <status-url> {organization_id, booking_id, status}; 2xx
    means set."""
    with scenario_endpoint(tmp_path / "armed") as endpoint:
        assert (
            await set_native_status(
                endpoint.status_url, "conformance_co", "appt_1", "cancelled", call_timeout=5
            )
            is None
        )
        refused = await set_native_status(
            endpoint.status_url, "elsewhere", "appt_1", "cancelled", call_timeout=5
        )
        assert endpoint.status_file is not None
        assert endpoint.status_file.read_text(encoding="utf-8") == '{"appt_1": "cancelled"}'
    assert refused == "the status URL answered HTTP 422 when setting 'cancelled'"


async def test_the_catalog_hook_reprices_a_service_or_says_why_not(tmp_path):
    """Platform choice (docs/conformance.md): POST <catalog-url> {organization_id, service_id, price_amount};
    2xx means repriced."""
    with scenario_endpoint(tmp_path / "armed") as endpoint:
        repriced = await set_price(
            endpoint.catalog_url, "conformance_co", "conformance_repriced", "123.45", call_timeout=5
        )
        refused = await set_price(
            endpoint.catalog_url, "elsewhere", "conformance_repriced", "1.00", call_timeout=5
        )
        assert endpoint.catalog_file is not None
        recorded = json.loads(endpoint.catalog_file.read_text(encoding="utf-8"))
    assert recorded == {"services": {"conformance_repriced": {"amount": 12345}}}
    assert repriced is None
    assert refused == "the catalog URL answered HTTP 422 when repricing conformance_repriced"


async def test_the_catalog_hook_changes_fees_and_the_window_and_the_rename_hooks_rename(tmp_path):
    """Platform choice (docs/conformance.md): the catalog hook takes one fee or the window per change, the
    provider and location hooks a new name; 2xx means changed, anything else is the reason."""
    with scenario_endpoint(tmp_path / "armed") as endpoint:
        service = "conformance_binding_window"
        answers = [
            await change_service(
                endpoint.catalog_url, "conformance_co", service, field, value, call_timeout=5
            )
            for field, value in (("cancellation_fee", "12.34"), ("cancellation_window_minutes", 420))
        ]
        answers += [
            await rename(url, "conformance_co", kind, entity, "New Name", call_timeout=5)
            for url, kind, entity in (
                (endpoint.provider_url, "provider", "conformance_provider_renamed"),
                (endpoint.location_url, "location", "conformance_annex"),
            )
        ]
        refused = await rename(
            endpoint.provider_url,
            "elsewhere",
            "provider",
            "conformance_provider_renamed",
            "X",
            call_timeout=5,
        )
        assert endpoint.catalog_file is not None
        recorded = json.loads(endpoint.catalog_file.read_text(encoding="utf-8"))
    assert answers == [None] * 4
    assert recorded == {
        "services": {service: {"cancellation_fee": 1234, "window_minutes": 420}},
        "providers": {"conformance_provider_renamed": "New Name"},
        "locations": {"conformance_annex": "New Name"},
    }
    assert refused == "the provider URL answered HTTP 422 when renaming conformance_provider_renamed"


async def test_the_appointment_count_is_optional_in_the_stats(tmp_path):
    """Platform choice (docs/conformance.md): `appointments` is optional; its absence is None, not an
    error."""
    with scenario_endpoint(tmp_path / "armed") as endpoint:
        assert await appointments(endpoint.stats_url, call_timeout=5) is None
        missing = await appointments(endpoint.url.replace("/arm", "/missing"), call_timeout=5)
    assert missing == "the stats URL answered HTTP 404"
