"""Write-ahead audit of effects, through the real MCP server (a stdio subprocess) and the real platform.

An effect's authorizing record is durable in the audit log before the platform is called: when the log
cannot take it (here a file-size limit on the server process, RLIMIT_FSIZE, so the log cannot grow by a
byte), nothing is sent; when the server dies between the intent and its outcome, `osbp audit verify` names
the open intent, and the retry of the same idempotency key settles it to one appointment.
"""

from __future__ import annotations

import os
import re
import resource
import subprocess
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx2
import pytest

from osbp.backend.serving import PlatformServer
from osbp.protocol.approval import APPROVAL_TOKEN_PATTERN
from osbp.protocol.timeutil import format_instant
from osbp.server.audit import AuditDraft, AuditLog, Decision
from osbp.server.audit_verify import verify_chain
from tests.support.crash_adapter import CRASH_AT
from tests.support.mcp import read_events
from tests.support.paths import REPO
from tests.support.reference import NOW, ORG, create_input
from tests.support.stdio import StdioServer

pytestmark = pytest.mark.integration

CREATE = "osbp_booking_create"
NOTARY = "gus_notary"
#: Larger than anything the server writes to its SQLite state in one session (the file, its WAL and its
#: 32 KiB shared-memory index), so under a limit at the log's size only the audit log cannot grow.
LOG_FLOOR = 256 * 1024


def server_env(base_url: str, tmp_path: Path, organization_id: str = ORG, **extra: str) -> dict[str, str]:
    """One server's configuration; the state and audit files are the same for every restart."""
    return {
        "OSBP_PLATFORM_BASE_URL": base_url,
        "OSBP_ORGANIZATION_ID": organization_id,
        "OSBP_STATE_PATH": str(tmp_path / "state" / "osbp.sqlite3"),
        "OSBP_AUDIT_LOG_PATH": str(tmp_path / "audit" / "events.jsonl"),
        "OSBP_NOW": format_instant(NOW),
    } | extra


def stats(testing: httpx2.Client, organization_id: str = ORG) -> dict[str, Any]:
    """The platform's own counters for the organization (creates received, appointments, messages)."""
    answer = testing.get("/_testing/stats", params={"organization_id": organization_id})
    assert answer.status_code == 200
    body: dict[str, Any] = answer.json()
    return body


def approved_args(server: StdioServer, key: str) -> dict[str, Any]:
    """The gated first create's challenge turned into the approved retry's arguments."""
    arguments = create_input(idempotency_key=key).to_wire()
    challenge = server.call(CREATE, arguments)
    assert challenge is not None
    assert challenge["problem"]["code"] == "requires_user_confirmation", challenge
    match = APPROVAL_TOKEN_PATTERN.search(challenge["problem"]["message"])
    assert match is not None
    return arguments | {"approval": {"confirmed": True, "token": match.group(1)}}


def fill_log_to(path: Path, floor: int) -> None:
    """Grow the log with one genuine, chained record (earlier traffic) until it holds ``floor`` bytes."""
    log = AuditLog(path)
    try:
        size = path.stat().st_size if path.exists() else 0
        log.append(
            AuditDraft(
                id="aud_earlier_traffic",
                tool_name="handoff.request",
                created_at=datetime(2026, 5, 4, 11, 0, tzinfo=UTC),
                input={"reason": "requires_human", "message": "x" * max(floor - size, 1)},
                result={"ok": True},
                decision=Decision(ok=True),
            )
        )
    finally:
        log.close()


def no_growth_past(size: int) -> Callable[[], None]:
    """A child's pre-exec step: no file it writes may grow past ``size`` bytes (RLIMIT_FSIZE)."""

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (size, size))

    return limit


def audit_verify(log: Path) -> subprocess.CompletedProcess[str]:
    """`osbp audit verify LOG`, as an operator runs it."""
    environment = {key: value for key, value in os.environ.items() if not key.startswith("OSBP_")}
    return subprocess.run(
        [sys.executable, "-m", "osbp", "audit", "verify", str(log)],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=environment | {"PYTHONPATH": str(REPO)},
        timeout=60,
    )


