"""`osbp mcp` / `python -m osbp.server`: configuration, start-up budget, plug-in adapters, shutdown."""

from __future__ import annotations

import json
import logging
import os
import queue
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from osbp.protocol.clock import FixedClock, SystemClock
from osbp.server.cli import build_parser, load_settings, main
from osbp.server.settings import ServerSettings

PLUGIN = "tests.server.memory_adapter:build_memory_adapter"
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No OSBP_* variable from the developer's shell leaks into these tests."""
    for key in list(os.environ):
        if key.startswith("OSBP_"):
            monkeypatch.delenv(key)


@pytest.fixture(autouse=True)
def restore_logging() -> Iterator[None]:
    """main() configures process-wide logging; put pytest's back afterwards."""
    root = logging.getLogger()
    handlers, level = root.handlers[:], root.level
    yield
    root.handlers[:] = handlers
    root.setLevel(level)
    logging.captureWarnings(False)


def env(**values: str) -> dict[str, str]:
    """A minimal explicit environment for a server subprocess."""
    base = {"PATH": os.environ.get("PATH", ""), "PYTHONPATH": str(REPO)}
    return base | values


def test_missing_platform_and_organization_exit_2_naming_flags_and_variables(capsys):
    """Issue 4: configuration is validated at start with a clear message on what is missing."""
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err == (
        "osbp mcp: missing configuration: --platform-url or OSBP_PLATFORM_BASE_URL; "
        "--organization-id or OSBP_ORGANIZATION_ID\n"
    )


