"""`run_battery`: start one server, hold one session, run every check, return the report.

The order matters only where the platform is concerned: the tools, the challenge whose token must expire,
reads (their answers feed later checks), the slots around the zone's DST transitions, then the bookings
(verification and the platform outage among them), contended and lost-answer creates, the mandate
matrix, the retry of the expired token, the checks graded over every recorded call, the one deliberately
schema-invalid call, the host-confirmation session, the replay markers over both sessions' creates, and,
once the server has stopped, its audit log.
"""

from __future__ import annotations

import datetime as dt
import secrets
import tempfile
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path
from typing import IO, Literal

from pydantic import BaseModel, ConfigDict

from osbp.conformance.all_day_checks import grade_all_day
from osbp.conformance.approval_checks import grade_current, grade_expiry, open_current, open_expiry
from osbp.conformance.audit_checks import AuditLogFile, grade_audit
from osbp.conformance.booking_checks import grade_bookings
from osbp.conformance.concurrency_checks import grade_concurrency
from osbp.conformance.elicitation_checks import grade_elicitation
from osbp.conformance.envelope_checks import grade_envelopes, grade_rejections
from osbp.conformance.fixtures import Fixtures
from osbp.conformance.grading import CheckResult, Grader, StopGrading, Verdict
from osbp.conformance.input_checks import grade_impossible_inputs
from osbp.conformance.mandate_checks import grade_mandates
from osbp.conformance.oracle_checks import grade_oracle
from osbp.conformance.payloads import Payloads
from osbp.conformance.probe import Probe
from osbp.conformance.prose_checks import grade_problem_prose, grade_prose_falsehoods
from osbp.conformance.read_checks import grade_reads
from osbp.conformance.runtime_checks import grade_runtime_markers
from osbp.conformance.summary_facts import grade_summary_prose
from osbp.conformance.time_checks import grade_dst
from osbp.conformance.tool_checks import grade_tools
from osbp.conformance.wire import ServerTarget, open_wire

__all__ = ["CheckReport", "Report", "RunVerdict", "Summary", "run_battery"]

#: The verdict of a whole run: FAIL when any check failed, else INCOMPLETE when any was skipped (not
#: graded), else PASS.
RunVerdict = Literal["PASS", "FAIL", "INCOMPLETE"]

#: How much of the server's stderr a failed start quotes.
_STDERR_TAIL = 600


class CheckReport(BaseModel):
    """One check in the report."""

    model_config = ConfigDict(frozen=True)

    id: str
    requirement: str
    section: str
    status: Verdict
    detail: str = ""
    #: For a FAIL, when the check knows them: what the requirement wanted, and what the server did.
    expected: str = ""
    observed: str = ""


class Summary(BaseModel):
    """Counts over the whole run."""

    model_config = ConfigDict(frozen=True)

    total: int
    passed: int
    failed: int
    skipped: int


class Report(BaseModel):
    """The result of one battery run (the `--json` output)."""

    model_config = ConfigDict(frozen=True)

    osbp_version: str = "0.1.0"
    server: list[str]
    fixtures_organization_id: str
    scenario_url: str | None
    stats_url: str | None = None
    status_url: str | None = None
    catalog_url: str | None = None
    provider_url: str | None = None
    location_url: str | None = None
    #: The audit log the battery read after the run (`--audit-log`), when given.
    audit_log: str | None = None
    #: Whether no check failed (skips aside); `verdict` also says whether every check was graded.
    ok: bool
    verdict: RunVerdict
    summary: Summary
    duration_seconds: float
    #: Seconds the battery spent waiting out the platform's rate limit (retryable rate_limited answers).
    rate_limit_waited_seconds: float = 0.0
    checks: list[CheckReport]

    @property
    def skipped_ids(self) -> list[str]:
        """The ids of the checks that were not graded, in catalog order."""
        return [check.id for check in self.checks if check.status is Verdict.SKIP]

    def passes(self, *, allow_skips: bool = False) -> bool:
        """Whether the run passes: PASS, or INCOMPLETE when `allow_skips` accepts what was not graded."""
        return self.verdict == "PASS" or (allow_skips and self.verdict == "INCOMPLETE")

    @classmethod
    def build(
        cls,
        results: list[CheckResult],
        *,
        target: ServerTarget,
        fixtures: Fixtures,
        scenario_url: str | None,
        duration: float,
        stats_url: str | None = None,
        status_url: str | None = None,
        catalog_url: str | None = None,
        provider_url: str | None = None,
        location_url: str | None = None,
        audit_log: str | None = None,
        rate_limit_waited: float = 0.0,
    ) -> Report:
        """Assemble a report from the graded results."""
        counts = {verdict: sum(r.verdict is verdict for r in results) for verdict in Verdict}
        verdict: RunVerdict = (
            "FAIL" if counts[Verdict.FAIL] else "INCOMPLETE" if counts[Verdict.SKIP] else "PASS"
        )
        return cls(
            server=target.shown,
            fixtures_organization_id=fixtures.organization_id,
            scenario_url=scenario_url,
            stats_url=stats_url,
            status_url=status_url,
            catalog_url=catalog_url,
            provider_url=provider_url,
            location_url=location_url,
            audit_log=audit_log,
            ok=counts[Verdict.FAIL] == 0,
            verdict=verdict,
            summary=Summary(
                total=len(results),
                passed=counts[Verdict.PASS],
                failed=counts[Verdict.FAIL],
                skipped=counts[Verdict.SKIP],
            ),
            duration_seconds=round(duration, 3),
            rate_limit_waited_seconds=round(rate_limit_waited, 3),
            checks=[
                CheckReport(
                    id=r.check.id,
                    requirement=r.check.requirement,
                    section=r.check.section,
                    status=r.verdict,
                    detail=r.detail,
                    expected=r.expected,
                    observed=r.observed,
                )
                for r in results
            ],
        )


