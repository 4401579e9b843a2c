"""Tool calls through the in-memory MCP client: envelopes, validation, audit events, adapter failures."""

from __future__ import annotations

import errno
import itertools
import json
import logging
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import jsonschema  # type: ignore[import-untyped]  # no stubs installed; used only to check schemas
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import Client
from mcp.types import CallToolResult

from osbp.protocol.approval import APPROVAL_TOKEN_PATTERN
from osbp.protocol.canonical import sha256_hex
from osbp.protocol.clock import FixedClock
from osbp.protocol.core import OsbpCore
from osbp.protocol.models import TOOL_NAMES, Problem, Service, ServiceDescribeInput
from osbp.protocol.schemas import tool_input_schema, tool_result_schema
from osbp.protocol.tools import mcp_tool_name
from osbp.server.app import create_server
from osbp.server.audit import AuditLog
from osbp.server.audit_verify import verify_chain
from osbp.server.dispatch import ToolDispatcher
from osbp.server.tools import TOOL_DEFINITIONS
from tests.support.json_schema import from_schema
from tests.support.mcp import NOW, create_args, mandate, read_events
from tests.support.memory_adapter import IMAGE_URL, ORG, MemoryAdapter


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
    """OSBP spec, Result Envelope: ok:false comes back with isError true, so a host never reads it as
    success."""
    result = await client.call_tool("osbp_booking_status", {"booking_id": "appt_missing"})
    env = envelope(result)
    assert result.is_error is True
    assert env["ok"] is False
    assert env["problem"]["code"] == "booking_not_found"
    assert env["audit_event_id"] == "aud_test_0001"


INVALID_CALLS = [
    ("osbp_availability_find", {}, "date is required"),
    ("osbp_availability_find", {"date": "2026-05-05", "days": 3}, "days is not a field this tool accepts"),
    # A wrapper object, not flat arguments: both the wrapper and the missing date are named.
    ("osbp_availability_find", {"input": {"date": "2026-05-05"}}, "date is required; input is not a field"),
    ("osbp_service_describe", {"service_id": None}, "service_id is null; omit the field instead"),
    ("osbp_service_describe", {"service_id": 123}, "service_id must be a string"),
    ("osbp_booking_create", create_args(idempotency_key=""), "idempotency_key must not be empty"),
    (
        "osbp_booking_create",
        create_args(approval={"confirmed": "true", "token": "t"}),
        "approval.confirmed must be true",
    ),
    ("osbp_handoff_request", {"reason": "requires_payment_handoff"}, "message is required"),
    (
        "osbp_booking_create",
        create_args(mandate=mandate(max_price={"amount_minor": 2**53, "currency": "USD"})),
        "mandate.max_price.amount_minor must be at most 9007199254740991",
    ),
    (
        "osbp_booking_create",
        create_args(mandate=mandate(max_extra_fee={"amount_minor": 0, "currency": "usd"})),
        "mandate.max_extra_fee.currency must match the pattern ^[A-Z]{3}$",
    ),
    (
        "osbp_handoff_request",
        {"reason": "requires_payment_handoff", "message": "lone \ud800 surrogate"},
        "message is not valid Unicode text (a lone surrogate)",
    ),
]


@pytest.mark.parametrize(("tool", "arguments", "rule"), INVALID_CALLS)
@pytest.mark.anyio
async def test_a_schema_invalid_call_is_the_failure_envelope_with_invalid_input_and_no_audit(
    client, adapter: MemoryAdapter, audit_path, tool, arguments, rule
):
    """OSBP spec, Result Envelope and Audit: one envelope shape; only schema-valid calls are audited."""
    result = await client.call_tool(tool, arguments)
    env = envelope(result)  # compact JSON text == structuredContent, isError true
    assert set(env) == {"ok", "problem"}
    assert env["ok"] is False
    assert env["problem"]["code"] == "invalid_input"
    assert env["problem"]["retryable"] is False
    assert env["problem"]["message"].startswith(f"Invalid arguments for {tool}: ")
    assert rule in env["problem"]["message"]
    assert "nothing was recorded" in env["problem"]["message"]
    assert adapter.calls == []
    assert read_events(audit_path) == []


