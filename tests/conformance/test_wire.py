"""The recording wire: envelopes as the battery reads them, and failures kept as values."""

from __future__ import annotations

from typing import Any, cast

import anyio
import pytest
from pydantic import ValidationError

from osbp.conformance.wire import Wire, _stray_line, server_env
from tests.conformance.fake_session import recorded, result

pytestmark = pytest.mark.anyio


async def test_the_envelope_prefers_structured_content_and_falls_back_to_the_text():
    """OSBP spec, Transport: the envelope travels as structuredContent and as JSON text."""
    body = {"ok": False, "problem": {"code": "slot_taken", "message": "Taken."}, "audit_event_id": "aud_1"}
    wire = await recorded(
        result(body), result(body, structured=None), result(body, structured=None, text="oops")
    )
    first, second, third = wire.exchanges
    assert (first.code, second.code) == ("slot_taken", "slot_taken")
    assert third.envelope is None
    assert third.code is None
    assert "not JSON" in third.describe()


class SlowSession:
    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        await anyio.sleep(10)


class BrokenSession:
    async def call_tool(self, name: str, arguments: dict[str, Any]) -> Any:
        raise RuntimeError("Invalid structured content returned by tool")


async def test_a_call_that_times_out_is_recorded_as_an_error():
    """Platform choice: a hung tool call is a finding about the server, bounded by the call timeout."""
    wire = Wire(cast(Any, SlowSession()), call_timeout=0.05)
    exchange = await wire.call("osbp_booking_create", {})
    assert exchange.error == "no result within 0.05s"
    assert exchange.ok is None


async def test_a_client_side_failure_is_recorded_not_raised():
    """Platform choice: the SDK rejecting a result (e.g. against its output schema) is graded, not fatal."""
    exchange = await Wire(cast(Any, BrokenSession()), call_timeout=5).call("osbp_service_describe", {})
    assert exchange.error == "RuntimeError: Invalid structured content returned by tool"


def test_a_stray_stdout_line_is_quoted_from_the_sdks_parse_error():
    """Beyond the spec: the report names what the server printed."""
    from mcp.types import jsonrpc_message_adapter

    with pytest.raises(ValidationError) as caught:
        jsonrpc_message_adapter.validate_json("server ready", by_name=False)
    assert _stray_line(caught.value) == "'server ready'"


def test_the_server_environment_is_a_few_basics_plus_what_the_caller_adds(monkeypatch):
    """Platform choice: a stdio server inherits little; --env adds the rest explicitly."""
    monkeypatch.setenv("LANG", "C.UTF-8")
    monkeypatch.setenv("OSBP_SECRET_THING", "not passed")
    env = server_env({"OSBP_PLATFORM_BASE_URL": "http://127.0.0.1:8400"})
    assert env["LANG"] == "C.UTF-8"
    assert env["OSBP_PLATFORM_BASE_URL"] == "http://127.0.0.1:8400"
    assert "OSBP_SECRET_THING" not in env
