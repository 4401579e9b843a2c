"""One tool call, end to end: validate, run through the adapter, audit, answer with the OSBP envelope.

:meth:`ToolDispatcher.call` is the whole pipeline behind ``tools/call``. Every answer, including a
rejection, is the one OSBP envelope shape as compact JSON text and identical ``structured_content``,
with ``is_error`` exactly when ``ok`` is false:

1. an unknown tool name (``unknown_tool``), or arguments that fail the protocol's strict input model
   (``invalid_input``, the message naming each field and rule in plain words, never the rejected
   value), are rejected here: nothing runs, nothing is audited, and the envelope has no
   ``audit_event_id`` (the spec audits the schema-valid calls that reach a handler);
2. the call runs inside :func:`~osbp.protocol.upstream.capture_upstream`: ``handoff.request`` is
   answered locally, every other tool by its adapter method; an exception escaping the adapter, or an
   answer that is not JSON text (a lone surrogate, a NaN), becomes an ``internal_adapter_error``
   Problem, the details going only to the server's stderr log;
3. an effect is written ahead (:mod:`osbp.protocol.effects`): before each platform send (booking.create's
   platform create, asked by the core; the verification tools, before their adapter runs) an intent
   record is appended and ``fsync``-ed; when it cannot be, nothing is sent and the call answers the
   retryable ``audit_unavailable`` Problem;
4. exactly one record of the call is appended (redacted, chained, with the keyed subject hash of a remote
   call, listing the intents it wrote) and its id becomes ``audit_event_id``; a tool with an effect has
   its record ``fsync``-ed before the answer leaves, a read's is written at once and synced in a group
   (:class:`~osbp.server.audit.AuditLog`);
5. if that append fails, no envelope names the record that does not exist. A call that sent an effect
   still answers what happened, without ``audit_event_id`` (its intent record explains it), and the
   server logs ``audit_append_failed`` at CRITICAL; any other call answers the retryable
   ``audit_unavailable`` Problem instead of its value, logged at ERROR (see ``docs/server.md`` for why).
"""

from __future__ import annotations

import json
import logging
import re
import secrets
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

import anyio
from mcp.types import CallToolResult, InputRequiredResult, TextContent
from pydantic import BaseModel, ValidationError

from osbp.protocol.clock import Clock, SystemClock
from osbp.protocol.confirmation import ConfirmationTrail, Confirmer, confirming
from osbp.protocol.contract import BookingAdapter, Failure, Success
from osbp.protocol.effects import journaling
from osbp.protocol.idempotency import booking_payload_hash
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
from osbp.protocol.principal import current_principal
from osbp.protocol.problems import ProblemCode, problem
from osbp.protocol.tools import tool_spec
from osbp.protocol.upstream import capture_upstream
from osbp.server.audit import AuditDraft, AuditLog, Decision
from osbp.server.confirmation import InputRequiredConfirmer
from osbp.server.tools import TOOL_DEFINITIONS, dotted_name

__all__ = [
    "AUDIT_UNAVAILABLE",
    "INVALID_INPUT",
    "UNKNOWN_TOOL",
    "Outcome",
    "ToolDispatcher",
    "envelope_result",
    "new_audit_id",
]

#: Arguments that fail the tool's input schema (the reference adapter uses the same code for input its
#: own checks reject, such as a malformed date).
INVALID_INPUT = "invalid_input"
#: A ``tools/call`` naming a tool this server does not offer.
UNKNOWN_TOOL = "unknown_tool"
#: A call whose audit record could not be written before anything changed (a read's record, an effect's
#: intent): its answer is withheld, and it is retryable, since nothing changed.
AUDIT_UNAVAILABLE = "audit_unavailable"

#: Tools whose call changes something outside the server; their answer is never withheld.
_EFFECTFUL: frozenset[ToolName] = frozenset(
    definition.name for definition in TOOL_DEFINITIONS.values() if not definition.annotations.read_only_hint
)

#: Effect tools whose every platform send is preceded by a durable intent record: booking.create (the core
#: asks, right before each platform create) and the verification tools (asked here, before the adapter).
_WRITTEN_AHEAD: frozenset[ToolName] = frozenset(
    {"booking.create", "verification.send", "verification.verify"}
)
_INTENT_FIRST: frozenset[ToolName] = _WRITTEN_AHEAD - {"booking.create"}

