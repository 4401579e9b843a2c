"""The recording agent: every tool call with what the platform and the audit log say about it.

:class:`RecordingAgent` wraps an :class:`~osbp.demo.client.OsbpClient`. Around each call it reads the
platform's counters (appointment rows, appointment-create requests, outbox messages) so a step can prove
whether the platform was written to, applies any test-surface setup the step needs (arming a runtime
failure), and afterwards finds the call's audit event in the server's log by the envelope's
``audit_event_id`` to learn the upstream metadata of the operator channel. When the client plays the host
with a :class:`RecordingHost`, the step also keeps what the server asked the user through the host during
the call (MCP elicitation: the request as sent) and what the user answered. The demo narrates these steps;
the trace recorder turns them into gallery traces.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import mcp_types as types

from osbp.demo.client import HostDialog, OsbpClient, ToolCall
from osbp.demo.scenarios import HostAnswer
from osbp.demo.stack import ArmableOutcome, PlatformControl
from osbp.protocol.canonical import sha256_hex

__all__ = [
    "ARM",
    "ELICITATION_METHOD",
    "FROM_CHALLENGE",
    "FROM_PHONE",
    "MISTYPED",
    "AuditTail",
    "HostExchange",
    "PlatformCounters",
    "RecordingAgent",
    "RecordingHost",
    "Setup",
    "Step",
    "unbound_summaries",
]

#: The one setup action a step may carry: arm the organization's next create to fail this way.
ARM = "arm"
Setup = Mapping[str, ArmableOutcome]
#: Input sources: the token of the latest final-confirmation challenge for this idempotency_key ...
FROM_CHALLENGE = "challenge"
#: ... the newest code the platform sent to the customer's phone (or inbox) ...
FROM_PHONE = "customer_phone"
#: ... or a code the customer mistyped (deliberately wrong).
MISTYPED = "mistyped"


#: The method of every request the host answers here (the client's elicitation callback).
ELICITATION_METHOD = "elicitation/create"


@dataclass(frozen=True, slots=True)
class HostExchange:
    """One request the server sent the user through the host, and the user's answer, both in wire form."""

    #: ``{"method": "elicitation/create", "params": {...}}``, the params as the server sent them.
    request: dict[str, Any]
    #: The elicitation result the host sent back (``{"action": "accept", "content": {...}}``).
    response: dict[str, Any]

    def to_wire(self) -> dict[str, Any]:
        """``{"request": ..., "response": ...}``, as a trace's ``host_dialog`` entry holds it."""
        return {"request": self.request, "response": self.response}

    @property
    def message(self) -> str:
        """The text the host showed the user."""
        return str(self.request["params"].get("message", ""))

    @property
    def asks_to_confirm(self) -> bool:
        """True for the final-confirmation form (a yes/no ``confirm``), not the verification-code form."""
        return _asks_to_confirm(self.request["params"].get("requestedSchema"))

    @property
    def summary(self) -> str:
        """The approval summary the user read: the message after its one-line question."""
        return self.message.split("\n\n", 1)[-1]


def _asks_to_confirm(schema: Mapping[str, Any] | None) -> bool:
    return "confirm" in ((schema or {}).get("properties") or {})


class RecordingHost(HostDialog):
    """The host's dialog of a recorded run: the user answers each form as scripted; every exchange is kept.

    ``answers`` is consumed in order, one per request; :meth:`expect` queues more. A request with no answer
    left is an error answer (the server then reports that the host failed), never a silent accept. An
    accepted confirmation form answers ``confirm: true``; an accepted verification-code form answers the
    code ``code_source`` reads from the customer's phone (the user types what the merchant sent).
    """

    def __init__(self, answers: Sequence[HostAnswer] = ()) -> None:
        super().__init__()
        self._answers = list(answers)
        self.exchanges: list[HostExchange] = []
        self.code_source: Callable[[], Awaitable[str | None]] | None = None

    def expect(self, answers: Sequence[HostAnswer]) -> None:
        """Queue the user's answers to the next requests."""
        self._answers.extend(answers)

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult | types.ErrorData:
        """Show the request, answer it as scripted, and keep both."""
        request = {
            "method": ELICITATION_METHOD,
            "params": params.model_dump(by_alias=True, mode="json", exclude_none=True),
        }
        answer: types.ElicitResult | types.ErrorData
        if not isinstance(params, types.ElicitRequestFormParams):
            answer = types.ErrorData(code=-32602, message="the demo's host shows form dialogs only")
        elif not self._answers:
            answer = types.ErrorData(code=-32603, message="the scripted user has no answer left")
        else:
            self.shown.append(params.message)
            action = self._answers.pop(0)
            answer = types.ElicitResult(action=action, content=await self._content(action, params))
        self.exchanges.append(
            HostExchange(request, answer.model_dump(by_alias=True, mode="json", exclude_none=True))
        )
        return answer

    async def _content(
        self, action: HostAnswer, params: types.ElicitRequestFormParams
    ) -> dict[str, str | int | float | bool | list[str] | None] | None:
        if action != "accept":
            return None
        if _asks_to_confirm(params.requested_schema):
            return {"confirm": True}
        code = await self.code_source() if self.code_source is not None else None
        return {"code": code or ""}


