"""The tool listing: eight flattened names, the protocol's schemas, explicit annotations, a snapshot.

The snapshot `tests/server/snapshots/tools.json` is the reviewed listing; after an intended change,
regenerate it with `python -m tests.server.test_tools` and review the diff.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from mcp import Client

from osbp.protocol.schemas import tool_input_schema, tool_result_schema
from osbp.protocol.tools import TOOLS
from osbp.server.app import INSTRUCTIONS
from osbp.server.tools import mcp_tools

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
        assert tool.output_schema == {"type": "object", **tool_result_schema(dotted)}


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
        assert listed[name].output_schema == published
