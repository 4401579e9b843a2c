"""The tool listing: eight flattened names, the protocol's schemas, explicit annotations, a snapshot.

The snapshot `tests/server/snapshots/tools.json` is the reviewed listing; after an intended change,
regenerate it with `python -m tests.server.test_tools` and review the diff.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator  # type: ignore[import-untyped]  # no stubs installed
from mcp import Client

from osbp.protocol.schemas import tool_input_schema, tool_result_schema
from osbp.protocol.tools import TOOLS
from osbp.server.app import INSTRUCTIONS
from osbp.server.tools import inlined, mcp_tools
from tests.support.paths import REPO

SNAPSHOT = Path(__file__).parent / "snapshots" / "tools.json"
NAMES = [
    "osbp_service_describe",
    "osbp_availability_find",
    "osbp_policy_explain",
    "osbp_verification_send",
    "osbp_verification_verify",
    "osbp_booking_create",
    "osbp_booking_status",
    "osbp_handoff_request",
]


def listing() -> list[dict[str, Any]]:
    """The tool listing as it goes on the wire (camelCase JSON)."""
    return [tool.model_dump(mode="json", by_alias=True, exclude_none=True) for tool in mcp_tools()]


@pytest.mark.anyio
async def test_tools_list_offers_exactly_the_eight_flattened_names(client: Client):
    """OSBP spec, Naming: MCP tool names are the dotted names flattened with an osbp_ prefix."""
    tools = (await client.list_tools()).tools
    assert [tool.name for tool in tools] == NAMES


@pytest.mark.anyio
async def test_input_schemas_are_the_protocol_cores_strict_schemas(client: Client):
    """OSBP spec, Tool Set: flat arguments exactly as the spec shows them, from the protocol core."""
    tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    for dotted in TOOLS:
        tool = tools["osbp_" + dotted.replace(".", "_")]
        assert tool.input_schema == tool_input_schema(dotted)
        assert tool.input_schema["additionalProperties"] is False
        assert tool.output_schema == inlined({"type": "object", **tool_result_schema(dotted)})


@pytest.mark.anyio
async def test_every_annotation_is_explicit(client: Client):
    """MCP spec, ToolAnnotations: unset hints default to destructive and open-world, so none is left unset."""
    for tool in (await client.list_tools()).tools:
        hints = tool.annotations
        assert hints is not None
        assert tool.title
        assert hints.title == tool.title
        assert None not in (
            hints.read_only_hint,
            hints.destructive_hint,
            hints.idempotent_hint,
            hints.open_world_hint,
        ), tool.name


@pytest.mark.anyio
async def test_annotations_follow_each_tools_effect(client: Client):
    """OSBP spec, Tool Set: hints follow each effect: reads and handoff read-only, create idempotent, send
    not."""
    hints = {tool.name: tool.annotations for tool in (await client.list_tools()).tools if tool.annotations}
    reads = ("osbp_service_describe", "osbp_availability_find", "osbp_policy_explain", "osbp_booking_status")
    for read in reads:
        assert hints[read].read_only_hint is True
        assert hints[read].open_world_hint is True
    assert hints["osbp_handoff_request"].read_only_hint is True
    assert hints["osbp_handoff_request"].open_world_hint is False
    create = hints["osbp_booking_create"]
    assert (create.read_only_hint, create.destructive_hint, create.idempotent_hint) == (False, False, True)
    send = hints["osbp_verification_send"]
    assert (send.read_only_hint, send.idempotent_hint) == (False, False)
    assert hints["osbp_verification_verify"].read_only_hint is False


@pytest.mark.anyio
async def test_instructions_state_the_canonical_flow(client: Client):
    """OSBP spec, Tool Set: mandate first, policy read back, summary not token, ask before booking, codes, no
    cancel."""
    assert client.instructions == INSTRUCTIONS
    for phrase in (
        "mandate first",
        "read the policy",
        "never the approval token",
        "Ask before booking",
        "out of band",
        "no cancellation tool",
        "irreversible",
    ):
        assert phrase in INSTRUCTIONS


def test_titles_descriptions_annotations_and_schemas_match_the_snapshot():
    """Platform choice: any change to what hosts see is a reviewed change to the checked-in snapshot."""
    assert listing() == json.loads(SNAPSHOT.read_text(encoding="utf-8"))


def test_descriptions_are_short():
    """OSBP spec, Tool Set: a short, precise description per tool (hosts show them in tight spaces)."""
    for tool in mcp_tools():
        assert tool.description is not None
        assert 80 <= len(tool.description) <= 400, tool.name


if __name__ == "__main__":
    SNAPSHOT.parent.mkdir(exist_ok=True)
    SNAPSHOT.write_text(json.dumps(listing(), indent=2, sort_keys=True) + "\n", encoding="utf-8")


def test_listing_the_tools_reads_the_published_schemas_without_generating_any(monkeypatch):
    """Platform choice: the server's start-up reads the checked-in schema files (the published contract,
    kept equal to the models by the schema drift test) instead of generating them from the models."""
    import osbp.protocol.schemas as schemas
    import osbp.server.tools as tools

    def no_generation(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a schema was generated from the models")

    monkeypatch.setattr(schemas, "_generate", no_generation)
    tools._tools.cache_clear()
    listed = {tool.name: tool for tool in mcp_tools()}
    for dotted in TOOLS:
        name = "osbp_" + dotted.replace(".", "_")
        published = json.loads((schemas.SCHEMA_DIR / f"{dotted}.result.json").read_text(encoding="utf-8"))
        assert listed[name].output_schema == inlined(published)


def _trace_results() -> dict[str, list[dict[str, Any]]]:
    """The recorded results of the trace gallery, by MCP tool name."""
    found: dict[str, list[dict[str, Any]]] = {}
    for path in sorted((REPO / "traces").glob("*.json")):
        for step in json.loads(path.read_text(encoding="utf-8"))["steps"]:
            found.setdefault("osbp_" + step["tool"].replace(".", "_"), []).append(step["result"])
    return found


def test_an_inlined_output_schema_accepts_and_refuses_exactly_what_the_published_one_does():
    """Platform choice: hosts get each result schema with its $defs inlined (no $ref to resolve at every
    slot); it is the published schema's meaning: the gallery's real results pass both, and the same
    results broken (an unknown member, a missing one, a wrong type) fail both."""
    results = _trace_results()
    assert set(results) >= {"osbp_availability_find", "osbp_booking_create", "osbp_service_describe"}
    for dotted in TOOLS:
        name = "osbp_" + dotted.replace(".", "_")
        published = {"type": "object", **tool_result_schema(dotted)}
        flat = inlined(published)
        assert "$ref" not in json.dumps(flat)
        checks = (Draft202012Validator(published), Draft202012Validator(flat))
        for result in results.get(name, []):
            broken = [
                {**result, "unexpected": True},
                {key: value for key, value in result.items() if key != "ok"},
                {**result, "ok": "yes"},
            ]
            if isinstance(result.get("value"), list) and result["value"]:
                broken.append({**result, "value": [{**result["value"][0], "unexpected": 1}]})
            for instance in (result, *broken):
                verdicts = [checker.is_valid(instance) for checker in checks]
                assert verdicts[0] == verdicts[1], (name, instance)
            assert all(checker.is_valid(result) for checker in checks), name
            assert not any(checker.is_valid(broken[0]) for checker in checks), name


def test_a_reference_beside_other_keywords_keeps_both_when_inlined():
    """JSON Schema 2020-12 (a $ref beside other keywords applies them all): inlined, both still hold."""
    schema = {
        "$defs": {"Money": {"type": "object", "required": ["currency"]}},
        "type": "object",
        "properties": {"price": {"$ref": "#/$defs/Money", "description": "d", "maxProperties": 1}},
    }
    flat = inlined(schema)
    assert flat["properties"]["price"] == {
        "description": "d",
        "maxProperties": 1,
        "allOf": [{"type": "object", "required": ["currency"]}],
    }
    published, inlined_checker = Draft202012Validator(schema), Draft202012Validator(flat)
    instances: tuple[dict[str, Any], ...] = (
        {"price": {"currency": "USD"}},
        {"price": {}},
        {"price": {"currency": "USD", "x": 1}},
    )
    assert [published.is_valid(instance) for instance in instances] == [True, False, False]
    assert [inlined_checker.is_valid(instance) for instance in instances] == [True, False, False]


def test_a_recursive_schema_is_refused_rather_than_inlined_forever():
    """Platform choice: inlining is for the published (non-recursive) schemas only."""
    recursive = {"$defs": {"Node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/Node"}}}}}
    with pytest.raises(ValueError, match="Node refers to itself"):
        inlined({**recursive, "type": "object", "properties": {"head": {"$ref": "#/$defs/Node"}}})
