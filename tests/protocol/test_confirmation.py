"""The final-confirmation seam of booking.create's pipeline, with a confirmer standing in for the host.

The server's elicitation confirmers are tested over MCP (tests/server/test_confirmation.py); here the
protocol's own promises: only an accept of the very summary books, a refusal books nothing, and an
attempt the user confirmed resumes after an unknown outcome without asking again.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from osbp.protocol.canonical import sha256_hex
from osbp.protocol.clock import FixedClock
from osbp.protocol.confirmation import ConfirmationTrail, Confirmed, Refused, confirming
from osbp.protocol.contract import Failure, Success
from osbp.protocol.core import OsbpCore
from osbp.protocol.models import BookingCreateInput
from osbp.protocol.problems import ProblemCode, problem
from tests.support.mcp import NOW, create_args
from tests.support.memory_adapter import MemoryAdapter

pytestmark = pytest.mark.anyio

NO = problem(ProblemCode.REQUIRES_USER_CONFIRMATION, "The user declined.", retryable=False)


class Stub:
    """A confirmer whose user answers with ``answer(summary_hash)``; records every summary asked."""

    def __init__(self, answer: object) -> None:
        self.answer = answer
        self.asked: list[str] = []

    async def confirm(self, inp: BookingCreateInput, summary: str, summary_hash: str) -> Confirmed | Refused:
        self.asked.append(summary)
        result = self.answer(summary_hash) if callable(self.answer) else self.answer
        assert isinstance(result, Confirmed | Refused)
        return result


@pytest.fixture
def adapter() -> MemoryAdapter:
    """The in-memory merchant at the frozen instant."""
    return MemoryAdapter(clock=FixedClock(NOW))


@pytest.fixture
def core(adapter: MemoryAdapter, tmp_path: Path) -> OsbpCore:
    """The protocol core over it."""
    return OsbpCore(adapter, state=tmp_path / "state.sqlite3", clock=FixedClock(NOW))


def booking() -> BookingCreateInput:
    """The in-memory merchant's haircut, without approval."""
    return BookingCreateInput.model_validate(create_args())


async def test_only_an_accept_of_the_summary_just_built_books(core: OsbpCore, adapter: MemoryAdapter) -> None:
    """Platform choice (host-enforced final confirmation): the accept is bound to the summary's hash."""
    stub = Stub(lambda summary_hash: Confirmed(summary_hash, recheck=False))
    trail = ConfirmationTrail(stub)
    with confirming(trail):
        result = await core.create_booking(booking())
    assert isinstance(result, Success)
    assert adapter.creates == 1
    [asked] = stub.asked
    [step] = trail.steps
    assert (step.mode, step.answer, step.summary_hash) == ("elicitation", "accept", sha256_hex(asked))


async def test_an_accept_of_another_summary_books_nothing(core: OsbpCore, adapter: MemoryAdapter) -> None:
    """Platform choice: an answer bound to a summary the facts do not give confirms nothing."""
    stub = Stub(Confirmed("0" * 64, recheck=False))
    trail = ConfirmationTrail(stub)
    with confirming(trail):
        result = await core.create_booking(booking())
    assert isinstance(result, Failure)
    assert adapter.creates == 0
    assert {step.answer for step in trail.steps} == {"asked"}


async def test_a_refusal_books_nothing_and_is_what_the_agent_gets(
    core: OsbpCore, adapter: MemoryAdapter
) -> None:
    """OSBP spec, requires_user_confirmation: nothing reaches the platform without the user's yes."""
    trail = ConfirmationTrail(Stub(Refused("decline", NO)))
    with confirming(trail):
        result = await core.create_booking(booking())
    assert result == Failure(NO)
    assert adapter.creates == 0
    assert "booking.create" in adapter.calls  # it resolved the facts to ask about them
    assert [step.answer for step in trail.steps] == ["decline"]


async def test_a_confirmed_attempt_with_an_unknown_outcome_resumes_without_asking_again(
    core: OsbpCore, adapter: MemoryAdapter
) -> None:
    """OSBP spec, Idempotency: the retry of a confirmed create settles it; the user is not asked again."""

    def accept_then_break(summary_hash: str) -> Confirmed:
        adapter.down = True  # the create is sent and its answer lost: the outcome is unknown
        return Confirmed(summary_hash, recheck=False)

    with confirming(ConfirmationTrail(Stub(accept_then_break))):
        lost = await core.create_booking(booking())
    assert isinstance(lost, Failure)
    assert lost.problem.code == "upstream_unavailable"
    adapter.down = False
    never = Stub(Refused("decline", NO))
    with confirming(ConfirmationTrail(never)):
        settled = await core.create_booking(booking())
    assert isinstance(settled, Success)
    assert settled.value.booking_id == "appt_idem_test_001"
    assert never.asked == []
    assert adapter.creates == 1


async def test_the_token_path_is_recorded_when_no_confirmer_is_installed(core: OsbpCore) -> None:
    """OSBP spec, Final Confirmation: without a confirmer the token challenge is issued and recorded."""
    trail = ConfirmationTrail()
    with confirming(trail):
        result = await core.create_booking(booking())
    assert isinstance(result, Failure)
    assert result.problem.code == "requires_user_confirmation"
    assert result.problem.retryable is True
    [step] = trail.steps
    assert (step.mode, step.answer) == ("token", "challenged")
