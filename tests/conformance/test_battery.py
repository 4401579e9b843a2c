"""The battery passes a correct server and fails each broken one on exactly its checks."""

from __future__ import annotations

import sys

import pytest

from osbp.conformance import CATALOG, Fixtures, Report, ServerTarget, Verdict, run_battery, server_env
from osbp.conformance.audit_checks import CHECK_IDS as AUDIT_CHECKS
from osbp.conformance.concurrency_checks import CHECK_IDS as CONCURRENCY_CHECKS
from osbp.conformance.elicitation_checks import CHECK_IDS
from osbp.conformance.outage_checks import CHECK_IDS as OUTAGE_CHECKS
from tests.conformance.arming import ScenarioEndpoint, scenario_endpoint
from tests.conformance.toy_fixtures import FORMAT_2_CHECKS, toy_fixtures
from tests.support.toy import toy_target

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

MANDATE_MATRIX = {check.id for check in CATALOG if check.id.startswith("mandate.")}
#: The checks of confirmation through the host: the toy server keeps the token path, so they are SKIP;
#: and the audit checks (the toy writes no audit log, so the battery is given none to read); so are the
#: checks of the oracle's facts, as the toy's own file is format 1; and the contention and lost-answer
#: checks, as the toy's stats answer no appointments count.
HOST_PATH = set(CHECK_IDS) | set(AUDIT_CHECKS)
UNGRADED = HOST_PATH | FORMAT_2_CHECKS | set(CONCURRENCY_CHECKS)


@pytest.fixture(scope="module")
def fixtures() -> Fixtures:
    """The toy's own fixture file (format 1: it states none of the oracle's facts)."""
    return toy_fixtures()


#: The exact checks each broken toy server must fail.
EXPECTED_FAILURES = {
    "no_mandate_check": {
        "mandate.impossible_wall_clock",
        "mandate.expired",
        "mandate.naked_expires_at",
        "mandate.wall_clock_offset",
        "mandate.action_not_allowed",
        "mandate.organization_scope",
        "mandate.service_scope",
        "mandate.schedule_scope",
        "mandate.provider_unknown",
        "mandate.provider_not_allowed",
        "mandate.slot_too_early",
        "mandate.slot_too_late",
        "mandate.price_over_cap",
        "mandate.currency_mismatch",
        "mandate.unknown_payment",
        "mandate.insurance_dependent",
        "mandate.quote_required",
        "mandate.deposit",
        "mandate.full_prepay",
        "mandate.consultation",
        "mandate.missing_id",
        "mandate.expires_offset",
        "mandate.policy_fee_over_cap",
        "mandate.policy_fee_currency",
        "mandate.cap_unfixed",
        "mandate.payment_handoff_kind",
        "mandate.order",
        "boundary.price_cap_minus_one_refuses",
        "boundary.price_cap_jpy",
        "boundary.price_cap_kwd",
        "boundary.window_minus_minute_refuses",
    },
    "jpy_cents": {"money.jpy_minor_units"},
    # Its schema-invalid rejection is an ok:false envelope with isError false too.
    "error_without_iserror": {"envelope.is_error_matches_ok", "envelope.schema_invalid"},
    "stdout_noise": {"wire.stdout_clean"},
    "plain_text_rejection": {"envelope.schema_invalid"},
    "summary_without_date": {"summary.date"},
    "summary_without_timezone": {"summary.timezone"},
    # The renamed provider's and location's fresh summaries cannot show the new name either.
    "summary_without_provider": {"summary.provider", "approval.token_summary_provider"},
    "summary_without_location": {"summary.location", "approval.token_summary_location"},
    # The price with its currency is part of approval.summary (the service name alone mentions USD), and
    # the repriced challenge must state its new price the same way.
    "summary_without_currency": {"approval.summary", "approval.token_summary_bound"},
    "summary_without_payment": {"summary.payment"},
    "summary_without_fees": {
        "summary.fees",
        "approval.token_summary_cancellation_fee",
        "approval.token_summary_no_show_fee",
    },
    "summary_without_customer_name": {"summary.customer_name"},
    "price_before_currency": {"mandate.order"},
    "replay_calls_platform": {"idempotency.replay_offline"},
    "wrong_code_accepted": {"verification.wrong_code_refused"},
    # The fixture slot's date is in daylight time, where -04:00 is right: only the DST dates show it, and
    # every instant graded over the run includes theirs.
    "fixed_offset": {"time.dst_rules", "time.instant_matches_wall_clock"},
    # The outage check gives its booking a native status first; once reachable, booked is not current.
    "status_collapsed": {"status.native_mapping", "status.reachable_current"},
    "token_not_bound_to_summary": {
        "approval.token_summary_bound",
        "approval.token_summary_cancellation_fee",
        "approval.token_summary_no_show_fee",
        "approval.token_summary_window",
        "approval.token_summary_provider",
        "approval.token_summary_location",
    },
    "token_never_expires": {"approval.token_expired"},
    "verify_always_verified": {"verification.verify_wrong_code_refused", "verification.verify_code"},
    "snapshot_unmarked": {"status.unreachable_not_current"},
    "replay_unmarked": {"idempotency.replay_marked"},
    # The walk's second page starts after the fixture slot, which is then on no page.
    "page_skips_a_start": {"availability.page_boundary"},
    # Every page is the day's first: it repeats, and earliest_start leaves nothing out.
    "earliest_start_ignored": {"availability.earliest_start", "availability.page_boundary"},
}
#: The checks that need a platform hook, SKIP when it is absent.
HOOKED = {
    "runtime.slot_taken",
    "runtime.rate_limited",
    *OUTAGE_CHECKS,
    "idempotency.replay_offline",
    "status.native_mapping",
    "approval.token_summary_bound",
    "approval.token_summary_cancellation_fee",
    "approval.token_summary_no_show_fee",
    "approval.token_summary_window",
    "approval.token_summary_provider",
    "approval.token_summary_location",
    "approval.token_expired_current",
    # Not a hook but the fixtures' approval_ttl_seconds, which the shipped file leaves out.
    "approval.token_expired",
}
#: The toy's approval-token lifetime in the hooked runs: the battery retries its first token after it.
TOY_TTL = 1.0