@dataclass(frozen=True, slots=True)
class PlatformCounters:
    """What the platform holds for one organization: appointment rows, create requests, sent messages."""

    appointments: int
    create_requests: int
    messages: int


@dataclass(frozen=True, slots=True)
class Step:
    """One recorded tool call."""

    tool: str
    phase: str
    input: dict[str, Any]
    result: dict[str, Any]
    #: The server's audit event for this call, as written to the log (already redacted by the server).
    audit: dict[str, Any] | None
    #: True when the platform stored something: an appointment row or a verification message.
    platform_write: bool
    #: Appointment-create HTTP requests the platform received during the call.
    platform_create_requests: int
    setup: tuple[dict[str, str], ...] = ()
    #: Where redacted input values came from (``{"approval.token": "challenge"}``), for readers and replay.
    input_sources: dict[str, str] = field(default_factory=dict)
    note: str | None = None
    #: What the server asked the user through the host during the call, and the answers, in order.
    host_dialog: tuple[HostExchange, ...] = ()


class AuditTail:
    """Reads the audit log incrementally and finds events by id."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._offset = 0
        self._events: dict[str, dict[str, Any]] = {}

    def _read_new(self) -> None:
        if not self._path.exists():
            return
        with self._path.open("rb") as handle:
            handle.seek(self._offset)
            chunk = handle.read()
        complete, _, _ = chunk.rpartition(b"\n")
        if not complete:
            return
        self._offset += len(complete) + 1
        for line in complete.decode("utf-8").splitlines():
            if line.strip():
                event = json.loads(line)
                self._events[str(event.get("id"))] = event

    def find(self, event_id: str | None) -> dict[str, Any] | None:
        """The event with ``event_id``, reading whatever was appended since the last look."""
        if event_id is None:
            return None
        if event_id not in self._events:
            self._read_new()
        return self._events.get(event_id)


@dataclass
class RecordingAgent:
    """Calls tools for one organization and records each call as a :class:`Step`."""

    client: OsbpClient
    control: PlatformControl
    organization_id: str
    audit: AuditTail
    steps: list[Step] = field(default_factory=list)
    #: The counters read after this agent's last call, with the control's write count at that read.
    _last: tuple[int, PlatformCounters] | None = field(default=None, init=False, repr=False)

    async def counters(self) -> PlatformCounters:
        """The platform's counters for this organization right now (one read of its stats)."""
        stats = await self.control.stats(self.organization_id)
        return PlatformCounters(stats.appointments, stats.create_requests, stats.messages)

    async def _counters_before(self) -> PlatformCounters:
        # The counters after the previous call are still the platform's when nothing could have written
        # to it since (no tool call by any agent on this control, no test-surface write): not read again.
        if self._last is not None and self._last[0] == self.control.writes:
            return self._last[1]
        return await self.counters()

    async def call(
        self,
        tool: str,
        arguments: Mapping[str, Any],
        *,
        phase: str,
        setup: Sequence[Setup] = (),
        sources: Mapping[str, str] | None = None,
        note: str | None = None,
    ) -> ToolCall:
        """Call ``tool`` and record the step (setup actions are applied just before the call)."""
        before = await self._counters_before()
        for action in setup:
            await self.control.arm(self.organization_id, action[ARM])
        host = self.client.host if isinstance(self.client.host, RecordingHost) else None
        seen = len(host.exchanges) if host is not None else 0
        self.control.writing()
        call = await self.client.call(tool, arguments)
        after = await self.counters()
        self._last = (self.control.writes, after)
        wrote = after.appointments != before.appointments or after.messages != before.messages
        self.steps.append(
            Step(
                tool=tool,
                phase=phase,
                input=call.arguments,
                result=call.envelope,
                audit=self.audit.find(call.audit_event_id),
                platform_write=wrote,
                platform_create_requests=after.create_requests - before.create_requests,
                setup=tuple({ARM: action[ARM]} for action in setup),
                input_sources=dict(sources or {}),
                note=note,
                host_dialog=tuple(host.exchanges[seen:]) if host is not None else (),
            )
        )
        return call


def _confirmation_steps(audit: Mapping[str, Any] | None) -> list[dict[str, Any]]:
    """The audit's confirmation steps of one call, in order (``earlier`` ones first)."""
    record = (audit or {}).get("confirmation")
    if not isinstance(record, dict):
        return []
    return [*record.get("earlier", []), {key: value for key, value in record.items() if key != "earlier"}]


def unbound_summaries(step: Step) -> list[str]:
    """Why the audit did not bind what the user saw (empty when it did).

    Each confirmation form the host showed during the call must be one elicitation step of the audit's
    ``confirmation`` record, in order, whose ``summary_hash`` is the SHA-256 of the summary in that form.
    """
    shown = [sha256_hex(exchange.summary) for exchange in step.host_dialog if exchange.asks_to_confirm]
    bound = [
        str(record.get("summary_hash"))
        for record in _confirmation_steps(step.audit)
        if record.get("mode") == "elicitation" and not str(record.get("answer", "")).startswith("code_")
    ]
    if shown == bound:
        return []
    return [f"the host showed summaries hashing to {shown}, the audit bound {bound}"]
