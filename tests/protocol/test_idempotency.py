"""Durable idempotency: replay, conflict, concurrent duplicates, restarts and shared files."""

from __future__ import annotations

import threading
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from osbp.protocol.clock import FixedClock
from osbp.protocol.contract import Failure, Success
from osbp.protocol.idempotency import (
    LOCAL_CACHE_REPLAY,
    Claimed,
    Conflict,
    IdempotencyStore,
    InProgress,
    Placing,
    Replay,
    booking_payload_hash,
    lease_owner,
)
from osbp.protocol.lifecycle_models import CancelResult
from osbp.protocol.models import Booking, BookingCreateInput, Money, Receipt
from osbp.protocol.problems import ExtensionCode
from osbp.protocol.state import open_state_store
from osbp.protocol.store import StateStore
from tests.support.processes import spawn_together

RECEIPT = Receipt(id="receipt_idem_1", booking_id="appt_1", text="Booked Regular cleaning.")
START = datetime(2026, 7, 1, 12, 0, tzinfo=UTC)


def create_input(**changes: Any) -> BookingCreateInput:
    base: dict[str, Any] = {
        "mandate": {
            "id": "mnd_1",
            "expires_at": "2026-07-31T23:59:59Z",
            "allowed_actions": ["booking.create"],
        },
        "idempotency_key": "idem_1",
        "service_id": "svc",
        "schedule_id": "sch",
        "provider_id": "prov",
        "date": "2026-07-07",
        "time": "09:00",
    }
    base.update(changes)
    return BookingCreateInput.model_validate(base)


@pytest.fixture
def store(state_location: str) -> IdempotencyStore:
    return IdempotencyStore(open_state_store(state_location), clock=FixedClock(START))


def test_payload_hash_ignores_transient_fields_but_not_the_key() -> None:
    """approval and verification_code are excluded from the hash; idempotency_key is in it (OSBP spec)."""
    plain = booking_payload_hash(create_input())
    with_transients = create_input(approval={"confirmed": True, "token": "t"}, verification_code="123456")
    assert booking_payload_hash(with_transients) == plain
    assert booking_payload_hash(create_input(idempotency_key="idem_2")) != plain
    assert booking_payload_hash(create_input(time="09:30")) != plain


def test_first_claim_owns_the_attempt_and_settled_key_replays(store: IdempotencyStore) -> None:
    """Same key and payload after success returns the same receipt without the platform (OSBP spec)."""
    outcome = store.claim("idem_1", "hash_a")
    assert isinstance(outcome, Claimed)
    store.complete(outcome.lease, RECEIPT)
    replay = store.claim("idem_1", "hash_a")
    assert replay == Replay(RECEIPT)
    assert store.settled_receipt("idem_1") == RECEIPT


def test_replay_diagnostics_are_the_spec_text() -> None:
    """osbp_runtime for a local replay is the spec's exact shape (OSBP spec, Result Envelope)."""
    assert LOCAL_CACHE_REPLAY.to_wire() == {
        "idempotency": "local_cache_replay",
        "message": "No platform create call was made; "
        "this result was replayed from local OSBP idempotency state.",
    }


def test_same_key_other_payload_conflicts_pending_or_settled(store: IdempotencyStore) -> None:
    """The same key with a different payload fails with idempotency_conflict (OSBP spec)."""
    outcome = store.claim("idem_1", "hash_a")
    assert isinstance(outcome, Claimed)
    pending_conflict = store.claim("idem_1", "hash_b")
    assert isinstance(pending_conflict, Conflict)
    assert pending_conflict.problem.code == "idempotency_conflict"
    assert pending_conflict.problem.retryable is False
    store.complete(outcome.lease, RECEIPT)
    assert isinstance(store.claim("idem_1", "hash_b"), Conflict)


def test_released_key_can_be_claimed_again_by_a_later_retry(store: IdempotencyStore) -> None:
    """A failed attempt (e.g. requires_verification) leaves the key free for the same attempt's retry."""
    first = store.claim("idem_1", "hash_a")
    assert isinstance(first, Claimed)
    store.release(first.lease)
    second = store.claim("idem_1", "hash_a")
    assert isinstance(second, Claimed)
    assert second.lease.lease_id != first.lease.lease_id


