"""One tool call, end to end: validate, run through the adapter, audit, answer with the OSBP envelope.

:meth:`ToolDispatcher.call` is the whole pipeline behind ``tools/call``:

1. an unknown tool name, or arguments that fail the protocol's strict input model, are rejected here:
   nothing runs and nothing is audited (the spec audits schema-valid calls);
2. the call runs inside :func:`~osbp.protocol.upstream.capture_upstream`: ``handoff.request`` is
   answered locally, every other tool by its adapter method; an exception escaping the adapter becomes
   an ``internal_adapter_error`` Problem, its traceback going only to the server's stderr log;
3. exactly one audit record is appended (redacted, chained) and its id becomes ``audit_event_id``;
4. the envelope is returned as compact JSON text and identical ``structured_content``, with
   ``is_error`` exactly when ``ok`` is false.
"""

from __future__ import annotations

import json
import logging
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any

import anyio
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, ValidationError

from osbp.protocol.clock import Clock, SystemClock
from osbp.protocol.contract import BookingAdapter, Failure, Success
from osbp.protocol.models import (
    AvailabilityFindInput,
    BookingCreateInput,
    BookingStatusInput,
    HandoffRequestInput,
    HandoffResult,
    PolicyExplainInput,
    Problem,
    RuntimeDiagnostics,
    ServiceDescribeInput,
    ToolInput,
    ToolName,
    VerificationSendInput,
    VerificationVerifyInput,
)
from osbp.protocol.problems import ProblemCode, problem
from osbp.protocol.tools import tool_spec
from osbp.protocol.upstream import capture_upstream
from osbp.server.audit import AuditDraft, AuditLog, Decision
from osbp.server.tools import dotted_name

__all__ = ["Outcome", "ToolDispatcher", "envelope_result", "new_audit_id"]

logger = logging.getLogger("osbp.server")

_MANDATE_SUMMARY_FIELDS = (
    "id",
    "expires_at",
    "allowed_actions",
    "organization_id",
    "service_ids",
    "provider_ids",
    "schedule_ids",
    "earliest_start",
    "latest_end",
    "max_price",
    "allow_policy_fee",
    "max_extra_fee",
)


def new_audit_id() -> str:
    """A fresh, unguessable audit event id (``aud_`` + 128 random bits)."""
    return "aud_" + secrets.token_hex(16)


@dataclass(frozen=True, slots=True)
class Outcome:
    """The adapter's (or the server's) answer to one call, before it gets its audit id."""

    value: Any | None = None
    problem: Problem | None = None
    runtime: RuntimeDiagnostics | None = None

    @property
    def ok(self) -> bool:
        """Whether the call succeeded."""
        return self.problem is None


def _wire(value: Any) -> Any:
    if isinstance(value, BaseModel):
        return value.model_dump(mode="json", exclude_none=True)
    if isinstance(value, list):
        return [_wire(item) for item in value]
    return value


def _envelope(outcome: Outcome, audit_event_id: str | None) -> dict[str, Any]:
    envelope: dict[str, Any] = {"ok": outcome.ok}
    if outcome.problem is None:
        envelope["value"] = _wire(outcome.value)
    else:
        envelope["problem"] = outcome.problem.to_wire()
    if audit_event_id is not None:
        envelope["audit_event_id"] = audit_event_id
    if outcome.runtime is not None:
        envelope["osbp_runtime"] = outcome.runtime.to_wire()
    return envelope


def _without_audit_id(envelope: dict[str, Any]) -> dict[str, Any]:
    # The audit record's result is the envelope minus its own id; the value inside is shared, not
    # dumped twice (the redactor copies what it keeps, and nothing mutates either).
    return {key: value for key, value in envelope.items() if key != "audit_event_id"}


def envelope_result(envelope: dict[str, Any]) -> CallToolResult:
    """The MCP result of an envelope: compact JSON text, the same object as structured content."""
    text = json.dumps(envelope, ensure_ascii=False, separators=(",", ":"))
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=envelope,
        is_error=envelope["ok"] is not True,
    )


def _rejected(message: str) -> CallToolResult:
    # Not an envelope: the call never reached a handler, so there is no audit event to point at.
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


def _validation_message(mcp_name: str, error: ValidationError) -> str:
    # Locations and reasons only: the rejected values are the caller's data (and may be personal).
    details = "; ".join(
        f"{'.'.join(str(part) for part in item['loc']) or '(arguments)'}: {item['msg']}"
        for item in error.errors(include_url=False, include_input=False)
    )
    return f"Invalid arguments for {mcp_name} (nothing ran and nothing was recorded): {details}"


def _mandate_context(name: ToolName, inp: ToolInput) -> tuple[str | None, dict[str, Any] | None]:
    if isinstance(inp, BookingCreateInput):
        wire = inp.mandate.to_wire()
        return inp.mandate.id, {key: wire[key] for key in _MANDATE_SUMMARY_FIELDS if key in wire}
    if isinstance(inp, HandoffRequestInput):
        return inp.mandate_id, None
    return None, None


