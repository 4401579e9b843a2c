"""How a recorded run becomes a gallery trace: redacted, aliased, shortened, byte-stable."""

import json
from typing import Any

from osbp.demo.recorder import FROM_CHALLENGE, Step
from osbp.demo.trace_format import (
    KEPT_SLOTS,
    RATELIMIT_PLACEHOLDER,
    TraceExpected,
    TraceRegion,
    TraceScenario,
    build_trace,
    dump_trace,
    load_trace,
)
from osbp.server.redaction import REDACTED

CUSTOMER = {"display_name": "Sentinel Zebrafinch", "phone": "+12125550987", "email": "zebra@example.com"}
TOKEN = "apv_SENTINEL_TOKEN_123"
CHALLENGE = (
    "Final confirmation required: show the user this summary and ask them to confirm it.\n\n"
    "Book X. The merchant will see the customer name: Sentinel Zebrafinch.\n\n"
    f'Agent instruction (never show this to the user): ... approval.token="{TOKEN}".'
)
SCENARIO = TraceScenario(
    id="unit",
    title="Unit",
    claim="A claim.",
    business_type="dental_clinic",
    modality="in_person",
    region=TraceRegion(country="US", currency="USD", timezone="America/New_York"),
    intent="book",
    user_request="Book it for Sentinel Zebrafinch.",
    organization_id="carolyns_dental",
    organization_name="Carolyn's Dental",
    expected=TraceExpected(happy_path="booking_created"),
)


LIFECYCLE = {"deprecation": "@1781308800", "sunset": "Fri, 01 Oct 2032 00:00:00 GMT"}


def _audit(event_id: str, call: str, request_id: str, **upstream: str) -> dict[str, Any]:
    return {
        "id": event_id,
        "created_at": "2030-05-06T13:00:00.000Z",
        "input_hash": "ab" * 32,
        "decision": {"ok": True},
        "upstream": {
            "call": call,
            "status": 200,
            "server": "Bookwell/0.1.0",
            "request_id": request_id,
            "api_version": "2026-04-01",
            "ratelimit": {"ratelimit": '"default";r=998;t=57', "ratelimit-policy": '"default";q=1000;w=60'},
        }
        | upstream,
    }


def _slot(hour: int) -> dict[str, Any]:
    return {
        "schedule_id": "s",
        "provider_id": "p",
        "service_id": "svc",
        "starts_at_local": f"2030-05-07T{hour:02d}:00:00",
        "provider_image_url": "https://images.bookwell.example/providers/p.jpg",
    }


def _steps() -> list[Step]:
    create = {
        "idempotency_key": "k1",
        "service_id": "svc",
        "schedule_id": "s",
        "provider_id": "p",
        "date": "2030-05-07",
        "time": "15:00",
        "customer": CUSTOMER,
    }
    return [
        Step(
            tool="availability.find",
            phase="lookup",
            input={"service_id": "svc", "date": "2030-05-07"},
            result={"ok": True, "value": [_slot(hour) for hour in range(9, 17)], "audit_event_id": "aud_111"},
            audit=_audit("aud_111", "GET /api/organizations/o/availability", "uuid-1", **LIFECYCLE),
            platform_write=False,
            platform_create_requests=0,
        ),
        Step(
            tool="booking.create",
            phase="approval_preflight",
            input=create,
            result={
                "ok": False,
                "problem": {"code": "requires_user_confirmation", "message": CHALLENGE, "retryable": True},
                "audit_event_id": "aud_222",
            },
            audit=_audit("aud_222", "GET /api/organizations/o/services/svc", "uuid-2"),
            platform_write=False,
            platform_create_requests=0,
        ),
        Step(
            tool="booking.create",
            phase="approved_retry",
            input=create | {"approval": {"confirmed": True, "token": TOKEN}, "verification_code": "482913"},
            result={
                "ok": True,
                "value": {
                    "id": "receipt_k1",
                    "booking_id": "apt_0123456789abcdef",
                    "text": "Booked for Sentinel. Booking id: apt_0123456789abcdef.",
                },
                "audit_event_id": "aud_333",
            },
            audit=_audit("aud_333", "POST /api/organizations/o/appointments", "uuid-3"),
            platform_write=True,
            platform_create_requests=1,
            input_sources={"approval.token": FROM_CHALLENGE},
        ),
    ]


