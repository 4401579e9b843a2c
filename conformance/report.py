"""Rendering: the human report, the JSON report, and the check table for the documentation.

Human output is one line per check, `PASS|FAIL|SKIP <id>  <requirement>  [<section>]`, followed for a
FAIL or SKIP by an indented line with the detail, and a final line `PASS n/N checks passed (f failed, s
skipped)`. The final line starts with `FAIL` instead when any check failed, so its first word is the
verdict of the whole run (skips alone do not fail a run).
"""

from __future__ import annotations

from osbp.conformance.battery import Report
from osbp.conformance.checks import CATALOG
from osbp.conformance.grading import Verdict

__all__ = ["check_table_markdown", "render_human", "render_json", "summary_line"]


def summary_line(report: Report) -> str:
    """The final line: the run's verdict and the counts."""
    counts = report.summary
    verdict = Verdict.PASS if report.ok else Verdict.FAIL
    tally = f"({counts.failed} failed, {counts.skipped} skipped)"
    return f"{verdict} {counts.passed}/{counts.total} checks passed {tally}"


def render_human(report: Report) -> str:
    """The terminal report."""
    width = max(len(check.id) for check in report.checks)
    lines = []
    for check in report.checks:
        lines.append(f"{check.status} {check.id.ljust(width)}  {check.requirement}  [{check.section}]")
        if check.detail and check.status is not Verdict.PASS:
            lines.append(f"     {check.detail}")
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
