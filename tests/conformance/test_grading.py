"""The grader: verdicts, the check block, and the catalog it grades."""

from __future__ import annotations

import re

import pytest

from osbp.conformance.checks import CATALOG, CHECKS_BY_ID
from osbp.conformance.grading import Grader, StopGrading, Verdict, expect, summarize


def test_check_ids_are_unique_stable_shaped_and_every_check_has_a_section():
    """Platform choice: each check has a stable dotted id, a one-line requirement, a section."""
    assert len(CHECKS_BY_ID) == len(CATALOG)
    for check in CATALOG:
        assert re.fullmatch(r"[a-z]+\.[a-z0-9_]+", check.id)
        assert check.requirement
        assert "\n" not in check.requirement
        assert check.section


def test_a_met_block_passes_and_an_unmet_expectation_fails_with_its_detail():
    """Platform choice: a check body reads as assertions; the first unmet one is the detail."""
    grader = Grader()
    with grader.check("wire.tools_listed"):
        expect(True, "never shown")
    with grader.check("wire.annotations"):
        expect(False, "osbp_booking_create: no annotations")
    assert grader.verdict("wire.tools_listed") is Verdict.PASS
    results = {r.check.id: r for r in grader.results(missing=Verdict.SKIP, missing_detail="")}
    assert results["wire.annotations"].verdict is Verdict.FAIL
    assert results["wire.annotations"].detail == "osbp_booking_create: no annotations"


def test_an_unreadable_answer_fails_the_check_instead_of_aborting_the_run():
    """Platform choice: one odd server answer never crashes the battery."""
    grader = Grader()
    with grader.check("happy.status"):
        answer: dict[str, object] = {}
        answer["booking"]  # the KeyError a malformed answer would raise
    assert grader.verdict("happy.status") is Verdict.FAIL


def test_a_failure_is_never_overwritten_by_a_later_pass():
    """Platform choice: a check graded in two places fails if either place failed."""
    grader = Grader()
    grader.failed("money.well_formed", "first")
    grader.passed("money.well_formed")
    assert grader.verdict("money.well_formed") is Verdict.FAIL


def test_ungraded_checks_get_the_missing_verdict_in_catalog_order():
    """Platform choice: every catalog check appears in every report, in catalog order."""
    grader = Grader()
    grader.passed("wire.initialize")
    rows = grader.results(missing=Verdict.FAIL, missing_detail="not graded")
    assert [row.check.id for row in rows] == [check.id for check in CATALOG]
    assert sum(row.verdict is Verdict.FAIL for row in rows) == len(CATALOG) - 1


def test_an_unknown_check_id_is_a_battery_bug():
    """Platform choice: a typo in a check id fails loudly in the battery's own tests."""
    with pytest.raises(KeyError):
        Grader().passed("wire.tool_listed")


def test_summarize_shows_the_first_problems_and_counts_the_rest():
    """Platform choice: one detail line per check, however many calls were wrong."""
    assert summarize(["a", "b", "c", "d", "e"]) == "a; b; c (+2 more)"
    assert summarize(["a"]) == "a"


def test_a_fail_fast_grader_stops_at_the_first_failure_of_a_nested_block():
    """Platform choice (docs/conformance.md, --fail-fast): the first FAIL ends the run, recorded once; an
    enclosing check block lets the stop through instead of failing as well."""
    grader = Grader(fail_fast=True)
    grader.passed("wire.tools_listed")
    with pytest.raises(StopGrading), grader.check("wire.input_shapes"), grader.check("wire.annotations"):
        expect(False, "osbp_booking_create: no annotations")
    assert grader.stopped_at == "wire.annotations"
    assert grader.verdict("wire.annotations") is Verdict.FAIL
    assert grader.verdict("wire.input_shapes") is None
