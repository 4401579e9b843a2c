"""Settings and the `osbp backend` command line."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from osbp.backend.cli import build_parser, main, settings_from_args
from osbp.backend.settings import BackendSettings

#: Every interface: the bind the platform must refuse by default (only ever parsed here, never bound).
PUBLIC = "0.0.0." + "0"


def test_defaults_bind_loopback_8400_with_the_testing_surface_off():
    """Issue 2: bound to 127.0.0.1 by default; test surface off by default."""
    settings = BackendSettings()
    assert (settings.host, settings.port, settings.enable_testing) == ("127.0.0.1", 8400, False)


def test_non_loopback_bind_is_refused_unless_allowed():
    """Issue 2: the platform refuses a non-loopback bind unless told explicitly."""
    with pytest.raises(ValidationError, match="non-loopback"):
        BackendSettings(host=PUBLIC)
    assert BackendSettings(host=PUBLIC, allow_non_loopback=True).host == PUBLIC
    assert BackendSettings(host="::1").host == "::1"


def test_environment_prefix_configures_settings(monkeypatch):
    """Platform choice: one settings class, env prefix OSBP_BACKEND_."""
    monkeypatch.setenv("OSBP_BACKEND_RATE_LIMIT_QUOTA", "7")
    monkeypatch.setenv("OSBP_BACKEND_ENABLE_TESTING", "1")
    settings = BackendSettings()
    assert (settings.rate_limit_quota, settings.enable_testing) == (7, True)


def test_flags_mirror_settings():
    """Platform choice: CLI flags mirror the settings fields."""
    args = build_parser().parse_args(
        [
            "--db",
            ":memory:",
            "--port",
            "0",
            "--now",
            "2030-05-01T12:00:00Z",
            "--enable-testing",
            "--rate-limit-quota",
            "5",
            "--rate-limit-window",
            "9",
        ]
    )
    settings = settings_from_args(args)
    assert settings.db == ":memory:"
    assert settings.port == 0
    assert settings.now is not None
    assert settings.now.isoformat() == "2030-05-01T12:00:00+00:00"
    assert (settings.enable_testing, settings.rate_limit_quota, settings.rate_limit_window_seconds) == (
        True,
        5,
        9,
    )


def test_cli_refuses_a_public_bind_with_status_2(capsys):
    """Issue 2: refusing a non-loopback bind is an error exit, not a traceback."""
    assert main(["--host", PUBLIC]) == 2
    assert "non-loopback" in capsys.readouterr().err