@pytest.mark.anyio
async def test_a_rejection_names_the_fields_but_never_echoes_their_values(client):
    """OSBP spec, Security and Privacy: rejected values may be personal, so they are not echoed."""
    customer = {"phone": 15555550100, "email": "jane@example.com", "nickname": "Janie"}
    env = envelope(await client.call_tool("osbp_booking_create", create_args(customer=customer)))
    message = env["problem"]["message"]
    assert "customer.nickname is not a field this tool accepts" in message
    assert "customer.phone must be a string" in message
    for value in ("Janie", "15555550100", "jane@example.com"):
        assert value not in message


@pytest.mark.anyio
async def test_a_rejection_speaks_plain_words_not_pydantic(client):
    """Platform choice: agents and people read the message; pydantic's jargon and types stay inside."""
    arguments = create_args(mandate=mandate(max_price={"amount_minor": -1, "currency": "USD", "type": "x"}))
    message = envelope(await client.call_tool("osbp_booking_create", arguments))["problem"]["message"]
    assert "mandate.max_price.amount_minor must be at least 0" in message
    assert 'mandate.max_price.type must be "fixed", "insurance_dependent", "quote_required" or "unknown"' in (
        message
    )
    for jargon in ("Input should", "pydantic", "dictionary", "instance of", "'fixed'"):
        assert jargon not in message


@pytest.mark.anyio
async def test_an_unknown_tool_is_the_failure_envelope_with_unknown_tool_and_no_audit(client, audit_path):
    """OSBP spec, Naming and Result Envelope: only the eight osbp_* tools exist; one envelope shape."""
    env = envelope(await client.call_tool("osbp_booking_cancel", {"booking_id": "appt_1"}))
    assert set(env) == {"ok", "problem"}
    assert env["problem"]["code"] == "unknown_tool"
    assert env["problem"]["retryable"] is False
    assert "osbp_booking_cancel" in env["problem"]["message"]
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
    intent = events.pop(4)  # the approved create's write-ahead record, durable before the platform call
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
    assert (intent["phase"], intent["tool_name"], intent["result"]) == ("intent", "booking.create", {})
    assert intent["confirmation"]["answer"] == "token"  # what authorized it, written before it happened
    assert events[4]["intents"] == [intent["id"]]
    assert events[4]["payload_hash"] == intent["payload_hash"] == events[3]["payload_hash"]
    assert {"phase", "intents"}.isdisjoint(events[3])  # the gated create sent nothing
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


class UnspeakableAdapter(MemoryAdapter):
    """The in-memory adapter, except that service.describe answers text no JSON can carry."""

    async def describe_service(self, inp: ServiceDescribeInput) -> Service | Problem:
        """A service whose name holds a lone surrogate."""
        await super().describe_service(inp)
        return Service(id="svc_cut", name="Hair\ud800cut")


@pytest.mark.anyio
async def test_an_adapter_answer_that_is_not_json_text_becomes_an_audited_internal_adapter_error(
    tmp_path, clock, audit, audit_path, caplog
):
    """RFC 8259 §8.2 and RFC 8785: neither the wire nor the audit hash can carry a lone surrogate."""
    adapter = OsbpCore(
        UnspeakableAdapter(clock=clock), state=tmp_path / "state" / "osbp.sqlite3", clock=clock
    )
    with caplog.at_level(logging.ERROR, logger="osbp.server"):
        async with Client(create_server(adapter, audit, clock=clock)) as connected:
            env = envelope(await connected.call_tool("osbp_service_describe", {}))
    assert env["problem"]["code"] == "internal_adapter_error"
    [event] = read_events(audit_path)
    assert event["id"] == env["audit_event_id"]
    assert event["decision"]["code"] == "internal_adapter_error"
    assert [r.getMessage() for r in caplog.records] == ["adapter_answer_not_json"]


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
    [intent, outcome] = [
        event for event in read_events(audit_path) if event["tool_name"] == "verification.send"
    ]
    assert (intent["phase"], outcome["intents"]) == ("intent", [intent["id"]])
    assert outcome["result"]["value"]["method"] == "sms"


