"""URL-mode confirmation pages in the shared state: single-use, expiring, bound, secrets kept as hashes.

Every test runs on both engines (``state_location``: a SQLite file, then a PostgreSQL database).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import anyio
import pytest

from osbp.protocol.clock import FixedClock
from osbp.protocol.confirmation_pages import ConfirmationPages
from osbp.protocol.state import StateBackend, open_state_store
from osbp.protocol.store import secret_hash
from tests.support.state import stored_text

pytestmark = pytest.mark.anyio

TTL = timedelta(minutes=10)
SUBJECT, PAYLOAD, SUMMARY = "subj" * 16, "payl" * 16, "summ" * 16


@pytest.fixture
def clock() -> FixedClock:
    """A frozen clock."""
    return FixedClock(datetime(2026, 5, 1, 16, 0, tzinfo=UTC))


@pytest.fixture
def pages(state: StateBackend, clock: FixedClock) -> ConfirmationPages:
    """The pages of one replica."""
    return ConfirmationPages(state, clock, TTL)


async def test_a_confirmed_page_is_redeemed_once_by_its_subject_for_its_summary(
    pages: ConfirmationPages,
) -> None:
    """Platform choice (URL mode): pending, confirmed once, then spent by one booking and no other."""
    issued = await pages.issue(SUBJECT, PAYLOAD, SUMMARY, "Book it.")
    assert (await pages.view(issued.secret)).summary == "Book it."
    assert await pages.redeem(issued.key, SUBJECT, PAYLOAD, SUMMARY) == "pending"
    assert await pages.answer(issued.secret, True, SUMMARY) == "confirmed"
    assert await pages.answer(issued.secret, True, SUMMARY) == "answered"
    assert (await pages.view(issued.secret)).refused == "answered"
    assert await pages.redeem(issued.key, "other" * 13, PAYLOAD, SUMMARY) == "foreign"
    assert await pages.redeem(issued.key, SUBJECT, "x" * 64, SUMMARY) == "foreign"
    assert await pages.redeem(issued.key, SUBJECT, PAYLOAD, "y" * 64) == "other_summary"
    assert await pages.redeem(issued.key, SUBJECT, PAYLOAD, SUMMARY) == "confirmed"
    assert await pages.redeem(issued.key, SUBJECT, PAYLOAD, SUMMARY) == "used"


async def test_a_page_expires_unanswered_and_a_declined_page_never_books(
    pages: ConfirmationPages, clock: FixedClock
) -> None:
    """Platform choice (URL mode): the page lives as long as an approval token, and a no is final."""
    declined = await pages.issue(SUBJECT, PAYLOAD, SUMMARY, "Book it.")
    assert await pages.answer(declined.secret, False, SUMMARY) == "declined"
    assert await pages.redeem(declined.key, SUBJECT, PAYLOAD, SUMMARY) == "declined"
    late = await pages.issue(SUBJECT, PAYLOAD, SUMMARY, "Book it.")
    clock.advance(TTL)
    assert (await pages.view(late.secret)).refused == "expired"
    assert await pages.answer(late.secret, True, SUMMARY) == "expired"
    assert await pages.redeem(late.key, SUBJECT, PAYLOAD, SUMMARY) == "expired"


async def test_an_answer_for_another_summary_or_an_unknown_secret_changes_nothing(
    pages: ConfirmationPages,
) -> None:
    """Platform choice (URL mode): the answer binds the summary the page showed; a made-up URL is unknown."""
    issued = await pages.issue(SUBJECT, PAYLOAD, SUMMARY, "Book it.")
    assert await pages.answer(issued.secret, True, "z" * 64) == "other_summary"
    assert await pages.answer("not-a-page", True, SUMMARY) == "unknown"
    assert (await pages.view("not-a-page")).refused == "unknown"
    assert await pages.redeem(issued.key, SUBJECT, PAYLOAD, SUMMARY) == "pending"


async def test_of_two_replicas_answering_one_page_at_once_exactly_one_wins(
    state_location: str, clock: FixedClock
) -> None:
    """Platform choice (URL mode): single use holds across replicas sharing the state."""
    replicas = [ConfirmationPages(open_state_store(state_location), clock, TTL) for _ in range(2)]
    issued = await replicas[0].issue(SUBJECT, PAYLOAD, SUMMARY, "Book it.")
    assert await replicas[1].answer(issued.secret, True, SUMMARY) == "confirmed"
    outcomes: list[str] = []

    async def redeem(pages: ConfirmationPages) -> None:
        outcomes.append(await pages.redeem(issued.key, SUBJECT, PAYLOAD, SUMMARY))

    async with anyio.create_task_group() as group:
        for pages in replicas * 2:
            group.start_soon(redeem, pages)
    assert sorted(outcomes) == ["confirmed", "used", "used", "used"]


async def test_the_store_keeps_the_secrets_hash_never_the_secret_and_drops_an_answered_summary(
    pages: ConfirmationPages, state: StateBackend, state_location: str
) -> None:
    """Platform choice (URL mode): a copy of the state cannot open or answer a page."""
    issued = await pages.issue(SUBJECT, PAYLOAD, SUMMARY, "Book it.")
    assert issued.key == secret_hash(issued.secret)
    held = stored_text(state_location)
    assert issued.key in held
    assert issued.secret not in held
    assert await pages.answer(issued.secret, True, SUMMARY) == "confirmed"
    with state.read() as db:
        assert db.execute("SELECT summary FROM confirmation_pages").fetchone() == ("",)
