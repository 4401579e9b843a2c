"""The eight MCP tools as a host sees them: flattened names, titles, descriptions, annotations, schemas.

Input schemas are the protocol core's strict published schemas
(:func:`osbp.protocol.schemas.tool_input_schema`), flat arguments exactly as the spec shows them.
Output schemas are the protocol's result-envelope schemas, with ``type: "object"`` stated at the root
because MCP hosts up to 2025-11-25 require it.

Annotations are explicit on every tool (left out, MCP reads a tool as destructive and open-world):

* the four reads (describe, find, explain, status) are read-only and idempotent;
* ``handoff.request`` is read-only too: the server answers it itself and nothing is sent anywhere;
* ``booking.create`` is not read-only, not destructive (it adds an appointment, never changes or removes
  one) and idempotent (the same idempotency_key and payload give the same result);
* ``verification.send`` sends a message on every call (not idempotent); ``verification.verify`` may
  consume the code (not idempotent); neither destroys anything.

``open_world_hint`` is true for every tool that reaches the merchant's booking platform (its data and
effects live outside this server) and false for ``handoff.request``, which never leaves the process.

The schemas are read from the checked-in files (``protocol/schemas/``), not generated from the models
at start-up: generating them is most of the server's own start-up work, and the files are the published
contract, which the test suite keeps identical to what the models generate.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from typing import Any

from mcp.types import Tool, ToolAnnotations

from osbp.protocol.models import ToolName
from osbp.protocol.schemas import SCHEMA_DIR
from osbp.protocol.tools import TOOLS, mcp_tool_name

__all__ = ["TOOL_DEFINITIONS", "ToolDefinition", "dotted_name", "inlined", "mcp_tools"]


@dataclass(frozen=True, slots=True)
class ToolDefinition:
    """What a host shows for one tool."""

    name: ToolName
    title: str
    description: str
    annotations: ToolAnnotations

    @property
    def mcp_name(self) -> str:
        """The flattened MCP name (``osbp_booking_create``)."""
        return mcp_tool_name(self.name)


def _read(title: str) -> ToolAnnotations:
    return ToolAnnotations(
        title=title, read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=True
    )


_DEFINITIONS = (
    ToolDefinition(
        "service.describe",
        "Describe a service",
        "Read the facts of one bookable service: name, duration, price and whether it requires a "
        "consultation. Call it first to explain the service to the user; omit service_id for the "
        "merchant's default service. Read-only: never books or holds anything.",
        _read("Describe a service"),
    ),
    ToolDefinition(
        "availability.find",
        "Find open slots",
        "List bookable slots for one service and schedule on one merchant-local date (YYYY-MM-DD), "
        "optionally for one provider, in start order. Each slot carries the create-ready ids; its "
        "starts_at_local becomes booking.create date and time unchanged. A long day comes a page at a "
        "time: osbp_runtime.message then says so and gives the earliest_start of the next. Read-only: a "
        "listed slot is not held.",
        _read("Find open slots"),
    ),
    ToolDefinition(
        "policy.explain",
        "Explain the booking policy",
        "Read the payment, deposit, cancellation and no-show policy of a service, the verification "
        "method, and the merchant's organization id, timezone and currency. Read the policy back to the "
        "user before any booking. Read-only.",
        _read("Explain the booking policy"),
    ),
    ToolDefinition(
        "verification.send",
        "Send a verification code",
        "Ask the merchant platform to send a verification code to the customer's phone or email, only "
        "after booking.create returned requires_verification; purpose is booking:{organization_id}. "
        "Sends a real message on every call. Never returns the code: ask the customer for it.",
        ToolAnnotations(
            title="Send a verification code",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=False,
            open_world_hint=True,
        ),
    ),
    ToolDefinition(
        "verification.verify",
        "Verify a code (non-booking flows)",
        "Check a verification code for flows that need explicit pre-verification. Do not call it in the "
        "booking flow: pass the customer's code to booking.create as verification_code instead, because "
        "verifying here may consume it. Never invents or bypasses verification.",
        ToolAnnotations(
            title="Verify a code (non-booking flows)",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=False,
            open_world_hint=True,
        ),
    ),
    ToolDefinition(
        "booking.create",
        "Book an appointment",
        "Book one appointment inside the user's BookingMandate. First call without approval: nothing is "
        "booked; you get requires_user_confirmation with a summary to show the user (never the token). "
        "After the user confirms, retry with the same payload and idempotency_key plus approval. "
        "Irreversible: there is no cancellation tool.",
        ToolAnnotations(
            title="Book an appointment",
            read_only_hint=False,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=True,
        ),
    ),
    ToolDefinition(
        "booking.status",
        "Check a booking",
        "Read the state of an appointment by the booking_id from the booking.create receipt. Read-only: "
        "never changes or cancels the appointment.",
        _read("Check a booking"),
    ),
    ToolDefinition(
        "handoff.request",
        "Hand off to a human",
        "Stop and hand the booking to a human when OSBP cannot safely complete it (payment required, "
        "slot gone, outside the mandate, verification failing, ambiguous state). Answered by this server: "
        "nothing is sent to the merchant. reason and message must not contain names or contact details.",
        ToolAnnotations(
            title="Hand off to a human",
            read_only_hint=True,
            destructive_hint=False,
            idempotent_hint=True,
            open_world_hint=False,
        ),
    ),
)

#: Every tool by MCP name, in the spec's order.
TOOL_DEFINITIONS: dict[str, ToolDefinition] = {definition.mcp_name: definition for definition in _DEFINITIONS}
assert tuple(d.name for d in _DEFINITIONS) == tuple(TOOLS)


def dotted_name(mcp_name: str) -> ToolName | None:
    """The dotted protocol name of an MCP tool name, or ``None`` if it is not one of the eight."""
    definition = TOOL_DEFINITIONS.get(mcp_name)
    return definition.name if definition else None


def _published(file_name: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads((SCHEMA_DIR / file_name).read_text(encoding="utf-8"))
    return schema


def inlined(schema: dict[str, Any]) -> dict[str, Any]:
    """``schema`` with each ``{"$ref": "#/$defs/X"}`` replaced by ``X`` itself and no ``$defs``: the same
    constraints, which a validator checks without resolving a reference at every use.

    A host validates every structured result against its tool's ``outputSchema`` (the MCP SDK's client
    does, on each call); for ``availability.find`` a ``$ref`` per slot and one per price are about a third
    of that validation. The published schemas are not recursive; a recursive one is refused here.
    """
    definitions: dict[str, Any] = schema.get("$defs", {})

    def inline(node: Any, seen: tuple[str, ...]) -> Any:
        if isinstance(node, list):
            return [inline(item, seen) for item in node]
        if not isinstance(node, dict):
            return node
        reference = node.get("$ref")
        if not (isinstance(reference, str) and reference.startswith("#/$defs/")):
            return {key: inline(value, seen) for key, value in node.items()}
        name = reference.removeprefix("#/$defs/")
        if name in seen:
            raise ValueError(f"{name} refers to itself: a recursive schema cannot be inlined")
        target = inline(definitions[name], (*seen, name))
        siblings = {key: inline(value, seen) for key, value in node.items() if key != "$ref"}
        # A $ref beside other keywords applies both (JSON Schema 2020-12, section 8.2.3.1): allOf says so.
        return {**siblings, "allOf": [target]} if siblings else target

    result: dict[str, Any] = inline({key: value for key, value in schema.items() if key != "$defs"}, ())
    return result


@cache
def _tools() -> tuple[Tool, ...]:
    return tuple(
        Tool(
            name=definition.mcp_name,
            title=definition.title,
            description=definition.description,
            input_schema=_published(f"{definition.name}.input.json"),
            output_schema=inlined(_published(f"{definition.name}.result.json")),
            annotations=definition.annotations,
        )
        for definition in _DEFINITIONS
    )


def mcp_tools() -> list[Tool]:
    """The eight MCP ``Tool`` declarations with the protocol's published input and output schemas."""
    return list(_tools())