@pytest.mark.anyio
async def test_provider_image_urls_never_reach_the_audit_log(client, audit_path):
    """OSBP spec, Known Limitations: the local audit logger redacts provider_image_url."""
    env = envelope(await client.call_tool("osbp_availability_find", {"date": "2026-05-05"}))
    assert env["value"][0]["provider_image_url"] == IMAGE_URL
    assert IMAGE_URL not in audit_path.read_text(encoding="utf-8")


def fill_disk_under(audit: AuditLog) -> None:
    """Point the open log's file descriptor at /dev/full: every later write fails with a real ENOSPC."""
    audit.open()
    target = str(audit.path.resolve())
    [fd] = [int(n) for n in os.listdir("/proc/self/fd") if os.path.realpath(f"/proc/self/fd/{n}") == target]
    full = os.open("/dev/full", os.O_WRONLY)
    try:
        os.dup2(full, fd)
    finally:
        os.close(full)


def result_schema_errors(tool: str, env: dict[str, Any]) -> list[str]:
    """What the tool's published output schema (protocol/schemas/*.result.json) says against ``env``."""
    validator = jsonschema.Draft202012Validator(tool_result_schema(tool))
    return [error.message for error in validator.iter_errors(env)]


@pytest.mark.anyio
async def test_an_approved_booking_whose_intent_cannot_be_recorded_is_never_sent(
    client, adapter: MemoryAdapter, audit, audit_path, caplog
):
    """OSBP spec, Audit (every schema-valid call produces an audit event): a mutation that cannot be
    explained does not happen, so the create is not sent and the agent gets a retryable Problem."""
    args = create_args()
    token = token_of(envelope(await client.call_tool("osbp_booking_create", args)))
    fill_disk_under(audit)
    approved = args | {"approval": {"confirmed": True, "token": token}}
    with caplog.at_level(logging.ERROR, logger="osbp.server"):
        env = envelope(await client.call_tool("osbp_booking_create", approved))
    assert env == {
        "ok": False,
        "problem": {"code": "audit_unavailable", "message": env["problem"]["message"], "retryable": True},
    }
    assert "nothing was sent to the platform" in env["problem"]["message"]
    assert result_schema_errors("booking.create", env) == []
    assert adapter.creates == 0
    [record] = [r for r in caplog.records if r.getMessage() == "audit_intent_failed"]
    assert record.levelno == logging.ERROR
    assert record.exc_info[1].errno == errno.ENOSPC
    assert all(r.levelno < logging.CRITICAL for r in caplog.records)  # nothing happened unrecorded
    assert [event["tool_name"] for event in read_events(audit_path)] == ["booking.create"]  # the preflight