logger = logging.getLogger("osbp.server")

#: The answer when an effect's intent record cannot be made durable: nothing was sent.
_NOT_SENT = problem(
    AUDIT_UNAVAILABLE,
    "The server could not record this call in its audit log before acting, so nothing was sent to the "
    "platform: no booking was made and no message was sent. Retry shortly with the same arguments; if this "
    "persists, the operator must repair the audit log (see the server's log) before any booking.",
    retryable=True,
)


@dataclass
class _Journal:
    """One call's write-ahead records (:mod:`osbp.protocol.effects`): each durable before its send."""

    audit: AuditLog
    #: The intent record's draft for a fresh event id.
    draft: Callable[[str], AuditDraft]
    new_event_id: Callable[[], str]
    written: list[str] = field(default_factory=list)
    #: The Problem answered when an intent could not be written (then nothing was sent).
    refused: Problem | None = None

    async def intend(self, tool: ToolName) -> Problem | None:
        """Append and fsync the intent record; the retryable ``audit_unavailable`` when that fails."""
        event_id = self.new_event_id()
        draft = self.draft(event_id)
        try:
            await self.audit.aappend(draft, durable=True)
        except Exception:
            fields = {"tool": tool, "mandate_id": draft.mandate_id, "answered": AUDIT_UNAVAILABLE}
            logger.error("audit_intent_failed", exc_info=True, extra=fields)
            self.refused = _NOT_SENT
            return _NOT_SENT
        self.written.append(event_id)
        return None


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


def _dumps(envelope: dict[str, Any], *, strict: bool = False) -> str:
    return json.dumps(envelope, ensure_ascii=False, separators=(",", ":"), allow_nan=not strict)


def _json_text(envelope: dict[str, Any]) -> str | None:
    """The compact JSON text of an envelope, or ``None`` if it is not JSON text (NaN, a lone surrogate)."""
    try:
        text = _dumps(envelope, strict=True)
        text.encode("utf-8")
    except (ValueError, TypeError):  # UnicodeEncodeError is a ValueError
        return None
    return text


def _result(envelope: dict[str, Any], text: str) -> CallToolResult:
    return CallToolResult(
        content=[TextContent(type="text", text=text)],
        structured_content=envelope,
        is_error=envelope["ok"] is not True,
    )


def envelope_result(envelope: dict[str, Any]) -> CallToolResult:
    """The MCP result of an envelope: compact JSON text, the same object as structured content."""
    return _result(envelope, _dumps(envelope))


def _rejected(rejection: Problem) -> CallToolResult:
    # The call never reached a handler: the failure envelope, with no audit event to point at.
    return envelope_result(_envelope(Outcome(problem=rejection), None))


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,63}")


def _name_of(part: object) -> str:
    """A caller-supplied name safe to repeat: as is when it is a plain identifier, else quoted ASCII."""
    text = str(part)
    if _IDENTIFIER.fullmatch(text):
        return text
    clipped = text if len(text) <= 64 else text[:63] + "…"
    return json.dumps(clipped)  # ensure_ascii: escapes control characters and lone surrogates


def _location(loc: tuple[int | str, ...]) -> str:
    where = ""
    for part in loc:
        if isinstance(part, int):
            where += f"[{part}]"
        else:
            where += ("." if where else "") + _name_of(part)
    return where


def _expected(text: str) -> str:
    # pydantic writes the allowed literals as Python reprs ('fixed', True); the caller speaks JSON.
    text = re.sub(r"'([^']*)'", r'"\1"', text)
    return re.sub(r"\b(True|False)\b", lambda match: match.group(1).lower(), text)


#: Plain-words rules for the pydantic error types a strict, closed tool input can produce.
_RULES: dict[str, str] = {
    "missing": "is required",
    "extra_forbidden": "is not a field this tool accepts",
    "string_type": "must be a string",
    "int_type": "must be an integer",
    "bool_type": "must be true or false",
    "list_type": "must be an array",
    "model_type": "must be an object",
    "model_attributes_type": "must be an object",
    "dict_type": "must be an object",
}


