"""envelope.problem_message_prose: a Problem message that passes a raw platform answer through fails."""

from __future__ import annotations

import pytest

from osbp.conformance.grading import Grader, Verdict
from osbp.conformance.prose_checks import grade_problem_prose
from tests.conformance.fake_session import recorded, result

pytestmark = pytest.mark.anyio


def failure(message: str) -> dict[str, object]:
    return {"ok": False, "problem": {"code": "booking_not_found", "message": message}, "audit_event_id": "a"}


async def _verdict(*messages: str) -> tuple[Verdict | None, str]:
    grader = Grader()
    grade_problem_prose(grader, await recorded(*(result(failure(m)) for m in messages)))
    row = next(
        r for r in grader.results(missing=Verdict.SKIP, missing_detail="") if r.check.id.endswith("prose")
    )
    return row.verdict, row.detail


async def test_plain_prose_messages_pass_quoted_names_and_the_token_instruction_included():
    """OSBP spec, Result Envelope: problem.message is explanatory English prose."""
    verdict, _ = await _verdict(
        'No booking has this id. Merchant note: "Cancel at least 6 hours before".',
        'Retry with approval.confirmed=true and approval.token="apv_x".',
    )
    assert verdict is Verdict.PASS


async def test_a_message_carrying_the_platforms_problem_json_fails_and_names_the_call():
    """OSBP spec, Result Envelope: a raw upstream body is not prose (and may carry customer data)."""
    raw = 'Not found. Platform said: {"type":"about:blank","status":404,"detail":"no appointment"}'
    verdict, detail = await _verdict("Taken.", raw)
    assert verdict is Verdict.FAIL
    assert detail.startswith("a Problem message embeds a JSON object: #2 osbp_service_describe:")
