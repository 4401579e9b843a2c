"""Tool calls through the in-memory MCP client: envelopes, validation, audit events, adapter failures."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from mcp import Client
from mcp.types import CallToolResult

from osbp.protocol.approval import APPROVAL_TOKEN_PATTERN
from osbp.server.audit_verify import verify_chain
from tests.server.conftest import create_args, mandate, read_events
from tests.server.memory_adapter import IMAGE_URL, ORG, MemoryAdapter
from tests.support.logs import fields


def envelope(result: CallToolResult) -> dict[str, Any]:
    """The envelope of a result, after checking text JSON == structured content and is_error == not ok."""
    [content] = result.content
    assert content.type == "text"
    assert json.loads(content.text) == result.structured_content
    assert content.text == json.dumps(result.structured_content, ensure_ascii=False, separators=(",", ":"))
    env = result.structured_content
    assert isinstance(env, dict)
    assert result.is_error is (env["ok"] is not True)
    return env


def token_of(env: dict[str, Any]) -> str:
    """The approval token in a final-confirmation challenge."""
    assert env["problem"]["code"] == "requires_user_confirmation"
    match = APPROVAL_TOKEN_PATTERN.search(env["problem"]["message"])
    assert match is not None
    return match.group(1)


async def book(client: Client, **overrides: Any) -> tuple[dict[str, Any], dict[str, Any]]:
    """Preflight then approved create; returns both envelopes."""
    args = create_args(**overrides)
    preflight = envelope(await client.call_tool("osbp_booking_create", args))
    approved = envelope(
        await client.call_tool(
            "osbp_booking_create", args | {"approval": {"confirmed": True, "token": token_of(preflight)}}
        )
    )
    return preflight, approved


@pytest.mark.anyio
async def test_a_successful_read_is_an_ok_envelope_with_its_audit_event_id(client, audit_path):
    """OSBP spec, Result Envelope: {ok: true, value, audit_event_id}, as JSON text and structured content."""
    env = envelope(await client.call_tool("osbp_service_describe", {"service_id": "svc_cut"}))
    assert env == {
        "ok": True,
        "value": {
            "id": "svc_cut",
            "name": "Haircut",
            "duration": "PT60M",
            "price": {"amount_minor": 9500, "currency": "USD", "type": "fixed", "display": "$95.00"},
            "requires_consultation": False,
        },
        "audit_event_id": "aud_test_0001",
    }
    [event] = read_events(audit_path)
    assert event["id"] == env["audit_event_id"]
    assert event["tool_name"] == "service.describe"
    assert event["created_at"] == "2026-05-01T16:00:00.000Z"
    assert event["upstream"]["call"] == "GET /api/services/svc_cut"
    assert event["platform"] == {"vendor": "memory-test-platform", "api_version": "t1"}


@pytest.mark.anyio
async def test_a_problem_is_an_error_result_that_still_carries_the_envelope(client):
    """Issue 4: ok:false comes back with isError true, so a host never reads it as success."""
    result = await client.call_tool("osbp_booking_status", {"booking_id": "appt_missing"})
    env = envelope(result)
    assert result.is_error is True
    assert env["ok"] is False
    assert env["problem"]["code"] == "booking_not_found"
    assert env["audit_event_id"] == "aud_test_0001"


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("osbp_availability_find", {}),  # date is required
        ("osbp_availability_find", {"date": "2026-05-05", "days": 3}),  # unknown argument
        ("osbp_availability_find", {"input": {"date": "2026-05-05"}}),  # a wrapper object, not flat
        ("osbp_service_describe", {"service_id": None}),  # null instead of absent
        ("osbp_service_describe", {"service_id": 123}),  # no coercion
        ("osbp_booking_create", create_args(idempotency_key="")),  # empty key
        ("osbp_booking_create", create_args(approval={"confirmed": "true", "token": "t"})),
        ("osbp_handoff_request", {"reason": "requires_payment_handoff"}),  # message missing
    ],
)
@pytest.mark.anyio
async def test_schema_invalid_calls_are_rejected_before_any_handler_and_not_audited(
    client, adapter: MemoryAdapter, audit_path, tool, arguments
):
    """OSBP spec, Audit: only schema-valid calls reach a handler and get an audit event."""
    result = await client.call_tool(tool, arguments)
    assert result.is_error is True
    assert result.structured_content is None
    assert result.content[0].text.startswith(f"Invalid arguments for {tool} (nothing ran")
    assert adapter.calls == []
    assert read_events(audit_path) == []


@pytest.mark.anyio
async def test_a_rejection_names_the_fields_but_never_echoes_their_values(client):
    """OSBP spec, Security and Privacy: rejected values may be personal, so they are not echoed."""
    args = create_args(customer={"phone": "+15555550100", "nickname": "Janie"})
    text = (await client.call_tool("osbp_booking_create", args)).content[0].text
    assert "customer.nickname" in text
    assert "Janie" not in text
    assert "+15555550100" not in text


@pytest.mark.anyio
async def test_an_unknown_tool_is_rejected_and_not_audited(client, audit_path):
    """OSBP spec, Naming: only the eight osbp_* tools exist."""
    result = await client.call_tool("osbp_booking_cancel", {"booking_id": "appt_1"})
    assert result.is_error is True
    assert "Unknown tool" in result.content[0].text
    assert read_events(audit_path) == []


@pytest.mark.anyio
async def test_handoff_is_answered_by_the_server_with_no_adapter_call_and_no_upstream(
    client, adapter: MemoryAdapter, audit_path
):
    """OSBP spec, handoff.request: no side effect, a structured requires_human result, audited."""
    args = {"reason": "requires_payment_handoff", "message": "A deposit is required.", "mandate_id": "mnd_1"}
    env = envelope(await client.call_tool("osbp_handoff_request", args))
    assert env["value"] == {"status": "requires_human", **args}
    assert adapter.calls == []
    [event] = read_events(audit_path)
    assert event["tool_name"] == "handoff.request"
    assert event["mandate_id"] == "mnd_1"
    assert "upstream" not in event
    assert "platform" not in event


@pytest.mark.anyio
async def test_the_canonical_flow_books_once_and_audits_every_call(client, adapter, audit_path):
    """OSBP spec, Canonical Flow: describe, find, explain, preflight, approved create, status."""
    envs = [
        envelope(await client.call_tool("osbp_service_describe", {})),
        envelope(await client.call_tool("osbp_availability_find", {"date": "2026-05-05"})),
        envelope(await client.call_tool("osbp_policy_explain", {})),
    ]
    preflight, receipt = await book(client)
    assert preflight["problem"]["retryable"] is True
    assert receipt["ok"] is True
    booking_id = receipt["value"]["booking_id"]
    status = envelope(await client.call_tool("osbp_booking_status", {"booking_id": booking_id}))
    assert status["value"]["status"] == "booked"
    envs += [preflight, receipt, status]
    events = read_events(audit_path)
    assert [e["id"] for e in events] == [env["audit_event_id"] for env in envs]
    assert [e["tool_name"] for e in events] == [
        "service.describe",
        "availability.find",
        "policy.explain",
        "booking.create",
        "booking.create",
        "booking.status",
    ]
    assert [e["decision"] for e in events][3:5] == [
        {"ok": False, "code": "requires_user_confirmation", "retryable": True},
        {"ok": True},
    ]
    assert all("upstream" in e for e in events)
    assert adapter.creates == 1
    assert verify_chain(audit_path).ok


@pytest.mark.anyio
async def test_an_idempotent_replay_has_no_upstream_and_says_so(client, adapter: MemoryAdapter, audit_path):
    """OSBP spec, Audit: upstream is absent when the tool answered locally (an idempotency-cache hit)."""
    _, first = await book(client)
    replay = envelope(await client.call_tool("osbp_booking_create", create_args()))
    assert replay["value"] == first["value"]
    assert replay["osbp_runtime"]["idempotency"] == "local_cache_replay"
    event = read_events(audit_path)[-1]
    assert "upstream" not in event
    assert event["result"]["osbp_runtime"]["idempotency"] == "local_cache_replay"
    assert adapter.creates == 1


@pytest.mark.anyio
async def test_a_refused_create_records_the_mandate_and_the_decision(client, adapter, audit_path):
    """OSBP spec, Mandate Enforcement: the audit log stores enough mandate content to explain a decision."""
    cap = {"amount_minor": 5000, "currency": "USD"}
    env = envelope(await client.call_tool("osbp_booking_create", create_args(mandate=mandate(max_price=cap))))
    assert env["problem"]["code"] == "price_exceeds_mandate"
    [event] = read_events(audit_path)
    assert event["mandate_id"] == "mnd_test_001"
    assert event["mandate"]["max_price"] == cap
    assert event["mandate"]["expires_at"] == "2026-05-31T23:59:59-07:00"
    assert event["mandate"]["earliest_start"] == "2026-05-01T09:00:00"
    assert event["mandate"]["service_ids"] == ["svc_cut"]
    assert event["decision"] == {"ok": False, "code": "price_exceeds_mandate", "retryable": False}
    assert adapter.creates == 0


@pytest.mark.anyio
async def test_an_adapter_exception_becomes_an_audited_internal_adapter_error(
    client, adapter: MemoryAdapter, audit_path, caplog
):
    """OSBP spec, codes: internal_adapter_error is audited; the traceback stays in the server's log."""
    adapter.raise_on.add("availability.find")
    with caplog.at_level(logging.ERROR, logger="osbp.server"):
        result = await client.call_tool("osbp_availability_find", {"date": "2026-05-05"})
    env = envelope(result)
    assert env["problem"]["code"] == "internal_adapter_error"
    assert "secret detail" not in result.content[0].text
    assert "Traceback" not in result.content[0].text
    [event] = read_events(audit_path)
    assert event["decision"]["code"] == "internal_adapter_error"
    assert "secret detail" not in json.dumps(event)
    [record] = [r for r in caplog.records if r.name == "osbp.server"]
    assert record.exc_info is not None
    assert "secret detail" in str(record.exc_info[1])