def test_a_malformed_setting_exits_2_without_a_traceback(capsys):
    """Issue 4: a bad value is one clear line, never a traceback."""
    assert main(["--platform-url", "ftp://example", "--organization-id", "org"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("osbp mcp: invalid configuration: --platform-url / OSBP_PLATFORM_BASE_URL:")
    assert "Traceback" not in err


def test_flags_override_environment_variables(monkeypatch):
    """Issue 4: configuration from flags and OSBP_* environment variables, flags first."""
    monkeypatch.setenv("OSBP_PLATFORM_BASE_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("OSBP_ORGANIZATION_ID", "from_env")
    monkeypatch.setenv("OSBP_AUDIT_LOG_PATH", "audit/from-env.jsonl")
    settings = load_settings(["--organization-id", "from_flag"])
    assert isinstance(settings, ServerSettings)
    assert settings.organization_id == "from_flag"
    assert settings.platform_base_url == "http://127.0.0.1:1"
    assert settings.audit_log_path == Path("audit/from-env.jsonl")


def test_the_audit_key_comes_from_the_environment_only_and_is_never_echoed(monkeypatch, capsys):
    """Security: secrets only from the environment; a short key is refused without repeating it."""
    base = ["--platform-url", "http://127.0.0.1:1", "--organization-id", "org"]
    with pytest.raises(SystemExit):
        build_parser().parse_args([*base, "--audit-key", "x" * 40])
    capsys.readouterr()
    monkeypatch.setenv("OSBP_AUDIT_KEY", "short-secret")
    assert main(base) == 2
    err = capsys.readouterr().err
    assert "OSBP_AUDIT_KEY" in err
    assert "short-secret" not in err
    monkeypatch.setenv("OSBP_AUDIT_KEY", "s" * 32)
    settings = load_settings(base)
    assert isinstance(settings, ServerSettings)
    assert settings.audit_key_bytes() == b"s" * 32
    assert "s" * 32 not in repr(settings)


def test_the_platform_url_is_read_from_the_adapters_own_variable(monkeypatch):
    """Platform choice: one name for the platform URL, OSBP_PLATFORM_BASE_URL, shared with the adapter."""
    monkeypatch.setenv("OSBP_PLATFORM_BASE_URL", "http://127.0.0.1:2")
    monkeypatch.setenv("OSBP_ORGANIZATION_ID", "org")
    settings = load_settings([])
    assert isinstance(settings, ServerSettings)
    assert settings.platform_base_url == "http://127.0.0.1:2"


def test_the_audit_log_defaults_to_the_spec_path():
    """OSBP spec, Audit: events go to .osbp/audit/events.jsonl unless OSBP_AUDIT_LOG_PATH says otherwise."""
    settings = load_settings(["--platform-url", "http://127.0.0.1:1", "--organization-id", "org"])
    assert isinstance(settings, ServerSettings)
    assert settings.audit_log_path == Path(".osbp/audit/events.jsonl")


def test_now_freezes_the_one_clock_of_the_process_and_the_flag_wins(monkeypatch):
    """Platform choice (demos and traces): --now / OSBP_NOW is one FixedClock shared by adapter and audit."""
    monkeypatch.setenv("OSBP_NOW", "2031-01-05T14:00:00Z")
    base = ["--platform-url", "http://127.0.0.1:1", "--organization-id", "org"]
    from_env = load_settings(base)
    assert isinstance(from_env, ServerSettings)
    assert from_env.now == datetime(2031, 1, 5, 14, 0, tzinfo=UTC)
    clock = from_env.clock()
    assert isinstance(clock, FixedClock)
    assert clock is from_env.clock()
    from_flag = load_settings([*base, "--now", "2024-02-29T23:30:00-05:00"])
    assert isinstance(from_flag, ServerSettings)
    assert from_flag.clock().now() == datetime(2024, 3, 1, 4, 30, tzinfo=UTC)


def test_without_now_the_process_runs_on_the_system_clock():
    """Platform choice: a real deployment never freezes time, so the default is the system clock."""
    settings = load_settings(["--platform-url", "http://127.0.0.1:1", "--organization-id", "org"])
    assert isinstance(settings, ServerSettings)
    assert settings.now is None
    assert isinstance(settings.clock(), SystemClock)


@pytest.mark.parametrize("value", ["2031-01-05", "2031-01-05T14:00:00", "1924905600", "tomorrow"])
def test_a_now_that_is_not_an_rfc_3339_instant_exits_2(value, capsys):
    """RFC 3339: an instant needs a date, a time and Z or an offset; anything else is a usage error."""
    args = ["--platform-url", "http://127.0.0.1:1", "--organization-id", "org", "--now", value]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("osbp mcp: invalid configuration: --now / OSBP_NOW: ")
    assert "Traceback" not in err


def test_an_unloadable_adapter_factory_exits_2(capsys):
    """Platform choice: a wrong --adapter is a configuration error, not a crash."""
    args = ["--platform-url", "http://127.0.0.1:1", "--organization-id", "org"]
    args += ["--adapter", "nowhere.mod:build"]
    assert main(args) == 2
    assert "cannot import adapter factory module 'nowhere.mod'" in capsys.readouterr().err


def test_an_unusable_audit_path_exits_2(tmp_path, capsys):
    """Issue 4: the audit log is opened at start, so a bad path fails before serving anything."""
    (tmp_path / "events.jsonl").mkdir()
    args = ["--platform-url", "http://127.0.0.1:1", "--organization-id", "org"]
    args += ["--adapter", PLUGIN, "--state-path", str(tmp_path / "s.db")]
    args += ["--audit-log-path", str(tmp_path / "events.jsonl")]
    assert main(args) == 2
    assert "cannot open the audit log" in capsys.readouterr().err


@pytest.mark.integration
def test_the_entry_point_never_imports_the_platform_stack():
    """Issue 4: the server process never imports FastAPI, SQLModel, uvicorn or osbp.backend."""
    code = (
        "import sys, osbp.server.cli, osbp.adapter\n"
        "from osbp.server.adapter_factory import reference_adapter\n"
        "heavy = ('fastapi', 'sqlmodel', 'uvicorn', 'sqlalchemy', 'osbp.backend')\n"
        "print(sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in heavy)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.integration
def test_python_m_osbp_server_and_osbp_mcp_are_the_same_command(tmp_path):
    """Issue 4: `osbp mcp` and `python -m osbp.server` both launch the server."""
    for command in ([sys.executable, "-m", "osbp.server"], [sys.executable, "-m", "osbp", "mcp"]):
        done = subprocess.run([*command, "--help"], capture_output=True, text=True, env=env(), cwd=tmp_path)
        assert done.returncode == 0
        assert done.stdout.startswith("usage: osbp mcp")
        missing = subprocess.run(command, capture_output=True, text=True, env=env(), cwd=tmp_path)
        assert missing.returncode == 2
        assert missing.stdout == ""
        assert missing.stderr.startswith("osbp mcp: missing configuration:")


@pytest.mark.integration
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_server_cleanly(tmp_path, signum):
    """Issue 4: clean shutdown: the adapter and the audit log are closed and the exit status is 0."""
    process = subprocess.Popen(
        [sys.executable, "-m", "osbp.server", "--adapter", PLUGIN],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=env(
            OSBP_PLATFORM_BASE_URL="http://127.0.0.1:9",
            OSBP_ORGANIZATION_ID="org_test",
            OSBP_STATE_PATH=str(tmp_path / "state.db"),
            OSBP_AUDIT_LOG_PATH=str(tmp_path / "audit" / "events.jsonl"),
            OSBP_LOG_LEVEL="INFO",
        ),
    )
    try:
        assert process.stderr is not None
        stderr = process.stderr
        lines: queue.Queue[dict[str, object]] = queue.Queue()

        def pump() -> None:
            for line in stderr:
                lines.put(json.loads(line))

        reader = threading.Thread(target=pump, daemon=True)
        reader.start()
        # Wait for the server to say it is serving (an event, not a sleep), then signal it.
        assert lines.get(timeout=60)["event"] == "serving_stdio"
        process.send_signal(signum)
        assert process.wait(timeout=60) == 0
        reader.join(timeout=60)
        rest = []
        while not lines.empty():
            rest.append(lines.get_nowait())
        assert [entry["event"] for entry in rest] == ["stopping_on_signal", "stopped"]
        assert process.stdout is not None
        assert process.stdout.read() == ""
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
        for pipe in (process.stdin, process.stdout, process.stderr):
            if pipe is not None:
                pipe.close()
