"""The battery over Streamable HTTP: `--self --transport streamable-http` and a `--url`/`--token` target."""

from __future__ import annotations

import json

import pytest

from osbp.conformance import CATALOG
from osbp.conformance.cli import main
from osbp.conformance.fixtures import reference_fixtures_path

pytestmark = pytest.mark.integration


def test_self_over_streamable_http_grades_this_projects_remote_server_with_every_check_passing(capsys):
    """MCP Streamable HTTP: the remote server, with bearer authorization, passes the battery like stdio.

    Served stateless, it keeps no session that would tell a later call the client can elicit, so it
    confirms by token there: the host-confirmation checks are skipped, never passed or failed, so the
    verdict is INCOMPLETE and only --allow-skips (as `make conformance` passes for this transport) exits 0."""
    status = main(["--self", "--transport", "streamable-http", "--json", "--allow-skips"])
    report = json.loads(capsys.readouterr().out)
    verdicts = {check["id"]: check["status"] for check in report["checks"]}
    hosted = {check_id for check_id in verdicts if check_id.startswith("elicitation.")}
    failures = {
        check["id"]: check["detail"]
        for check in report["checks"]
        if check["status"] != "PASS" and check["id"] not in hosted
    }
    assert failures == {}
    assert {verdicts[check_id] for check_id in hosted} == {"SKIP"}
    assert (status, report["verdict"]) == (0, "INCOMPLETE")
    assert report["summary"]["passed"] == len(CATALOG) - len(hosted)
    assert report["server"][0].startswith("http://127.0.0.1:")


def test_a_url_target_without_a_valid_token_fails_the_handshake_check(capsys, tmp_path):
    """Platform choice (grading): an unreachable or refusing URL is a failed wire.initialize, not a crash."""
    fixtures = tmp_path / "fixtures.json"
    fixtures.write_text(reference_fixtures_path().read_text(encoding="utf-8"), encoding="utf-8")
    status = main(["--url", "http://127.0.0.1:9/mcp", "--token", "x", "--fixtures", str(fixtures), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert status == 1
    statuses = {check["id"]: check["status"] for check in report["checks"]}
    assert statuses["wire.initialize"] == "FAIL"
