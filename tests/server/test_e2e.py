"""End to end: `python -m osbp.server` as a real stdio subprocess against the real platform on loopback.

The platform runs under uvicorn on an ephemeral 127.0.0.1 port with its clock frozen at 2030-05-01 (so
2030-05-02 is bookable) and the server's clock frozen at the same instant (``OSBP_NOW``), so nothing here
depends on the real date; the server gets its whole configuration through an explicit environment and
reaches the platform only through the reference adapter, over HTTP.
"""

from __future__ import annotations

import json
import queue
import re
import subprocess
import sys
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx2
import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.types import CallToolResult

from osbp.backend.serving import PlatformServer
from osbp.backend.settings import BackendSettings
from osbp.protocol.approval import APPROVAL_TOKEN_PATTERN
from osbp.protocol.clock import SystemClock
from osbp.protocol.timeutil import format_instant, parse_instant
from osbp.server.audit_cli import main as audit_main
from tests.support.logs import json_lines
from tests.support.mcp import read_events

pytestmark = pytest.mark.integration

ORG = "gus_notary"
NOW = datetime(2030, 5, 1, 12, 0, tzinfo=UTC)
DAY = "2030-05-02"
NOTARIZATION = "gus_notary_notarization"
REMOTE_SIGNING = "gus_notary_remote_signing"
ONLINE = "gus_notary_online"
GUS = "gus_notary_gus"
# Planted through real calls; none of them may ever reach the audit log.
PHONE = "+12125550173"
EMAIL = "zelda.sentinel@example.org"
GIVEN, FAMILY = "Zelda", "Quokkaworth"


@pytest.fixture(scope="module")
def platform() -> Iterator[PlatformServer]:
    """The real platform on loopback with its test surface and a frozen clock."""
    settings = BackendSettings(db=":memory:", port=0, now=NOW, enable_testing=True)
    with PlatformServer(settings) as server:
        yield server


@dataclass
class Session:
    """One connected stdio server: the client, its files, and every result it returned."""

    client: Client
    audit_path: Path
    stderr_path: Path
    results: list[CallToolResult] = field(default_factory=list)
    stray: list[Exception] = field(default_factory=list)

    async def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Call a tool; check text JSON == structured content and is_error == not ok; return the envelope."""
        result = await self.client.call_tool(tool, arguments)
        self.results.append(result)
        [content] = result.content
        envelope = result.structured_content
        assert isinstance(envelope, dict)
        assert json.loads(content.text) == envelope  # type: ignore[union-attr]
        assert result.is_error is (envelope["ok"] is not True)
        return envelope


def server_env(base_url: str, tmp_path: Path, **extra: str) -> dict[str, str]:
    """The server's whole configuration, passed explicitly."""
    return {
        "OSBP_PLATFORM_BASE_URL": base_url,
        "OSBP_ORGANIZATION_ID": ORG,
        "OSBP_STATE_PATH": str(tmp_path / "state" / "osbp.sqlite3"),
        "OSBP_AUDIT_LOG_PATH": str(tmp_path / "audit" / "events.jsonl"),
        "OSBP_LOG_LEVEL": "INFO",
        # The platform's frozen instant: mandate expiry and audit times follow it, not the real date.
        "OSBP_NOW": format_instant(NOW),
    } | extra


@asynccontextmanager
async def stdio_session(
    base_url: str, tmp_path: Path, args: Sequence[str] = ("-m", "osbp.server"), **extra: str
) -> AsyncIterator[Session]:
    """Spawn `python -m osbp.server` (or ``python <args>``) over stdio, connected with the SDK's client."""
    stderr_path = tmp_path / "server.stderr"
    env = server_env(base_url, tmp_path, **extra)
    params = StdioServerParameters(command=sys.executable, args=list(args), env=env, cwd=tmp_path)
    stray: list[Exception] = []

    async def on_message(message: Any) -> None:
        # The stdio transport hands every stdout line that is not a JSON-RPC message over as an Exception.
        if isinstance(message, Exception):
            stray.append(message)

    with stderr_path.open("w", encoding="utf-8") as errlog:
        # Client(params) would spawn with the default stderr; this is the same transport with our errlog.
        transport = stdio_client(params, errlog=errlog)
        async with Client(transport, message_handler=on_message) as client:
            yield Session(client, tmp_path / "audit" / "events.jsonl", stderr_path, stray=stray)


