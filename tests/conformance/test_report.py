"""Rendering: the human report's lines, the final line, the JSON object, and the docs table."""

from __future__ import annotations

import json
import re
from pathlib import Path

from osbp.conformance.battery import Report
from osbp.conformance.checks import CATALOG
from osbp.conformance.grading import CheckResult, Verdict
from osbp.conformance.report import (
    SPEC_ORDER,
    check_table_markdown,
    render_human,
    render_json,
    section_of,
    summary_line,
)
from osbp.conformance.wire import ServerTarget

DOCS = Path(__file__).resolve().parents[2] / "docs" / "conformance.md"


def _report(fixtures, *, fail: bool, skip: bool) -> Report:
    verdicts = {check.id: (Verdict.PASS, "", "", "") for check in CATALOG}
    if fail:
        verdicts["money.jpy_minor_units"] = (Verdict.FAIL, "ISO 4217 exponent 0", "12000", "1200000")
    if skip:
        verdicts["runtime.slot_taken"] = verdicts["runtime.rate_limited"] = (
            Verdict.SKIP,
            "no --scenario-url",
            "",
            "",
        )
    results = [CheckResult(check, *verdicts[check.id]) for check in CATALOG]
    return Report.build(
        results, target=ServerTarget(["toy"]), fixtures=fixtures, scenario_url=None, duration=1.0
    )


def test_the_final_line_is_incomplete_naming_the_skipped_checks_when_nothing_failed(fixtures):
    """Platform choice (docs/conformance.md): `INCOMPLETE n/N checks passed (0 failed, s skipped: ids)`; a
    run with skips is not a pass (unless skips are allowed)."""
    report = _report(fixtures, fail=False, skip=True)
    total = len(CATALOG)
    assert summary_line(report) == (
        f"INCOMPLETE {total - 2}/{total} checks passed "
        "(0 failed, 2 skipped: runtime.slot_taken, runtime.rate_limited)"
    )
    assert (report.ok, report.verdict) == (True, "INCOMPLETE")
    assert (report.passes(), report.passes(allow_skips=True)) == (False, True)


def test_the_final_line_is_pass_only_when_every_check_passed(fixtures):
    """Platform choice (docs/conformance.md): PASS means every check was graded and passed."""
    report = _report(fixtures, fail=False, skip=False)
    total = len(CATALOG)
    assert summary_line(report) == f"PASS {total}/{total} checks passed (0 failed, 0 skipped)"
    assert (report.verdict, report.passes()) == ("PASS", True)


def test_the_final_line_starts_with_fail_when_a_check_failed(fixtures):
    """Platform choice (documented): the final line's first word is the whole run's verdict."""
    report = _report(fixtures, fail=True, skip=False)
    total = len(CATALOG)
    assert (
        render_human(report).splitlines()[-1]
        == f"FAIL {total - 1}/{total} checks passed (1 failed, 0 skipped)"
    )


def test_checks_are_grouped_under_their_spec_section_in_the_specs_order(fixtures):
    """Platform choice (docs/conformance.md): a heading per spec section, in the specification's order, then
    `  PASS|FAIL|SKIP <id>  <requirement>` per check, tagged when it goes beyond the spec."""
    lines = render_human(_report(fixtures, fail=False, skip=False)).splitlines()[:-1]
    headings = [line for line in lines if not line.startswith(" ")]
    assert headings == [heading for heading in SPEC_ORDER if heading in headings]
    assert set(headings) == {section_of(check.section)[0] for check in CATALOG}
    check_lines = [line for line in lines if line.startswith("  ")]
    assert len(check_lines) == len(CATALOG)
    by_id = {check.id: check for check in CATALOG}
    under = ""
    for line in lines:
        if not line.startswith(" "):
            under = line
            continue
        match = re.fullmatch(r"  PASS (\S+) +(.+)", line)
        assert match is not None
        check = by_id[match[1]]
        heading, beyond = section_of(check.section)
        assert under == heading
        assert match[2] == check.requirement + ("  (beyond the spec)" if beyond else "")


def test_a_failure_prints_the_expected_and_the_observed_value_then_the_detail(fixtures):
    """Platform choice (docs/conformance.md): a failing requirement shows what it wanted and what it got."""
    lines = render_human(_report(fixtures, fail=True, skip=True)).splitlines()
    failed = next(
        index for index, line in enumerate(lines) if line.startswith("  FAIL money.jpy_minor_units")
    )
    assert lines[failed + 1 : failed + 4] == [
        "       expected: 12000",
        "       observed: 1200000",
        "       ISO 4217 exponent 0",
    ]
    skipped = next(index for index, line in enumerate(lines) if line.startswith("  SKIP runtime.slot_taken"))
    assert lines[skipped + 1] == "       no --scenario-url"


def test_checks_a_failure_kept_from_running_are_one_line_under_the_failure(fixtures):
    """Platform choice (docs/conformance.md): when the server cannot start, the report is its failure
    (with the server's stderr), one line counting the checks not reached, and the verdict."""
    first = CATALOG[0]
    unreached = "not reached: wire.initialize failed first"
    results = [CheckResult(first, Verdict.FAIL, "Connection closed; server stderr: boom")]
    results += [CheckResult(check, Verdict.SKIP, unreached) for check in CATALOG[1:]]
    report = Report.build(
        results, target=ServerTarget(["toy"]), fixtures=fixtures, scenario_url=None, duration=1.0
    )
    lines = render_human(report).splitlines()
    rest = len(CATALOG) - 1
    assert lines[1:] == [
        f"  FAIL {first.id.ljust(max(len(check.id) for check in CATALOG))}  {first.requirement}",
        "       Connection closed; server stderr: boom",
        f"{rest} more checks SKIP, not reached: wire.initialize failed first",
        lines[-1],
    ]
    assert lines[-1] == f"FAIL 0/{len(CATALOG)} checks passed (1 failed, {rest} skipped: {rest} not reached)"


def test_the_json_report_carries_every_check_and_the_counts(fixtures):
    """Platform choice (docs/conformance.md): --json gives the same as a report object."""
    data = json.loads(render_json(_report(fixtures, fail=True, skip=False)))
    assert (data["ok"], data["verdict"], data["audit_log"]) == (False, "FAIL", None)
    assert data["summary"] == {"total": len(CATALOG), "passed": len(CATALOG) - 1, "failed": 1, "skipped": 0}
    assert [check["id"] for check in data["checks"]] == [check.id for check in CATALOG]
    assert {"id", "requirement", "section", "status", "detail", "expected", "observed"} == set(
        data["checks"][0]
    )
    jpy = next(check for check in data["checks"] if check["id"] == "money.jpy_minor_units")
    assert (jpy["expected"], jpy["observed"]) == ("12000", "1200000")


def test_the_documented_check_table_is_the_catalog():
    """Platform choice: docs/conformance.md's table is generated from the code and kept in sync."""
    assert check_table_markdown() in DOCS.read_text(encoding="utf-8")
