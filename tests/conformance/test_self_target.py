"""`--self`: this project's platform and server, or a clear "not yet available"."""

from __future__ import annotations

import json
import sys

import pytest

from osbp.conformance import CATALOG
from osbp.conformance.cli import main
from osbp.conformance.self_target import SelfTargetUnavailable, self_target


def test_without_the_platform_server_self_is_unavailable(monkeypatch):
    """Platform choice (issue 6): --self needs osbp.backend.serving.PlatformServer and says so."""
    monkeypatch.setitem(sys.modules, "osbp.backend.serving", None)
    with pytest.raises(SelfTargetUnavailable, match=r"not yet available.*PlatformServer"), self_target():
        pass


@pytest.mark.integration
def test_self_grades_this_projects_server_with_every_check_passing(capsys):
    """Issue 6 §4: this project's own server and platform pass every check, armed outcomes included."""
    status = main(["--self", "--json"])
    report = json.loads(capsys.readouterr().out)
    failures = {check["id"]: check["detail"] for check in report["checks"] if check["status"] != "PASS"}
    assert failures == {}
    assert status == 0
    assert report["summary"]["passed"] == len(CATALOG)
    assert report["duration_seconds"] < 30
