"""`osbp mcp` / `python -m osbp.server`: configuration, start-up checks, plug-in adapters, shutdown."""

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
from typing import Any

import pytest
from mcp.types import LATEST_PROTOCOL_VERSION

from osbp.protocol.clock import FixedClock, SystemClock
from osbp.server.cli import build_parser, load_settings, main
from osbp.server.settings import AUDIT_KEY_RULE, ServerSettings

PLUGIN = "tests.support.memory_adapter:build_memory_adapter"
#: An audit key as `secrets.token_hex(32)` makes them (fixed here: tests only, never secret).
GOOD_AUDIT_KEY = "5d0c2f7be91a43e68c4a0b1f9e27d3c8a6f4b2e0917c5d3a8b6e4f2a0c9d7b15"
REPO = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.usefixtures("no_osbp_environment")


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


#: A platform and an organization: enough for the server to get past "missing configuration".
CONFIGURED = {"OSBP_PLATFORM_BASE_URL": "http://127.0.0.1:9", "OSBP_ORGANIZATION_ID": "org_test"}


def run_mcp(*args: str, cwd: Path, **variables: str) -> subprocess.CompletedProcess[str]:
    """`python -m osbp.server ARGS` with only ``variables`` set, its input at end, finished."""
    return subprocess.run(
        [sys.executable, "-m", "osbp.server", *args],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env(**variables),
        timeout=60,
    )


def a_regular_file(path: Path) -> Path:
    """A regular file at ``path``: no directory can be created under it, whoever the user (root too)."""
    path.write_text("not a directory\n", encoding="utf-8")
    return path


def test_missing_platform_and_organization_exit_2_naming_flags_and_variables(capsys):
    """OSBP spec, one organization per server: nothing is guessed; the message says what to set."""
    assert main([]) == 2
    err = capsys.readouterr().err
    assert err == (
        "osbp mcp: missing configuration: set --platform-url or OSBP_PLATFORM_BASE_URL, "
        "and --organization-id or OSBP_ORGANIZATION_ID\n"
    )


@pytest.mark.integration
@pytest.mark.parametrize(
    ("args", "variables", "line"),
    [
        (
            ["--platform-url", "ftp://example"],
            {"OSBP_ORGANIZATION_ID": "org"},
            "--platform-url / OSBP_PLATFORM_BASE_URL must be an http(s) URL, like http://127.0.0.1:8400 "
            "(got 'ftp://example')",
        ),
        (
            [],
            CONFIGURED | {"OSBP_AUDIT_KEY": "short-secret"},
            f"OSBP_AUDIT_KEY must {AUDIT_KEY_RULE}",
        ),
        (
            [],
            CONFIGURED | {"OSBP_READ_TIMEOUT_S": "soon"},
            "OSBP_READ_TIMEOUT_S must be a positive number of seconds (got 'soon')",
        ),
        (
            [],
            CONFIGURED | {"OSBP_LOG_LEVEL": "LOUD"},
            "--log-level / OSBP_LOG_LEVEL must be one of DEBUG, INFO, WARNING, ERROR, CRITICAL (got 'LOUD')",
        ),
    ],
)
def test_a_rejected_setting_is_one_plain_line_naming_the_flag_or_variable(tmp_path, args, variables, line):
    """Platform choice: a bad value is one line naming the setting and its rule, never pydantic's words."""
    done = run_mcp(*args, cwd=tmp_path, **variables)
    assert done.returncode == 2
    assert done.stderr == f"osbp mcp: invalid configuration: {line}\n"
    assert done.stdout == ""


@pytest.mark.integration
@pytest.mark.parametrize(
    "key",
    [
        "a" * 32,
        "ab" * 16,
        "0123456789abcdef" * 2,
        "a" * 25 + "bcdefgh",
        "3f9c2b7e8a41d05c6e7b9a2f4d8c1e03b5a7f9d2c4e6b8a0f1d3c5e7a9b2d4f6," + "x" * 40,
    ],
    ids=[
        "one_character",
        "two_characters",
        "a_block_twice",
        "one_character_dominating",
        "one_weak_in_a_ring",
    ],
)
def test_a_request_state_key_that_is_not_random_is_refused_in_one_line(tmp_path, key):
    """MCP SDK RequestStateSecurity (32 bytes of secret randomness): a placeholder key is a start-up error."""
    done = run_mcp(cwd=tmp_path, OSBP_REQUEST_STATE_KEY=key, **CONFIGURED)
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr.count("\n") == 1, done.stderr
    assert done.stderr.startswith(
        "osbp mcp: invalid configuration: OSBP_REQUEST_STATE_KEY must be one or more comma-separated keys"
    )
    assert not any(part in done.stderr for part in key.split(","))
    assert not (tmp_path / ".osbp").exists()  # refused before any file was created


