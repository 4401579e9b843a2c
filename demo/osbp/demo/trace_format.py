"""The trace file format: the upstream OSBP v0.1.0 gallery layout plus our extras, and how a run becomes one.

The layout is the one of the upstream gallery's trace files (``traces/v0.1.0/*.json`` of the OSBP
reference repository; ``docs/demo.md`` says which files and what each field holds): the same keys, in
the same order, with the same types. Every key of ours is an extra the upstream layout does not have;
none changes the meaning or type of an upstream key. Key order is meaningful: the file lists the trace in
the order of the spec's Demo Trace section (user request, mandate, tool calls, receipt, audit ids).

:func:`build_trace` redacts with the server's one :class:`~osbp.server.redaction.Redactor` (every
sensitive string found anywhere in the run is scrubbed from every step), then aliases volatile values
(:mod:`osbp.demo.aliases`). A call in which the server asked the user through the host (MCP elicitation)
keeps each request as sent and the user's answer (``host_dialog``) and the audit's ``confirmation``
record, its hashes aliased. :func:`dump_trace` writes the models' key order, two-space indents and a
final newline, so the same run always produces the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from osbp.demo.aliases import Aliaser
from osbp.demo.playbook import approval_summary, approval_token
from osbp.demo.recorder import HostExchange, Step
from osbp.demo.scenarios import Modality, Outcome
from osbp.server.redaction import REDACTED, Redactor

__all__ = [
    "KEPT_SLOTS",
    "RATELIMIT_PLACEHOLDER",
    "TRACE_VERSION",
    "Trace",
    "TraceExpected",
    "TraceRegion",
    "TraceScenario",
    "TraceSelection",
    "TraceStep",
    "build_trace",
    "dump_trace",
    "load_trace",
]

TRACE_VERSION = "0.1.0"
#: RateLimit headers carry a window's remaining quota and seconds-to-reset: readings as well.
RATELIMIT_PLACEHOLDER = "<ratelimit>"
#: Upstream metadata keys whose values are readings of the moment (the request id is an identifier).
_RATELIMIT_READINGS = frozenset({"ratelimit", "x-ratelimit-remaining", "x-ratelimit-reset"})
#: A long availability list keeps its first slots and the ones the agent went on to book.
KEPT_SLOTS = 3
TRUNCATION_RULE = (
    f"the first {KEPT_SLOTS} slots and any slot the run went on to book, in the platform's order; replay "
    "checks them as an ordered subset and the total count"
)
#: The audit event fields a trace keeps (hashes, chain links and the snapshots themselves stay local).
_AUDIT_FIELDS = ("created_at", "decision", "platform", "upstream")
#: ... and the final-confirmation record where the host was asked (the token path's stays local, as the
#: v0.1.0 traces were published without it: its challenge and token are visible in the step itself).
_CONFIRMATION = "confirmation"
#: The server's addition to the envelope: the step carries it as ``audit_event_id``, not the result.
_AUDIT_EVENT_ID = "audit_event_id"


class _TraceModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TraceRegion(_TraceModel):
    """Where the merchant is."""

    country: str
    currency: str
    timezone: str


class TraceSelection(_TraceModel):
    """The slot the agent chose: the upstream keys, then ours (the instant, the zone and the price)."""

    organization_id: str
    organization_name: str | None = None
    service_id: str
    service_name: str | None = None
    schedule_id: str
    schedule_name: str | None = None
    provider_id: str
    provider_name: str | None = None
    date: str
    time: str
    starts_at_local: str | None = None
    starts_at: str | None = None
    schedule_timezone: str | None = None
    price: dict[str, Any] | None = None


class TraceExpected(_TraceModel):
    """What the trace demonstrates: how the run ends, and the guardrail codes it shows."""

    happy_path: Outcome
    guardrails: list[str] = Field(default_factory=list)


class TraceScenario(_TraceModel):
    """The scenario block of the gallery layout."""

    id: str
    title: str
    claim: str
    business_type: str
    modality: Modality
    region: TraceRegion
    intent: str
    user_request: str
    organization_id: str
    organization_name: str
    selection: TraceSelection | None = None
    expected: TraceExpected


class TraceStep(_TraceModel):
    """One tool call of the run: the upstream keys (``step`` … ``platform_write``), then ours."""

    step: int
    tool: str
    input: dict[str, Any]
    #: The OSBP result envelope without ``audit_event_id`` (that is the step's own ``audit_event_id``).
    result: dict[str, Any]
    platform_write: bool
    phase: str
    note: str | None = None
    user_approval: str | None = None
    #: What the server asked the user through the host during the call (as sent) and the user's answers.
    host_dialog: list[dict[str, Any]] | None = None
    setup: list[dict[str, str]] | None = None
    input_sources: dict[str, str] | None = None
    truncated: dict[str, Any] | None = None
    platform_create_requests: int
    audit_event_id: str | None = None
    audit: dict[str, Any] | None = None


class Trace(_TraceModel):
    """One gallery trace: the upstream keys in their order, with our extras where their content belongs."""

    osbp_trace_version: str = TRACE_VERSION
    name: str
    source: str
    clock: str
    redaction: str
    scenario: TraceScenario
    mandate: dict[str, Any] | None = None
    steps: list[TraceStep]
    receipt: dict[str, Any] | None = None
    audit_event_ids: list[str] = Field(default_factory=list)
    recording: dict[str, Any]
    redaction_rules: dict[str, Any]


SOURCE = "a real run on the credential-free synthetic Bookwell platform, through the osbp MCP server (stdio)"
RECORDING: dict[str, Any] = {
    "generator": "osbp traces record",
    "recorded_from": "a real run: the agent drives the OSBP MCP server (python -m osbp.server) over stdio "
    "through the MCP SDK client; the server's reference adapter calls the synthetic Bookwell platform "
    "on loopback with a fresh database",
    "implementation": "osbp 0.1.0 (Python)",
    "transport": "MCP stdio",
    "platform_clock": "frozen at clock (the platform's --now setting): dates, slots and the mandate window "
    "follow it",
    "server_clock": "frozen at clock too (the MCP server's --now / OSBP_NOW): mandate expiry and approval "
    "TTLs are judged, and audit created_at is stamped, at that instant",
}
REDACTION = (
    f"Customer names, phones and emails, provider image URLs, verification codes and approval tokens are "
    f"{REDACTED}; audit, booking and request ids are aliased; RateLimit readings are "
    f"{RATELIMIT_PLACEHOLDER} (redaction_rules lists every rule)."
)
REDACTION_RULES: dict[str, Any] = {
    "redactor": "osbp.server.redaction.Redactor, the audit log's own allowlist redactor",
    "placeholder": REDACTED,
    "redacted": [
        "customer names, phone numbers and email addresses (structured fields and wherever they reappear)",
        "provider image URLs",
        "verification codes",
        'approval tokens (the approval.token="…" marker stays so the challenge is visible)',
        "phone- and email-shaped strings in free text",
    ],
    "aliases": {
        "aud_alias_<n>": "audit event ids, numbered in order of first appearance",
        "booking_alias_<n>": "platform booking (appointment) ids",
        "req_alias_<n>": "upstream request ids",
        RATELIMIT_PLACEHOLDER: "RateLimit header readings (remaining quota, seconds to reset)",
    },
    "customers": "synthetic people with 555 numbers and example.com addresses; redacted all the same",
}
#: The rules only traces of a confirmation through the host need (the others keep their bytes).
HOST_REDACTION: dict[str, Any] = {
    "redacted": ["what the user typed into a host form other than a yes/no (a verification code)"],
    "aliases": {
        "summary_hash_alias_<n>": "the audit's SHA-256 of the approval summary the host showed (a digest of "
        "the customer's name, and different under replay's customer)",
        "payload_hash_alias_<n>": "the audit's SHA-256 of the booking payload (a digest of the customer's "
        "contacts)",
    },
}


def _host_recording(protocol_version: str | None) -> dict[str, Any]:
    return {
        "host": "the MCP SDK client declares form elicitation and plays the host's dialog (its elicitation "
        "callback): each request the server sent the user is in steps[].host_dialog as sent, with the "
        "answer the scenario's user gave",
        "mcp_protocol_version": protocol_version,
        "confirmation_shape": "in-request elicitation/create: the client negotiates the revision by the "
        "initialize handshake, so the server asks while the call is open (the 2026-07-28 input_required "
        "round trip needs a client that negotiates that revision)",
    }


def _register_identifiers(aliaser: Aliaser, steps: Sequence[Step]) -> None:
    for step in steps:
        aliaser.register("audit", [step.result.get(_AUDIT_EVENT_ID)])
        value = step.result.get("value")
        if step.tool == "booking.create" and step.result.get("ok") and isinstance(value, dict):
            aliaser.register("booking", [value.get("booking_id")])
        if step.tool == "booking.status" and step.result.get("ok") and isinstance(value, dict):
            aliaser.register("booking", [value.get("id")])
        view = _audit_view(step.audit) or {}
        aliaser.register("request", [(view.get("upstream") or {}).get("request_id")])
        for record in _confirmation_records(view.get(_CONFIRMATION)):
            aliaser.register("summary_hash", [record.get("summary_hash")])
            aliaser.register("payload_hash", [record.get("payload_hash")])


def _confirmation_records(record: Any) -> list[dict[str, Any]]:
    if not isinstance(record, dict):
        return []
    return [*record.get("earlier", []), record]


def _through_host(record: Any) -> bool:
    return any(item.get("mode") == "elicitation" for item in _confirmation_records(record))


def _slot_key(slot: dict[str, Any]) -> tuple[str, str, str, str]:
    return (
        str(slot.get("schedule_id")),
        str(slot.get("provider_id")),
        str(slot.get("service_id")),
        str(slot.get("starts_at_local"))[:16],
    )


def _selected_slots(steps: Sequence[Step]) -> set[tuple[str, str, str, str]]:
    """The slots the agent went on to book (or try to): they stay in a shortened availability list."""
    return {
        (
            str(step.input.get("schedule_id")),
            str(step.input.get("provider_id")),
            str(step.input.get("service_id")),
            f"{step.input.get('date')}T{step.input.get('time')}",
        )
        for step in steps
        if step.tool == "booking.create"
    }


def _kept_slots(step: Step, selected: set[tuple[str, str, str, str]]) -> list[Any] | None:
    value = step.result.get("value")
    if step.tool != "availability.find" or not isinstance(value, list) or len(value) <= KEPT_SLOTS:
        return None
    return [
        slot
        for index, slot in enumerate(value)
        if index < KEPT_SLOTS or (isinstance(slot, dict) and _slot_key(slot) in selected)
    ]


def _shortened(step: Step, selected: set[tuple[str, str, str, str]]) -> dict[str, Any]:
    kept = _kept_slots(step, selected)
    return step.result if kept is None else step.result | {"value": kept}


def _truncation(step: Step, selected: set[tuple[str, str, str, str]]) -> dict[str, Any] | None:
    kept = _kept_slots(step, selected)
    if kept is None:
        return None
    total = len(step.result["value"])
    return {"value": {"kept": len(kept), "total": total, "rule": TRUNCATION_RULE}}


def _user_approvals(steps: Sequence[Step]) -> dict[int, str]:
    """Step index of each approved retry -> the summary of the challenge the user approved."""
    approvals: dict[int, str] = {}
    summary: str | None = None
    for index, step in enumerate(steps):
        problem = step.result.get("problem") or {}
        if step.tool == "booking.create" and approval_token(str(problem.get("message", ""))):
            summary = approval_summary(str(problem["message"]))
        if step.phase == "approved_retry" and summary is not None:
            approvals[index] = summary
    return approvals


def _audit_view(audit: dict[str, Any] | None) -> dict[str, Any] | None:
    if audit is None:
        return None
    # Everything kept is deterministic: created_at is the server's frozen instant, and upstream is the
    # last-*issued* platform call (not the last to answer), so only request ids and RateLimit readings vary.
    view = {key: audit[key] for key in _AUDIT_FIELDS if audit.get(key) is not None}
    if _through_host(audit.get(_CONFIRMATION)):
        view[_CONFIRMATION] = audit[_CONFIRMATION]
    upstream = view.get("upstream")
    if isinstance(upstream, dict) and isinstance(upstream.get("ratelimit"), dict):
        readings = {
            key: RATELIMIT_PLACEHOLDER if key in _RATELIMIT_READINGS else value
            for key, value in upstream["ratelimit"].items()
        }
        view["upstream"] = upstream | {"ratelimit": readings}
    return view


def _host_view(exchange: HostExchange, scrub_text: Callable[[str], str]) -> dict[str, Any]:
    """One host exchange for the trace: the message scrubbed, the form as sent, only yes/no answers kept."""
    params = dict(exchange.request["params"])
    if isinstance(params.get("message"), str):
        params["message"] = scrub_text(params["message"])
    response = dict(exchange.response)
    if isinstance(response.get("content"), dict):
        # A yes/no is the user's choice; anything typed (a verification code) is a secret.
        response["content"] = {
            key: value if isinstance(value, bool) else REDACTED for key, value in response["content"].items()
        }
    return exchange.to_wire() | {"request": exchange.request | {"params": params}, "response": response}


def _without_audit_id(result: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in result.items() if key != _AUDIT_EVENT_ID}


def build_trace(
    *,
    name: str,
    scenario: TraceScenario,
    clock: str,
    steps: Sequence[Step],
    mandate: dict[str, Any] | None,
    receipt: dict[str, Any] | None,
    redactor: Redactor | None = None,
    protocol_version: str | None = None,
) -> Trace:
    """The redacted, aliased trace of a recorded run (``clock``: the frozen instant, RFC 3339).

    ``protocol_version``: the MCP revision the client negotiated, recorded when the host was asked.
    """
    redactor = redactor or Redactor()
    typed = [
        value
        for step in steps
        for exchange in step.host_dialog
        for value in (exchange.response.get("content") or {}).values()
        if isinstance(value, str)
    ]
    snapshots = (snapshot for step in steps for snapshot in (step.input, step.result))
    known = redactor.discover(*snapshots) | frozenset(typed)
    aliaser = Aliaser()
    _register_identifiers(aliaser, steps)
    approvals = _user_approvals(steps)
    selected = _selected_slots(steps)

    def clean(value: Any) -> Any:
        return aliaser.apply(redactor.redact(value, known))

    def scrub(value: Any) -> Any:
        # Our own blocks (scenario, mandate) hold no customer fields: free-text scrubbing and aliases only.
        if isinstance(value, dict):
            return {key: scrub(item) for key, item in value.items()}
        if isinstance(value, list):
            return [scrub(item) for item in value]
        return aliaser.apply(redactor.scrub_text(value, known)) if isinstance(value, str) else value

    trace_steps = [
        TraceStep(
            step=index + 1,
            tool=step.tool,
            input=clean(step.input),
            result=clean(_without_audit_id(_shortened(step, selected))),
            platform_write=step.platform_write,
            phase=step.phase,
            note=step.note,
            user_approval=redactor.scrub_text(approvals[index], known) if index in approvals else None,
            host_dialog=[
                aliaser.apply(_host_view(exchange, lambda text: redactor.scrub_text(text, known)))
                for exchange in step.host_dialog
            ]
            or None,
            setup=[dict(action) for action in step.setup] or None,
            input_sources=dict(step.input_sources) or None,
            truncated=_truncation(step, selected),
            platform_create_requests=step.platform_create_requests,
            audit_event_id=aliaser.apply(step.result.get(_AUDIT_EVENT_ID)),
            audit=scrub(_audit_view(step.audit)),
        )
        for index, step in enumerate(steps)
    ]
    hosted = any(step.host_dialog for step in steps)
    return Trace(
        name=name,
        source=SOURCE,
        clock=clock,
        redaction=REDACTION,
        scenario=TraceScenario.model_validate(scrub(scenario.model_dump(mode="json", exclude_none=True))),
        mandate=scrub(mandate) if mandate is not None else None,
        steps=trace_steps,
        receipt=clean(receipt) if receipt is not None else None,
        audit_event_ids=[step.audit_event_id for step in trace_steps if step.audit_event_id is not None],
        recording=RECORDING | _host_recording(protocol_version) if hosted else RECORDING,
        redaction_rules=_with_host_rules(REDACTION_RULES) if hosted else REDACTION_RULES,
    )


def _with_host_rules(rules: dict[str, Any]) -> dict[str, Any]:
    return rules | {
        "redacted": [*rules["redacted"], *HOST_REDACTION["redacted"]],
        "aliases": rules["aliases"] | HOST_REDACTION["aliases"],
    }


def dump_trace(trace: Trace) -> str:
    """The file text of ``trace``: the layout's key order, two-space indents, UTF-8, final newline."""
    body = trace.model_dump(mode="json", exclude_none=True)
    return json.dumps(body, indent=2, ensure_ascii=False) + "\n"


def load_trace(text: str) -> Trace:
    """Parse a trace file."""
    return Trace.model_validate_json(text)
