"""Final confirmation through the host over real stdio: `python -m osbp.server` and the SDK's client.

The server runs as a subprocess with the in-memory merchant plug-in and a frozen clock; the SDK client's
elicitation callback plays the host. Both elicitation shapes, and the operator's required mode.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult, ElicitRequestFormParams, ElicitResult, InputRequiredResult

from osbp.protocol.approval import APPROVAL_TOKEN_PATTERN
from osbp.protocol.timeutil import format_instant
from osbp.server.confirmation import CONFIRM_KEY
from tests.support.mcp import NOW, create_args, read_events
from tests.support.paths import REPO
from tests.support.stdio import StdioServer

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

PLUGIN = "tests.support.memory_adapter:build_memory_adapter"


class Host:
    """The host's UI: shows each message to the user, who answers ``action``."""

    def __init__(self, action: str) -> None:
        self.action = action
        self.shown: list[str] = []

    async def __call__(self, context: Any, params: Any) -> ElicitResult:
        assert isinstance(params, ElicitRequestFormParams)
        self.shown.append(params.message)
        content = {"confirm": True} if self.action == "accept" else None
        return ElicitResult(action=self.action, content=content)


@asynccontextmanager
async def stdio(
    tmp_path: Path, host: Host | None, *, mode: str = "auto", **env: str
) -> AsyncIterator[Client]:
    """`python -m osbp.server` over stdio with the memory merchant, connected with the SDK's client."""
    base = {key: os.environ[key] for key in ("PATH", "HOME", "LANG") if key in os.environ}
    variables = base | {
        "PYTHONPATH": str(REPO),
        "OSBP_ADAPTER_FACTORY": PLUGIN,
        "OSBP_PLATFORM_BASE_URL": "http://127.0.0.1:9",
        "OSBP_ORGANIZATION_ID": "org_test",
        "OSBP_STATE_PATH": str(tmp_path / "state.sqlite3"),
        "OSBP_AUDIT_LOG_PATH": str(tmp_path / "audit.jsonl"),
        "OSBP_NOW": format_instant(NOW),
    }
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "osbp.server"], env=variables | env, cwd=tmp_path
    )
    with (tmp_path / "server.stderr").open("w", encoding="utf-8") as errlog:
        async with Client(
            stdio_client(params, errlog=errlog),
            elicitation_callback=host,
            mode=mode,
        ) as client:
            yield client


async def create(client: Client) -> dict[str, Any]:
    """booking.create's envelope (its text and structured content agree)."""
    result = await client.call_tool("osbp_booking_create", create_args())
    envelope = result.structured_content
    assert isinstance(envelope, dict)
    assert json.loads(result.content[0].text) == envelope  # type: ignore[union-attr]
    return envelope


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_the_user_confirms_through_the_host_over_stdio_and_it_books_once(
    tmp_path: Path, mode: str
) -> None:
    """Platform choice (host-enforced final confirmation): over stdio an accept books, a retry replays."""
    host = Host("accept")
    async with stdio(tmp_path, host, mode=mode) as client:
        first = await create(client)
        again = await create(client)
    assert first["ok"] is True
    assert again["value"] == first["value"]
    assert again["osbp_runtime"]["idempotency"] == "local_cache_replay"
    [shown] = host.shown
    assert "Book Haircut on Tuesday, 2026-05-05 at 13:00" in shown
    events = [e for e in read_events(tmp_path / "audit.jsonl") if e["tool_name"] == "booking.create"]
    assert [e["confirmation"]["answer"] for e in events if "confirmation" in e][-1] == "accept"


async def test_a_decline_over_stdio_books_nothing(tmp_path: Path) -> None:
    """OSBP spec, requires_user_confirmation (terminal form): the user's no over stdio books nothing."""
    async with stdio(tmp_path, Host("decline")) as client:
        envelope = await create(client)
        status = await client.call_tool("osbp_booking_status", {"booking_id": "appt_idem_test_001"})
    assert envelope["problem"]["code"] == "requires_user_confirmation"
    assert envelope["problem"]["retryable"] is False
    assert status.structured_content["problem"]["code"] == "booking_not_found"