@pytest.mark.anyio
async def test_a_booking_whose_outcome_record_fails_reaches_the_agent_and_leaves_its_intent_open(
    client, adapter: MemoryAdapter, audit, audit_path, caplog, monkeypatch
):
    """OSBP spec, Audit and Result Envelope; platform choice: a booking that happened is never hidden,
    no envelope cites a record that does not exist, and its intent record still explains it."""
    args = create_args()
    token = token_of(envelope(await client.call_tool("osbp_booking_create", args)))
    place = adapter.place_booking

    async def place_then_fill_the_disk(*arguments: Any) -> Any:
        booked = await place(*arguments)
        fill_disk_under(audit)  # the intent is written; the outcome record will not be
        return booked

    monkeypatch.setattr(adapter, "place_booking", place_then_fill_the_disk)
    approved = args | {"approval": {"confirmed": True, "token": token}}
    with caplog.at_level(logging.ERROR, logger="osbp.server"):
        result = await client.call_tool("osbp_booking_create", approved)
    env = envelope(result)
    assert env["ok"] is True
    assert set(env["value"]) == {"id", "booking_id", "text"}
    assert "audit_event_id" not in env
    assert result_schema_errors("booking.create", env) == []
    assert adapter.creates == 1
    [record] = [r for r in caplog.records if r.getMessage() == "audit_append_failed"]
    assert record.levelno == logging.CRITICAL
    assert record.exc_info[1].errno == errno.ENOSPC
    assert (record.tool, record.ok, record.mandate_id) == ("booking.create", True, "mnd_test_001")
    preflight, intent = read_events(audit_path)
    assert (preflight.get("phase"), intent["phase"]) == (None, "intent")
    report = verify_chain(audit_path)
    assert report.ok
    assert [(i.event_id, i.tool_name, i.mandate_id) for i in report.open_intents] == [
        (intent["id"], "booking.create", "mnd_test_001")
    ]


@pytest.mark.anyio
async def test_a_verification_whose_intent_cannot_be_recorded_sends_nothing(
    client, adapter: MemoryAdapter, audit
):
    """OSBP spec, Audit: a message that cannot be explained is not sent (it could not be unsent)."""
    fill_disk_under(audit)
    arguments = {"customer": {"phone": "+15555550100"}, "purpose": f"booking:{ORG}"}
    env = envelope(await client.call_tool("osbp_verification_send", arguments))
    assert (env["ok"], env["problem"]["code"], env["problem"]["retryable"]) == (
        False,
        "audit_unavailable",
        True,
    )
    assert "audit_event_id" not in env
    assert adapter.sent_codes == []


@pytest.mark.anyio
async def test_a_sent_verification_whose_outcome_record_fails_is_still_answered(
    client, adapter: MemoryAdapter, audit, monkeypatch
):
    """Platform choice: a message that was sent cannot be unsent, so the agent learns it was."""
    send = adapter.send_verification

    async def send_then_fill_the_disk(*arguments: Any) -> Any:
        sent = await send(*arguments)
        fill_disk_under(audit)
        return sent

    monkeypatch.setattr(adapter, "send_verification", send_then_fill_the_disk)
    arguments = {"customer": {"phone": "+15555550100"}, "purpose": f"booking:{ORG}"}
    env = envelope(await client.call_tool("osbp_verification_send", arguments))
    assert env == {"ok": True, "value": {"sent": True, "method": "sms", "purpose": f"booking:{ORG}"}}
    assert len(adapter.sent_codes) == 1


@pytest.mark.parametrize(
    ("tool", "arguments"),
    [
        ("osbp_service_describe", {}),
        ("osbp_availability_find", {"date": "2026-05-05"}),
        ("osbp_policy_explain", {}),
        ("osbp_booking_status", {"booking_id": "appt_missing"}),
        ("osbp_handoff_request", {"reason": "requires_payment_handoff", "message": "A deposit is due."}),
    ],
)
@pytest.mark.anyio
async def test_a_read_whose_audit_append_fails_is_a_retryable_audit_unavailable(
    client, audit, audit_path, caplog, tool, arguments
):
    """OSBP spec, Audit; platform choice: a read changes nothing, so it is withheld (retry later) rather
    than answered unaudited, and no envelope cites a record that does not exist."""
    audit.path.mkdir(parents=True)  # a directory where the log file should be: every append fails
    with caplog.at_level(logging.ERROR, logger="osbp.server"):
        env = envelope(await client.call_tool(tool, arguments))
    assert env == {
        "ok": False,
        "problem": {"code": "audit_unavailable", "message": env["problem"]["message"], "retryable": True},
    }
    assert "nothing was changed" in env["problem"]["message"]
    assert result_schema_errors(TOOL_DEFINITIONS[tool].name, env) == []
    [record] = [r for r in caplog.records if r.getMessage() == "audit_append_failed"]
    assert record.levelno == logging.ERROR
    assert isinstance(record.exc_info[1], IsADirectoryError)


