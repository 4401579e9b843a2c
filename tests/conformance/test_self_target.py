"""`--self`: this project's platform and server, or a clear "not yet available"."""

from __future__ import annotations

import sys

import pytest

from osbp.conformance.self_target import SelfTargetUnavailable, self_target


def test_without_the_platform_server_self_is_unavailable(monkeypatch):
    """Platform choice (issue 6): --self needs osbp.backend.serving.PlatformServer and says so."""
    monkeypatch.setitem(sys.modules, "osbp.backend.serving", None)
    with pytest.raises(SelfTargetUnavailable, match=r"not yet available.*PlatformServer"), self_target():
        pass