async def test_required_elicitation_over_stdio_refuses_a_client_without_it(tmp_path: Path) -> None:
    """Platform choice (OSBP_CONFIRMATION=elicitation): a client that cannot elicit gets no token."""
    async with stdio(tmp_path, None, OSBP_CONFIRMATION="elicitation") as client:
        envelope = await create(client)
    assert envelope["problem"]["code"] == "confirmation_unavailable"
    assert not APPROVAL_TOKEN_PATTERN.search(envelope["problem"]["message"])


@pytest.mark.parametrize("mode", ["auto", "legacy"])
async def test_a_required_page_over_stdio_refuses_a_client_that_elicits_and_shows_no_form(
    tmp_path: Path, mode: str
) -> None:
    """Platform choice (OSBP_CONFIRMATION=page): stdio serves no page, so the form never stands in for it."""
    host = Host("accept")
    async with stdio(tmp_path, host, mode=mode, OSBP_CONFIRMATION="page") as client:
        envelope = await create(client)
    assert envelope["problem"]["code"] == "confirmation_unavailable"
    assert "confirmation page" in envelope["problem"]["message"]
    assert not APPROVAL_TOKEN_PATTERN.search(envelope["problem"]["message"])
    assert host.shown == []
    assert "confirmation_page_unavailable" in (tmp_path / "server.stderr").read_text(encoding="utf-8")


def test_a_required_page_over_stdio_refuses_a_client_declaring_only_form_elicitation(tmp_path: Path) -> None:
    """Platform choice (OSBP_CONFIRMATION_FOR=ORG=page): a form-only client gets no form and no token."""
    env = {
        "OSBP_ADAPTER_FACTORY": PLUGIN,
        "OSBP_PLATFORM_BASE_URL": "http://127.0.0.1:9",
        "OSBP_ORGANIZATION_ID": "org_test",
        "OSBP_CONFIRMATION_FOR": "org_test=page",
        "OSBP_STATE_PATH": str(tmp_path / "state.sqlite3"),
        "OSBP_AUDIT_LOG_PATH": str(tmp_path / "audit.jsonl"),
        "OSBP_NOW": format_instant(NOW),
    }
    with StdioServer(env, capabilities={"elicitation": {"form": {}}}) as server:
        envelope = server.call("osbp_booking_create", create_args())
    assert envelope is not None
    assert envelope["problem"]["code"] == "confirmation_unavailable"
    assert not APPROVAL_TOKEN_PATTERN.search(envelope["problem"]["message"])
    [event] = [e for e in read_events(tmp_path / "audit.jsonl") if e["tool_name"] == "booking.create"]
    assert event["confirmation"]["mode"] == "url"
    assert event["confirmation"]["answer"] == "unavailable"


async def test_a_declined_round_over_stdio_echoed_with_an_accept_books_nothing(tmp_path: Path) -> None:
    """Platform choice (MCP 2026-07-28 input_required over stdio): a declined round stays declined."""
    async with stdio(tmp_path, Host("accept")) as client:
        first = await client.session.call_tool(
            "osbp_booking_create", create_args(), allow_input_required=True
        )
        assert isinstance(first, InputRequiredResult), first
        answers = []
        for action in ("decline", "accept"):
            answer = ElicitResult(action=action, content={"confirm": True} if action == "accept" else None)
            result = await client.session.call_tool(
                "osbp_booking_create",
                create_args(),
                input_responses={CONFIRM_KEY: answer},
                request_state=first.request_state,
                allow_input_required=True,
            )
            assert isinstance(result, CallToolResult), result
            answers.append(result.structured_content)
        status = await client.call_tool("osbp_booking_status", {"booking_id": "appt_idem_test_001"})
    assert [envelope["problem"]["code"] for envelope in answers] == ["requires_user_confirmation"] * 2
    assert "already declined or dismissed" in answers[1]["problem"]["message"]
    assert status.structured_content["problem"]["code"] == "booking_not_found"