def _ids(report: Report, status: Verdict) -> set[str]:
    return {check.id for check in report.checks if check.status is status}


async def _graded(fixtures: Fixtures, hooks: ScenarioEndpoint, *breaks: str) -> Report:
    """The toy server, broken by `breaks`, graded with every platform hook and told its token lifetime."""
    target = toy_target(
        hooks.arm_file,
        *breaks,
        stats_file=hooks.stats_file,
        status_file=hooks.status_file,
        catalog_file=hooks.catalog_file,
        approval_ttl=TOY_TTL,
    )
    return await run_battery(
        target,
        fixtures.model_copy(update={"approval_ttl_seconds": TOY_TTL}),
        scenario_url=hooks.url,
        stats_url=hooks.stats_url,
        status_url=hooks.status_url,
        catalog_url=hooks.catalog_url,
        provider_url=hooks.provider_url,
        location_url=hooks.location_url,
    )


async def test_correct_toy_server_passes_every_check(fixtures, scenario):
    """OSBP spec (whole): a correct server passes the whole battery, armed outcomes included; a server on
    the token path alone (as v0.1.0 specifies) has the host-confirmation checks skipped, not passed, and so
    are the oracle's checks under its own format-1 file."""
    report = await _graded(fixtures, scenario)
    failures = {check.id: check.detail for check in report.checks if check.status is Verdict.FAIL}
    assert failures == {}
    assert _ids(report, Verdict.SKIP) == UNGRADED
    assert (report.ok, report.verdict) == (True, "INCOMPLETE")
    assert report.summary.passed == len(CATALOG) - len(UNGRADED)
    assert report.summary.total == len(CATALOG)
    outcomes = [request["outcome"] for request in scenario.requests]
    assert outcomes == ["slot_taken", "rate_limited", "unreachable", "reachable"]
    assert report.duration_seconds < 30  # docs/conformance.md: one process, one session, well inside 30 s


@pytest.mark.parametrize("broken", sorted(EXPECTED_FAILURES))
async def test_each_broken_server_fails_exactly_its_checks(fixtures, scenario, broken):
    """Platform choice (docs/conformance.md): the battery can fail, and fails only where the server is
    wrong."""
    report = await _graded(fixtures, scenario, broken)
    assert _ids(report, Verdict.FAIL) == EXPECTED_FAILURES[broken]
    assert _ids(report, Verdict.SKIP) == UNGRADED
    assert (report.ok, report.verdict) == (False, "FAIL")


async def test_the_platform_is_made_reachable_again_after_an_outage_check_that_failed(fixtures, scenario):
    """Platform choice (docs/conformance.md, scenario URL): `reachable` follows `unreachable` whatever the
    server answered, so the next run against the platform finds it reachable."""
    report = await _graded(fixtures, scenario, "snapshot_unmarked")
    assert "status.unreachable_not_current" in _ids(report, Verdict.FAIL)
    assert [request["outcome"] for request in scenario.requests][-2:] == ["unreachable", "reachable"]
    assert not scenario.arm_file.with_name(scenario.arm_file.name + ".unreachable").exists()


def test_the_no_mandate_check_set_is_the_whole_matrix_plus_the_refusing_boundaries():
    """OSBP spec, Mandate Enforcement: every matrix row depends on the validator running."""
    assert EXPECTED_FAILURES["no_mandate_check"] - MANDATE_MATRIX == {
        "boundary.price_cap_minus_one_refuses",
        "boundary.price_cap_jpy",
        "boundary.price_cap_kwd",
        "boundary.window_minus_minute_refuses",
    }
    assert EXPECTED_FAILURES["no_mandate_check"] >= MANDATE_MATRIX