@pytest.mark.anyio
async def test_verification_flow_never_writes_the_code_or_contacts_to_the_audit_log(
    client, adapter: MemoryAdapter, audit_path
):
    """OSBP spec, Security and Privacy: the log records that verification happened, never the code."""
    adapter.requires_verification = True
    _, needs_code = await book(client)
    assert needs_code["problem"]["code"] == "requires_verification"
    contact = {"phone": "+15555550100", "email": "jane@example.com"}
    sent = envelope(
        await client.call_tool("osbp_verification_send", {"customer": contact, "purpose": f"booking:{ORG}"})
    )
    assert sent["value"] == {"sent": True, "method": "sms", "purpose": f"booking:{ORG}"}
    [code] = adapter.sent_codes
    token = token_of(envelope(await client.call_tool("osbp_booking_create", create_args())))
    args = create_args(approval={"confirmed": True, "token": token}, verification_code=code)
    booked = envelope(await client.call_tool("osbp_booking_create", args))
    assert booked["ok"] is True
    log = audit_path.read_text(encoding="utf-8")
    for sentinel in (code, token, "+15555550100", "jane@example.com", "Jane", "Customer"):
        assert sentinel not in log, sentinel
    assert '"verification_code":"[redacted]"' in log
    assert json.loads(log.splitlines()[2])["result"]["value"]["method"] == "sms"


@pytest.mark.anyio
async def test_provider_image_urls_never_reach_the_audit_log(client, audit_path):
    """OSBP spec, Known Limitations: the local audit logger redacts provider_image_url."""
    env = envelope(await client.call_tool("osbp_availability_find", {"date": "2026-05-05"}))
    assert env["value"][0]["provider_image_url"] == IMAGE_URL
    assert IMAGE_URL not in audit_path.read_text(encoding="utf-8")


@pytest.mark.anyio
async def test_an_audit_failure_still_answers_the_call_and_is_logged(client, audit, caplog):
    """Platform choice: an action that happened is never hidden from the agent; the operator is told."""
    audit.path.mkdir(parents=True)  # a directory where the log file should be: every append fails
    with caplog.at_level(logging.ERROR, logger="osbp.server"):
        env = envelope(await client.call_tool("osbp_service_describe", {}))
    assert env["ok"] is True
    [record] = [r for r in caplog.records if r.getMessage() == "audit_append_failed"]
    assert fields(record)["tool"] == "service.describe"
    assert record.exc_info is not None