def _describe(exc: BaseException) -> str:
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__


def _tail(log: IO[str]) -> str:
    try:
        log.flush()
        log.seek(0)
        text = log.read()
    except (OSError, ValueError):
        return ""
    text = text.strip()
    return text[-_STDERR_TAIL:] if text else ""


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


async def run_battery(
    target: ServerTarget,
    fixtures: Fixtures,
    *,
    scenario_url: str | None = None,
    stats_url: str | None = None,
    status_url: str | None = None,
    catalog_url: str | None = None,
    provider_url: str | None = None,
    location_url: str | None = None,
    audit_log: str | Path | None = None,
    call_timeout: float = 10.0,
    errlog: IO[str] | None = None,
    clock: Callable[[], dt.datetime] = _utc_now,
    nonce: str | None = None,
    fail_fast: bool = False,
    stop_when: Callable[[str], bool] | None = None,
) -> Report:
    """Grade the server `target` starts against `fixtures`; `call_timeout` bounds each call in seconds.

    The platform hooks are optional (see `osbp.conformance.scenario`): `scenario_url` arms outcomes,
    `stats_url` counts the platform's create requests, `status_url` sets a booking's native status,
    `catalog_url` changes a service's price, fees or cancellation window, `provider_url` and `location_url`
    rename a provider and a schedule; a check that needs an absent hook is SKIP, never PASS. With
    `audit_log` (the server's JSONL audit log) the battery reads the log after the run and grades it.

    The server's stderr goes to `errlog` (a temporary file by default, quoted when the start fails).
    `clock` dates the mandates; `nonce` makes this run's idempotency keys and mandate ids unique.
    With `fail_fast` the run stops at the first FAIL, with `stop_when` at the first FAIL of a check id it
    accepts (the kill matrix: its mutant's first killer); the checks not reached are SKIP.
    """
    started = time.monotonic()
    grader = Grader(fail_fast=fail_fast, stop_when=stop_when)
    now = clock()
    payloads = Payloads(fixtures, now=now, nonce=nonce or secrets.token_hex(4))
    own_log = errlog is None
    log: IO[str] = tempfile.TemporaryFile("w+", encoding="utf-8") if errlog is None else errlog  # noqa: SIM115 - closed below
    initialized = False
    aborted = ""
    waited = 0.0
    # Measured before the server starts: the run's records are what it appends after this.
    audit = AuditLogFile.before_run(audit_log) if audit_log is not None else None
    probe: Probe | None = None
    try:
        async with open_wire(target, call_timeout=call_timeout, errlog=log) as wire:
            initialized = True
            info = wire.session.server_info
            grader.passed("wire.initialize", f"{info.name} {info.version}".strip() if info else "")
            probe = Probe(
                wire,
                fixtures,
                grader,
                payloads,
                scenario_url,
                call_timeout,
                stats_url=stats_url,
                status_url=status_url,
                catalog_url=catalog_url,
                provider_url=provider_url,
                location_url=location_url,
                clock=clock,
            )
            await grade_tools(probe)
            # Taken first and retried last, so the token ages while the other checks run.
            pending_expiry = await open_expiry(probe)
            pending_current = await open_current(probe)
            await grade_reads(probe)
            await grade_oracle(probe)
            await grade_dst(probe, today=now.date())
            await grade_all_day(probe)
            # The first-call refusals before the bookings, and the slow contention checks last: a run that
            # stops at its first accepted failure (`stop_when`, the kill matrix) reaches them soonest.
            await grade_mandates(probe)
            await grade_impossible_inputs(probe)
            await grade_bookings(probe)
            await grade_expiry(probe, pending_expiry)
            await grade_current(probe, pending_current)
            await grade_concurrency(probe)
            grade_envelopes(grader, wire)
            grade_problem_prose(grader, wire)
            grade_prose_falsehoods(grader, wire, fixtures)
            grade_summary_prose(grader, wire)
            await grade_rejections(probe)
            hosted_waited = await grade_elicitation(probe, target, log)
            grade_runtime_markers(grader, probe.all_exchanges())
            waited = wire.rate_limit_waited + hosted_waited
    except Exception as exc:  # a server that cannot be driven is a failed grade, not a crash
        if initialized:
            aborted = _describe(exc)
        else:
            stderr = _tail(log) if own_log else ""
            with suppress(StopGrading):  # the run is over either way
                grader.failed(
                    "wire.initialize", _describe(exc) + (f"; server stderr: {stderr}" if stderr else "")
                )
    finally:
        if own_log:
            log.close()
    if initialized and not aborted and probe is not None:
        # After the sessions closed: a stdio server has exited, so every record it wrote is in the file.
        with suppress(StopGrading):  # a fail-fast stop here is recorded in grader.stopped_at
            grade_audit(grader, audit, probe.all_exchanges())
    if grader.stopped_at:
        results = grader.results(
            missing=Verdict.SKIP, missing_detail=f"not graded: the run stopped at {grader.stopped_at}"
        )
    elif not initialized:
        results = grader.results(
            missing=Verdict.SKIP, missing_detail="not reached: wire.initialize failed first"
        )
    else:
        results = grader.results(
            missing=Verdict.FAIL, missing_detail=f"not graded: the run ended early ({aborted})"
        )
    return Report.build(
        results,
        target=target,
        fixtures=fixtures,
        scenario_url=scenario_url,
        duration=time.monotonic() - started,
        stats_url=stats_url,
        status_url=status_url,
        catalog_url=catalog_url,
        provider_url=provider_url,
        location_url=location_url,
        audit_log=None if audit_log is None else str(audit_log),
        rate_limit_waited=waited,
    )
