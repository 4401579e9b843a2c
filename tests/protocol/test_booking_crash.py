"""One logical create is one appointment, whatever process dies when (real processes, real SIGKILL).

The platform runs as its own process on a database file, the MCP server as a stdio subprocess whose
adapter kills it on cue (tests/support/crash_adapter.py). After each crash the test starts what died
again on the same files and retries the same call, with the same idempotency key and approval, as an
agent would: the retry must return that appointment's receipt (never ``slot_taken``, never a second
appointment) and the key must not be stuck.
"""

from __future__ import annotations

import os
import signal
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from osbp.backend.process import PlatformProcess
from osbp.protocol.approval import APPROVAL_TOKEN_PATTERN
from osbp.protocol.timeutil import format_instant
from tests.support.crash_adapter import CRASH_AT
from tests.support.reference import NOW, ORG, create_input
from tests.support.stdio import StdioServer

pytestmark = pytest.mark.integration

CREATE = "osbp_booking_create"


@pytest.fixture
def platform_db(tmp_path: Path) -> Path:
    """The platform's database file (it outlives a killed platform process)."""
    return tmp_path / "platform.sqlite3"


@pytest.fixture
def platform(platform_db: Path) -> Iterator[PlatformProcess]:
    """The platform in its own process, frozen at NOW, with its test surface."""
    with PlatformProcess(db=str(platform_db), now=NOW, enable_testing=True) as running:
        yield running


def server_env(base_url: str, tmp_path: Path, crash_at: str | None = None) -> dict[str, str]:
    """One server's configuration; the state and audit files are the same for every restart."""
    env = {
        "OSBP_PLATFORM_BASE_URL": base_url,
        "OSBP_ORGANIZATION_ID": ORG,
        "OSBP_STATE_PATH": str(tmp_path / "state" / "osbp.sqlite3"),
        "OSBP_AUDIT_LOG_PATH": str(tmp_path / "audit" / "events.jsonl"),
        "OSBP_NOW": format_instant(NOW),
    }
    if crash_at is not None:
        env |= {"OSBP_ADAPTER_FACTORY": "tests.support.crash_adapter:build", CRASH_AT: crash_at}
    return env


def stats(base_url: str) -> dict[str, Any]:
    """The platform's own counters for the organization."""
    answer = httpx2.get(f"{base_url}/_testing/stats", params={"organization_id": ORG}, trust_env=False)
    assert answer.status_code == 200
    body: dict[str, Any] = answer.json()
    return body


def booking_args(key: str) -> dict[str, Any]:
    """booking.create arguments for Carolyn's Dental (a platform that never double-books a provider)."""
    return create_input(idempotency_key=key).to_wire()


def approved(server: StdioServer, arguments: dict[str, Any]) -> dict[str, Any]:
    """The preflight's challenge turned into the approved retry's arguments."""
    challenge = server.call(CREATE, arguments)
    assert challenge is not None
    assert challenge["problem"]["code"] == "requires_user_confirmation", challenge
    match = APPROVAL_TOKEN_PATTERN.search(challenge["problem"]["message"])
    assert match is not None
    return arguments | {"approval": {"confirmed": True, "token": match.group(1)}}


def assert_one_booking(receipt: dict[str, Any], key: str, base_url: str) -> None:
    """The retry's receipt is the key's, and the platform holds exactly that one appointment."""
    assert receipt["ok"] is True, receipt
    assert receipt["value"]["id"] == f"receipt_{key}"
    counters = stats(base_url)
    assert counters["active_appointments"] == 1, counters


@pytest.mark.parametrize("moment", ["before_post", "before_answer", "after_answer"])
def test_a_server_killed_during_the_approved_create_settles_on_the_retry(
    platform: PlatformProcess, tmp_path: Path, moment: str
) -> None:
    """OSBP spec, booking.create idempotency: the same key and approval return the one appointment."""
    key = f"idem-crash-{moment}"
    with StdioServer(server_env(platform.base_url, tmp_path, crash_at=moment)) as doomed:
        arguments = approved(doomed, booking_args(key))
        assert doomed.call(CREATE, arguments) is None
        assert doomed.died()
    with StdioServer(server_env(platform.base_url, tmp_path)) as restarted:
        receipt = restarted.call(CREATE, arguments)
        assert receipt is not None
        assert_one_booking(receipt, key, platform.base_url)
        again = restarted.call(CREATE, arguments)
        assert again is not None
        assert again["value"] == receipt["value"]
        assert again["osbp_runtime"]["idempotency"] == "local_cache_replay"


def test_a_server_killed_after_its_claim_leaves_no_stuck_key(
    platform: PlatformProcess, tmp_path: Path
) -> None:
    """OSBP spec, booking.create: a holder that died is taken over at once, not after the lease's wait."""
    key = "idem-crash-after-claim"
    with StdioServer(server_env(platform.base_url, tmp_path, crash_at="after_claim")) as doomed:
        assert doomed.call(CREATE, booking_args(key)) is None
        assert doomed.died()
    with StdioServer(server_env(platform.base_url, tmp_path)) as restarted:
        started = time.monotonic()
        arguments = approved(restarted, booking_args(key))
        assert time.monotonic() - started < 20, "the dead holder's lease was waited out"
        receipt = restarted.call(CREATE, arguments)
        assert receipt is not None
        assert_one_booking(receipt, key, platform.base_url)


def test_a_platform_killed_before_its_commit_leaves_the_key_free(platform_db: Path, tmp_path: Path) -> None:
    """Platform choice (crash safety): the key's record and the create commit together, or not at all."""
    key = "idem-crash-platform"
    first = PlatformProcess(db=str(platform_db), now=NOW, enable_testing=True).start()
    try:
        with StdioServer(server_env(first.base_url, tmp_path)) as server:
            arguments = approved(server, booking_args(key))
            # Hold the platform's write lock: its create will wait on it, after the POST arrived.
            holder = sqlite3.connect(platform_db, isolation_level=None)
            holder.execute("BEGIN IMMEDIATE")
            answers: list[dict[str, Any] | None] = []
            calling = threading.Thread(target=lambda: answers.append(server.call(CREATE, arguments)))
            calling.start()
            deadline = time.monotonic() + 30
            while stats(first.base_url)["create_requests"] == 0:
                assert time.monotonic() < deadline, "the create never reached the platform"
                time.sleep(0.02)
            os.kill(first.pid, signal.SIGKILL)
            calling.join(timeout=60)
            holder.execute("ROLLBACK")
            holder.close()
            [answer] = answers
            assert answer is not None
            assert (answer["problem"]["code"], answer["problem"]["retryable"]) == (
                "upstream_unavailable",
                True,
            )
    finally:
        first.stop()
    with PlatformProcess(db=str(platform_db), now=NOW, enable_testing=True) as second:
        assert stats(second.base_url)["active_appointments"] == 0
        with StdioServer(server_env(second.base_url, tmp_path)) as server:
            receipt = server.call(CREATE, arguments)
            assert receipt is not None
            assert_one_booking(receipt, key, second.base_url)
