"""The recording agent: every tool call with what the platform and the audit log say about it.

:class:`RecordingAgent` wraps an :class:`~osbp.demo.client.OsbpClient`. Around each call it reads the
platform's counters (appointment rows, appointment-create requests, outbox messages) so a step can prove
whether the platform was written to, applies any test-surface setup the step needs (arming a runtime
failure), and afterwards finds the call's audit event in the server's log by the envelope's
``audit_event_id`` to learn the upstream metadata of the operator channel. The demo narrates these steps;
the trace recorder turns them into gallery traces.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from osbp.demo.client import OsbpClient, ToolCall
from osbp.demo.stack import ArmableOutcome, PlatformControl

__all__ = [
    "ARM",
    "FROM_CHALLENGE",
    "FROM_PHONE",
    "MISTYPED",
    "AuditTail",
    "PlatformCounters",
    "RecordingAgent",
    "Setup",
    "Step",
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

    async def counters(self) -> PlatformCounters:
        """The platform's counters for this organization right now."""
        stats = await self.control.stats(self.organization_id)
        outbox = await self.control.outbox(self.organization_id)
        return PlatformCounters(stats.appointments, stats.create_requests, len(outbox))

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
        before = await self.counters()
        for action in setup:
            await self.control.arm(self.organization_id, action[ARM])
        call = await self.client.call(tool, arguments)
        after = await self.counters()
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
            )
        )
        return call