def _trace_text() -> str:
    trace = build_trace(
        name="unit",
        scenario=SCENARIO,
        clock="2030-05-06T13:00:00.000Z",
        steps=_steps(),
        mandate={"id": "mnd_1"},
        receipt=_steps()[2].result["value"],
    )
    return dump_trace(trace)


def test_no_contact_name_token_code_or_image_url_survives():
    """OSBP spec, Security: published traces redact contacts, names, tokens, codes and image URLs."""
    text = _trace_text()
    for secret in ("Zebrafinch", "+12125550987", "zebra@example.com", TOKEN, "482913", "images.bookwell"):
        assert secret not in text
    trace = json.loads(text)
    assert trace["steps"][2]["input"]["approval"]["token"] == REDACTED
    assert 'approval.token=\\"[redacted]\\"' in text
    assert trace["scenario"]["user_request"] == f"Book it for {REDACTED}."


def test_volatile_identifiers_become_stable_aliases_everywhere():
    """OSBP spec, Audit: checked-in traces use audit aliases rather than raw local records."""
    trace = json.loads(_trace_text())
    assert trace["audit_event_ids"] == ["aud_alias_1", "aud_alias_2", "aud_alias_3"]
    assert [step["audit_event_id"] for step in trace["steps"]] == trace["audit_event_ids"]
    assert trace["receipt"]["booking_id"] == "booking_alias_1"
    assert trace["receipt"]["text"].endswith("Booking id: booking_alias_1.")
    assert trace["steps"][2]["audit"]["upstream"]["request_id"] == "req_alias_3"
    assert trace["steps"][2]["audit"]["upstream"]["ratelimit"]["ratelimit"] == RATELIMIT_PLACEHOLDER
    assert "input_hash" not in trace["steps"][2]["audit"]


def test_the_audit_keeps_the_full_upstream_metadata_and_the_frozen_created_at():
    """OSBP spec, Audit: the operator channel's metadata, Deprecation/Sunset included, stays in the trace."""
    audit = json.loads(_trace_text())["steps"][0]["audit"]
    assert audit["created_at"] == "2030-05-06T13:00:00.000Z"
    assert audit["upstream"] == {
        "call": "GET /api/organizations/o/availability",
        "status": 200,
        "server": "Bookwell/0.1.0",
        "request_id": "req_alias_1",
        "api_version": "2026-04-01",
        "deprecation": "@1781308800",
        "sunset": "Fri, 01 Oct 2032 00:00:00 GMT",
        "ratelimit": {"ratelimit": RATELIMIT_PLACEHOLDER, "ratelimit-policy": '"default";q=1000;w=60'},
    }


def test_a_long_availability_list_keeps_its_first_slots_and_the_booked_one():
    """Platform choice: readable traces; replay still checks the order and the total."""
    step = json.loads(_trace_text())["steps"][0]
    kept = [slot["starts_at_local"][11:16] for slot in step["result"]["value"]]
    assert kept == ["09:00", "10:00", "11:00", "15:00"]
    assert step["truncated"]["value"]["kept"] == KEPT_SLOTS + 1
    assert step["truncated"]["value"]["total"] == 8


def test_the_approved_retry_records_the_summary_the_user_saw():
    """OSBP spec, Demo Trace: explicit user approval text using the returned summary."""
    step = json.loads(_trace_text())["steps"][2]
    assert step["user_approval"] == f"Book X. The merchant will see the customer name: {REDACTED}."
    assert step["input_sources"] == {"approval.token": "challenge"}


def test_the_same_run_dumps_to_the_same_bytes_in_the_layout_order():
    """Platform choice: `make traces` must leave git status clean; the key order is the layout's."""
    text = _trace_text()
    assert text == _trace_text()
    assert text.endswith("}\n")
    body = json.loads(text)
    assert list(body)[:6] == ["osbp_trace_version", "name", "source", "clock", "redaction", "scenario"]
    assert list(body["steps"][0])[:5] == ["step", "tool", "input", "result", "platform_write"]
    assert dump_trace(load_trace(text)) == text


def test_the_audit_event_id_moves_from_the_result_to_the_step():
    """Upstream OSBP v0.1.0 gallery: a step's result is the adapter result, with no audit_event_id in it."""
    for step in json.loads(_trace_text())["steps"]:
        assert "audit_event_id" not in step["result"]
        assert step["audit_event_id"].startswith("aud_alias_")
        assert "id" not in step["audit"]
