"""Settings and the `osbp backend` command line."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from pydantic import ValidationError

from osbp.backend.cli import build_parser, main, settings_from_args
from osbp.backend.settings import BackendSettings, env_var

#: Every interface: the bind the platform must refuse by default (only ever parsed here, never bound).
PUBLIC = "0.0.0." + "0"


def test_defaults_bind_loopback_8400_with_the_testing_surface_off():
    """Platform choice: bound to 127.0.0.1 by default; test surface off by default."""
    settings = BackendSettings()
    assert (settings.host, settings.port, settings.enable_testing) == ("127.0.0.1", 8400, False)


def test_non_loopback_bind_is_refused_unless_allowed():
    """Platform choice: the platform refuses a non-loopback bind unless told explicitly."""
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
    """Platform choice: refusing a non-loopback bind is an error exit, not a traceback."""
    assert main(["--host", PUBLIC]) == 2
    assert "non-loopback" in capsys.readouterr().err


@pytest.mark.parametrize("value", ["postgresql:/bookwell", "mysql://db/bookwell"])
def test_a_database_that_is_neither_a_path_nor_a_supported_url_is_refused_and_no_file_made(
    value, capsys, monkeypatch, tmp_path
):
    """Platform choice: a mistyped URL used to become a SQLite file named like it; now one line, exit 2."""
    monkeypatch.chdir(tmp_path)
    assert main(["--db", value, "--port", "0"]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"osbp backend: --db {value}: unsupported database {value!r}: give a SQLite file path, :memory:, "
        "sqlite:///PATH or postgresql://USER@HOST:PORT/DBNAME\n"
    )
    assert list(tmp_path.iterdir()) == []


def _backend(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """`osbp backend ARGS` as a real process, with only the given OSBP_BACKEND_* variables set."""
    clean = {name: value for name, value in os.environ.items() if not name.startswith("OSBP_BACKEND_")}
    command = [sys.executable, "-m", "osbp", "backend", "--db", ":memory:", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, env=clean | env, check=False)


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["--log-level", "foo"], "--log-level foo: input should be 'DEBUG', 'INFO', 'WARNING', 'ERROR' or"),
        (["--now", "tomorrow"], "--now tomorrow: expected an RFC 3339 instant with an offset, such as"),
        (["--now", "2026-05-04T12:00:00"], "--now 2026-05-04T12:00:00: expected an RFC 3339 instant"),
        (["--port", "70000"], "--port 70000: input should be less than or equal to 65535 (TCP port"),
        (["--port", "abc"], "--port abc: input should be a valid integer"),
        (["--port"], "argument --port: expected one argument (see `osbp backend --help`)"),
        (["--host", PUBLIC], f"--host {PUBLIC}: refusing a non-loopback bind"),
        (["--bogus"], "unrecognized arguments: --bogus"),
        (
            ["--trusted-proxies", "127.0.0.1,proxy.local"],
            "--trusted-proxies 127.0.0.1,proxy.local: 'proxy.local' is not an IP address or network; list",
        ),
    ],
    ids=[
        "log-level",
        "now",
        "naive-now",
        "port-range",
        "port-text",
        "port-missing",
        "host",
        "unknown",
        "trusted-proxies",
    ],
)
def test_a_bad_flag_is_one_stderr_line_naming_the_flag_and_exit_2(args, expected):
    """Platform choice: a user mistake is one line naming the flag and what was wrong, never a traceback."""
    result = _backend(*args)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1, result.stderr
    assert result.stderr.startswith("osbp backend: ")
    assert expected in result.stderr
    assert result.stdout == ""


def test_a_public_bind_says_how_to_allow_it_and_allowing_it_passes_validation():
    """Platform choice: loopback only unless `--allow-non-loopback`; the refusal names both flags."""
    refused = _backend("--host", PUBLIC).stderr
    assert "--allow-non-loopback" in refused
    assert env_var("allow_non_loopback") in refused
    assert "allow_non_loopback" not in refused.replace(env_var("allow_non_loopback"), "")
    settings = settings_from_args(build_parser().parse_args(["--host", PUBLIC, "--allow-non-loopback"]))
    assert (settings.host, settings.allow_non_loopback) == (PUBLIC, True)


def test_a_bad_environment_value_names_the_variable():
    """Platform choice: a value from the environment is reported by the variable's name."""
    result = _backend(OSBP_BACKEND_PORT="abc")
    assert result.returncode == 2
    assert result.stderr.startswith("osbp backend: OSBP_BACKEND_PORT=abc: input should be a valid integer")
    assert result.stderr.count("\n") == 1


def test_help_names_every_settings_field_as_a_flag_with_its_environment_variable():
    """Platform choice: flags and environment names derive from the one settings object."""
    result = _backend("--help")
    assert result.returncode == 0
    help_text = " ".join(result.stdout.split())  # argparse wraps lines
    for field in BackendSettings.model_fields:
        assert "--" + field.replace("_", "-") in help_text
        assert f"[{env_var(field)}]" in help_text
    assert "[OSBP_BACKEND_PORT]" in help_text


def test_log_level_is_case_insensitive():
    """Platform choice: `--log-level debug` is the same as `DEBUG`, as in logging itself."""
    assert BackendSettings(log_level="debug").log_level == "DEBUG"


def test_no_proxy_is_trusted_by_default():
    """Platform choice: X-Forwarded-For is ignored unless a proxy is configured (the peer is the client)."""
    assert BackendSettings().trusted_proxies == ()


def test_trusted_proxies_are_a_comma_separated_list_of_addresses_or_networks(monkeypatch):
    """Platform choice: `--trusted-proxies`/OSBP_BACKEND_TRUSTED_PROXIES take the same comma list."""
    monkeypatch.setenv(env_var("trusted_proxies"), " 127.0.0.1, 10.0.0.0/8 ,::1,192.0.2.7/32,")
    assert BackendSettings().trusted_proxies == ("127.0.0.1", "10.0.0.0/8", "::1", "192.0.2.7")
    args = build_parser().parse_args(["--trusted-proxies", "10.1.2.3/8"])
    assert settings_from_args(args).trusted_proxies == ("10.0.0.0/8",)