def _rule(item: Any) -> str:
    kind, ctx = item["type"], item.get("ctx") or {}
    if kind in _RULES:
        return _RULES[kind]
    if kind == "literal_error":
        return f"must be {_expected(str(ctx.get('expected', 'one of the allowed values')))}"
    if kind == "string_too_short":
        return (
            "must not be empty"
            if ctx.get("min_length") == 1
            else f"must be at least {ctx['min_length']} characters"
        )
    if kind == "string_pattern_mismatch":
        return f"must match the pattern {ctx.get('pattern')}"
    if kind == "greater_than_equal":
        return f"must be at least {ctx.get('ge')}"
    if kind == "less_than_equal":
        return f"must be at most {ctx.get('le')}"
    # Anything else: pydantic's own sentence, which names the rule and never the value.
    return str(item["msg"]).removeprefix("Value error, ")


def _detail(item: Any) -> str:
    if item["type"] in ("null_value", "lone_surrogate"):
        return str(item["msg"])  # the model's own sentence already names the field
    where = _location(tuple(item["loc"]))
    return f"{where or 'the arguments'} {_rule(item)}"


_MAX_DETAILS = 5


def _validation_message(mcp_name: str, error: ValidationError) -> str:
    # Locations and rules only: the rejected values are the caller's data (and may be personal).
    details = [_detail(item) for item in error.errors(include_url=False, include_input=False)]
    shown = "; ".join(details[:_MAX_DETAILS])
    if len(details) > _MAX_DETAILS:
        shown += f"; and {len(details) - _MAX_DETAILS} more"
    return (
        f"Invalid arguments for {mcp_name}: {shown}. Nothing ran and nothing was recorded; correct the "
        "arguments and call again."
    )


def _mandate_context(name: ToolName, inp: ToolInput) -> tuple[str | None, dict[str, Any] | None]:
    if isinstance(inp, BookingCreateInput):
        wire = inp.mandate.to_wire()
        return inp.mandate.id, {key: wire[key] for key in _MANDATE_SUMMARY_FIELDS if key in wire}
    if isinstance(inp, HandoffRequestInput):
        return inp.mandate_id, None
    return None, None