@pytest.mark.anyio
async def test_a_disk_that_fills_mid_session_withholds_the_next_read(client, audit, audit_path):
    """Platform choice: ENOSPC on a later append is answered like any audit failure (no dangling id)."""
    first = envelope(await client.call_tool("osbp_service_describe", {}))
    fill_disk_under(audit)
    second = envelope(await client.call_tool("osbp_service_describe", {}))
    assert first["ok"] is True
    assert [event["id"] for event in read_events(audit_path)] == [first["audit_event_id"]]
    assert second["problem"]["code"] == "audit_unavailable"
    assert "audit_event_id" not in second


def deep_list(depth: int) -> list[Any]:
    """``[[[…]]]`` nested ``depth`` times."""
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


#: JSON values a client could send where a schema expects something tamer (through the in-memory
#: transport, or any other that does not parse JSON text, they arrive as they are).
NASTY = st.sampled_from(
    [
        2**53,
        -(2**63),
        10**400,
        1e308,
        float("nan"),
        float("inf"),
        "lone \ud800 surrogate",
        "\udfff",
        "",
        "x" * 10_000,
        True,
        None,
        {"nested": {"deeper": [1, 2.5, "three"]}},
        deep_list(300),
    ]
)


def leaf_paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every position in a JSON value (a member, an element, or the value itself)."""
    paths = [path]
    if isinstance(value, dict):
        for key, item in value.items():
            paths += leaf_paths(item, (*path, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            paths += leaf_paths(item, (*path, index))
    return paths


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    """``value`` with the member at ``path`` replaced by ``new`` (copies along the path)."""
    if not path:
        return new
    head, rest = path[0], path[1:]
    if isinstance(value, dict):
        return value | {head: replaced(value[head], rest, new)}
    return [replaced(item, rest, new) if index == head else item for index, item in enumerate(value)]


@st.composite
def mutated(draw: st.DrawFn, schema: dict[str, Any]) -> Any:
    """A schema-valid value with one position replaced by a nasty JSON value."""
    value = draw(from_schema(schema))
    path = draw(st.sampled_from(leaf_paths(value)[1:] or [()]))
    return replaced(value, path, draw(NASTY))


class AuditedCalls:
    """A dispatcher over the in-memory adapter and a real audit log, called synchronously per example."""

    def __init__(self, tmp_path: Path) -> None:
        clock = FixedClock(NOW)
        counter = itertools.count(1)
        self.adapter = OsbpCore(
            MemoryAdapter(clock=clock), state=tmp_path / "state" / "osbp.sqlite3", clock=clock
        )
        self.audit = AuditLog(tmp_path / "audit" / "events.jsonl")
        self.audit.open()  # as the server does at start-up: the log exists before the first call
        self.dispatcher = ToolDispatcher(
            self.adapter, self.audit, clock=clock, new_event_id=lambda: f"aud_prop_{next(counter):05d}"
        )
        self.audited = 0

    def call(self, mcp_name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """One call; an audited answer must name the record just written, whose hashes must check out."""
        result = anyio.run(self.dispatcher.call, mcp_name, arguments)
        assert isinstance(result, CallToolResult)  # without a confirmer the answer is always the envelope
        env = envelope(result)
        # A schema rejection is unaudited; the core's own input checks (availability.find's date) answer
        # the same code from an audited call, as any adapter-level Problem.
        if env.get("problem", {}).get("code") == "invalid_input" and "audit_event_id" not in env:
            assert len(read_events(self.audit.path)) == self.audited
            return env
        records = read_events(self.audit.path)
        record = records[-1]
        # The call's record, after the write-ahead record of each platform send it made.
        self.audited += 1 + len(record.get("intents", []))
        assert len(records) == self.audited
        assert env["audit_event_id"] == record["id"]
        assert record["input_hash"] == sha256_hex(record["input"])
        assert record["result_hash"] == sha256_hex(record["result"])
        return env


@pytest.fixture
def audited_calls(tmp_path: Path) -> Iterator[AuditedCalls]:
    """A fresh dispatcher and audit log for one property (shared by its examples)."""
    calls = AuditedCalls(tmp_path)
    yield calls
    calls.audit.close()
    assert verify_chain(calls.audit.path).ok


_PROPERTY = settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)


@pytest.mark.parametrize("tool", TOOL_NAMES)
def test_every_schema_valid_call_is_audited_by_a_record_that_hashes(tool, audited_calls: AuditedCalls):
    """OSBP spec, Audit: every schema-valid call gets a record with SHA-256 hashes of its RFC 8785
    snapshots, and the published schema admits nothing the input model refuses (property)."""
    schema = tool_input_schema(tool)
    validator = jsonschema.Draft202012Validator(schema)

    @_PROPERTY
    @given(arguments=from_schema(schema))
    def check(arguments: dict[str, Any]) -> None:
        assert list(validator.iter_errors(arguments)) == []
        env = audited_calls.call(mcp_tool_name(tool), arguments)
        assert "audit_event_id" in env, env  # never rejected by the input model

    check()


@pytest.mark.parametrize("tool", TOOL_NAMES)
def test_any_call_is_either_rejected_unaudited_or_audited_by_a_record_that_hashes(
    tool, audited_calls: AuditedCalls
):
    """OSBP spec, Audit: building and hashing the record of a call that passed validation never fails,
    whatever the client sent (huge integers, floats, NaN, lone surrogates, deep nesting) (property)."""

    @_PROPERTY
    @given(arguments=mutated(tool_input_schema(tool)))
    def check(arguments: Any) -> None:
        env = audited_calls.call(mcp_tool_name(tool), arguments if isinstance(arguments, dict) else {"x": 1})
        assert env["ok"] in (True, False)

    check()


@pytest.mark.anyio
async def test_a_reads_record_is_written_on_the_loop_and_a_bookings_is_fsynced_before_its_answer(
    core: OsbpCore, tmp_path: Path, clock: FixedClock, monkeypatch: pytest.MonkeyPatch
):
    """Platform choice (docs/server.md, group commit): a read's record is in the log before its answer,
    written without a worker-thread hand-off and fsynced with its group; a booking.create's record is
    fsynced (in a worker thread, the event loop never waits on the disk) before its answer leaves."""
    import threading

    fsyncs: list[int] = []
    real_fsync = os.fsync

    def counted(fd: int) -> None:
        real_fsync(fd)
        fsyncs.append(fd)

    monkeypatch.setattr("osbp.server.audit.os.fsync", counted)
    path = tmp_path / "audit.jsonl"
    audit = AuditLog(path, sync_delay_s=3600)
    on_loop: list[bool] = []
    write = audit.write

    def spy(*args: Any, **kwargs: Any) -> Any:
        on_loop.append(threading.current_thread() is threading.main_thread())
        return write(*args, **kwargs)

    monkeypatch.setattr(audit, "write", spy)
    async with Client(create_server(core, audit, clock=clock)) as client:
        read = envelope(await client.call_tool("osbp_service_describe", {}))
        assert [event["id"] for event in read_events(path)] == [read["audit_event_id"]]
        assert (fsyncs, on_loop) == ([], [True])
        created = envelope(await client.call_tool("osbp_booking_create", create_args()))
        assert read_events(path)[-1]["id"] == created["audit_event_id"]
        assert (len(fsyncs), on_loop) == (1, [True, False])
    audit.close()
