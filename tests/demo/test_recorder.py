"""The recording host: answers the forms as scripted, keeps every exchange, checks the binding."""

from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp_types as types

from osbp.demo.client import OsbpClient
from osbp.demo.recorder import (
    AuditTail,
    PlatformCounters,
    RecordingAgent,
    RecordingHost,
    Step,
    unbound_summaries,
)
from osbp.demo.stack import PlatformControl, running_platform
from osbp.protocol.canonical import sha256_hex
from osbp.server.confirmation import CODE_MESSAGE, CODE_SCHEMA, CONFIRM_SCHEMA, confirmation_message

SUMMARY = "Book Swedish massage on Tuesday at 14:00. Price: £95.00."


def _ask(host: RecordingHost, message: str = confirmation_message(SUMMARY)) -> object:
    params = types.ElicitRequestFormParams(message=message, requested_schema=CONFIRM_SCHEMA)
    return anyio.run(host, None, params)


def test_the_host_answers_each_form_as_scripted_and_keeps_the_request_as_sent():
    """MCP elicitation (form mode): accept carries the form's content, decline none; both are recorded."""
    host = RecordingHost(["accept"])
    host.expect(["decline"])
    accepted, declined = _ask(host), _ask(host)
    assert accepted == types.ElicitResult(action="accept", content={"confirm": True})
    assert declined == types.ElicitResult(action="decline")
    assert [exchange.response for exchange in host.exchanges] == [
        {"action": "accept", "content": {"confirm": True}},
        {"action": "decline"},
    ]
    request = host.exchanges[0].request
    assert request["method"] == "elicitation/create"
    assert request["params"] == {
        "mode": "form",
        "message": confirmation_message(SUMMARY),
        "requestedSchema": CONFIRM_SCHEMA,
    }
    assert host.exchanges[0].summary == SUMMARY
    assert host.shown == [confirmation_message(SUMMARY)] * 2


def test_a_form_with_no_scripted_answer_left_gets_an_error_never_a_silent_accept():
    """MCP elicitation: a host that cannot ask the user answers an error (the server then books nothing)."""
    host = RecordingHost()
    answer = _ask(host)
    assert isinstance(answer, types.ErrorData)
    assert host.exchanges[0].response["code"] == -32603
    assert host.shown == []


def _step(host: RecordingHost, summary_hash: str) -> Step:
    confirmation = {
        "mode": "elicitation",
        "summary_hash": summary_hash,
        "payload_hash": "p",
        "answer": "accept",
    }
    return Step(
        tool="booking.create",
        phase="host_confirmation",
        input={},
        result={"ok": True},
        audit={"confirmation": confirmation},
        platform_write=True,
        platform_create_requests=1,
        host_dialog=tuple(host.exchanges),
    )


def test_the_audit_must_bind_the_hash_of_the_summary_the_host_showed():
    """Platform choice (final confirmation through the host): the audit binds the exact summary shown."""
    host = RecordingHost(["accept"])
    _ask(host)
    assert unbound_summaries(_step(host, sha256_hex(SUMMARY))) == []
    [problem] = unbound_summaries(_step(host, sha256_hex(SUMMARY + " ")))
    assert "the audit bound" in problem


def test_an_accepted_code_form_answers_the_code_the_customer_received():
    """Platform choice (verification through the host): the user types the code the merchant sent."""
    host = RecordingHost(["accept", "cancel"])

    async def phone() -> str:
        return "482913"

    host.code_source = phone
    params = types.ElicitRequestFormParams(message=CODE_MESSAGE, requested_schema=CODE_SCHEMA)
    entered, dismissed = anyio.run(host, None, params), anyio.run(host, None, params)
    assert entered == types.ElicitResult(action="accept", content={"code": "482913"})
    assert dismissed == types.ElicitResult(action="cancel")
    assert not host.exchanges[0].asks_to_confirm


class _Counting(PlatformControl):
    """The real test surface, counting the requests sent to it."""

    def __init__(self, base_url: str) -> None:
        super().__init__(base_url)
        self.requests = 0

    async def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        self.requests += 1
        return await super()._json(method, path, **kwargs)


def test_the_counters_are_one_read_of_the_platform_and_count_its_messages():
    """Platform choice: the recorder's counters (appointment rows, create requests, outbox messages) are
    one read of the real platform's stats, which counts a sent verification message."""

    async def run() -> tuple[PlatformCounters, PlatformCounters, int]:
        async with running_platform() as platform:
            control = _Counting(platform.base_url)
            agent = RecordingAgent(
                OsbpClient.__new__(OsbpClient), control, "gus_notary", AuditTail(Path("-"))
            )
            before = await agent.counters()
            async with httpx2.AsyncClient(base_url=platform.base_url, trust_env=False) as http:
                sent = await http.post(
                    "/api/organizations/gus_notary/verifications",
                    json={"purpose": "booking:gus_notary", "phone": "+12125550142"},
                )
                assert sent.status_code == 202
            after = await agent.counters()
            await control.aclose()
            return before, after, control.requests

    before, after, requests = anyio.run(run)
    assert before == PlatformCounters(appointments=0, create_requests=0, messages=0)
    assert after == PlatformCounters(appointments=0, create_requests=0, messages=1)
    assert requests == 2
