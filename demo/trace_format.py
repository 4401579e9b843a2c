"""The trace file format: OSBP v0.1.0 gallery layout plus this project's extras, and how a run becomes one.

Top level (gallery layout): ``osbp_trace_version`` ("0.1.0"), ``name``, ``source``, ``clock``,
``redaction``, ``scenario`` (``id``, ``title``, ``claim``, ``business_type``, ``modality``, ``region``,
``intent``, ``user_request``, ``organization_id``, ``organization_name``, ``selection``, ``expected``) and
``steps`` (``step``, ``tool`` as the dotted name, ``input``, ``result``). Our extras, all additive:

* top level: ``mandate`` (the BookingMandate the agent generated), ``receipt`` (the final receipt, when a
  booking was made) and ``audit_event_ids`` (every step's audit id, aliased);
* per step: ``phase`` (``lookup``, ``policy_readback``, ``approval_preflight``, ``approved_retry``,
  ``verification_send``, ``verification_retry``, ``status``, ``idempotent_replay``, ``guardrail``,
  ``handoff``, …), ``user_approval`` (on an approved retry: the summary exactly as the user saw it),
  ``audit`` (the server's audit event: aliased ``id`` and ``created_at``, ``decision``, ``platform`` and the
  operator channel's ``upstream`` metadata, absent when the tool answered locally), ``platform_write``
  (whether the platform stored anything during the call) and ``platform_create_requests``, ``setup``
  (test-surface actions applied just before the call, e.g. ``{"arm": "slot_taken"}``) and ``note``.

:func:`build_trace` redacts with the server's one :class:`~osbp.server.redaction.Redactor` (every
sensitive string found anywhere in the run is scrubbed from every step), then aliases volatile values
(:mod:`osbp.demo.aliases`). :func:`dump_trace` writes sorted keys, two-space indents and a final newline,
so the same run always produces the same bytes.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from osbp.demo.aliases import Aliaser
from osbp.demo.playbook import approval_summary, approval_token
from osbp.demo.recorder import Step
from osbp.server.redaction import REDACTED, Redactor

__all__ = [
    "CREATED_AT_PLACEHOLDER",
    "RATELIMIT_PLACEHOLDER",
    "TRACE_VERSION",
    "Trace",
    "TraceExpected",
    "TraceRegion",
    "TraceScenario",
    "TraceStep",
    "build_trace",
    "dump_trace",
    "load_trace",
]

TRACE_VERSION = "0.1.0"
#: Audit ``created_at`` comes from the server's own clock: a reading, replaced by position.
CREATED_AT_PLACEHOLDER = "<created_at>"
#: RateLimit headers carry a window's remaining quota and seconds-to-reset: readings as well.
RATELIMIT_PLACEHOLDER = "<ratelimit>"
#: Upstream metadata keys whose values are readings of the moment (the request id is an identifier).
_RATELIMIT_READINGS = frozenset({"ratelimit", "x-ratelimit-remaining", "x-ratelimit-reset"})
#: The audit event fields a trace keeps (hashes, chain links and the snapshots themselves stay local).
_AUDIT_FIELDS = ("id", "created_at", "decision", "platform", "upstream")


class _TraceModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TraceRegion(_TraceModel):
    """Where the merchant is."""

    country: str
    currency: str
    timezone: str


class TraceExpected(_TraceModel):
    """What the trace demonstrates: whether a booking is made, and the guardrail codes shown."""

    happy_path: bool
    guardrails: list[str] = Field(default_factory=list)


class TraceScenario(_TraceModel):
    """The scenario block of the gallery layout."""

    id: str
    title: str
    claim: str
    business_type: str
    modality: str
    region: TraceRegion
    intent: str
    user_request: str
    organization_id: str
    organization_name: str
    selection: dict[str, Any] = Field(default_factory=dict)
    expected: TraceExpected


class TraceStep(_TraceModel):
    """One tool call of the run."""

    step: int
    tool: str
    phase: str
    input: dict[str, Any]
    result: dict[str, Any]
    audit: dict[str, Any] | None = None
    platform_write: bool
    platform_create_requests: int
    setup: list[dict[str, str]] = Field(default_factory=list)
    user_approval: str | None = None
    note: str | None = None


class Trace(_TraceModel):
    """One gallery trace."""

    osbp_trace_version: str = TRACE_VERSION
    name: str
    source: dict[str, Any]
    clock: dict[str, Any]
    redaction: dict[str, Any]
    scenario: TraceScenario
    mandate: dict[str, Any] | None = None
    steps: list[TraceStep]
    receipt: dict[str, Any] | None = None
    audit_event_ids: list[str] = Field(default_factory=list)


SOURCE: dict[str, Any] = {
    "generator": "osbp traces record",
    "recorded_from": "a real run: the agent drives the OSBP MCP server (python -m osbp.server) over stdio "
    "through the MCP SDK client; the server's reference adapter calls the synthetic Bookwell platform "
    "on loopback with a fresh database",
    "implementation": "osbp 0.1.0 (Python)",
    "transport": "MCP stdio",
}

REDACTION: dict[str, Any] = {
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
        CREATED_AT_PLACEHOLDER: "audit created_at (the server's clock)",
        RATELIMIT_PLACEHOLDER: "RateLimit header readings (remaining quota, seconds to reset)",
    },
    "customers": "synthetic people with 555 numbers and example.com addresses; redacted all the same",
}


def _register_identifiers(aliaser: Aliaser, steps: Sequence[Step]) -> None:
    for step in steps:
        aliaser.register("audit", [step.result.get("audit_event_id")])
        value = step.result.get("value")
        if step.tool == "booking.create" and step.result.get("ok") and isinstance(value, dict):
            aliaser.register("booking", [value.get("booking_id")])
        if step.tool == "booking.status" and step.result.get("ok") and isinstance(value, dict):
            aliaser.register("booking", [value.get("id")])
        upstream = (step.audit or {}).get("upstream") or {}
        aliaser.register("request", [upstream.get("request_id")])


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
    view = {key: audit[key] for key in _AUDIT_FIELDS if audit.get(key) is not None}
    if "created_at" in view:
        view["created_at"] = CREATED_AT_PLACEHOLDER
    upstream = view.get("upstream")
    if isinstance(upstream, dict) and isinstance(upstream.get("ratelimit"), dict):
        readings = {
            key: RATELIMIT_PLACEHOLDER if key in _RATELIMIT_READINGS else value
            for key, value in upstream["ratelimit"].items()
        }
        view["upstream"] = upstream | {"ratelimit": readings}
    return view


def build_trace(
    *,
    name: str,
    scenario: TraceScenario,
    clock: dict[str, Any],
    steps: Sequence[Step],
    mandate: dict[str, Any] | None,
    receipt: dict[str, Any] | None,
    redactor: Redactor | None = None,
) -> Trace:
    """The redacted, aliased trace of a recorded run."""
    redactor = redactor or Redactor()
    known = redactor.discover(*(snapshot for step in steps for snapshot in (step.input, step.result)))
    aliaser = Aliaser()
    _register_identifiers(aliaser, steps)
    approvals = _user_approvals(steps)

    def clean(value: Any) -> Any:
        return aliaser.apply(redactor.redact(value, known))

    trace_steps = [
        TraceStep(
            step=index + 1,
            tool=step.tool,
            phase=step.phase,
            input=clean(step.input),
            result=clean(step.result),
            audit=clean(_audit_view(step.audit)),
            platform_write=step.platform_write,
            platform_create_requests=step.platform_create_requests,
            setup=[dict(action) for action in step.setup],
            user_approval=redactor.scrub_text(approvals[index], known) if index in approvals else None,
            note=step.note,
        )
        for index, step in enumerate(steps)
    ]
    return Trace(
        name=name,
        source=SOURCE,
        clock=clock,
        redaction=REDACTION,
        scenario=TraceScenario.model_validate(clean(scenario.model_dump(mode="json"))),
        mandate=clean(mandate) if mandate is not None else None,
        steps=trace_steps,
        receipt=clean(receipt) if receipt is not None else None,
        audit_event_ids=[
            str(step.result["audit_event_id"]) for step in trace_steps if "audit_event_id" in step.result
        ],
    )


def dump_trace(trace: Trace) -> str:
    """The canonical file text of ``trace``: sorted keys, two-space indents, UTF-8, final newline."""
    body = trace.model_dump(mode="json", exclude_none=True)
    return json.dumps(body, sort_keys=True, indent=2, ensure_ascii=False) + "\n"


def load_trace(text: str) -> Trace:
    """Parse a trace file."""
    return Trace.model_validate_json(text)
