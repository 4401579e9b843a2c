"""The eight OSBP tools: dotted protocol names, flattened MCP names, input models and result value types."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from osbp.protocol.models import (
    TOOL_NAMES,
    AvailabilityFindInput,
    Booking,
    BookingCreateInput,
    BookingStatusInput,
    HandoffRequestInput,
    HandoffResult,
    Policy,
    PolicyExplainInput,
    Receipt,
    Service,
    ServiceDescribeInput,
    Slot,
    ToolInput,
    ToolName,
    VerificationChallenge,
    VerificationSendInput,
    VerificationVerifyInput,
)

__all__ = ["TOOLS", "ToolSpec", "mcp_tool_name", "tool_spec"]


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """One tool's names and types."""

    name: ToolName
    input_model: type[ToolInput]
    #: The type of the success envelope's ``value`` (a model, or ``list[Slot]``).
    value_type: Any

    @property
    def mcp_name(self) -> str:
        """The flattened MCP tool name (``osbp_booking_create``)."""
        return mcp_tool_name(self.name)


def mcp_tool_name(name: str) -> str:
    """Flatten a dotted protocol tool name for MCP: ``booking.create`` -> ``osbp_booking_create``."""
    return "osbp_" + name.replace(".", "_")


_SPECS = (
    ToolSpec("service.describe", ServiceDescribeInput, Service),
    ToolSpec("availability.find", AvailabilityFindInput, list[Slot]),
    ToolSpec("policy.explain", PolicyExplainInput, Policy),
    ToolSpec("verification.send", VerificationSendInput, VerificationChallenge),
    ToolSpec("verification.verify", VerificationVerifyInput, VerificationChallenge),
    ToolSpec("booking.create", BookingCreateInput, Receipt),
    ToolSpec("booking.status", BookingStatusInput, Booking),
    ToolSpec("handoff.request", HandoffRequestInput, HandoffResult),
)
#: Every tool by dotted name, in the spec's order.
TOOLS: dict[ToolName, ToolSpec] = {spec.name: spec for spec in _SPECS}
assert tuple(TOOLS) == TOOL_NAMES


def tool_spec(name: str) -> ToolSpec:
    """The spec of a dotted (``booking.create``) or MCP (``osbp_booking_create``) name; KeyError if none."""
    for spec in _SPECS:
        if name in (spec.name, spec.mcp_name):
            return spec
    raise KeyError(name)