def test_an_approved_create_the_audit_log_cannot_record_books_nothing(
    platform: PlatformServer, testing: httpx2.Client, tmp_path: Path
) -> None:
    """OSBP spec, Audit (every schema-valid call produces an audit event): a booking that cannot be
    explained does not happen; the agent gets a retryable Problem, and the retry books once."""
    log = tmp_path / "audit" / "events.jsonl"
    with StdioServer(server_env(platform.base_url, tmp_path)) as server:
        arguments = approved_args(server, "idem-wal-full")
    fill_log_to(log, LOG_FLOOR)
    before = log.read_bytes()
    limited = no_growth_past(len(before))
    with StdioServer(server_env(platform.base_url, tmp_path), preexec_fn=limited) as server:
        read = server.call("osbp_service_describe", {})
        assert read is not None
        assert read["problem"]["code"] == "audit_unavailable"
        answer = server.call(CREATE, arguments)
    assert answer is not None
    assert (answer["ok"], answer["problem"]["code"], answer["problem"]["retryable"]) == (
        False,
        "audit_unavailable",
        True,
    )
    assert "audit_event_id" not in answer
    counters = stats(testing)
    assert (counters["create_requests"], counters["appointments"]) == (0, 0), counters
    assert log.read_bytes() == before  # not one byte: no record, no torn line
    with StdioServer(server_env(platform.base_url, tmp_path)) as server:  # the log repaired
        receipt = server.call(CREATE, arguments)
    assert receipt is not None
    assert receipt["ok"] is True, receipt
    assert receipt["value"]["id"] == "receipt_idem-wal-full"
    counters = stats(testing)
    assert (counters["create_requests"], counters["appointments"]) == (1, 1), counters
    report = verify_chain(log)
    assert (report.ok, report.open_intents) == (True, ())


def test_a_verification_code_the_audit_log_cannot_record_is_never_sent(
    platform: PlatformServer, testing: httpx2.Client, tmp_path: Path
) -> None:
    """OSBP spec, Audit: verification.send sends a real SMS, which cannot be unsent: no record, no send."""
    log = tmp_path / "audit" / "events.jsonl"
    fill_log_to(log, LOG_FLOOR)
    limited = no_growth_past(log.stat().st_size)
    arguments = {"customer": {"phone": "+12125550199"}, "purpose": f"booking:{NOTARY}"}
    with StdioServer(server_env(platform.base_url, tmp_path, NOTARY), preexec_fn=limited) as server:
        answer = server.call("osbp_verification_send", arguments)
    assert answer is not None
    assert (answer["ok"], answer["problem"]["code"], answer["problem"]["retryable"]) == (
        False,
        "audit_unavailable",
        True,
    )
    assert stats(testing, NOTARY)["messages"] == 0
    with StdioServer(server_env(platform.base_url, tmp_path, NOTARY)) as server:
        sent = server.call("osbp_verification_send", arguments)
    assert sent is not None
    assert sent["ok"] is True, sent
    assert stats(testing, NOTARY)["messages"] == 1


@pytest.mark.parametrize("moment", ["before_post", "before_answer"])
def test_a_server_killed_between_intent_and_outcome_leaves_an_intent_the_retry_settles(
    platform: PlatformServer, testing: httpx2.Client, tmp_path: Path, moment: str
) -> None:
    """OSBP spec, Audit and booking.create idempotency: the crash leaves a durable intent that `osbp audit
    verify` names; the retry with the same key and approval books once and closes it."""
    key = f"idem-wal-{moment}"
    log = tmp_path / "audit" / "events.jsonl"
    crashing = {"OSBP_ADAPTER_FACTORY": "tests.support.crash_adapter:build", CRASH_AT: moment}
    with StdioServer(server_env(platform.base_url, tmp_path, **crashing)) as doomed:
        arguments = approved_args(doomed, key)
        assert doomed.call(CREATE, arguments) is None
        assert doomed.died()
    booked = stats(testing)["appointments"]
    assert booked == (1 if moment == "before_answer" else 0)
    intent = read_events(log)[-1]
    assert (intent["phase"], intent["tool_name"]) == ("intent", "booking.create")
    verdict = audit_verify(log)
    assert verdict.returncode == 0, verdict
    assert re.search(
        rf"^1 intent without an outcome: .*\n  {intent['id']} booking\.create mandate "
        rf"{intent['mandate_id']} at {intent['created_at']} \(line 2\)$",
        verdict.stdout,
        re.MULTILINE,
    ), verdict.stdout
    with StdioServer(server_env(platform.base_url, tmp_path)) as restarted:
        receipt = restarted.call(CREATE, arguments)
    assert receipt is not None
    assert receipt["ok"] is True, receipt
    assert receipt["value"]["id"] == f"receipt_{key}"
    counters = stats(testing)
    assert (counters["appointments"], counters["active_appointments"]) == (1, 1), counters
    outcome = read_events(log)[-1]
    assert outcome["id"] == receipt["audit_event_id"]
    assert outcome["payload_hash"] == intent["payload_hash"]
    verdict = audit_verify(log)
    assert verdict.returncode == 0, verdict
    assert verdict.stdout.startswith("ok: 4 events, chain intact"), verdict.stdout
    assert "without an outcome" not in verdict.stdout, verdict.stdout
