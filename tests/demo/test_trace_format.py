"""How a recorded run becomes a gallery trace: redacted, aliased, shortened, byte-stable."""

import json
from dataclasses import replace
from typing import Any

from osbp.demo.recorder import FROM_CHALLENGE, HostExchange, Step
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


SUMMARY = "Book X. The merchant will see the customer name: Sentinel Zebrafinch."
SUMMARY_HASH = "1f" * 32
PAYLOAD_HASH = "2e" * 32


def _host_step(*, content: dict[str, Any], confirmation: dict[str, Any]) -> Step:
    """A booking.create during which the server asked the user through the host."""
    asked = HostExchange(
        request={
            "method": "elicitation/create",
            "params": {
                "mode": "form",
                "message": f"Final confirmation: book this appointment?\n\n{SUMMARY}",
                "requestedSchema": {"type": "object", "properties": {"confirm": {"type": "boolean"}}},
            },
        },
        response={"action": "accept", "content": content},
    )
    audit = _audit("aud_444", "POST /api/organizations/o/appointments", "uuid-4") | {
        "confirmation": confirmation
    }
    return Step(
        tool="booking.create",
        phase="host_confirmation",
        input={"idempotency_key": "k2", "customer": CUSTOMER},
        result={"ok": True, "value": {"id": "receipt_k2"}, "audit_event_id": "aud_444"},
        audit=audit,
        platform_write=True,
        platform_create_requests=1,
        host_dialog=(asked,),
    )


def _built(steps: list[Step]) -> dict[str, Any]:
    """The trace of ``steps``, as its file holds it."""
    trace = build_trace(
        name="unit",
        scenario=SCENARIO,
        clock="2030-05-06T13:00:00.000Z",
        steps=steps,
        mandate=None,
        receipt=None,
    )
    loaded: dict[str, Any] = json.loads(dump_trace(trace))
    return loaded


ELICITED = {"mode": "elicitation", "summary_hash": SUMMARY_HASH, "payload_hash": PAYLOAD_HASH}


def test_a_host_dialog_keeps_the_form_as_sent_with_the_customer_scrubbed_and_typed_values_redacted():
    """MCP elicitation (form mode): the trace shows what the user saw; what they typed stays secret."""
    step = _host_step(
        content={"confirm": True, "code": "482913"}, confirmation=ELICITED | {"answer": "accept"}
    )
    text = dump_trace(load_trace(json.dumps(_built([step]))))
    assert "Zebrafinch" not in text
    assert "482913" not in text
    [exchange] = json.loads(text)["steps"][0]["host_dialog"]
    assert exchange["request"]["params"]["message"].endswith(f"customer name: {REDACTED}.")
    assert exchange["request"]["params"]["requestedSchema"]["properties"] == {"confirm": {"type": "boolean"}}
    assert exchange["response"] == {"action": "accept", "content": {"confirm": True, "code": REDACTED}}


def test_the_host_confirmation_record_is_kept_with_its_hashes_aliased():
    """OSBP audit (platform choice): the hashes bind the answer; digests of the customer are aliased."""
    trace = _built(
        [_host_step(content={"confirm": True}, confirmation=ELICITED | {"answer": "accept", "earlier": []})]
    )
    text = json.dumps(trace)
    assert SUMMARY_HASH not in text
    assert PAYLOAD_HASH not in text
    assert trace["steps"][0]["audit"]["confirmation"] == {
        "mode": "elicitation",
        "summary_hash": "summary_hash_alias_1",
        "payload_hash": "payload_hash_alias_1",
        "answer": "accept",
        "earlier": [],
    }
    assert "summary_hash_alias_<n>" in trace["redaction_rules"]["aliases"]
    assert trace["recording"]["mcp_protocol_version"] is None  # not given to build_trace here


def test_a_token_path_confirmation_record_stays_out_of_the_trace():
    """Platform choice: the v0.1.0 token traces keep their published bytes; their challenge shows the gate."""
    steps = _steps()
    steps[1] = replace(
        steps[1],
        audit=(steps[1].audit or {})
        | {"confirmation": {"mode": "token", "summary_hash": SUMMARY_HASH, "payload_hash": PAYLOAD_HASH}},
    )
    trace = _built(steps)
    assert "confirmation" not in trace["steps"][1]["audit"]
    assert "host" not in trace["recording"]
    assert "summary_hash_alias_<n>" not in trace["redaction_rules"]["aliases"]