async def test_without_the_platform_hooks_their_checks_are_skipped_not_failed(fixtures):
    """Platform choice (docs/conformance.md): without --scenario-url, --stats-url, --status-url and
    --catalog-url (and the fixtures' approval_ttl_seconds) the checks that need them are skipped, never
    passed, and the run is INCOMPLETE, not PASS."""
    report = await run_battery(toy_target(), fixtures)
    assert _ids(report, Verdict.SKIP) == HOOKED | UNGRADED
    assert _ids(report, Verdict.FAIL) == set()
    assert (report.ok, report.verdict) == (True, "INCOMPLETE")
    assert report.passes() is False
    assert report.passes(allow_skips=True) is True


async def test_without_a_stats_url_a_replay_that_calls_the_platform_is_not_certified(fixtures):
    """OSBP spec, booking.create (a replay returns the receipt without contacting the platform): a check the
    battery cannot observe is SKIP, not PASS."""
    report = await run_battery(toy_target(None, "replay_calls_platform"), fixtures)
    verdicts = {check.id: check.status for check in report.checks}
    assert verdicts["idempotency.replay_offline"] is Verdict.SKIP
    assert report.summary.passed == len(CATALOG) - len(HOOKED | UNGRADED)


async def test_a_server_that_exits_at_once_fails_initialize_and_skips_the_rest(fixtures):
    """OSBP spec, Transport: a server that never speaks MCP fails the handshake check, and only that."""
    command = [sys.executable, "-c", "import sys; print('boom', file=sys.stderr); sys.exit(3)"]
    report = await run_battery(ServerTarget(command, env=server_env()), fixtures, call_timeout=5)
    assert _ids(report, Verdict.FAIL) == {"wire.initialize"}
    assert len(_ids(report, Verdict.SKIP)) == len(CATALOG) - 1
    initialize = next(check for check in report.checks if check.id == "wire.initialize")
    assert "boom" in initialize.detail


async def test_a_missing_server_executable_fails_initialize(fixtures):
    """OSBP spec, Transport: a command that cannot start is a failed grade, not a crash."""
    report = await run_battery(ServerTarget(["/nonexistent/osbp-server"]), fixtures, call_timeout=5)
    assert _ids(report, Verdict.FAIL) == {"wire.initialize"}
    assert report.ok is False


async def test_a_scenario_url_that_refuses_to_arm_fails_the_checks_that_need_it(fixtures, tmp_path):
    """Platform choice (docs/conformance.md): a given scenario URL that answers non-2xx is a failure, unlike
    an absent one; the check after an outage that never began is not reached."""
    with scenario_endpoint(tmp_path / "armed", organization_id="someone_else") as endpoint:
        report = await run_battery(toy_target(endpoint.arm_file), fixtures, scenario_url=endpoint.url)
    failed = {"runtime.slot_taken", "runtime.rate_limited", "status.unreachable_not_current"}
    assert _ids(report, Verdict.FAIL) == failed
    details = {check.detail for check in report.checks if check.id in failed}
    assert all("HTTP 422" in detail for detail in details)
    reached = next(check for check in report.checks if check.id == "status.reachable_current")
    assert (reached.status, reached.detail) == (
        Verdict.SKIP,
        "not reached: status.unreachable_not_current failed first",
    )


async def test_fail_fast_stops_at_the_first_failure_and_skips_the_rest(fixtures, scenario):
    """Platform choice (docs/conformance.md, --fail-fast, used by the mutation run): one FAIL, the first of
    the broken server's, and every check not reached SKIP with the reason."""
    target = toy_target(scenario.arm_file, "no_mandate_check")
    report = await run_battery(target, fixtures, scenario_url=scenario.url, fail_fast=True)
    (failed,) = _ids(report, Verdict.FAIL)
    assert failed in EXPECTED_FAILURES["no_mandate_check"]
    stopped = [c for c in report.checks if c.detail == f"not graded: the run stopped at {failed}"]
    assert len(stopped) > len(CATALOG) // 3
    assert all(c.status is Verdict.SKIP for c in stopped)
    assert report.ok is False


async def test_stop_when_stops_at_the_first_failure_it_names(fixtures, scenario):
    """Platform choice (docs/conformance.md, kill matrix): a run told to stop at its mutant's rule grades
    up to the first FAIL of that rule and SKIPs what it did not reach."""
    target = toy_target(scenario.arm_file, "no_mandate_check")
    report = await run_battery(
        target, fixtures, scenario_url=scenario.url, stop_when=lambda check_id: check_id == "mandate.expired"
    )
    failed = _ids(report, Verdict.FAIL)
    assert "mandate.expired" in failed
    assert failed < EXPECTED_FAILURES["no_mandate_check"]
    stopped = {c.id for c in report.checks if c.detail == "not graded: the run stopped at mandate.expired"}
    assert EXPECTED_FAILURES["no_mandate_check"] - failed <= stopped
    assert "envelope.schema_invalid" in stopped
