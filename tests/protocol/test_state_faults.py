"""A state store that fails under a booking.create: the agent is told to retry, and the retry is the one
booking (real processes: the platform, the MCP server as a stdio subprocess, a real PostgreSQL state whose
sessions are terminated; and the SQLite state file locked by another process's connection).

The server's adapter (tests/support/state_fault_adapter.py) breaks the state right after the platform
created the appointment, before the core could record it: the answer must be the retryable
``idempotency_in_progress`` (never ``internal_adapter_error``, which tells an agent the booking failed),
and the retry of the same payload, key and approval must answer the receipt of that one appointment.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

from osbp.backend.process import PlatformProcess
from osbp.protocol.approval import APPROVAL_TOKEN_PATTERN
from osbp.protocol.clock import FixedClock
from osbp.protocol.contract import Failure, Success
from osbp.protocol.core import OsbpCore
from osbp.protocol.models import Approval, Booking, BookingCreateInput, Problem
from osbp.protocol.port import BookingRequest
from osbp.protocol.problems import ExtensionCode
from osbp.protocol.store import StateStore
from tests.protocol.test_booking_crash import CREATE, approved, assert_one_booking, booking_args, server_env
from tests.support.mcp import NOW, create_args
from tests.support.memory_adapter import MemoryAdapter
from tests.support.reference import NOW as REFERENCE_NOW
from tests.support.state_fault_adapter import STATE_FAULT, allow_connections, maintenance_url
from tests.support.stdio import StdioServer

pytestmark = pytest.mark.integration


@pytest.fixture
def platform(tmp_path: Path) -> Iterator[PlatformProcess]:
    """The platform in its own process, frozen at the reference instant, with its test surface."""
    with PlatformProcess(
        db=str(tmp_path / "platform.sqlite3"), now=REFERENCE_NOW, enable_testing=True
    ) as running:
        yield running


def fault_env(base_url: str, tmp_path: Path, state: str, fault: str | None = None) -> dict[str, str]:
    """A server on the PostgreSQL state ``state`` whose adapter breaks it with ``fault`` (once)."""
    env = server_env(base_url, tmp_path, state=state)
    env["OSBP_ADAPTER_FACTORY"] = "tests.support.state_fault_adapter:build"
    if fault is not None:
        env[STATE_FAULT] = fault
    return env


def assert_retry_instruction(answer: dict[str, object] | None) -> None:
    """The answer after a state failure once the platform may hold the booking: retry the same call."""
    assert answer is not None
    assert answer["ok"] is False, answer
    problem = answer["problem"]
    assert isinstance(problem, dict)
    assert (problem["code"], problem["retryable"]) == (ExtensionCode.IDEMPOTENCY_IN_PROGRESS, True), answer
    assert "same payload, idempotency_key and approval" in problem["message"]


@pytest.mark.parametrize("fault", ["kill_in_complete", "down"])
def test_a_state_lost_after_the_platform_booked_answers_retry_and_the_retry_is_the_one_booking(
    platform: PlatformProcess, tmp_path: Path, postgres_url: str, fault: str
) -> None:
    """OSBP spec, booking.create idempotency (one logical create, one appointment): a state failure after
    the platform committed is retryable, and the same call again answers the appointment's receipt."""
    key = f"idem-state-{fault}"
    with StdioServer(fault_env(platform.base_url, tmp_path, postgres_url, fault)) as server:
        arguments = approved(server, booking_args(key))
        answer = server.call(CREATE, arguments)
        assert_retry_instruction(answer)
        if fault == "down":
            allow_connections(postgres_url, True)
        receipt = server.call(CREATE, arguments)
        assert receipt is not None
        assert_one_booking(receipt, key, platform.base_url)
        again = server.call(CREATE, arguments)
        assert again is not None
        assert again["value"] == receipt["value"]
        assert again["osbp_runtime"]["idempotency"] == "local_cache_replay"


def test_after_every_pooled_state_session_was_terminated_the_next_call_succeeds(
    platform: PlatformProcess, tmp_path: Path, postgres_url: str
) -> None:
    """Platform choice: dead pooled connections are dropped before use, so a server whose state sessions
    were all ended (a database restart, an operator) answers the next call, not a failure per session."""
    with StdioServer(fault_env(platform.base_url, tmp_path, postgres_url)) as server:
        first = server.call(CREATE, booking_args("idem-pool-1"))
        assert first is not None
        assert first["problem"]["code"] == "requires_user_confirmation", first
        database = postgres_url.rpartition("/")[2]
        with psycopg.connect(maintenance_url(postgres_url), autocommit=True) as admin:
            ended = [
                row[0]
                for row in admin.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s", (database,)
                )
            ]
            assert ended
            assert all(ended)
            deadline = time.monotonic() + 10
            while admin.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s", (database,)
            ).fetchone() != (0,):
                assert time.monotonic() < deadline, "the state sessions did not end"
                time.sleep(0.01)
        for index in range(2, 6):  # more calls than the pool keeps idle sessions
            answer = server.call(CREATE, booking_args(f"idem-pool-{index}"))
            assert answer is not None
            assert answer["problem"]["code"] == "requires_user_confirmation", answer


class LockingAdapter(MemoryAdapter):
    """The in-memory platform; another process's connection takes the state file's write lock right after
    the first appointment is made (as a backup or a stuck writer would), until ``unlock``."""

    def __init__(self, state_path: Path) -> None:
        super().__init__(clock=FixedClock(NOW))
        self._state_path = state_path
        self._holder: sqlite3.Connection | None = None
        self.armed = True

    async def place_booking(self, request: BookingRequest, customer_name: str) -> Booking | Problem:
        """Create, then lock the state file once."""
        result = await super().place_booking(request, customer_name)
        if self.armed:
            self.armed = False
            self._holder = sqlite3.connect(self._state_path, isolation_level=None)
            self._holder.execute("BEGIN IMMEDIATE")
        return result

    def unlock(self) -> None:
        """Release the write lock."""
        assert self._holder is not None
        self._holder.execute("ROLLBACK")
        self._holder.close()


@pytest.mark.anyio
async def test_a_locked_sqlite_state_after_the_platform_booked_answers_retry_and_the_retry_is_the_one_booking(
    tmp_path: Path,
) -> None:
    """OSBP spec, booking.create idempotency: SQLite's "database is locked" after the platform committed
    takes the same retryable path, and the retry (in the same process) resumes the one appointment at once."""
    path = tmp_path / "state" / "osbp.sqlite3"
    store = StateStore(path, busy_timeout_s=0.2)
    adapter = LockingAdapter(path)
    core = OsbpCore(adapter, state=store, clock=FixedClock(NOW))
    inp = BookingCreateInput.model_validate(create_args(idempotency_key="idem-sqlite-locked"))
    challenge = await core.create_booking(inp)
    assert isinstance(challenge, Failure)
    match = APPROVAL_TOKEN_PATTERN.search(challenge.problem.message)
    assert match is not None
    approved_inp = inp.model_copy(update={"approval": Approval(confirmed=True, token=match.group(1))})
    answer = await core.create_booking(approved_inp)
    assert isinstance(answer, Failure)
    assert (answer.problem.code, answer.problem.retryable) == (ExtensionCode.IDEMPOTENCY_IN_PROGRESS, True)
    adapter.unlock()
    started = time.monotonic()
    receipt = await core.create_booking(approved_inp)
    assert isinstance(receipt, Success), receipt
    assert time.monotonic() - started < 5  # the lease its release could not hand back is not waited out
    assert receipt.value.id == "receipt_idem-sqlite-locked"
    assert len(adapter.bookings) == 1
    await core.aclose()
