"""Rendering: the human report's lines, the final line, the JSON object, and the docs table."""

from __future__ import annotations

import json
import re
from pathlib import Path

from osbp.conformance.battery import Report
from osbp.conformance.checks import CATALOG
from osbp.conformance.grading import CheckResult, Verdict
from osbp.conformance.report import check_table_markdown, render_human, render_json, summary_line
from osbp.conformance.wire import ServerTarget

DOCS = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"


def _report(fixtures, *, fail: bool, skip: bool) -> Report:
    verdicts = {check.id: (Verdict.PASS, "") for check in CATALOG}
    if fail:
        verdicts["money.jpy_minor_units"] = (Verdict.FAIL, "amount_minor 1200000, expected 12000")
    if skip:
        verdicts["runtime.slot_taken"] = verdicts["runtime.rate_limited"] = (
            Verdict.SKIP,
            "no --scenario-url",
        )
    results = [CheckResult(check, *verdicts[check.id]) for check in CATALOG]
    return Report.build(
        results, target=ServerTarget(["toy"]), fixtures=fixtures, scenario_url=None, duration=1.0
    )


def test_the_final_line_is_pass_when_nothing_failed_even_with_skips(fixtures):
    """Platform choice (docs/conformance.md): `PASS n/N checks passed (f failed, s skipped)`; skips do not
    fail a run."""
    report = _report(fixtures, fail=False, skip=True)
    total = len(CATALOG)
    assert summary_line(report) == f"PASS {total - 2}/{total} checks passed (0 failed, 2 skipped)"
    assert report.ok is True


def test_the_final_line_starts_with_fail_when_a_check_failed(fixtures):
    """Platform choice (documented): the final line's first word is the whole run's verdict."""
    report = _report(fixtures, fail=True, skip=False)
    total = len(CATALOG)
    assert (
        render_human(report).splitlines()[-1]
        == f"FAIL {total - 1}/{total} checks passed (1 failed, 0 skipped)"
    )


def test_one_line_per_check_with_requirement_and_section_and_a_detail_under_a_failure(fixtures):
    """Platform choice (docs/conformance.md): `PASS|FAIL|SKIP <id>  <requirement>  [<section>]`, a detail on
    failure."""
    lines = render_human(_report(fixtures, fail=True, skip=True)).splitlines()
    check_lines = [line for line in lines[:-1] if not line.startswith("     ")]
    assert len(check_lines) == len(CATALOG)
    for line, check in zip(check_lines, CATALOG, strict=True):
        assert re.fullmatch(
            rf"(PASS|FAIL|SKIP) {re.escape(check.id)} +{re.escape(check.requirement)}  \[.+\]", line
        )
    failed = lines.index(next(line for line in lines if line.startswith("FAIL money.jpy_minor_units")))
    assert lines[failed + 1] == "     amount_minor 1200000, expected 12000"


def test_the_json_report_carries_every_check_and_the_counts(fixtures):
    """Platform choice (docs/conformance.md): --json gives the same as a report object."""
    data = json.loads(render_json(_report(fixtures, fail=True, skip=False)))
    assert data["ok"] is False
    assert data["summary"] == {"total": len(CATALOG), "passed": len(CATALOG) - 1, "failed": 1, "skipped": 0}
    assert [check["id"] for check in data["checks"]] == [check.id for check in CATALOG]
    assert {"id", "requirement", "section", "status", "detail"} == set(data["checks"][0])


def test_the_documented_check_table_is_the_catalog():
    """Platform choice: docs/conformance.md's table is generated from the code and kept in sync."""
    assert check_table_markdown() in DOCS.read_text(encoding="utf-8")
