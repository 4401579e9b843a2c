"""Checks graded over every recorded call: each catches its own defect and nothing else."""

from __future__ import annotations

from typing import Any, cast

import pytest
from mcp.types import CallToolResult, TextContent

from osbp.conformance.envelope_checks import grade_envelopes, grade_rejections
from osbp.conformance.fixtures import Fixtures
from osbp.conformance.grading import Grader, Verdict
from osbp.conformance.payloads import Payloads
from osbp.conformance.probe import Probe
from osbp.conformance.wire import Wire
from tests.conformance.fake_session import ScriptedSession, recorded, result

pytestmark = pytest.mark.anyio

SLOT = {
    "schedule_timezone": "America/New_York",
    "starts_at": "2030-05-02T14:30:00Z",
    "ends_at": "2030-05-02T15:15:00Z",
    "starts_at_local": "2030-05-02T10:30:00",
    "ends_at_local": "2030-05-02T11:15:00",
    "price": {"amount_minor": 9500, "currency": "USD", "type": "fixed", "display": "$95.00"},
    "schedule_hours": [{"day": 1, "open": "09:00", "close": "17:00"}],
}


def ok(value, audit="aud_1", **extra):
    return {"ok": True, "value": value, "audit_event_id": audit, **extra}


def failure(code="slot_taken", audit="aud_2", **problem):
    return {"ok": False, "problem": {"code": code, "message": "Taken.", **problem}, "audit_event_id": audit}


async def _failed(*results) -> dict[str, str]:
    grader = Grader()
    grade_envelopes(grader, await recorded(*results))
    rows = grader.results(missing=Verdict.SKIP, missing_detail="")
    return {row.check.id: row.detail for row in rows if row.verdict is Verdict.FAIL}


async def test_well_formed_results_fail_nothing():
    """OSBP spec, Result Envelope: the spec's own shapes pass every envelope-wide check."""
    assert await _failed(result(ok([SLOT])), result(failure(retryable=True))) == {}


async def test_an_extra_envelope_field_fails_only_the_success_fields_check():
    """OSBP spec, Result Envelope: a success is exactly ok, value, audit_event_id (+ osbp_runtime)."""
    assert set(await _failed(result(ok([SLOT], debug=1)))) == {"envelope.success_fields"}


async def test_an_undefined_runtime_value_fails_the_fields_check():
    """OSBP spec, Result Envelope: local_cache_replay is the only v0.1.0 osbp_runtime value."""
    body = ok([SLOT], osbp_runtime={"idempotency": "remote"})
    assert set(await _failed(result(body))) == {"envelope.success_fields"}


async def test_a_problem_with_a_string_retryable_fails_the_problem_check():
    """OSBP spec, Result Envelope: retryable is a boolean when present."""
    assert set(await _failed(result(ok([SLOT])), result(failure(retryable="yes")))) == {
        "envelope.problem_fields"
    }


async def test_structured_content_that_differs_from_the_text_fails():
    """OSBP spec, Transport: compact JSON text plus MCP structured content, the same value."""
    body = ok([SLOT])
    other = ok([SLOT], audit="aud_9")
    assert set(await _failed(result(body, structured=other))) == {"envelope.structured_equals_text"}


async def test_a_result_without_structured_content_fails_that_check_only():
    """OSBP spec, Transport: the envelope travels as structuredContent too."""
    assert set(await _failed(result(ok([SLOT]), structured=None))) == {"envelope.structured_equals_text"}


async def test_is_error_must_mirror_ok_both_ways():
    """Beyond the spec: isError is true exactly when ok is false."""
    failed = await _failed(result(ok([SLOT]), is_error=True), result(failure(), is_error=False))
    assert set(failed) == {"envelope.is_error_matches_ok"}
    assert "#1" in failed["envelope.is_error_matches_ok"]
    assert "#2" in failed["envelope.is_error_matches_ok"]


async def test_a_repeated_audit_event_id_fails():
    """Beyond the spec: each call has its own audit event."""
    failed = await _failed(result(ok([SLOT], audit="aud_same")), result(failure(audit="aud_same")))
    assert set(failed) == {"envelope.audit_event_id_unique"}


async def test_a_camel_case_key_fails_the_snake_case_check():
    """OSBP spec, Core Objects: ids and fields are snake_case (organization_id, booking_id)."""
    assert set(await _failed(result(ok([SLOT | {"bookingId": "x"}])))) == {"envelope.snake_case_keys"}


@pytest.mark.parametrize(
    ("price", "because"),
    [
        ({"amount_minor": 95.0, "currency": "USD"}, "not an integer"),
        ({"amount_minor": 9500, "currency": "usd"}, "ISO 4217"),
        ({"amount_minor": 9500, "currency": "USD", "type": "quote_required"}, "carries amount_minor"),
        ({"currency": "USD", "type": "fixed"}, "not an integer"),
        ({"amount_minor": 9500, "currency": "USD", "type": "free"}, "not a Money type"),
        (9500, "not a Money object"),
    ],
)
async def test_malformed_money_fails_the_money_check(price, because):
    """OSBP spec, Money: {amount_minor?, currency, type?, display?}, amount exactly when fixed."""
    failed = await _failed(result(ok([SLOT | {"price": price}])))
    assert set(failed) == {"money.well_formed"}
    assert because in failed["money.well_formed"]


