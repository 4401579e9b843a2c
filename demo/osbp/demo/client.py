"""The agent's side of the wire: an OSBP MCP server subprocess, driven by the SDK client.

:func:`osbp_server` launches ``python -m osbp.server`` as a stdio subprocess with an explicit environment
(a stdio child inherits only a handful of variables, so the platform URL, organization, state file,
audit log and, when the platform's clock is frozen, the same instant for the server's clock are passed by
name), captures the server's stderr in a file (the operator channel, where the
adapter's deprecation warning lands) and yields an :class:`OsbpClient`. Every tool result is checked
against the transport contract on the way in: the text content is the compact JSON of the envelope and
``structured_content`` is the same value, with ``is_error`` exactly when ``ok`` is false.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from osbp.server._sdk import defer_init

# ``mcp.client``'s own __init__ imports the in-memory Client and with it the SDK's whole server side (the
# high-level MCPServer, Starlette, uvicorn): about a fifth of the demo's start-up, and the agent needs only
# the session and the stdio transport (loaded the stdio server's way: ``osbp.server._sdk``).
defer_init("mcp.client")

import mcp_types as types  # noqa: E402
from mcp.client.session import ClientSession  # noqa: E402
from mcp.client.stdio import StdioServerParameters, stdio_client  # noqa: E402

from osbp.protocol.tools import mcp_tool_name  # noqa: E402

__all__ = ["HostDialog", "OsbpClient", "ServerConfig", "ToolCall", "TransportViolation", "osbp_server"]


class TransportViolation(RuntimeError):
    """The server broke the envelope-over-MCP contract (a bug in the server, never an expected outcome)."""


@dataclass(frozen=True, slots=True)
class ServerConfig:
    """What one OSBP MCP server process needs: platform, organization, state file, audit log, clock."""

    platform_base_url: str
    organization_id: str
    state_path: Path
    audit_log_path: Path
    #: The platform's frozen instant, given to the server too (``OSBP_NOW``) so mandate expiry, approval
    #: TTLs and audit ``created_at`` follow the same clock; ``None`` leaves the server on the real clock.
    now: datetime | None = None
    #: Who confirms a booking (``OSBP_CONFIRMATION``) and, per organization, ``ORG=MODE,...``
    #: (``OSBP_CONFIRMATION_FOR``); ``None`` keeps the server's default.
    confirmation: str | None = None
    confirmation_for: str | None = None

    def environment(self) -> dict[str, str]:
        """The ``OSBP_*`` variables the server and its adapter read."""
        variables = {
            "OSBP_PLATFORM_BASE_URL": self.platform_base_url,
            "OSBP_ORGANIZATION_ID": self.organization_id,
            "OSBP_STATE_PATH": str(self.state_path),
            "OSBP_AUDIT_LOG_PATH": str(self.audit_log_path),
            # The child's stdout is the protocol; keep Python from buffering its stderr log lines.
            "PYTHONUNBUFFERED": "1",
        }
        if self.confirmation is not None:
            variables["OSBP_CONFIRMATION"] = self.confirmation
        if self.confirmation_for is not None:
            variables["OSBP_CONFIRMATION_FOR"] = self.confirmation_for
        if self.now is not None:
            # Full precision, so the server's instant is the platform's to the microsecond.
            variables["OSBP_NOW"] = self.now.astimezone(UTC).isoformat().replace("+00:00", "Z")
        return variables


@dataclass(frozen=True, slots=True)
class ToolCall:
    """One tool call as the agent saw it: dotted tool name, arguments and the OSBP envelope."""

    tool: str
    arguments: dict[str, Any]
    envelope: dict[str, Any]

    @property
    def ok(self) -> bool:
        """The envelope's ``ok``."""
        return bool(self.envelope.get("ok"))

    @property
    def value(self) -> Any:
        """The success value (``None`` on failure)."""
        return self.envelope.get("value")

    @property
    def problem(self) -> dict[str, Any]:
        """The failure's Problem (empty on success)."""
        problem: dict[str, Any] = self.envelope.get("problem") or {}
        return problem

    @property
    def problem_code(self) -> str | None:
        """The Problem code, or ``None`` on success."""
        code = self.problem.get("code")
        return str(code) if code is not None else None

    @property
    def audit_event_id(self) -> str | None:
        """The envelope's ``audit_event_id``."""
        event_id = self.envelope.get("audit_event_id")
        return str(event_id) if event_id is not None else None


def _envelope(tool: str, result: types.CallToolResult) -> dict[str, Any]:
    texts = [block.text for block in result.content if isinstance(block, types.TextContent)]
    if len(texts) != 1:
        raise TransportViolation(f"{tool}: expected one text block, got {len(texts)}")
    try:
        from_text = json.loads(texts[0])
    except json.JSONDecodeError as error:
        raise TransportViolation(f"{tool}: the text content is not JSON ({error})") from error
    if not isinstance(from_text, dict) or "ok" not in from_text:
        raise TransportViolation(f"{tool}: the text content is not an OSBP envelope")
    if result.structured_content != from_text:
        raise TransportViolation(f"{tool}: structured_content differs from the text content")
    if result.is_error != (from_text["ok"] is False):
        raise TransportViolation(f"{tool}: is_error={result.is_error} but ok={from_text['ok']}")
    return from_text


class HostDialog:
    """The host's confirmation dialog, played by the demo: shows the user each request and confirms it.

    Given to the client as its elicitation callback, so the client declares form elicitation and the
    server asks the user through it instead of handing the agent an approval token. ``shown`` holds every
    message the user saw, in order (the agent never sees them).
    """

    def __init__(self) -> None:
        self.shown: list[str] = []

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult | types.ErrorData:
        """The user reads the message and presses confirm."""
        if not isinstance(params, types.ElicitRequestFormParams):
            return types.ErrorData(code=-32602, message="the demo's host shows form dialogs only")
        self.shown.append(params.message)
        return types.ElicitResult(action="accept", content={"confirm": True})


class OsbpClient:
    """Calls OSBP tools by their dotted names over one MCP client session."""

    def __init__(self, session: ClientSession, host: HostDialog | None = None) -> None:
        self._session = session
        #: The host dialog the user confirms in, when this client declares elicitation.
        self.host = host

    @property
    def protocol_version(self) -> str | None:
        """The MCP revision the session negotiated (it decides how the server asks through the host)."""
        return self._session.protocol_version

    async def call(self, tool: str, arguments: Mapping[str, Any]) -> ToolCall:
        """Call ``tool`` (dotted name) with flat ``arguments`` and return the checked envelope."""
        plain = json.loads(json.dumps(dict(arguments)))
        result = await self._session.call_tool(mcp_tool_name(tool), plain)
        return ToolCall(tool=tool, arguments=plain, envelope=_envelope(tool, result))


@asynccontextmanager
async def osbp_server(
    config: ServerConfig, errlog: TextIO, host: HostDialog | None = None
) -> AsyncIterator[OsbpClient]:
    """Launch the OSBP MCP server for one organization as a stdio subprocess; stop it on exit.

    With ``host`` the client declares form elicitation: the user confirms bookings in that dialog.
    """
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "osbp.server"], env=config.environment()
    )
    async with (
        stdio_client(params, errlog=errlog) as (read, write),
        ClientSession(read, write, elicitation_callback=host) as session,
    ):
        await session.initialize()
        yield OsbpClient(session, host)