def _confirmation_record(trail: ConfirmationTrail) -> dict[str, Any] | None:
    """The audit's account of the final confirmation: the last step, and any earlier ones in order."""
    if not trail.steps:
        return None
    record: dict[str, Any] = trail.steps[-1].to_wire()
    if len(trail.steps) > 1:
        record["earlier"] = [step.to_wire() for step in trail.steps[:-1]]
    return record


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

    async def call(
        self, mcp_name: str, arguments: Mapping[str, Any] | None, *, confirmer: Confirmer | None = None
    ) -> CallToolResult | InputRequiredResult:
        """Validate, run, audit and answer one ``tools/call``.

        ``confirmer`` asks the user to confirm a booking.create through the host
        (:mod:`osbp.server.confirmation`); without one, the spec's token path. A confirmer that asks in
        an ``input_required`` result (its ``pending``) has that result answered instead of the envelope.
        """
        name = dotted_name(mcp_name)
        if name is None:
            logger.info("unknown_tool_called")
            return _rejected(
                problem(
                    UNKNOWN_TOOL,
                    f"This server has no tool named {_name_of(mcp_name)}. It offers the eight osbp_* tools "
                    "(see tools/list). Nothing ran and nothing was recorded.",
                    retryable=False,
                )
            )
        try:
            inp = tool_spec(name).input_model.model_validate(dict(arguments or {}))
        except ValidationError as error:
            logger.info("tool_arguments_rejected", extra={"tool": name, "errors": error.error_count()})
            return _rejected(problem(INVALID_INPUT, _validation_message(mcp_name, error), retryable=False))
        # Shielded: once a call has started, a client disconnect or cancel must not cut it off between the
        # platform's answer and the audit record (a booking created but never audited).
        with anyio.CancelScope(shield=True):
            result = await self._execute(name, inp, ConfirmationTrail(confirmer))
        if isinstance(confirmer, InputRequiredConfirmer) and confirmer.pending is not None:
            return confirmer.pending  # audited above: the ask, with the summary's hash
        return result

    async def _execute(self, name: ToolName, inp: ToolInput, trail: ConfirmationTrail) -> CallToolResult:
        journal = _Journal(self._audit, partial(self._intent, name, inp, trail), self._new_event_id)
        with capture_upstream() as capture, confirming(trail), journaling(journal):
            # booking.create's intent is written by the protocol core, right before each platform create
            # (a gated or refused create sends nothing); the verification tools' before the adapter runs.
            refused = await journal.intend(name) if name in _INTENT_FIRST else None
            outcome = Outcome(problem=refused) if refused is not None else await self._run(name, inp)
        event_id = self._new_event_id()
        envelope = _envelope(outcome, event_id)
        text = _json_text(envelope)
        if text is None:
            # Neither the wire nor the audit log can carry it; the details stay in the operator log.
            logger.error("adapter_answer_not_json", extra={"tool": name})
            outcome = Outcome(problem=problem(ProblemCode.INTERNAL_ADAPTER_ERROR))
            envelope = _envelope(outcome, event_id)
            text = _dumps(envelope)
        draft = replace(
            self._draft(name, inp, trail, event_id),
            result=_without_audit_id(envelope),
            decision=Decision(
                ok=outcome.ok,
                code=outcome.problem.code if outcome.problem else None,
                retryable=outcome.problem.retryable if outcome.problem else None,
            ),
            upstream=capture.last,
            intents=tuple(journal.written) or None,
        )
        try:
            # Durable (fsynced before the answer) exactly when the call may have changed something.
            await self._audit.aappend(draft, durable=name in _EFFECTFUL)
        except Exception:
            return self._unaudited(name, outcome, draft.mandate_id, journal)
        return _result(envelope, text)

    def _draft(self, name: ToolName, inp: ToolInput, trail: ConfirmationTrail, event_id: str) -> AuditDraft:
        """What every record of this call says: who, what and under which mandate (before the outcome)."""
        mandate_id, mandate = _mandate_context(name, inp)
        principal = current_principal()
        return AuditDraft(
            id=event_id,
            tool_name=name,
            created_at=self._clock.now(),
            input=inp.to_wire(),
            result={},
            decision=Decision(ok=True),
            mandate_id=mandate_id,
            mandate=mandate,
            platform=None if name == "handoff.request" else self._adapter.platform,
            subject=self._audit.subject(principal) if principal is not None else None,
            confirmation=_confirmation_record(trail),
            payload_hash=booking_payload_hash(inp) if isinstance(inp, BookingCreateInput) else None,
        )

    def _intent(self, name: ToolName, inp: ToolInput, trail: ConfirmationTrail, event_id: str) -> AuditDraft:
        """The write-ahead record of one platform send: the call's authorization, no result yet."""
        return replace(self._draft(name, inp, trail, event_id), phase="intent")

    def _unaudited(
        self, name: ToolName, outcome: Outcome, mandate_id: str | None, journal: _Journal
    ) -> CallToolResult:
        """The answer when the audit record could not be written: never an id that names no record."""
        fields = {
            "tool": name,
            "ok": outcome.ok,
            "code": outcome.problem.code if outcome.problem else None,
            "mandate_id": mandate_id,
        }
        if journal.written or (name in _EFFECTFUL and name not in _WRITTEN_AHEAD):
            # The action may have happened (a booking cannot be taken back, a message cannot be unsent),
            # and its intent record explains it: the agent must see it, and the operator must not be able
            # to overlook the missing outcome record (`osbp audit verify` names the open intent too).
            logger.critical("audit_append_failed", exc_info=True, extra=fields | {"answered": "unaudited"})
            return envelope_result(_envelope(outcome, None))
        # Nothing reached the platform: withhold the answer rather than answer an unaudited call, so an
        # agent stops before it reaches an effect that could not be audited either.
        logger.error("audit_append_failed", exc_info=True, extra=fields | {"answered": AUDIT_UNAVAILABLE})
        if journal.refused is not None:
            return _rejected(journal.refused)
        return _rejected(
            problem(
                AUDIT_UNAVAILABLE,
                "The server could not record this call in its audit log, so it withheld the answer; "
                "nothing was changed. Retry shortly; if this persists, the operator must repair the audit "
                "log (see the server's log) before any booking.",
                retryable=True,
            )
        )

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
