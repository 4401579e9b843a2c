"""The tool listing checks: names, published input shapes, explicit and consistent annotations."""

from __future__ import annotations

from typing import Any, cast

import pytest
from mcp.types import ListToolsResult, Tool, ToolAnnotations

from osbp.conformance.fixtures import load_fixtures, reference_fixtures_path
from osbp.conformance.grading import Grader, Verdict
from osbp.conformance.payloads import Payloads
from osbp.conformance.probe import Probe
from osbp.conformance.tool_checks import TOOL_SPECS, grade_tools
from osbp.conformance.wire import Wire

pytestmark = pytest.mark.anyio


def _tool(name: str, **changes: Any) -> Tool:
    spec = TOOL_SPECS[name]
    required = sorted(spec.must_require | (spec.arguments - spec.optional - {"customer"}))
    schema = {"type": "object", "properties": {arg: {} for arg in spec.arguments}, "required": required}
    hints = ToolAnnotations(
        read_only_hint=spec.read_only,
        destructive_hint=bool(spec.destructive),
        idempotent_hint=spec.idempotent if spec.idempotent is not None else spec.read_only,
        open_world_hint=True,
    )
    return Tool(
        name=name,
        input_schema=changes.pop("input_schema", schema),
        annotations=changes.pop("annotations", hints),
    )


class ListingSession:
    def __init__(self, tools: list[Tool]) -> None:
        self.tools = tools

    async def list_tools(self, *, params: Any = None) -> ListToolsResult:
        return ListToolsResult(tools=self.tools)


async def _grade(tools: list[Tool]) -> dict[str, tuple[Verdict, str]]:
    fixtures = load_fixtures(reference_fixtures_path())
    grader = Grader()
    wire = Wire(cast(Any, ListingSession(tools)), call_timeout=5)
    probe = Probe(wire, fixtures, grader, cast(Payloads, None), None, 5)
    await grade_tools(probe)
    rows = grader.results(missing=Verdict.SKIP, missing_detail="")
    return {row.check.id: (row.verdict, row.detail) for row in rows if row.check.id.startswith("wire.")}


def _all(**replace: Tool) -> list[Tool]:
    return [replace.get(name) or _tool(name) for name in TOOL_SPECS]


async def test_the_published_listing_passes():
    """OSBP spec, Naming and Tool Set: the eight flattened names with their flat arguments."""
    graded = await _grade(_all())
    assert [graded[check][0] for check in ("wire.tools_listed", "wire.input_shapes", "wire.annotations")] == [
        Verdict.PASS,
        Verdict.PASS,
        Verdict.PASS,
    ]


async def test_a_missing_tool_fails_the_listing_and_is_named():
    """OSBP spec, Naming: all eight tools exist."""
    graded = await _grade([tool for tool in _all() if tool.name != "osbp_handoff_request"])
    assert graded["wire.tools_listed"] == (Verdict.FAIL, "missing tools: ['osbp_handoff_request']")


async def test_a_wrapper_object_or_a_required_optional_argument_fails_the_shapes():
    """OSBP spec, Tool Set: flat arguments; service_id is optional for service.describe."""
    wrapped = _tool("osbp_booking_create", input_schema={"type": "object", "properties": {"input": {}}})
    strict = _tool(
        "osbp_service_describe",
        input_schema={"type": "object", "properties": {"service_id": {}}, "required": ["service_id"]},
    )
    verdict, detail = (await _grade(_all(osbp_booking_create=wrapped, osbp_service_describe=strict)))[
        "wire.input_shapes"
    ]
    assert verdict is Verdict.FAIL
    assert "osbp_booking_create: missing arguments" in detail
    assert "osbp_service_describe: requires optional arguments ['service_id']" in detail


async def test_defaulted_or_inconsistent_annotations_fail():
    """Beyond the spec: explicit annotations, reads read-only, booking.create additive and idempotent."""
    defaulted = _tool("osbp_policy_explain", annotations=ToolAnnotations(read_only_hint=True))
    destructive = _tool(
        "osbp_booking_create",
        annotations=ToolAnnotations(
            read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=True
        ),
    )
    verdict, detail = (await _grade(_all(osbp_policy_explain=defaulted, osbp_booking_create=destructive)))[
        "wire.annotations"
    ]
    assert verdict is Verdict.FAIL
    assert "osbp_policy_explain: open_world_hint left to the default" in detail
    assert "osbp_booking_create: destructive_hint=True, expected False" in detail
