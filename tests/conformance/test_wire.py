"""The recording wire: envelopes as the battery reads them, and failures kept as values."""

from __future__ import annotations

from typing import Any, cast

import anyio
import pytest
from pydantic import ValidationError

from osbp.conformance.wire import Wire, _stray_line, retry_delay, server_env
from tests.conformance.fake_session import ScriptedSession, recorded, result

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


def _rate_limited(message: str) -> Any:
    problem = {"code": "rate_limited", "message": message, "retryable": True}
    return result({"ok": False, "problem": problem, "audit_event_id": "aud_rl"})


async def test_a_retryable_rate_limited_answer_is_waited_out_for_the_delay_it_names_then_repeated():
    """OSBP spec, Result Envelope (rate_limited: back off and retry) and RFC 9110 section 10.2.3: the
    battery is fair to the platform instead of failing on its quota."""
    ok = result({"ok": True, "value": {}, "audit_event_id": "aud_ok"})
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    session = ScriptedSession(
        [_rate_limited("Slow down. Retry after 3 seconds."), _rate_limited("Busy."), ok]
    )
    wire = Wire(cast(Any, session), call_timeout=5, sleep=sleep)
    answer = await wire.call("osbp_service_describe", {})
    assert answer.ok is True
    assert waits == [3.0, 2.0]  # the named delay, then the backoff for a second attempt
    assert len(wire.exchanges) == 3
    assert wire.rate_limit_waited == 5.0


async def test_an_impatient_call_takes_the_rate_limited_answer_as_it_is():
    """Platform choice (docs/conformance.md): the check that arms a 429 itself grades the first answer."""
    session = ScriptedSession([_rate_limited("Retry after 1 seconds.")])
    waits: list[float] = []

    async def sleep(seconds: float) -> None:
        waits.append(seconds)

    wire = Wire(cast(Any, session), call_timeout=5, sleep=sleep)
    answer = await wire.call("osbp_service_describe", {}, patient=False)
    assert answer.code == "rate_limited"
    assert waits == []


def test_retry_delay_reads_the_message_or_backs_off_up_to_a_cap():
    """Platform choice: "retry after N seconds" in a rate_limited message is honoured; else 1, 2, 4, 8 s."""
    assert retry_delay("The platform is busy. Retry after 12 seconds.", 0) == 12.0
    assert [retry_delay("busy", attempt) for attempt in range(6)] == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]
