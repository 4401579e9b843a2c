"""Answered confirmation rounds in the shared state: the first no to a round is its answer for good.

Every test runs on both engines (``state_location``: a SQLite file, then a PostgreSQL database).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from osbp.protocol.clock import FixedClock
from osbp.protocol.confirmation_rounds import ConfirmationRounds, new_round_id
from osbp.protocol.state import StateBackend, open_state_store
from osbp.protocol.store import secret_hash
from tests.support.state import stored_text

pytestmark = pytest.mark.anyio

TTL = timedelta(minutes=10)
PAYLOAD = "payl" * 16


@pytest.fixture
def clock() -> FixedClock:
    """A frozen clock."""
    return FixedClock(datetime(2026, 5, 1, 16, 0, tzinfo=UTC))


@pytest.fixture
def rounds(state: StateBackend, clock: FixedClock) -> ConfirmationRounds:
    """The rounds of one replica."""
    return ConfirmationRounds(state, clock, TTL)


async def test_a_declined_round_stays_declined_whatever_answer_follows(rounds: ConfirmationRounds) -> None:
    """Platform choice (host confirmation): a decline or a cancel spends the round; no accept revives it."""
    round_id = new_round_id()
    assert await rounds.standing(round_id, PAYLOAD) is None
    assert await rounds.answer(round_id, PAYLOAD, "declined") == "declined"
    assert await rounds.answer(round_id, PAYLOAD, "accepted") == "declined"
    assert await rounds.standing(round_id, PAYLOAD) == "declined"


async def test_an_accept_stands_for_its_retries_until_a_decline_spends_it(rounds: ConfirmationRounds) -> None:
    """Platform choice: a retried accept is the same answer; a later no to that round still wins."""
    round_id = new_round_id()
    assert await rounds.answer(round_id, PAYLOAD, "accepted") == "accepted"
    assert await rounds.answer(round_id, PAYLOAD, "accepted") == "accepted"
    assert await rounds.answer(round_id, PAYLOAD, "declined") == "declined"
    assert await rounds.answer(round_id, PAYLOAD, "accepted") == "declined"


async def test_a_round_recorded_for_another_payload_confirms_nothing(rounds: ConfirmationRounds) -> None:
    """Platform choice: a round is one payload's; any other payload finds it declined."""
    round_id = new_round_id()
    assert await rounds.answer(round_id, PAYLOAD, "accepted") == "accepted"
    assert await rounds.answer(round_id, "x" * 64, "accepted") == "declined"
    assert await rounds.standing(round_id, "x" * 64) == "declined"


async def test_every_replica_sees_a_decline_and_the_store_keeps_the_rounds_hash_only(
    rounds: ConfirmationRounds, state_location: str, clock: FixedClock
) -> None:
    """Platform choice (replicas share the state): a round declined on one is declined on the other."""
    other = ConfirmationRounds(open_state_store(state_location), clock, TTL)
    round_id = new_round_id()
    assert await rounds.answer(round_id, PAYLOAD, "declined") == "declined"
    assert await other.answer(round_id, PAYLOAD, "accepted") == "declined"
    held = stored_text(state_location)
    assert secret_hash(round_id) in held
    assert round_id not in held
