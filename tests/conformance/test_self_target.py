"""`--self`: this project's own platform and server, graded by the battery."""

from __future__ import annotations

import json

import pytest

from osbp.conformance import CATALOG
from osbp.conformance.cli import main


@pytest.mark.integration
def test_self_grades_this_projects_server_with_every_check_passing(capsys):
    """Platform choice: this project's own server and platform pass every check, armed outcomes included."""
    status = main(["--self", "--json"])
    report = json.loads(capsys.readouterr().out)
    failures = {check["id"]: check["detail"] for check in report["checks"] if check["status"] != "PASS"}
    assert failures == {}
    assert status == 0
    assert report["summary"]["passed"] == len(CATALOG)
    assert report["duration_seconds"] < 30
