"""The purge of expired per-attempt state: gone after the retention, personal data with it; the rest kept.

Every test runs on both engines (``state_location``: a SQLite file, whose bytes and WAL are read, then a
PostgreSQL database, whose rows are read).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from osbp.protocol.approval import ApprovalGate
from osbp.protocol.clock import FixedClock
from osbp.protocol.confirmation_pages import ConfirmationPages
from osbp.protocol.confirmation_rounds import ConfirmationRounds, new_round_id
from osbp.protocol.idempotency import Claimed, IdempotencyStore
from osbp.protocol.models import Booking, BookingCreateInput, Receipt
from osbp.protocol.retention import DEFAULT_RETENTION, StatePurge
from osbp.protocol.state import StateBackend
from tests.support.mcp import create_args
from tests.support.state import stored_text

pytestmark = pytest.mark.anyio

TTL = timedelta(minutes=10)
SUBJECT, PAYLOAD = "subj" * 16, "payl" * 16


def summary(name: str) -> str:
    """An approval summary naming the customer, as a page shows it."""
    return f"Book Haircut on Tuesday at 13:00 at 12 Main St. Price: $95.00. The merchant will see {name}."


@pytest.fixture
def clock() -> FixedClock:
    """A frozen clock."""
    return FixedClock(datetime(2026, 5, 1, 16, 0, tzinfo=UTC))


def count(state: StateBackend, table: str) -> int:
    """Rows in ``table``."""
    with state.read() as db:
        rows: int = db.execute(f"SELECT count(*) FROM {table}").fetchone()[0]  # noqa: S608  # constant names
    return rows


async def test_an_expired_page_is_purged_after_the_retention_with_its_summary_and_a_live_one_stays(
    state: StateBackend, state_location: str, clock: FixedClock
) -> None:
    """Platform choice (data minimisation, docs/server.md): an expired page's summary leaves the store."""
    pages = ConfirmationPages(state, clock, TTL)
    purge = StatePurge(state, clock)
    await pages.issue(SUBJECT, PAYLOAD, "a" * 64, summary("Expired Person"))
    clock.advance(TTL + DEFAULT_RETENTION)  # exactly the retention past the first page's expiry: kept
    live = await pages.issue(SUBJECT, PAYLOAD, "b" * 64, summary("Live Person"))
    assert (await purge.apurge()).confirmation_pages == 0
    assert "Expired Person" in stored_text(state_location)
    clock.advance(timedelta(microseconds=1))
    purged = await purge.apurge()
    assert purged.confirmation_pages == 1
    held = stored_text(state_location)
    assert "Expired Person" not in held
    assert "Live Person" in held
    assert count(state, "confirmation_pages") == 1
    assert (await pages.view(live.secret)).summary == summary("Live Person")


async def test_expired_approvals_and_rounds_are_purged_and_receipts_and_snapshots_are_kept(
    state: StateBackend, clock: FixedClock
) -> None:
    """Platform choice (docs/server.md, what the state keeps): a receipt replays a booking that exists."""
    gate = ApprovalGate(state, clock=clock, ttl=TTL)
    rounds = ConfirmationRounds(state, clock, TTL)
    idempotency = IdempotencyStore(state, clock=clock)
    inp = BookingCreateInput.model_validate(create_args())
    gate.evaluate(inp, summary("Jane Customer"))
    await rounds.answer(new_round_id(), PAYLOAD, "declined")
    claim = idempotency.claim(inp.idempotency_key, PAYLOAD)
    assert isinstance(claim, Claimed)
    booking = Booking(id="appt_1", status="booked")
    idempotency.complete(claim.lease, Receipt(id="rcpt_1", booking_id="appt_1", text="Booked."), booking)
    clock.advance(TTL + DEFAULT_RETENTION + timedelta(seconds=1))
    purged = await StatePurge(state, clock).apurge()
    assert (purged.approvals, purged.confirmation_rounds) == (1, 1)
    assert (count(state, "approvals"), count(state, "confirmation_rounds")) == (0, 0)
    assert count(state, "idempotency") == 1
    assert count(state, "booking_snapshots") == 1


async def test_a_backlog_is_purged_in_bounded_batches(state: StateBackend, clock: FixedClock) -> None:
    """Platform choice: one purge deletes at most one batch per table, and says when more are left."""
    pages = ConfirmationPages(state, clock, TTL)
    for index in range(5):
        await pages.issue(SUBJECT, PAYLOAD, f"{index}" * 64, summary(f"Person {index}"))
    clock.advance(TTL + DEFAULT_RETENTION + timedelta(seconds=1))
    purge = StatePurge(state, clock, batch=2)
    first = await purge.apurge()
    assert (first.confirmation_pages, first.full) == (2, True)
    rest = [await purge.apurge() for _ in range(2)]
    assert [(each.confirmation_pages, each.full) for each in rest] == [(2, True), (1, False)]
    assert count(state, "confirmation_pages") == 0