def test_a_released_key_stays_bound_to_its_payload(store: IdempotencyStore) -> None:
    """OSBP spec: the same key with a different payload conflicts, also after an attempt that failed."""
    first = store.claim("idem_1", "hash_a")
    assert isinstance(first, Claimed)
    store.release(first.lease)
    other = store.claim("idem_1", "hash_b")
    assert isinstance(other, Conflict)
    assert other.problem.code == "idempotency_conflict"
    assert isinstance(store.claim("idem_1", "hash_a"), Claimed)


def test_held_key_makes_a_duplicate_wait_then_answer_in_progress(state_location: str) -> None:
    """A duplicate waits only a bounded time, then gets a clear retryable problem (platform choice)."""
    store = IdempotencyStore(open_state_store(state_location), clock=FixedClock(START), wait_timeout_s=0.05)
    assert isinstance(store.claim("idem_1", "hash_a"), Claimed)
    outcome = store.claim("idem_1", "hash_a")
    assert isinstance(outcome, InProgress)
    assert outcome.problem.code == ExtensionCode.IDEMPOTENCY_IN_PROGRESS
    assert outcome.problem.retryable is True


def _waiting_claim(store_path: str, waiting: threading.Event, results: list[object]) -> None:
    store = IdempotencyStore(
        open_state_store(store_path), clock=FixedClock(START), on_wait=lambda _key: waiting.set()
    )
    results.append(store.claim("idem_1", "hash_a"))


@pytest.mark.parametrize("settle", ["complete", "release"])
def test_waiter_gets_replay_after_success_or_in_progress_after_failure(
    state_location: str, settle: str
) -> None:
    """A waiting duplicate replays the holder's receipt, or gets a retryable problem on failure (platform
    choice)."""
    path = state_location
    holder = IdempotencyStore(open_state_store(path), clock=FixedClock(START))
    claimed = holder.claim("idem_1", "hash_a")
    assert isinstance(claimed, Claimed)
    waiting, results = threading.Event(), list[object]()
    thread = threading.Thread(target=_waiting_claim, args=(path, waiting, results))
    thread.start()
    assert waiting.wait(10)
    if settle == "complete":
        holder.complete(claimed.lease, RECEIPT)
    else:
        holder.release(claimed.lease)
    thread.join(10)
    assert not thread.is_alive()
    expected = Replay if settle == "complete" else InProgress
    assert len(results) == 1
    assert isinstance(results[0], expected)


def test_expired_lease_of_a_crashed_holder_can_be_taken_over(state_location: str) -> None:
    """A lease past its TTL on the injected clock is taken over, not waited on forever (platform choice)."""
    clock = FixedClock(START)
    store = IdempotencyStore(open_state_store(state_location), clock=clock, lease_ttl=timedelta(minutes=2))
    first = store.claim("idem_1", "hash_a")
    assert isinstance(first, Claimed)
    clock.advance(timedelta(minutes=2))
    second = store.claim("idem_1", "hash_a")
    assert isinstance(second, Claimed)
    store.release(first.lease)  # the stale holder's release cannot drop the new owner's lease
    store.complete(second.lease, RECEIPT)
    assert store.claim("idem_1", "hash_a") == Replay(RECEIPT)


def test_settled_receipt_survives_a_restart(state_location: str) -> None:
    """The store is durable: a new instance on the same file replays (platform choice: survives a restart)."""
    path = state_location
    first = IdempotencyStore(open_state_store(path), clock=FixedClock(START))
    claimed = first.claim("idem_1", "hash_a")
    assert isinstance(claimed, Claimed)
    first.complete(claimed.lease, RECEIPT)
    del first
    restarted = IdempotencyStore(open_state_store(path), clock=FixedClock(START))
    assert restarted.claim("idem_1", "hash_a") == Replay(RECEIPT)
    assert isinstance(restarted.claim("idem_1", "hash_b"), Conflict)


def test_settling_with_a_booking_keeps_a_snapshot_that_survives_a_restart(state_location: str) -> None:
    """OSBP spec, booking.status: a local record is the documented fallback; it is kept durably at create."""
    path = state_location
    store = IdempotencyStore(open_state_store(path), clock=FixedClock(START))
    booking = Booking(
        id="appt_1",
        status="booked",
        service_id="svc",
        schedule_id="sch",
        provider_id="prov",
        starts_at="2026-07-07T13:00:00Z",
        starts_at_local="2026-07-07T09:00:00",
        schedule_timezone="America/New_York",
    )
    claimed = store.claim("idem_1", "hash_a")
    assert isinstance(claimed, Claimed)
    store.complete(claimed.lease, RECEIPT, booking)
    restarted = IdempotencyStore(open_state_store(path), clock=FixedClock(START))
    assert restarted.booking_snapshot("appt_1") == booking
    assert restarted.booking_snapshot("appt_2") is None


