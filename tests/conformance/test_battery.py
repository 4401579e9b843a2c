"""The battery passes a correct server and fails each broken one on exactly its checks."""

from __future__ import annotations

import sys

import pytest

from osbp.conformance import CATALOG, Report, ServerTarget, Verdict, run_battery, server_env
from tests.conformance.arming import scenario_endpoint
from tests.support.toy import toy_target

pytestmark = [pytest.mark.anyio, pytest.mark.integration]

MANDATE_MATRIX = {check.id for check in CATALOG if check.id.startswith("mandate.")}

#: The exact checks each broken toy server must fail.
EXPECTED_FAILURES = {
    "no_mandate_check": {
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
        "boundary.price_cap_minus_one_refuses",
        "boundary.window_minus_minute_refuses",
    },
    "jpy_cents": {"money.jpy_minor_units"},
    # Its schema-invalid rejection is an ok:false envelope with isError false too.
    "error_without_iserror": {"envelope.is_error_matches_ok", "envelope.schema_invalid"},
    "stdout_noise": {"wire.stdout_clean"},
    "plain_text_rejection": {"envelope.schema_invalid"},
}


def _ids(report: Report, status: Verdict) -> set[str]:
    return {check.id for check in report.checks if check.status is status}


async def test_correct_toy_server_passes_every_check(fixtures, scenario):
    """OSBP spec (whole): a correct server passes the whole battery, armed outcomes included."""
    report = await run_battery(toy_target(scenario.arm_file), fixtures, scenario_url=scenario.url)
    failures = {check.id: check.detail for check in report.checks if check.status is not Verdict.PASS}
    assert failures == {}
    assert report.ok is True
    assert report.summary.passed == len(CATALOG) == report.summary.total
    assert [request["outcome"] for request in scenario.requests] == ["slot_taken", "rate_limited"]
    assert report.duration_seconds < 30  # docs/conformance.md: one process, one session, well inside 30 s


@pytest.mark.parametrize("broken", sorted(EXPECTED_FAILURES))
async def test_each_broken_server_fails_exactly_its_checks(fixtures, scenario, broken):
    """Platform choice (docs/conformance.md): the battery can fail, and fails only where the server is
    wrong."""
    report = await run_battery(toy_target(scenario.arm_file, broken), fixtures, scenario_url=scenario.url)
    assert _ids(report, Verdict.FAIL) == EXPECTED_FAILURES[broken]
    assert _ids(report, Verdict.SKIP) == set()
    assert report.ok is False


def test_the_no_mandate_check_set_is_the_whole_matrix_plus_the_refusing_boundaries():
    """OSBP spec, Mandate Enforcement: every matrix row depends on the validator running."""
    assert EXPECTED_FAILURES["no_mandate_check"] - MANDATE_MATRIX == {
        "boundary.price_cap_minus_one_refuses",
        "boundary.window_minus_minute_refuses",
    }
    assert EXPECTED_FAILURES["no_mandate_check"] >= MANDATE_MATRIX


async def test_without_a_scenario_url_the_runtime_checks_are_skipped_not_failed(fixtures):
    """Platform choice (docs/conformance.md): without --scenario-url the armed outcomes are skipped, and the
    run still passes."""
    report = await run_battery(toy_target(), fixtures)
    assert _ids(report, Verdict.SKIP) == {"runtime.slot_taken", "runtime.rate_limited"}
    assert _ids(report, Verdict.FAIL) == set()
    assert report.ok is True


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


async def test_a_scenario_url_that_refuses_to_arm_fails_the_runtime_checks(fixtures, tmp_path):
    """Platform choice (docs/conformance.md): a given scenario URL that answers non-2xx is a failure, unlike
    an absent one."""
    with scenario_endpoint(tmp_path / "armed", organization_id="someone_else") as endpoint:
        report = await run_battery(toy_target(endpoint.arm_file), fixtures, scenario_url=endpoint.url)
    assert _ids(report, Verdict.FAIL) == {"runtime.slot_taken", "runtime.rate_limited"}
    details = {check.detail for check in report.checks if check.id.startswith("runtime.")}
    assert all("HTTP 422" in detail for detail in details)