class ToolDispatcher:
    """Runs the eight tools against one adapter and one audit log."""

    def __init__(
        self,
        adapter: BookingAdapter,
        audit: AuditLog,
        *,
        clock: Clock | None = None,
        new_event_id: Callable[[], str] = new_audit_id,
    ) -> None:
        self._adapter = adapter
        self._audit = audit
        self._clock = clock or SystemClock()
        self._new_event_id = new_event_id
        self._handlers: dict[ToolName, Callable[[Any], Awaitable[Success[Any] | Failure]]] = {
            "service.describe": self._describe,
            "availability.find": self._find,
            "policy.explain": self._explain,
            "verification.send": self._send,
            "verification.verify": self._verify,
            "booking.create": self._create,
            "booking.status": self._status,
            "handoff.request": self._handoff,
        }

    async def call(self, mcp_name: str, arguments: Mapping[str, Any] | None) -> CallToolResult:
        """Validate, run, audit and answer one ``tools/call``."""
        name = dotted_name(mcp_name)
        if name is None:
            return _rejected(f"Unknown tool {mcp_name!r}; this server offers the eight osbp_* tools.")
        try:
            inp = tool_spec(name).input_model.model_validate(dict(arguments or {}))
        except ValidationError as error:
            logger.info("tool_arguments_rejected", extra={"tool": name, "errors": error.error_count()})
            return _rejected(_validation_message(mcp_name, error))
        # Shielded: once a call has started, a client disconnect or cancel must not cut it off between the
        # platform's answer and the audit record (a booking created but never audited).
        with anyio.CancelScope(shield=True):
            result = await self._execute(name, inp)
        return result

    async def _execute(self, name: ToolName, inp: ToolInput) -> CallToolResult:
        with capture_upstream() as capture:
            outcome = await self._run(name, inp)
        event_id = self._new_event_id()
        envelope = _envelope(outcome, event_id)
        mandate_id, mandate = _mandate_context(name, inp)
        draft = AuditDraft(
            id=event_id,
            tool_name=name,
            created_at=self._clock.now(),
            input=inp.to_wire(),
            result=_without_audit_id(envelope),
            decision=Decision(
                ok=outcome.ok,
                code=outcome.problem.code if outcome.problem else None,
                retryable=outcome.problem.retryable if outcome.problem else None,
            ),
            mandate_id=mandate_id,
            mandate=mandate,
            platform=None if name == "handoff.request" else self._adapter.platform,
            upstream=capture.last,
        )
        try:
            await self._audit.aappend(draft)
        except Exception:
            # The action already happened (a booking cannot be taken back): answer it, and make the
            # missing audit record impossible for the operator to overlook.
            logger.exception("audit_append_failed", extra={"tool": name, "audit_event_id": event_id})
        return envelope_result(envelope)

    async def _run(self, name: ToolName, inp: ToolInput) -> Outcome:
        try:
            # Typed as object: the adapter is foreign code, so its answer is checked, not trusted.
            result: object = await self._handlers[name](inp)
        except Exception:
            logger.exception("adapter_raised", extra={"tool": name})
            return Outcome(problem=problem(ProblemCode.INTERNAL_ADAPTER_ERROR))
        if isinstance(result, Success):
            return Outcome(value=result.value, runtime=result.runtime)
        if isinstance(result, Failure):
            return Outcome(problem=result.problem, runtime=result.runtime)
        logger.error("adapter_result_invalid", extra={"tool": name, "result_type": type(result).__name__})
        return Outcome(problem=problem(ProblemCode.INTERNAL_ADAPTER_ERROR))

    async def _describe(self, inp: ServiceDescribeInput) -> Success[Any] | Failure:
        return await self._adapter.describe_service(inp)

    async def _find(self, inp: AvailabilityFindInput) -> Success[Any] | Failure:
        return await self._adapter.find_availability(inp)

    async def _explain(self, inp: PolicyExplainInput) -> Success[Any] | Failure:
        return await self._adapter.explain_policy(inp)

    async def _send(self, inp: VerificationSendInput) -> Success[Any] | Failure:
        return await self._adapter.send_verification(inp)

    async def _verify(self, inp: VerificationVerifyInput) -> Success[Any] | Failure:
        return await self._adapter.verify_code(inp)

    async def _create(self, inp: BookingCreateInput) -> Success[Any] | Failure:
        return await self._adapter.create_booking(inp)

    async def _status(self, inp: BookingStatusInput) -> Success[Any] | Failure:
        return await self._adapter.get_booking(inp)

    async def _handoff(self, inp: HandoffRequestInput) -> Success[Any] | Failure:
        # Answered by the server itself: no side effect, nothing sent to the merchant.
        return Success(HandoffResult(reason=inp.reason, message=inp.message, mandate_id=inp.mandate_id))