def test_settling_without_a_booking_keeps_no_snapshot(store: IdempotencyStore) -> None:
    """Platform choice: a snapshot exists only where the create reported the booking."""
    claimed = store.claim("idem_1", "hash_a")
    assert isinstance(claimed, Claimed)
    store.complete(claimed.lease, RECEIPT)
    assert store.booking_snapshot("appt_1") is None


def test_concurrent_duplicate_threads_make_exactly_one_claim(state_location: str) -> None:
    """Concurrent duplicates of one key: exactly one proceeds to the platform create (platform choice)."""
    path = state_location
    barrier = threading.Barrier(8)
    outcomes: list[str] = []
    lock = threading.Lock()

    def attempt() -> None:
        try:
            store = IdempotencyStore(open_state_store(path), clock=FixedClock(START))
            barrier.wait(10)
            outcome = store.claim("idem_1", "hash_a")
            if isinstance(outcome, Claimed):
                store.complete(outcome.lease, RECEIPT)
            name = type(outcome).__name__
        except Exception as error:  # reported in the assertion below, not lost in a thread
            barrier.abort()
            name = repr(error)
        with lock:
            outcomes.append(name)

    threads = [threading.Thread(target=attempt) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert Counter(outcomes) == {"Claimed": 1, "Replay": 7}


def _process_attempt(path: str, start: Any, results: Any) -> None:
    store = IdempotencyStore(open_state_store(path), clock=FixedClock(START))
    start.wait(30)
    outcome = store.claim("idem_shared", "hash_a")
    if isinstance(outcome, Claimed):
        store.complete(outcome.lease, RECEIPT)
        results.put("Claimed")
    elif isinstance(outcome, Replay):
        results.put("Replay" if outcome.receipt == RECEIPT else "WrongReceipt")
    else:
        results.put(type(outcome).__name__)


@pytest.mark.integration
def test_two_processes_sharing_the_file_make_exactly_one_claim(state_location: str) -> None:
    """Several processes sharing the state file never both create (platform choice: safe across processes)."""
    path = state_location
    open_state_store(path)  # create the schema once, as a running server would have
    assert spawn_together(_process_attempt, path, 4) == {"Claimed": 1, "Replay": 3}


@pytest.mark.anyio
async def test_async_wrappers_claim_complete_and_release(store: IdempotencyStore) -> None:
    """The store is usable from the async adapter (platform choice: sqlite in a worker thread)."""
    outcome = await store.aclaim("idem_async", "h")
    assert isinstance(outcome, Claimed)
    await store.arelease(outcome.lease)
    again = await store.aclaim("idem_async", "h")
    assert isinstance(again, Claimed)
    await store.acomplete(again.lease, RECEIPT)
    assert await store.aclaim("idem_async", "h") == Replay(RECEIPT)


def test_a_lease_held_by_a_process_that_no_longer_runs_is_taken_over_at_once(state_location: str) -> None:
    """Platform choice (crash safety): a provably dead holder is not waited out for the lease's TTL."""
    import multiprocessing

    store = IdempotencyStore(open_state_store(state_location), wait_timeout_s=0.2)
    claim = store.claim("idem_dead", "hash")
    assert isinstance(claim, Claimed)
    gone = multiprocessing.get_context("spawn").Process(target=int)
    gone.start()
    gone.join()
    with open_state_store(state_location).write() as db:
        owner = lease_owner().split("|")
        db.execute(
            "UPDATE idempotency SET lease_owner = ? WHERE key = 'idem_dead'", (f"{owner[0]}|{gone.pid}|-",)
        )
    assert isinstance(store.claim("idem_dead", "hash"), Claimed)
    live = store.claim("idem_dead", "hash")  # now held by this (live) process: waited out, not taken
    assert isinstance(live, InProgress)


def test_an_attempt_marked_as_placed_survives_a_release_with_an_unknown_outcome(state_location: str) -> None:
    """Platform choice (crash safety): only a known refusal clears the placed mark; a resume needs it."""
    store = IdempotencyStore(open_state_store(state_location))
    claim = store.claim("idem_placed", "hash")
    assert isinstance(claim, Claimed)
    store.mark_placing(claim.lease, "apv_token", {"service_name": "Cleaning"})
    store.release(claim.lease, outcome_known=False)
    placed = store.peek("idem_placed", "hash")
    assert isinstance(placed, Placing)
    assert placed.context == {"service_name": "Cleaning"}
    again = store.claim("idem_placed", "hash")
    assert isinstance(again, Claimed)
    assert again.placing == placed
    store.release(again.lease)
    assert store.peek("idem_placed", "hash") is None


def test_a_state_file_from_before_the_placed_mark_gains_its_columns(tmp_path: Path) -> None:
    """Platform choice: an older state file keeps working after an upgrade (columns added on open)."""
    import sqlite3

    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as db:
        db.execute(
            "CREATE TABLE idempotency (key TEXT PRIMARY KEY, payload_hash TEXT NOT NULL, state TEXT NOT NULL"
            " CHECK (state IN ('pending', 'settled')), receipt_json TEXT, lease_id TEXT,"
            " lease_expires INTEGER, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL)"
        )
    store = IdempotencyStore(StateStore(path))
    assert isinstance(store.claim("idem_old", "hash"), Claimed)


@pytest.mark.anyio
async def test_a_booking_create_on_a_free_state_file_makes_no_worker_thread_hand_off(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Platform choice: the preflight and the approved create (peek, claim, approval, placed mark,
    settle, spend) run their state operations on the event loop when nothing holds the file's lock."""
    import anyio.to_thread

    from osbp.protocol.approval import APPROVAL_TOKEN_PATTERN
    from osbp.protocol.core import OsbpCore
    from osbp.protocol.models import Approval
    from tests.support.mcp import NOW, create_args
    from tests.support.memory_adapter import MemoryAdapter

    clock = FixedClock(NOW)
    core = OsbpCore(MemoryAdapter(clock=clock), state=tmp_path / "state.sqlite3", clock=clock)
    handed_off: list[object] = []
    real = anyio.to_thread.run_sync

    async def counted(function: Any, *args: Any, **kwargs: Any) -> Any:
        handed_off.append(function)
        return await real(function, *args, **kwargs)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
    inp = BookingCreateInput.model_validate(create_args())
    preflight = await core.create_booking(inp)
    assert isinstance(preflight, Failure)
    match = APPROVAL_TOKEN_PATTERN.search(preflight.problem.message)
    assert match is not None
    approved = inp.model_copy(update={"approval": Approval(confirmed=True, token=match.group(1))})
    created = await core.create_booking(approved)
    assert isinstance(created, Success)
    assert handed_off == []
    await core.aclose()


def test_a_key_in_one_scope_is_unknown_in_another(store: IdempotencyStore) -> None:
    """OSBP spec, booking.create idempotency, per caller: another organization or subject using the same
    key meets neither the settled receipt nor a conflict with the first payload; it gets its own attempt."""
    first = store.claim("idem_scoped", "hash_a", "org_a|alice")
    assert isinstance(first, Claimed)
    store.complete(first.lease, RECEIPT)
    assert store.peek("idem_scoped", "hash_a", "org_a|mallory") is None
    other_subject = store.claim("idem_scoped", "hash_a", "org_a|mallory")
    assert isinstance(other_subject, Claimed)
    assert other_subject.placing is None
    other_organization = store.claim("idem_scoped", "hash_b", "org_b|alice")
    assert isinstance(other_organization, Claimed)
    assert store.claim("idem_scoped", "hash_a", "org_a|alice") == Replay(RECEIPT)
    assert store.settled_receipt("idem_scoped", "org_a|alice") == RECEIPT
    assert store.settled_receipt("idem_scoped", "org_a|mallory") is None


#: The idempotency table as versions before scopes made it (SQLite types).
UNSCOPED_TABLE = (
    "CREATE TABLE idempotency (key TEXT PRIMARY KEY, payload_hash TEXT NOT NULL, state TEXT NOT NULL"
    " CHECK (state IN ('pending', 'settled')), receipt_json TEXT, lease_id TEXT, lease_expires INTEGER,"
    " created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, lease_owner TEXT, placing_json TEXT)"
)


def make_unscoped_state(state_location: str) -> None:
    """A state as an older version left it: a settled key, a key sent to the platform, a released key."""
    rows = [
        ("idem_old_settled", "hash_s", "settled", RECEIPT.to_wire_json(), None),
        (
            "idem_old_placed",
            "hash_p",
            "pending",
            None,
            '{"token_hash":"th","context":{"service_name":"Cut"}}',
        ),
        ("idem_old_released", "hash_r", "pending", None, None),
    ]
    insert = (
        "INSERT INTO idempotency (key, payload_hash, state, receipt_json, placing_json, created_at,"
        " updated_at) VALUES (?, ?, ?, ?, ?, 1, 1)"
    )
    if state_location.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(state_location) as db:
            db.execute(UNSCOPED_TABLE.replace(" INTEGER", " BIGINT"))
            for row in rows:
                db.execute(insert.replace("?", "%s"), row)
        return
    import sqlite3

    Path(state_location).parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(state_location) as db:
        db.execute(UNSCOPED_TABLE)
        db.executemany(insert, rows)


def test_a_state_made_before_scopes_keeps_its_records_for_the_first_caller_retrying_them(
    state_location: str,
) -> None:
    """OSBP spec, booking.create idempotency (one logical create is one appointment): across the upgrade
    a retry of a settled or placed attempt replays or resumes it; the record then belongs to that caller."""
    make_unscoped_state(state_location)
    store = IdempotencyStore(open_state_store(state_location), clock=FixedClock(START))
    assert store.peek("idem_old_settled", "hash_s", "org|local") == Replay(RECEIPT)
    assert store.claim("idem_old_settled", "hash_s", "org|local") == Replay(RECEIPT)
    assert store.peek("idem_old_settled", "hash_s", "org|someone-else") is None
    placed = store.peek("idem_old_placed", "hash_p", "org|local")
    assert placed == Placing(token_hash="th", context={"service_name": "Cut"})
    resumed = store.claim("idem_old_placed", "hash_p", "org|local")
    assert isinstance(resumed, Claimed)
    assert resumed.placing == placed
    # A released attempt made nothing: it stays behind, and the key is free for a scoped caller's attempt.
    assert store.peek("idem_old_released", "hash_r", "org|local") is None
    assert isinstance(store.claim("idem_old_released", "hash_other", "org|local"), Claimed)
    # Opening the upgraded state again changes nothing.
    again = IdempotencyStore(open_state_store(state_location), clock=FixedClock(START))
    assert again.claim("idem_old_settled", "hash_s", "org|local") == Replay(RECEIPT)


def test_a_booking_counts_as_created_only_in_the_scope_whose_create_settled_it(
    store: IdempotencyStore,
) -> None:
    """docs/lifecycle.md, Whose booking: another subject's record under the same key proves nothing."""
    alice = store.claim("idem_1", "hash_a", "org|alice")
    bob = store.claim("idem_1", "hash_b", "org|bob")
    assert isinstance(alice, Claimed)
    assert isinstance(bob, Claimed)
    store.complete(alice.lease, RECEIPT, Booking(id="appt_1", status="booked"))
    bobs = Receipt(id="receipt_idem_1", booking_id="appt_2", text="Booked.")
    store.complete(bob.lease, bobs, Booking(id="appt_2", status="booked"))
    found = [
        store.created_in_scope(booking_id, scope)
        for booking_id in ("appt_1", "appt_2", "appt_3")
        for scope in ("org|alice", "org|bob")
    ]
    assert found == [True, False, False, True, False, False]


def test_a_replay_keeps_the_whole_stored_result_beside_its_receipt(store: IdempotencyStore) -> None:
    """Platform choice: a lifecycle result (more fields than a receipt) settles and replays in full."""
    claim = store.claim("idem_change", "hash_c", "org|local")
    assert isinstance(claim, Claimed)
    fee = Money(amount_minor=0, currency="USD")
    result = CancelResult(id="receipt_c", booking_id="appt_1", status="cancelled", fee=fee, text="Cancelled.")
    store.complete(claim.lease, result)
    replay = store.peek("idem_change", "hash_c", "org|local")
    assert isinstance(replay, Replay)
    assert replay.receipt == Receipt(id="receipt_c", booking_id="appt_1", text="Cancelled.")
    assert CancelResult.model_validate_json(replay.stored) == result