async def test_a_naked_instant_and_an_offset_wall_clock_fail_their_checks():
    """OSBP spec, Time Discipline: instants carry an offset, wall-clock values never do."""
    slot = SLOT | {"starts_at": "2030-05-02T14:30:00", "ends_at_local": "2030-05-02T11:15:00-04:00"}
    failed = await _failed(result(ok([slot, SLOT])))
    assert set(failed) == {"time.instants_have_offset", "time.wall_clock_naked"}


async def test_an_instant_that_sliced_off_the_offset_fails_the_conversion_check():
    """OSBP spec, Time Discipline: naive truncation books the UTC wall-clock hour, wrong by the offset."""
    slot = SLOT | {"starts_at": "2030-05-02T10:30:00Z"}
    failed = await _failed(result(ok([slot])))
    assert set(failed) == {"time.instant_matches_wall_clock"}
    assert "10:30:00" in failed["time.instant_matches_wall_clock"]


async def test_a_javascript_weekday_or_a_bare_hour_fails_the_hours_check():
    """OSBP spec, Time Discipline: ISO weekdays 1-7 (not getDay's 0 = Sunday) and HH:MM."""
    slot = SLOT | {"schedule_hours": [{"day": 0, "open": "9", "close": "17:00"}]}
    failed = await _failed(result(ok([slot])))
    assert set(failed) == {"shapes.operating_hours"}


async def test_no_operating_hours_anywhere_is_a_skip():
    """OSBP spec, Time Discipline: hours are optional display context, so their absence is not graded."""
    grader = Grader()
    slot = {key: value for key, value in SLOT.items() if key != "schedule_hours"}
    grade_envelopes(grader, await recorded(result(ok([slot]))))
    assert grader.verdict("shapes.operating_hours") is Verdict.SKIP


async def test_no_times_at_all_fails_the_time_checks_rather_than_passing_vacuously():
    """Platform choice: a check that saw nothing to grade must not pass."""
    failed = await _failed(result(ok({"id": "service_123"})))
    assert set(failed) == {
        "time.instants_have_offset",
        "time.wall_clock_naked",
        "time.instant_matches_wall_clock",
    }


async def _rejection(answer: CallToolResult) -> tuple[Verdict, str]:
    grader = Grader()
    wire = Wire(cast(Any, ScriptedSession([answer])), call_timeout=5)
    await grade_rejections(Probe(wire, cast(Fixtures, None), grader, cast(Payloads, None), None, 5))
    [row] = [
        r for r in grader.results(missing=Verdict.SKIP, missing_detail="") if r.verdict is not Verdict.SKIP
    ]
    assert row.check.id == "envelope.schema_invalid"
    assert wire.exchanges[0].arguments == {"date": 20300502}
    return row.verdict, row.detail


REJECTED = {
    "ok": False,
    "problem": {"code": "invalid_input", "message": "date must be a string", "retryable": False},
}


async def test_a_schema_invalid_call_answered_with_the_failure_envelope_passes():
    """OSBP spec, Result Envelope: every tool returns one envelope shape, a rejection included."""
    assert await _rejection(result(REJECTED)) == (Verdict.PASS, "")


async def test_an_audit_event_id_on_a_rejection_is_allowed():
    """OSBP spec, Audit: only schema-valid calls must be audited; auditing a rejection is not wrong."""
    assert (await _rejection(result(REJECTED | {"audit_event_id": "aud_1"})))[0] is Verdict.PASS


@pytest.mark.parametrize(
    ("answer", "because"),
    [
        (
            CallToolResult(content=[TextContent(type="text", text="Error executing tool")], is_error=True),
            "no structuredContent envelope",
        ),
        (result(REJECTED, is_error=False), "isError is not true"),
        (result({"ok": True, "value": [], "audit_event_id": "aud_1"}), "ok is True, not false"),
        (result(REJECTED | {"debug": 1}), "unexpected ['debug']"),
        (result({"ok": False, "problem": {"code": "invalid_input"}}), "no problem with a code and a message"),
        (
            result({"ok": False, "problem": {"code": "x", "message": "input_value=20300502 is not a str"}}),
            "echoes the rejected value",
        ),
    ],
)
async def test_a_rejection_outside_the_envelope_shape_fails(answer, because):
    """OSBP spec, Result Envelope: agents branch on problem.code only, so a rejection needs one."""
    verdict, detail = await _rejection(answer)
    assert verdict is Verdict.FAIL
    assert because in detail
    assert detail.startswith("#1 osbp_availability_find: ")
