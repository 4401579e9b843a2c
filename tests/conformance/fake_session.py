"""A scripted stand-in for `ClientSession.call_tool`, for grading recorded exchanges without a server."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any, cast

from mcp.types import CallToolResult, TextContent

from osbp.conformance.wire import Wire


def result(
    body: Any, *, structured: Any = "same", is_error: bool | None = None, text: str | None = None
) -> CallToolResult:
    """A tool result carrying `body` as text JSON and, by default, as identical structuredContent."""
    flag = is_error if is_error is not None else isinstance(body, dict) and body.get("ok") is False
    return CallToolResult(
        content=[TextContent(type="text", text=text if text is not None else json.dumps(body))],
        structured_content=body if structured == "same" else structured,
        is_error=flag,
    )


class ScriptedSession:
    """Answers each call_tool with the next scripted result."""

    def __init__(self, results: Iterable[CallToolResult]) -> None:
        self.results = list(results)

    async def call_tool(self, name: str, arguments: dict[str, Any]) -> CallToolResult:
        return self.results.pop(0)


async def recorded(*results: CallToolResult) -> Wire:
    """A Wire whose exchanges are the given results, recorded through the real `Wire.call`."""
    wire = Wire(cast(Any, ScriptedSession(results)), call_timeout=5)
    for _ in results:
        await wire.call("osbp_service_describe", {})
    return wire
