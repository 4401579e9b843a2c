"""Rendering: the human report, the JSON report, and the check table for the documentation.

The human report groups the checks under the spec section they come from, in the specification's own
order (a section's "(beyond the spec)" checks sit under that section, tagged). Each check is one line,
`  PASS|FAIL|SKIP <id>  <requirement>[  (beyond the spec)]`; under a FAIL come indented `expected:` and
`observed:` lines when the check knows those values, then the detail; under a SKIP the reason. Checks
that never ran because an earlier one failed (``not reached: wire.initialize failed first``, or ``not
graded: the run stopped at …`` after ``--fail-fast``) are one line, ``128 more checks SKIP, not reached:
…``, not listed one by one, and the last line counts them (``128 skipped: 128 not reached``). The last
line is `PASS n/N checks passed (f failed, s skipped)`; its first word is the verdict of the whole run:
`FAIL` when any check failed, else `INCOMPLETE` when any was skipped, and then the tally names the skipped
checks (`(0 failed, 2 skipped: runtime.slot_taken, runtime.rate_limited)`).
"""

from __future__ import annotations

from osbp.conformance.battery import CheckReport, Report
from osbp.conformance.checks import CATALOG
from osbp.conformance.grading import Verdict

__all__ = ["SPEC_ORDER", "check_table_markdown", "render_human", "render_json", "section_of", "summary_line"]

#: The specification's headings in document order; the report lists its groups in this order.
SPEC_ORDER = (
    "Core Objects",
    "BookingMandate",
    "Money",
    "Time Discipline",
    "Transport",
    "Naming",
    "Result Envelope",
    "Tool Set",
    "service.describe",
    "availability.find",
    "policy.explain",
    "verification.send",
    "verification.verify",
    "booking.create",
    "booking.status",
    "handoff.request",
    "Mandate Enforcement",
    "Audit",
    "Security and Privacy Considerations",
)
_BEYOND = " (beyond the spec)"
_INDENT = "       "
#: How a check that never ran because an earlier one failed (or a fail-fast stop) explains its SKIP.
_UNREACHED = ("not reached: ", "not graded: the run stopped at ")


def section_of(section: str) -> tuple[str, bool]:
    """The spec heading a check's section names, and whether the check goes beyond the spec."""
    if section.endswith(_BEYOND):
        return section[: -len(_BEYOND)], True
    return section, False


def summary_line(report: Report) -> str:
    """The final line: the run's verdict, the counts, and which checks were not graded."""
    counts = report.summary
    unreached = {
        check.id
        for check in report.checks
        if check.status is Verdict.SKIP and check.detail.startswith(_UNREACHED)
    }
    named_ids = [check_id for check_id in report.skipped_ids if check_id not in unreached]
    parts = named_ids + ([f"{len(unreached)} not reached"] if unreached else [])
    named = f": {', '.join(parts)}" if parts else ""
    tally = f"({counts.failed} failed, {counts.skipped} skipped{named})"
    return f"{report.verdict} {counts.passed}/{counts.total} checks passed {tally}"


def _groups(checks: list[CheckReport]) -> list[tuple[str, list[CheckReport]]]:
    grouped: dict[str, list[CheckReport]] = {}
    for check in checks:
        grouped.setdefault(section_of(check.section)[0], []).append(check)
    rank = {heading: index for index, heading in enumerate(SPEC_ORDER)}
    return sorted(grouped.items(), key=lambda item: rank.get(item[0], len(rank)))


def _check_lines(check: CheckReport, width: int) -> list[str]:
    beyond = section_of(check.section)[1]
    lines = [f"  {check.status} {check.id.ljust(width)}  {check.requirement}{'  (beyond the spec)' * beyond}"]
    if check.status is Verdict.PASS:
        return lines
    if check.expected:
        lines.append(f"{_INDENT}expected: {check.expected}")
    if check.observed:
        lines.append(f"{_INDENT}observed: {check.observed}")
    if check.detail:
        lines.append(f"{_INDENT}{check.detail}")
    return lines


def render_human(report: Report) -> str:
    """The terminal report."""
    width = max(len(check.id) for check in report.checks)
    # Checks a failure kept from running are counted, not listed: when the server cannot start, its
    # failure (and its stderr) is what the reader sees, not a hundred SKIP lines around it.
    unreached: dict[str, int] = {}
    graded = []
    for check in report.checks:
        if check.status is Verdict.SKIP and check.detail.startswith(_UNREACHED):
            unreached[check.detail] = unreached.get(check.detail, 0) + 1
        else:
            graded.append(check)
    lines = []
    for heading, checks in _groups(graded):
        lines.append(heading)
        for check in checks:
            lines += _check_lines(check, width)
    for detail, count in unreached.items():
        lines.append(f"{count} more {'check' if count == 1 else 'checks'} SKIP, {detail}")
    lines.append(summary_line(report))
    return "\n".join(lines)


def render_json(report: Report) -> str:
    """The report object as indented JSON."""
    return report.model_dump_json(indent=2)


def check_table_markdown() -> str:
    """The check catalog as a Markdown table (the one in docs/conformance.md)."""
    rows = ["| id | requirement | spec section |", "|---|---|---|"]
    rows += [f"| `{check.id}` | {check.requirement} | {check.section} |" for check in CATALOG]
    return "\n".join(rows)