def raw_server(base_url: str, tmp_path: Path) -> subprocess.Popen[str]:
    """`python -m osbp.server` with raw pipes, for tests that write JSON-RPC lines themselves."""
    return subprocess.Popen(
        [sys.executable, "-m", "osbp.server"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=server_env(base_url, tmp_path),
        cwd=tmp_path,
    )


def token_of(envelope: dict[str, Any]) -> str:
    """The approval token of a final-confirmation challenge."""
    assert envelope["problem"]["code"] == "requires_user_confirmation", envelope
    match = APPROVAL_TOKEN_PATTERN.search(envelope["problem"]["message"])
    assert match is not None
    return match.group(1)


def mandate(**overrides: Any) -> dict[str, Any]:
    """A mandate for Gus' Notary on DAY, up to $50."""
    return {
        "id": "mnd_e2e_001",
        "expires_at": "2030-05-31T23:59:59-04:00",
        "allowed_actions": ["booking.create"],
        "organization_id": ORG,
        "earliest_start": f"{DAY}T08:00:00",
        "latest_end": f"{DAY}T20:00:00",
        "max_price": {"amount_minor": 5000, "currency": "USD"},
    } | overrides


def create_args(slot: dict[str, Any], key: str, **overrides: Any) -> dict[str, Any]:
    """booking.create arguments for ``slot`` with the sentinel customer."""
    date, time = slot["starts_at_local"].split("T")
    return {
        "mandate": mandate(),
        "idempotency_key": key,
        "service_id": slot["service_id"],
        "schedule_id": slot["schedule_id"],
        "provider_id": slot["provider_id"],
        "date": date,
        "time": time[:5],
        "customer": {
            "display_name": f"{GIVEN} {FAMILY}",
            "given_name": GIVEN,
            "family_name": FAMILY,
            "phone": PHONE,
            "email": EMAIL,
        },
    } | overrides


def stats(testing: httpx2.Client) -> dict[str, Any]:
    """The platform's counters for the organization."""
    body: dict[str, Any] = testing.get("/_testing/stats", params={"organization_id": ORG}).json()
    return body


@pytest.mark.anyio
async def test_the_canonical_flow_runs_over_stdio_and_leaves_a_clean_redacted_audit_trail(
    platform: PlatformServer, testing: httpx2.Client, tmp_path: Path
):
    """OSBP spec, Canonical Flow and Audit: the whole flow over a real stdio server, audited and redacted."""
    async with stdio_session(platform.base_url, tmp_path) as s:
        listed = (await s.client.list_tools()).tools
        assert len(listed) == 8

        service = await s.call("osbp_service_describe", {"service_id": NOTARIZATION})
        assert service["value"]["price"] == {
            "amount_minor": 1500,
            "currency": "USD",
            "type": "fixed",
            "display": "$15.00",
        }
        found = await s.call(
            "osbp_availability_find", {"service_id": NOTARIZATION, "schedule_id": ONLINE, "date": DAY}
        )
        slot = found["value"][0]
        policy = await s.call("osbp_policy_explain", {"service_id": NOTARIZATION})
        assert policy["value"]["organization"]["id"] == ORG

        # Fail closed: over the mandate's cap, nothing reaches the platform's create endpoint.
        before = stats(testing)["create_requests"]
        low_cap = mandate(max_price={"amount_minor": 1000, "currency": "USD"})
        capped = create_args(slot, "idem_e2e_capped", mandate=low_cap)
        refused = await s.call("osbp_booking_create", capped)
        assert refused["problem"]["code"] == "price_exceeds_mandate"
        assert stats(testing)["create_requests"] == before

        args = create_args(slot, "idem_e2e_001")
        preflight = await s.call("osbp_booking_create", args)
        token = token_of(preflight)
        assert stats(testing)["create_requests"] == before
        approved = args | {"approval": {"confirmed": True, "token": token}}
        receipt = await s.call("osbp_booking_create", approved)
        assert receipt["ok"] is True, receipt
        assert stats(testing)["active_appointments"] == 1
        replay = await s.call("osbp_booking_create", approved)
        assert replay["value"] == receipt["value"]
        assert replay["osbp_runtime"]["idempotency"] == "local_cache_replay"
        status = await s.call("osbp_booking_status", {"booking_id": receipt["value"]["booking_id"]})
        assert status["value"]["status"] == "booked"
        assert status["value"]["starts_at_local"] == slot["starts_at_local"]

        # Verification: the platform texts a code; the customer relays it; the create consumes it.
        where = {"service_id": REMOTE_SIGNING, "schedule_id": ONLINE, "date": DAY}
        signing = (await s.call("osbp_availability_find", where))["value"][-1]
        sign_args = create_args(signing, "idem_e2e_002")
        sign_token = token_of(await s.call("osbp_booking_create", sign_args))
        sign_approved = sign_args | {"approval": {"confirmed": True, "token": sign_token}}
        needs = await s.call("osbp_booking_create", sign_approved)
        assert needs["problem"]["code"] == "requires_verification"
        sent = await s.call(
            "osbp_verification_send", {"customer": {"phone": PHONE}, "purpose": f"booking:{ORG}"}
        )
        assert sent["value"]["sent"] is True
        messages = testing.get("/_testing/outbox", params={"organization_id": ORG}).json()["messages"]
        code = messages[-1]["code"]
        signed = await s.call("osbp_booking_create", sign_approved | {"verification_code": code})
        assert signed["ok"] is True, signed

        handoff = await s.call(
            "osbp_handoff_request",
            {"reason": "requires_payment_handoff", "message": "Finish with the merchant.", "mandate_id": "m"},
        )
        assert handoff["value"]["status"] == "requires_human"
        assert s.stray == []

    events = read_events(s.audit_path)
    # Each platform send's write-ahead record, closed by the record of the call that wrote it.
    intents = [e["id"] for e in events if e.get("phase") == "intent"]
    events = [e for e in events if e.get("phase") != "intent"]
    assert [i for e in events for i in e.get("intents", [])] == intents
    assert len(intents) == 4  # three approved creates sent (one answered requires_verification), one code
    envelopes = [r.structured_content for r in s.results]
    assert [e["id"] for e in events] == [env["audit_event_id"] for env in envelopes if env]
    upstream = {e["id"]: "upstream" in e for e in events}
    assert upstream[replay["audit_event_id"]] is False
    assert upstream[handoff["audit_event_id"]] is False
    local = {replay["audit_event_id"], handoff["audit_event_id"]}
    assert all(present for key, present in upstream.items() if key not in local)
    assert all(e["platform"]["vendor"] for e in events if e["tool_name"] != "handoff.request")

    log = s.audit_path.read_text(encoding="utf-8")
    for sentinel in (PHONE, PHONE[2:], EMAIL, GIVEN, FAMILY, code, token, sign_token):
        assert sentinel not in log, sentinel
    assert slot["provider_image_url"].startswith("https://images.bookwell.example/")
    assert "images.bookwell.example" not in log

    assert audit_main(["verify", str(s.audit_path)]) == 0
    stderr = s.stderr_path.read_text(encoding="utf-8").splitlines()
    assert stderr, "the server logs its lifecycle on stderr"
    for line in stderr:
        json.loads(line)  # structured JSON logs only


@pytest.mark.anyio
async def test_tampering_with_the_real_audit_log_is_caught(
    platform: PlatformServer, testing: httpx2.Client, tmp_path: Path, capsys
):
    """Platform choice: `osbp audit verify` names an edited, a deleted and a swapped line."""
    async with stdio_session(platform.base_url, tmp_path) as s:
        for _ in range(4):
            await s.call("osbp_service_describe", {"service_id": NOTARIZATION})
    original = s.audit_path.read_text(encoding="utf-8").splitlines()
    assert audit_main(["verify", str(s.audit_path)]) == 0

    edited = [*original]
    edited[1] = edited[1].replace("Document notarization", "Document forgery")
    deleted = original[:1] + original[2:]
    swapped = [original[0], original[2], original[1], original[3]]
    for name, lines, line in (("edited", edited, 2), ("deleted", deleted, 2), ("swapped", swapped, 2)):
        path = tmp_path / f"{name}.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        capsys.readouterr()
        assert audit_main(["verify", str(path)]) == 1, name
        assert capsys.readouterr().out.startswith(f"broken: line {line} "), name


@pytest.mark.anyio
async def test_osbp_audit_key_makes_the_real_server_write_macs_that_verify(
    platform: PlatformServer, tmp_path: Path, monkeypatch, capsys
):
    """Platform choice: with OSBP_AUDIT_KEY (environment only) every line carries a mac; the key itself
    appears nowhere: not in the log, not on stderr."""
    key = "e2e-audit-key-9f3c0a7d51e84b26c1f07e93"
    async with stdio_session(platform.base_url, tmp_path, OSBP_AUDIT_KEY=key) as s:
        for _ in range(2):
            await s.call("osbp_service_describe", {"service_id": NOTARIZATION})
    records = [json.loads(line) for line in s.audit_path.read_text(encoding="utf-8").splitlines()]
    assert len(records) == 2
    assert all(re.fullmatch(r"[0-9a-f]{64}", record["mac"]) for record in records)
    assert key not in s.audit_path.read_text(encoding="utf-8")
    assert key not in s.stderr_path.read_text(encoding="utf-8")
    monkeypatch.setenv("OSBP_AUDIT_KEY", key)
    capsys.readouterr()
    assert audit_main(["verify", str(s.audit_path)]) == 0
    assert "every mac checked with OSBP_AUDIT_KEY" in capsys.readouterr().out


@pytest.mark.parametrize(
    ("now", "expires_at", "outcome"),
    [
        # Long expired on the real clock, still valid on the server's: the preflight asks for approval.
        ("2024-05-01T12:00:00Z", "2024-05-31T23:59:59-04:00", "requires_user_confirmation"),
        # Valid on the real clock for years, already expired on the server's (before the availability
        # endpoint's 2032 sunset, after which the platform answers it 410).
        ("2031-05-01T12:00:00Z", "2031-04-30T23:59:59-04:00", "mandate_expired"),
    ],
)
@pytest.mark.anyio
async def test_osbp_now_is_the_clock_of_mandate_expiry_and_of_the_audit(
    platform: PlatformServer, testing: httpx2.Client, tmp_path: Path, now: str, expires_at: str, outcome: str
):
    """Platform choice (fixed clock for demos and traces): OSBP_NOW judges expiry and stamps the audit."""
    frozen, expiry = parse_instant(now), parse_instant(expires_at)
    assert frozen is not None
    assert expiry is not None
    # The premise: the real clock and the server's clock disagree about this mandate.
    real_now = SystemClock().now()
    assert (frozen < expiry < real_now) or (real_now < expiry < frozen)
    day = (frozen.date() + timedelta(days=1)).isoformat()
    assert testing.post("/_testing/clock", json={"now": now}).status_code == 200
    try:
        async with stdio_session(platform.base_url, tmp_path, OSBP_NOW=now) as s:
            where = {"service_id": REMOTE_SIGNING, "schedule_id": ONLINE, "date": day}
            slot = (await s.call("osbp_availability_find", where))["value"][0]
            window = {"earliest_start": f"{day}T08:00:00", "latest_end": f"{day}T20:00:00"}
            args = create_args(slot, "idem_e2e_clock", mandate=mandate(expires_at=expires_at, **window))
            preflight = await s.call("osbp_booking_create", args)
    finally:
        testing.post("/_testing/reset")
    assert preflight["problem"]["code"] == outcome, preflight
    events = read_events(s.audit_path)
    assert len(events) == 2
    assert {event["created_at"] for event in events} == {now.replace("Z", ".000Z")}
    warnings = json_lines(s.stderr_path.read_text(encoding="utf-8"))
    assert [line["now"] for line in warnings if line["event"] == "fixed_clock"] == [now]


@pytest.mark.anyio
async def test_rejected_calls_over_stdio_are_failure_envelopes_and_leave_no_audit_event(
    platform: PlatformServer, tmp_path: Path
):
    """OSBP spec, Result Envelope and Audit: the real process answers a schema-invalid call and an
    unknown tool with the one envelope shape (the SDK does not intercept them) and audits neither."""
    slot = {"starts_at_local": f"{DAY}T10:00:00", "service_id": NOTARIZATION, "schedule_id": ONLINE}
    over_cap = mandate(max_price={"amount_minor": 2**53, "currency": "USD"})
    async with stdio_session(platform.base_url, tmp_path) as s:
        numeric_date = await s.call("osbp_availability_find", {"date": 20300502})
        unknown = await s.call("osbp_booking_cancel", {"booking_id": "apt_1"})
        huge_cap = await s.call(
            "osbp_booking_create", create_args(slot | {"provider_id": GUS}, "idem_e2e_cap", mandate=over_cap)
        )
    assert numeric_date["problem"] == {
        "code": "invalid_input",
        "message": "Invalid arguments for osbp_availability_find: date must be a string. Nothing ran and "
        "nothing was recorded; correct the arguments and call again.",
        "retryable": False,
    }
    assert unknown["problem"]["code"] == "unknown_tool"
    assert huge_cap["problem"]["code"] == "invalid_input"
    assert "mandate.max_price.amount_minor must be at most 9007199254740991" in huge_cap["problem"]["message"]
    assert all("audit_event_id" not in env for env in (numeric_date, unknown, huge_cap))
    assert read_events(s.audit_path) == []


def call(request_id: int, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A raw JSON-RPC tools/call request."""
    params = {"name": tool, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def test_stdout_carries_only_protocol_messages(platform: PlatformServer, tmp_path: Path):
    """OSBP spec, Transport: in a stdio server, stdout belongs to MCP; logs go to stderr as JSON."""
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": "2025-06-18",
                "capabilities": {},
                "clientInfo": {"name": "raw-test", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
        call(3, "osbp_service_describe", {"service_id": NOTARIZATION}),
        call(4, "osbp_service_describe", {"x": 1}),
    ]
    process = raw_server(platform.base_url, tmp_path)
    try:
        assert process.stdin is not None
        assert process.stdout is not None
        lines: queue.Queue[str] = queue.Queue()
        stdout = process.stdout

        def pump() -> None:
            for line in stdout:
                lines.put(line)

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        process.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
        process.stdin.flush()
        # Wait for every answer before closing stdin: end of input stops the server.
        replies = [json.loads(lines.get(timeout=60)) for _ in range(4)]
        process.stdin.close()
        stderr = process.stderr.read() if process.stderr else ""
        assert process.wait(timeout=60) == 0, stderr
        reader.join(timeout=60)
        assert lines.empty()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pipe in (process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
    by_id = {reply.get("id"): reply for reply in replies}  # requests run concurrently: any order
    assert sorted(by_id) == [1, 2, 3, 4]
    assert all(reply["jsonrpc"] == "2.0" for reply in replies)
    assert by_id[3]["result"]["isError"] is False
    assert by_id[4]["result"]["isError"] is True
    for line in stderr.splitlines():
        assert isinstance(json.loads(line), dict)


def test_end_of_input_shuts_down_cleanly_with_status_0(platform: PlatformServer, tmp_path: Path):
    """Platform choice: clean shutdown on end of input (the HTTP client closed, the audit log flushed)."""
    done = subprocess.run(
        [sys.executable, "-m", "osbp.server"],
        input="",
        capture_output=True,
        text=True,
        env=server_env(platform.base_url, tmp_path),
        cwd=tmp_path,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == ""
    lines = json_lines(done.stderr)
    assert "stopped" in [line["event"] for line in lines]
    assert [line for line in lines if line["level"] in {"ERROR", "CRITICAL"}] == []


@pytest.mark.anyio
async def test_the_lifecycle_warning_reaches_stderr_even_under_log_level_error(
    platform: PlatformServer, testing: httpx2.Client, tmp_path: Path
):
    """OSBP spec, Platform Metadata and Versioning: Deprecation/Sunset MUST surface loudly on the operator
    channel once per endpoint per process; `osbp mcp --log-level ERROR` does not silence it, and it is
    never a Problem nor part of agent-facing output."""
    command = ("-m", "osbp", "mcp", "--log-level", "ERROR")
    where = {"schedule_id": ONLINE, "date": DAY}
    async with stdio_session(platform.base_url, tmp_path, args=command) as s:
        found = [
            await s.call("osbp_availability_find", where | {"service_id": service})
            for service in (NOTARIZATION, REMOTE_SIGNING, NOTARIZATION)
        ]
    lines = json_lines(s.stderr_path.read_text(encoding="utf-8"))
    # Only the notice: the fixed-clock warning and the INFO lifecycle lines are below ERROR.
    [notice] = lines
    assert {key: notice[key] for key in ("level", "logger", "event")} == {
        "level": "WARNING",
        "logger": "osbp.adapter.lifecycle",
        "event": "upstream_endpoint_deprecated",
    }
    assert notice["endpoint"] == "GET /api/organizations/{organization_id}/availability"
    assert (notice["deprecation"], notice["sunset"]) == ("@1781308800", "Fri, 01 Oct 2032 00:00:00 GMT")
    for envelope in found:
        assert envelope["ok"] is True, envelope
        text = json.dumps(envelope)
        assert "1781308800" not in text
        assert "2032" not in text
        assert "deprecat" not in text.lower()


@pytest.mark.anyio
async def test_every_server_stderr_line_is_a_json_object_with_the_shared_keys(
    platform: PlatformServer, testing: httpx2.Client, tmp_path: Path
):
    """Platform choice (one log convention): each stderr line is one JSON object with ts (ISO-8601 UTC),
    level, logger and event; a call's fields are top-level keys, never JSON inside the message."""
    async with stdio_session(platform.base_url, tmp_path) as s:
        await s.call(
            "osbp_availability_find", {"service_id": NOTARIZATION, "schedule_id": ONLINE, "date": DAY}
        )
    lines = json_lines(s.stderr_path.read_text(encoding="utf-8"))
    for line in lines:
        assert {"ts", "level", "logger", "event"} <= set(line), line
        assert datetime.fromisoformat(line["ts"]).utcoffset() == timedelta(0), line
        assert line["level"] in {"DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"}, line
        assert not line["event"].startswith("{"), line
    by_event = {line["event"]: line for line in lines}
    assert by_event["fixed_clock"]["now"] == format_instant(NOW)
    assert by_event["serving_stdio"]["platform"] == {"vendor": "bookwell", "api_version": "2026-04-01"}
    assert by_event["serving_stdio"]["audit"] == str(s.audit_path)
    assert by_event["upstream_endpoint_deprecated"]["logger"] == "osbp.adapter.lifecycle"


def initialize(request_id: int) -> dict[str, Any]:
    """A raw JSON-RPC initialize request."""
    params = {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "0"},
    }
    return {"jsonrpc": "2.0", "id": request_id, "method": "initialize", "params": params}


#: Lines the MCP SDK's parser rejects, as a host writes them, each with the error code and id it must get.
UNREADABLE: list[tuple[str, int, int | str | None]] = [
    # A cut emoji from a JavaScript host: the high half of a surrogate pair, escaped, with nothing after.
    (
        json.dumps(call(10, "osbp_service_describe", {"service_id": "HOLE"})).replace("HOLE", "\\ud83d"),
        -32700,
        10,
    ),
    (
        json.dumps(call(11, "osbp_service_describe", {"service_id": "HOLE"})).replace(
            '"HOLE"', "[" * 300 + "]" * 300
        ),
        -32700,
        11,
    ),
    ("this is not json", -32700, None),
    ('{"jsonrpc": "2.0", "id": 12, "method": "tools/list"', -32700, None),
    ("{}", -32600, None),
    ('{"jsonrpc": "2.0", "id": "r-13", "method": "tools/list", "params": "x"}', -32600, "r-13"),
    ('{"jsonrpc": "1.0", "id": 14, "method": "tools/list"}', -32600, 14),
    (f"[{json.dumps({'jsonrpc': '2.0', 'id': 15, 'method': 'tools/list'})}]", -32600, 15),
    ('{"jsonrpc": "2.0", "method": 16, "params": "bar"}', -32600, None),
]


def test_every_line_the_sdk_cannot_read_is_answered_and_the_server_keeps_serving(
    platform: PlatformServer, tmp_path: Path
):
    """JSON-RPC 2.0 §5, §5.1: every request gets a response, -32700 for text that is not (I-)JSON and
    -32600 for JSON that is no request, with its id when readable, else null; a valid notification
    (§4.1) gets none; a valid request on the same process still works afterwards."""
    process = raw_server(platform.base_url, tmp_path)
    try:
        assert process.stdin is not None
        assert process.stdout is not None
        stdin, stdout = process.stdin, process.stdout
        lines: queue.Queue[str] = queue.Queue()

        def pump() -> None:
            for line in stdout:
                lines.put(line)

        threading.Thread(target=pump, daemon=True).start()

        def exchange(line: str) -> dict[str, Any]:
            stdin.write(line + "\n")
            stdin.flush()
            reply = json.loads(lines.get(timeout=60))
            assert isinstance(reply, dict)
            return reply

        # Before the session exists: the SDK's writer is only just starting.
        assert exchange("\x00garbage") == {
            "jsonrpc": "2.0",
            "id": None,
            "error": {"code": -32700, "message": "Parse error: the line is not JSON"},
        }
        assert exchange(json.dumps(initialize(1)))["id"] == 1
        stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")
        answered = [(exchange(line), code, request_id) for line, code, request_id in UNREADABLE]
        # A valid JSON-RPC notification MCP cannot take (array params) is not answered: the next line
        # read is the answer to the request written after it.
        stdin.write(f'{{"jsonrpc": "2.0", "method": "notifications/{EMAIL}", "params": [1]}}\n')
        after = exchange('{"jsonrpc": "2.0", "id": 17}')
        tools = exchange(json.dumps({"jsonrpc": "2.0", "id": 18, "method": "tools/list"}))
        stdin.close()
        stderr = process.stderr.read() if process.stderr else ""
        assert process.wait(timeout=60) == 0, stderr
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None and not pipe.closed:
                pipe.close()
    for reply, code, request_id in answered:
        assert (reply["jsonrpc"], reply["id"], reply["error"]["code"]) == ("2.0", request_id, code), reply
    assert (after["id"], after["error"]["code"]) == (17, -32600)
    assert tools["id"] == 18
    assert len(tools["result"]["tools"]) == 8
    logged = [line for line in json_lines(stderr) if line["event"] == "jsonrpc_request_rejected"]
    assert [(line["code"], line["id"]) for line in logged] == [
        (-32700, None),
        # a batch's log line names its requests' ids apart (batch_ids), not as the id
        *((code, None if line.startswith("[") else request_id) for line, code, request_id in UNREADABLE),
        (-32600, None),
        (-32600, 17),
    ]
    assert [line["batch_ids"] for line in logged if "batch_ids" in line] == [[15]]
    assert [line["answered"] for line in logged].count(False) == 1
    assert EMAIL not in stderr  # the log never carries the line
