"""Verdicts and the grader that collects them.

A check body states its expectations with `expect(...)`; an unmet one raises `CheckFailed`, which the
`Grader.check` block turns into a FAIL verdict with the detail. This is the one place the battery uses an
exception for an expected outcome, for the same reason pytest does: a check reads as a list of
assertions. Anything else a check body raises is also a FAIL (the server produced something the battery
could not even read), so one odd answer never aborts the run.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from osbp.conformance.checks import CATALOG, CHECKS_BY_ID, Check

__all__ = ["CheckFailed", "CheckResult", "Grader", "StopGrading", "Verdict", "expect", "summarize"]


class Verdict(enum.StrEnum):
    """The outcome of one check."""

    PASS = "PASS"  # noqa: S105 - a verdict, not a password
    FAIL = "FAIL"
    SKIP = "SKIP"


@dataclass(frozen=True, slots=True)
class CheckResult:
    """One check's verdict with the reason for a FAIL or SKIP."""

    check: Check
    verdict: Verdict
    detail: str = ""
    #: For a FAIL where the check knows them: what the requirement wanted and what the server did.
    expected: str = ""
    observed: str = ""


class CheckFailed(Exception):
    """An expectation inside a check body was not met (`expected`/`observed` when they are known)."""

    def __init__(self, detail: str, *, expected: str = "", observed: str = "") -> None:
        super().__init__(detail)
        self.detail = detail
        self.expected = expected
        self.observed = observed


class StopGrading(Exception):
    """A fail-fast grader recorded the run's first FAIL: the run stops there, the rest is not graded."""


def expect(condition: bool, detail: str, *, expected: str = "", observed: str = "") -> None:
    """Fail the enclosing check with `detail` (and the values it compared) unless `condition` holds."""
    if not condition:
        raise CheckFailed(detail, expected=expected, observed=observed)


def summarize(problems: list[str], shown: int = 3) -> str:
    """The first `shown` problems and how many more there are, for one detail line."""
    head = "; ".join(problems[:shown])
    return head + (f" (+{len(problems) - shown} more)" if len(problems) > shown else "")


@dataclass
class Grader:
    """Collects verdicts; a FAIL recorded for a check is never overwritten by a later PASS.

    With `fail_fast`, recording the first FAIL raises `StopGrading` (a mutation run only needs one); with
    `stop_when`, the first FAIL of a check it accepts does (the kill matrix stops at its mutant's killer).
    """

    _results: dict[str, CheckResult] = field(default_factory=dict)
    fail_fast: bool = False
    stop_when: Callable[[str], bool] | None = None
    #: The check whose FAIL stopped a fail-fast run.
    stopped_at: str | None = None

    def record(
        self, check_id: str, verdict: Verdict, detail: str = "", *, expected: str = "", observed: str = ""
    ) -> None:
        """Record a verdict for `check_id` (an unknown id is a battery bug)."""
        check = CHECKS_BY_ID[check_id]
        current = self._results.get(check_id)
        if current is not None and current.verdict is Verdict.FAIL:
            return
        self._results[check_id] = CheckResult(check, verdict, detail, expected, observed)
        if verdict is Verdict.FAIL and (
            self.fail_fast or (self.stop_when is not None and self.stop_when(check_id))
        ):
            self.stopped_at = self.stopped_at or check_id
            raise StopGrading(check_id)

    def passed(self, check_id: str, detail: str = "") -> None:
        """Record a PASS."""
        self.record(check_id, Verdict.PASS, detail)

    def failed(self, check_id: str, detail: str, *, expected: str = "", observed: str = "") -> None:
        """Record a FAIL."""
        self.record(check_id, Verdict.FAIL, detail, expected=expected, observed=observed)

    def skipped(self, check_id: str, reason: str) -> None:
        """Record a SKIP."""
        self.record(check_id, Verdict.SKIP, reason)

    def blocked(self, check_id: str, by: str) -> None:
        """Skip a check whose precondition, graded by `by`, failed (that failure is already reported)."""
        self.skipped(check_id, f"not reached: {by} failed first")

    def verdict(self, check_id: str) -> Verdict | None:
        """The verdict recorded so far for `check_id`, if any."""
        result = self._results.get(check_id)
        return None if result is None else result.verdict

    @contextmanager
    def check(self, check_id: str, passed_detail: str = "") -> Iterator[None]:
        """Grade `check_id` by the block: PASS if it completes, FAIL on an unmet expectation or error."""
        try:
            yield
        except CheckFailed as failure:
            self.failed(check_id, failure.detail, expected=failure.expected, observed=failure.observed)
        except StopGrading:
            raise
        except Exception as exc:  # an unreadable answer fails the check, never the run
            self.failed(check_id, f"could not grade the answer: {type(exc).__name__}: {exc}")
        else:
            self.passed(check_id, passed_detail)

    def results(self, *, missing: Verdict, missing_detail: str) -> list[CheckResult]:
        """Every check in catalog order; checks never graded get `missing` with `missing_detail`."""
        return [
            self._results.get(check.id) or CheckResult(check, missing, missing_detail) for check in CATALOG
        ]
