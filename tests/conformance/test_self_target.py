"""`--self`: this project's own platform and server, graded by the battery."""

from __future__ import annotations

import json

import pytest

from osbp.backend.settings import BackendSettings
from osbp.conformance import CATALOG, Verdict, load_fixtures, run_battery
from osbp.conformance.cli import main
from osbp.conformance.self_target import self_target


@pytest.mark.integration
def test_self_grades_this_projects_server_with_every_check_passing(capsys):
    """Platform choice: this project's own server and platform pass every check, armed outcomes and the
    audit log included: nothing is skipped, so the verdict is PASS without --allow-skips."""
    status = main(["--self", "--json"])
    report = json.loads(capsys.readouterr().out)
    failures = {check["id"]: check["detail"] for check in report["checks"] if check["status"] != "PASS"}
    assert failures == {}
    assert status == 0
    assert report["summary"]["passed"] == len(CATALOG)
    assert report["verdict"] == "PASS"
    assert report["audit_log"].endswith("events.jsonl")


@pytest.mark.integration
@pytest.mark.anyio
async def test_this_projects_server_passes_every_check_twice_in_a_row_against_one_rate_limited_platform():
    """RFC 9110 section 10.2.3 (Retry-After): the battery waits out the platform's rate limit instead of
    failing on it, so a second run against the same platform passes every check like the first."""
    # A quota well under one run's request rate, even on a loaded machine: both runs must wait out the window.
    settings = BackendSettings(db=":memory:", port=0, rate_limit_quota=12, rate_limit_window_seconds=1)
    with self_target(settings) as own:
        fixtures = load_fixtures(own.fixtures_path)
        reports = [
            await run_battery(
                own.target,
                fixtures,
                scenario_url=own.scenario_url,
                stats_url=own.stats_url,
                status_url=own.status_url,
                catalog_url=own.catalog_url,
                provider_url=own.provider_url,
                location_url=own.location_url,
                audit_log=own.audit_log,
            )
            for _ in range(2)
        ]
    for report in reports:
        assert {check.id: check.detail for check in report.checks if check.status is not Verdict.PASS} == {}
        assert report.verdict == "PASS"
    assert all(report.rate_limit_waited_seconds > 0 for report in reports)
