"""The recording host: answers the forms as scripted, keeps every exchange, checks the binding."""

from pathlib import Path

import anyio
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
from osbp.demo.stack import OutboxMessage, PlatformControl, PlatformStats
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


class _Rendezvous(PlatformControl):
    """A test surface whose two counter reads each answer only once the other one has been asked too."""

    def __init__(self) -> None:
        super().__init__("http://127.0.0.1:9")
        self.asked = {"stats": anyio.Event(), "outbox": anyio.Event()}

    async def stats(self, organization_id: str | None = None) -> PlatformStats:
        self.asked["stats"].set()
        await self.asked["outbox"].wait()
        return PlatformStats(appointments=2, active_appointments=1, create_requests=3)

    async def outbox(self, organization_id: str | None = None) -> list[OutboxMessage]:
        self.asked["outbox"].set()
        await self.asked["stats"].wait()
        return [OutboxMessage(organization_id or "", "sms", "booking", "123456")]


def test_the_counters_around_a_call_are_read_together():
    """Platform choice: the recorder's two reads of the platform's counters are in flight at once (one
    round trip of waiting around each call, not two), and each answer lands in its own counter."""
    control = _Rendezvous()
    agent = RecordingAgent(OsbpClient.__new__(OsbpClient), control, "org", AuditTail(Path("unused.jsonl")))

    async def read() -> PlatformCounters:
        with anyio.fail_after(5):  # read one after the other, each would wait for the other forever
            return await agent.counters()

    assert anyio.run(read) == PlatformCounters(appointments=2, create_requests=3, messages=1)
    anyio.run(control.aclose)
