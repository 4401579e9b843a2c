"""Impossible dates and times: what counts as refusing them (input.*, mandate.impossible_wall_clock)."""

from __future__ import annotations

from typing import Any

from osbp.conformance.input_checks import refusal_problem
from osbp.conformance.wire import Exchange
from tests.conformance.fake_session import result

_FIND = "osbp_availability_find"


def _answer(body: dict[str, Any]) -> Exchange:
    return Exchange(_FIND, {"date": "2030-02-30"}, result(body))


def _problem(code: str, **extra: Any) -> Exchange:
    return _answer({"ok": False, "problem": {"code": code, "message": "no", "retryable": False, **extra}})


def test_a_non_retryable_problem_refuses_the_impossible_date():
    """OSBP spec, Time Discipline: a malformed date is refused as a Problem (any code but a throw)."""
    assert refusal_problem("find", _problem("invalid_input")) is None


def test_a_slot_list_for_february_30_is_not_a_refusal():
    """OSBP spec, Time Discipline: an impossible date names no day, so no slots can answer it."""
    problem = refusal_problem("find", _answer({"ok": True, "value": []}))
    assert problem is not None
    assert "expected a Problem" in problem


def test_an_adapter_that_threw_is_not_a_refusal():
    """OSBP spec, Problem codes: internal_adapter_error means the adapter threw, not that it refused."""
    problem = refusal_problem("find", _problem("internal_adapter_error"))
    assert problem is not None
    assert "threw" in problem


def test_a_retryable_problem_is_not_a_refusal():
    """OSBP spec, Time Discipline: retrying the same impossible date cannot help."""
    problem = refusal_problem("find", _problem("invalid_input", retryable=True))
    assert problem is not None
    assert "retryable" in problem


def test_a_mandate_field_wants_invalid_mandate():
    """OSBP spec, Problem codes: a malformed mandate field is invalid_mandate."""
    assert refusal_problem("mandate", _problem("invalid_mandate"), "invalid_mandate") is None
    problem = refusal_problem("mandate", _problem("invalid_input"), "invalid_mandate")
    assert problem is not None
    assert "expected invalid_mandate" in problem