@pytest.mark.integration
def test_a_usage_error_is_one_line_pointing_at_help(tmp_path):
    """Platform choice: an unknown flag is one line on stderr, not the whole usage text."""
    done = run_mcp("--organisation-id", "org", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr == "osbp mcp: unrecognized arguments: --organisation-id org (see osbp mcp --help)\n"


def test_flags_override_environment_variables(monkeypatch):
    """Platform choice: configuration from flags and OSBP_* environment variables, flags first."""
    monkeypatch.setenv("OSBP_PLATFORM_BASE_URL", "http://127.0.0.1:1")
    monkeypatch.setenv("OSBP_ORGANIZATION_ID", "from_env")
    monkeypatch.setenv("OSBP_AUDIT_LOG_PATH", "audit/from-env.jsonl")
    settings = load_settings(["--organization-id", "from_flag"])
    assert isinstance(settings, ServerSettings)
    assert settings.adapter.organization_id == "from_flag"
    assert settings.adapter.platform_base_url == "http://127.0.0.1:1"
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
    assert err == f"osbp mcp: invalid configuration: OSBP_AUDIT_KEY must {AUDIT_KEY_RULE}\n"
    monkeypatch.setenv("OSBP_AUDIT_KEY", "s" * 32)  # long enough, but a placeholder
    assert main(base) == 2
    err = capsys.readouterr().err
    assert err == f"osbp mcp: invalid configuration: OSBP_AUDIT_KEY must {AUDIT_KEY_RULE}\n"
    assert "s" * 32 not in err
    monkeypatch.setenv("OSBP_AUDIT_KEY", GOOD_AUDIT_KEY)
    settings = load_settings(base)
    assert isinstance(settings, ServerSettings)
    assert settings.audit_key_bytes() == GOOD_AUDIT_KEY.encode()
    assert GOOD_AUDIT_KEY not in repr(settings)


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
    assert err == (
        "osbp mcp: invalid configuration: --now / OSBP_NOW must be an RFC 3339 instant with Z or an offset, "
        f"like 2030-05-06T13:00:00Z (got {value!r})\n"
    )


def test_a_confirmation_for_an_organization_not_served_exits_2(capsys):
    """Platform choice: --confirmation-for may name only organizations this server serves."""
    args = [
        "--platform-url",
        "http://127.0.0.1:1",
        "--organization-id",
        "a,b",
        "--confirmation-for",
        "c=token",
    ]
    assert main(args) == 2
    assert capsys.readouterr().err == (
        "osbp mcp: invalid configuration: --confirmation-for / OSBP_CONFIRMATION_FOR: names c, which this "
        "server does not serve (--organization-id) (got 'c=token')\n"
    )


def test_an_unloadable_adapter_factory_exits_2(capsys):
    """Platform choice: a wrong --adapter is a configuration error, not a crash."""
    args = ["--platform-url", "http://127.0.0.1:1", "--organization-id", "org"]
    args += ["--adapter", "nowhere.mod:build"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("osbp mcp: --adapter / OSBP_ADAPTER_FACTORY: cannot import module 'nowhere.mod'")


def test_an_audit_path_that_is_a_directory_exits_2(tmp_path, capsys):
    """Platform choice: the audit log is opened at start, so a bad path fails before serving anything."""
    (tmp_path / "events.jsonl").mkdir()
    args = ["--platform-url", "http://127.0.0.1:1", "--organization-id", "org"]
    args += ["--adapter", PLUGIN, "--state-path", str(tmp_path / "s.db")]
    args += ["--audit-log-path", str(tmp_path / "events.jsonl")]
    assert main(args) == 2
    assert capsys.readouterr().err == (
        f"osbp mcp: cannot create the audit log {tmp_path / 'events.jsonl'}: it is a directory; "
        "set --audit-log-path / OSBP_AUDIT_LOG_PATH to an absolute path in a directory this user can write\n"
    )


@pytest.mark.integration
@pytest.mark.parametrize(
    ("other", "what", "default", "setting"),
    [
        (
            "OSBP_AUDIT_LOG_PATH",
            "the state file",
            ".osbp/state/osbp.sqlite3",
            "--state-path / OSBP_STATE_PATH",
        ),
        (
            "OSBP_STATE_PATH",
            "the audit log",
            ".osbp/audit/events.jsonl",
            "--audit-log-path / OSBP_AUDIT_LOG_PATH",
        ),
    ],
)
def test_a_working_directory_that_cannot_hold_a_default_file_is_one_line(
    tmp_path, other, what, default, setting
):
    """OSBP spec, Audit: the defaults are relative (.osbp/...); where one cannot be, say what to set."""
    a_regular_file(tmp_path / ".osbp")  # `.osbp/...` cannot be created here, by any user
    done = run_mcp(cwd=tmp_path, **{other: str(tmp_path / "elsewhere")}, **CONFIGURED)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"osbp mcp: cannot create {what} {default} in the working directory {tmp_path}: "
        f"{tmp_path / '.osbp'} is not a directory; "
        f"set {setting} to an absolute path in a directory this user can write\n"
    )


@pytest.mark.integration
@pytest.mark.parametrize("how", ["flag", "variable"])
def test_a_state_path_that_cannot_be_created_is_one_line(tmp_path, how):
    """Platform choice: the state file is opened before serving, so a bad path is a clear start-up error."""
    state = a_regular_file(tmp_path / "taken") / "state.db"
    given = {"OSBP_STATE_PATH": str(state)} if how == "variable" else {}
    args = ["--state-path", str(state)] if how == "flag" else []
    done = run_mcp(*args, cwd=tmp_path, OSBP_AUDIT_LOG_PATH=str(tmp_path / "a.jsonl"), **CONFIGURED, **given)
    assert done.returncode == 2
    assert done.stderr == (
        f"osbp mcp: cannot create the state file {state}: {tmp_path / 'taken'} is not a directory; "
        "set --state-path / OSBP_STATE_PATH to an absolute path in a directory this user can write\n"
    )


@pytest.mark.integration
def test_a_relative_state_path_that_cannot_be_created_names_the_working_directory(tmp_path):
    """Platform choice: a relative path is relative to the working directory, and the message says which."""
    a_regular_file(tmp_path / "rel")
    done = run_mcp(
        "--state-path",
        "rel/state.db",
        cwd=tmp_path,
        OSBP_AUDIT_LOG_PATH=str(tmp_path / "a.jsonl"),
        **CONFIGURED,
    )
    assert done.returncode == 2
    assert done.stderr.startswith(
        f"osbp mcp: cannot create the state file rel/state.db in the working directory {tmp_path}: "
    )
    assert done.stderr.count("\n") == 1


@pytest.mark.integration
def test_relative_paths_in_a_writable_directory_are_created_there_at_start(tmp_path):
    """Platform choice: both files are created before serving, relative to the working directory."""
    done = run_mcp("--adapter", PLUGIN, "--state-path", "rel/state.db", cwd=tmp_path, **CONFIGURED)
    assert done.returncode == 0
    assert (tmp_path / "rel" / "state.db").is_file()
    assert (tmp_path / ".osbp" / "audit" / "events.jsonl").is_file()


@pytest.mark.integration
def test_the_entry_point_never_imports_the_platform_stack():
    """Platform choice: the server process never imports FastAPI, SQLModel, uvicorn or osbp.backend."""
    code = (
        "import sys, osbp.server.cli, osbp.adapter\n"
        "from osbp.server.compose import reference_adapter\n"
        "heavy = ('fastapi', 'sqlmodel', 'uvicorn', 'sqlalchemy', 'osbp.backend')\n"
        "print(sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in heavy)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


@pytest.mark.integration
def test_python_m_osbp_server_and_osbp_mcp_are_the_same_command(tmp_path):
    """Platform choice: `osbp mcp` and `python -m osbp.server` both launch the server."""
    for command in ([sys.executable, "-m", "osbp.server"], [sys.executable, "-m", "osbp", "mcp"]):
        done = subprocess.run([*command, "--help"], capture_output=True, text=True, env=env(), cwd=tmp_path)
        assert done.returncode == 0
        assert done.stdout.startswith("usage: osbp mcp")
        missing = subprocess.run(command, capture_output=True, text=True, env=env(), cwd=tmp_path)
        assert missing.returncode == 2
        assert missing.stdout == ""
        assert missing.stderr.startswith("osbp mcp: missing configuration: set --platform-url")


@pytest.mark.integration
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_the_server_cleanly(tmp_path, signum):
    """Platform choice: a signal stops the server at once: adapter and audit log closed, exit status 0."""
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
        # A few seconds, far above the tens of milliseconds it takes: a signal that waits on the host
        # (another input line, a blocked reader thread) would never end it at all.
        assert process.wait(timeout=5) == 0
        reader.join(timeout=5)
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


def _free_loopback_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.integration
def test_an_unreachable_state_database_is_one_line_without_its_password(tmp_path):
    """Platform choice: a postgresql:// state location is connected to before serving; a database that
    cannot be reached is a clear start-up error (status 2), and the URL's password is never echoed."""
    url = f"postgresql://osbp:hunter2@127.0.0.1:{_free_loopback_port()}/osbp"
    done = run_mcp(
        "--state-path", url, cwd=tmp_path, OSBP_AUDIT_LOG_PATH=str(tmp_path / "a.jsonl"), **CONFIGURED
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(
        "osbp mcp: cannot open the state database postgresql://osbp:***@127.0.0.1:"
    ), done.stderr
    assert "Connection refused" in done.stderr
    assert done.stderr.endswith(
        "check that it is running and reachable, or set --state-path / OSBP_STATE_PATH to another location\n"
    )
    assert done.stderr.count("\n") == 1
    assert "hunter2" not in done.stderr


@pytest.mark.integration
@pytest.mark.parametrize(
    "location",
    ["mysql://osbp@127.0.0.1/osbp", "postgresql://osbp:hunter2@127.0.0.1:port/osbp", "postgresql://h"],
)
def test_a_state_location_neither_a_path_nor_a_postgresql_url_is_refused_in_one_line(tmp_path, location):
    """Platform choice: a URL is never taken for a file name (no SQLite file named like the URL appears)."""
    done = run_mcp("--state-path", location, cwd=tmp_path, **CONFIGURED)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(
        "osbp mcp: invalid configuration: --state-path / OSBP_STATE_PATH must be a file path or a "
        "postgresql://[user[:password]@]host[:port]/database URL (got "
    ), done.stderr
    assert done.stderr.count("\n") == 1
    assert "hunter2" not in done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.integration
def test_a_postgresql_state_location_is_opened_and_its_schema_made_at_start(tmp_path, postgres_url):
    """Platform choice: the state database's tables exist once the server started on it."""
    import psycopg

    done = run_mcp("--adapter", PLUGIN, "--state-path", postgres_url, cwd=tmp_path, **CONFIGURED)
    assert done.returncode == 0, done.stderr
    with psycopg.connect(postgres_url) as db:
        tables = {row[0] for row in db.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public'")}
    made = {"approvals", "booking_snapshots", "confirmation_pages", "confirmation_rounds", "idempotency"}
    assert tables == made


#: What a stdio server on SQLite state never runs: the platform's stack, PostgreSQL, migrations, the
#: remote transport with its OAuth, token issuer and URL-mode confirmation page, and the SDK's client side.
_NOT_FOR_STDIO = (
    "alembic",
    "fastapi",
    "jwt",
    "mcp.client",
    "osbp.backend",
    "osbp.protocol.store_postgres",
    "osbp.server.auth",
    "osbp.server.confirmation_page",
    "osbp.server.http",
    "osbp.server.issuer",
    "psycopg",
    "sqlalchemy",
    "uvicorn",
)
#: Runs `osbp mcp` as the `osbp` command does, and writes the modules loaded by its exit to argv[1].
_MODULES_AT_EXIT = (
    "import atexit, json, sys\n"
    "atexit.register(lambda: open(sys.argv[1], 'w').write(json.dumps(sorted(sys.modules))))\n"
    "from osbp.cli import main\n"
    "raise SystemExit(main(['mcp']))\n"
)


@pytest.mark.integration
def test_a_stdio_server_on_sqlite_state_loads_no_http_oauth_postgres_or_migration_code(tmp_path):
    """Platform choice: `osbp mcp` over stdio with SQLite state, through initialize and tools/list, never
    imports the remote transport, OAuth, the token issuer, PostgreSQL, Alembic or the platform stack
    (cold start pays for what it runs)."""
    messages: list[dict[str, Any]] = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": LATEST_PROTOCOL_VERSION,
                "capabilities": {},
                "clientInfo": {"name": "osbp-tests", "version": "0"},
            },
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    modules = tmp_path / "modules.json"
    variables = CONFIGURED | {
        "OSBP_STATE_PATH": str(tmp_path / "state.sqlite3"),
        "OSBP_AUDIT_LOG_PATH": str(tmp_path / "audit.jsonl"),
    }
    process = subprocess.Popen(
        [sys.executable, "-c", _MODULES_AT_EXIT, str(modules)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
        env=env(**variables),
    )
    assert process.stdin is not None
    assert process.stdout is not None
    answers = []
    for message in messages:  # each request answered before the next is sent, as a host does
        process.stdin.write(json.dumps(message) + "\n")
        process.stdin.flush()
        if "id" in message:
            answers.append(json.loads(process.stdout.readline()))
    _, stderr = process.communicate(timeout=60)  # end of input: the server stops
    assert process.returncode == 0, stderr
    assert [answer["id"] for answer in answers] == [1, 2]
    assert len(answers[1]["result"]["tools"]) == 8
    loaded = json.loads(modules.read_text(encoding="utf-8"))
    heavy = [name for name in loaded if any(name == h or name.startswith(h + ".") for h in _NOT_FOR_STDIO)]
    assert heavy == []
