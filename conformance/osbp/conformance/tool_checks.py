"""Checks on the tool listing: names, input shapes and annotations.

Input shapes follow the spec's Tool Set: every published argument is a flat property, and no argument the
spec calls optional is required. Annotations follow each tool's effect: the four reads and
handoff.request (which the spec says has no side effect) are read-only; booking.create adds an
appointment (not destructive) and is idempotent per key; verification.send sends a message each time
(not idempotent); both verification tools are side-effecting (Security and Privacy Considerations).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from mcp.types import Tool

from osbp.conformance.grading import expect, summarize
from osbp.conformance.probe import Probe

__all__ = ["TOOL_SPECS", "ToolSpec", "grade_tools"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What the spec publishes about one tool."""

    dotted: str
    arguments: frozenset[str]
    optional: frozenset[str]
    must_require: frozenset[str]
    read_only: bool
    destructive: bool | None = None
    idempotent: bool | None = None


def _spec(
    dotted: str,
    arguments: str,
    *,
    optional: str = "",
    must_require: str = "",
    read_only: bool,
    destructive: bool | None = None,
    idempotent: bool | None = None,
) -> ToolSpec:
    return ToolSpec(
        dotted,
        frozenset(arguments.split()),
        frozenset(optional.split()),
        frozenset(must_require.split()),
        read_only,
        destructive,
        idempotent,
    )


#: The eight tools by MCP name.
TOOL_SPECS: dict[str, ToolSpec] = {
    "osbp_service_describe": _spec("service.describe", "service_id", optional="service_id", read_only=True),
    "osbp_availability_find": _spec(
        "availability.find",
        "service_id schedule_id date provider_id",
        optional="service_id schedule_id provider_id",
        read_only=True,
    ),
    "osbp_policy_explain": _spec("policy.explain", "service_id", read_only=True),
    "osbp_verification_send": _spec(
        "verification.send", "customer purpose", read_only=False, idempotent=False
    ),
    "osbp_verification_verify": _spec("verification.verify", "customer purpose code", read_only=False),
    "osbp_booking_create": _spec(
        "booking.create",
        "mandate idempotency_key service_id schedule_id provider_id date time customer"
        " approval verification_code",
        optional="approval verification_code",
        must_require="mandate idempotency_key",
        read_only=False,
        destructive=False,
        idempotent=True,
    ),
    "osbp_booking_status": _spec(
        "booking.status", "booking_id customer", optional="customer", read_only=True
    ),
    "osbp_handoff_request": _spec("handoff.request", "reason message mandate_id", read_only=True),
}


def _shape_problems(name: str, spec: ToolSpec, schema: dict[str, Any]) -> list[str]:
    problems: list[str] = []
    if schema.get("type") != "object":
        problems.append(f"{name}: input schema type is {schema.get('type')!r}, not 'object'")
    properties = schema.get("properties")
    names = set(properties) if isinstance(properties, dict) else set()
    if missing := sorted(spec.arguments - names):
        problems.append(f"{name}: missing arguments {missing}")
    required = schema.get("required")
    required_set = (
        {item for item in required if isinstance(item, str)} if isinstance(required, list) else set()
    )
    if wrongly := sorted(required_set & spec.optional):
        problems.append(f"{name}: requires optional arguments {wrongly}")
    if absent := sorted(spec.must_require - required_set):
        problems.append(f"{name}: does not require {absent}")
    return problems


def _annotation_problems(name: str, spec: ToolSpec, tool: Tool) -> list[str]:
    hints = tool.annotations
    if hints is None:
        return [f"{name}: no annotations"]
    problems: list[str] = []
    explicit = {"read_only_hint": hints.read_only_hint, "open_world_hint": hints.open_world_hint}
    if not spec.read_only:
        explicit |= {"destructive_hint": hints.destructive_hint, "idempotent_hint": hints.idempotent_hint}
    if unset := [hint for hint, value in explicit.items() if value is None]:
        problems.append(f"{name}: {', '.join(unset)} left to the default")
    if hints.read_only_hint is not None and hints.read_only_hint != spec.read_only:
        problems.append(
            f"{name}: read_only_hint={hints.read_only_hint}, but {spec.dotted} is "
            f"{'read-only' if spec.read_only else 'side-effecting'}"
        )
    if spec.read_only and hints.destructive_hint:
        problems.append(f"{name}: a read-only tool marked destructive")
    for hint, wanted in (("destructive_hint", spec.destructive), ("idempotent_hint", spec.idempotent)):
        value = getattr(hints, hint)
        if wanted is not None and value is not None and value != wanted:
            problems.append(f"{name}: {hint}={value}, expected {wanted}")
    return problems


async def grade_tools(probe: Probe) -> None:
    """Grade wire.tools_listed, wire.input_shapes and wire.annotations from one tools/list."""
    grader = probe.grader
    tools: dict[str, Tool] = {}
    with grader.check("wire.tools_listed"):
        tools = {tool.name: tool for tool in await probe.wire.list_tools()}
        missing = sorted(set(TOOL_SPECS) - set(tools))
        expect(not missing, f"missing tools: {missing}")
    present = {name: spec for name, spec in TOOL_SPECS.items() if name in tools}
    if not present:
        grader.blocked("wire.input_shapes", "wire.tools_listed")
        grader.blocked("wire.annotations", "wire.tools_listed")
        return
    with grader.check("wire.input_shapes"):
        problems = [
            p for name, spec in present.items() for p in _shape_problems(name, spec, tools[name].input_schema)
        ]
        expect(not problems, summarize(problems))
    with grader.check("wire.annotations"):
        problems = [
            p for name, spec in present.items() for p in _annotation_problems(name, spec, tools[name])
        ]
        expect(not problems, summarize(problems))
