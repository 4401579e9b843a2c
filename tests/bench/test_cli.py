"""`osbp bench`: one parser for every benchmark's flags, names and flags in any order, one-line mistakes."""

from __future__ import annotations

import fcntl
import json
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from osbp.bench import cli

#: Every benchmark's own flags, as documented in docs/*.md.
FLAGS = {
    "backend": ("--requests", "--creates", "--clients"),
    "state": ("--claims", "--state-processes"),
    "adapter": ("--iterations",),
    "mcp": ("--cold-runs", "--calls", "--warmup"),
    "loop": ("--rounds", "--loops", "--loop-warmup", "--against"),
    "remote": ("--remote-calls", "--remote-warmup", "--remote-clients", "--remote-loops"),
    "edge": ("--edge-held", "--edge-sources", "--edge-requests"),
    "demo": ("--demo-runs", "--replay-runs"),
}


#: What a terminal would act on: every C0 control character but the newline, and DEL.
CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f]")


def _bench(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "osbp", "bench", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=300, check=False)


def _bench_on_a_terminal(*args: str, stdout_too: bool) -> tuple[int, str, str]:
    """Run `osbp bench ARGS` with stderr (and stdout, if ``stdout_too``) on a pseudo-terminal; its status,
    what the terminal showed and what went to the stdout pipe."""
    command = [sys.executable, "-m", "osbp", "bench", *args]
    leader, follower = pty.openpty()
    # A terminal 50 rows by 200 columns, so no line of the table or the results path wraps; its size is the
    # terminal's own, not a COLUMNS/LINES the test runner may have exported.
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 50, 200, 0, 0))
    env = {name: value for name, value in os.environ.items() if name not in {"COLUMNS", "LINES"}}
    stdout = follower if stdout_too else subprocess.PIPE
    with subprocess.Popen(
        command, stdin=subprocess.DEVNULL, stdout=stdout, stderr=follower, env=env
    ) as process:
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the terminal's last writer closed it and everything was read
                break
            if not chunk:
                break
            shown += chunk
        piped = process.stdout.read() if process.stdout is not None else b""
        status = process.wait(timeout=300)
    os.close(leader)
    return status, shown.decode(), piped.decode()


def test_a_flag_before_any_name_sets_that_flag_and_every_benchmark_runs():
    """Platform choice: `osbp bench --iterations 5` runs every benchmark, the adapter's with 5 iterations."""
    planned = cli.plan(["--iterations", "5"])
    assert isinstance(planned, cli.Plan)
    assert planned.names == ["backend", "state", "adapter", "mcp", "loop", "remote", "edge", "demo"]
    assert planned.args.iterations == 5
    assert planned.args.out == Path("bench-results")


def test_names_and_flags_mix_in_any_order_and_run_in_the_order_named():
    """Platform choice: flags may come before, between or after the names."""
    planned = cli.plan(["--calls", "3", "mcp", "--iterations=7", "adapter", "mcp"])
    assert isinstance(planned, cli.Plan)
    assert planned.names == ["mcp", "adapter"]
    assert (planned.args.calls, planned.args.iterations) == (3, 7)


@pytest.mark.integration
def test_the_iterations_flag_reaches_the_adapter_benchmark_run_as_a_process(tmp_path: Path):
    """Platform choice: a flag given before the benchmark's name is that benchmark's, end to end."""
    result = _bench("--iterations", "5", "adapter", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    assert json.loads((tmp_path / "adapter.json").read_text(encoding="utf-8"))["iterations"] == 5
    assert "adapter → platform over loopback (5 bookings)" in result.stdout
    assert [path.name for path in tmp_path.iterdir()] == ["adapter.json"]
    assert CONTROL.search(result.stdout) is None
    assert "osbp bench: adapter (1 of 1)" not in result.stderr


@pytest.mark.integration
def test_a_run_on_a_terminal_names_the_benchmark_running_and_piped_tables_stay_plain(tmp_path: Path):
    """Platform choice: a run of minutes says what it is doing (a spinner, the benchmark, the time
    elapsed) on a terminal; the tables piped from stdout and the JSON results are unchanged by it."""
    status, shown, piped = _bench_on_a_terminal(
        "adapter", "--iterations", "5", "--out", str(tmp_path), stdout_too=False
    )
    assert status == 0, shown
    assert "osbp bench: adapter (1 of 1)" in shown
    assert "osbp bench: adapter" not in piped
    assert "adapter → platform over loopback (5 bookings)" in piped
    assert CONTROL.search(piped) is None
    assert json.loads((tmp_path / "adapter.json").read_text(encoding="utf-8"))["iterations"] == 5


@pytest.mark.integration
def test_on_a_terminal_the_tables_are_drawn_above_the_spinner(tmp_path: Path):
    """Platform choice: with stdout on the same terminal the table is printed whole, on lines of its own,
    and the spinner's line is cleared when the run ends."""
    status, shown, _ = _bench_on_a_terminal(
        "adapter", "--iterations", "5", "--out", str(tmp_path), stdout_too=True
    )
    assert status == 0, shown
    assert "osbp bench: adapter (1 of 1)" in shown
    # What each line of the terminal ends up showing: escape sequences dropped, a carriage return
    # starting the line over (rich clears the spinner's line with one before drawing over it).
    plain = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", shown).replace("\r\n", "\n")
    lines = [line.rsplit("\r", 1)[-1] for line in plain.split("\n")]
    title = [line for line in lines if "adapter → platform over loopback (5 bookings)" in line]
    assert [line.strip() for line in title] == ["adapter → platform over loopback (5 bookings)"]
    assert any(line.strip() == f"wrote {tmp_path / 'adapter.json'}" for line in lines)


def test_the_backend_benchmark_runs_8_and_32_clients_and_one_postgres_url_serves_every_benchmark(monkeypatch):
    """Platform choice: creates at 8 and 32 clients by default; `--postgres-url` is one shared flag (no URL:
    a throwaway cluster)."""
    monkeypatch.delenv("OSBP_BENCH_POSTGRES_URL", raising=False)
    planned = cli.plan(["backend"])
    assert isinstance(planned, cli.Plan)
    assert (planned.args.clients, planned.args.postgres_url) == ((8, 32), None)
    given = cli.plan(["backend", "--clients", "4,16", "--postgres-url", "postgresql://pg@127.0.0.1/postgres"])
    assert isinstance(given, cli.Plan)
    assert (given.args.clients, given.args.postgres_url) == ((4, 16), "postgresql://pg@127.0.0.1/postgres")


def test_help_lists_every_benchmarks_own_flags():
    """Platform choice: `osbp bench --help` documents every flag a benchmark takes."""
    result = _bench("--help")
    assert result.returncode == 0
    assert "--out" in result.stdout
    assert "--postgres-url" in result.stdout
    for name, flags in FLAGS.items():
        assert f"{name} benchmark" in result.stdout
        for flag in flags:
            assert flag in result.stdout


def test_help_after_a_name_lists_that_benchmarks_flags_only():
    """Platform choice: `osbp bench mcp --help` is the MCP benchmark's own help."""
    result = _bench("mcp", "--help")
    assert result.returncode == 0
    for flag in FLAGS["mcp"]:
        assert flag in result.stdout
    assert "--iterations" not in result.stdout
    assert "--requests" not in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (
            ["backend", "--iterations", "5"],
            "osbp bench: --iterations is an option of the adapter benchmark, which this run leaves out: "
            "add `adapter` to the names, or drop --iterations",
        ),
        (
            ["bookit"],
            "osbp bench: unknown benchmark 'bookit': "
            "choose from backend, state, adapter, mcp, loop, remote, edge, demo",
        ),
        (
            ["--iterations", "0"],
            "osbp bench: argument --iterations: expected a whole number ≥ 1, got '0' "
            "(see `osbp bench --help`)",
        ),
        (["--bogus"], "osbp bench: unrecognized arguments: --bogus (see `osbp bench --help`)"),
    ],
    ids=["flag-of-a-bench-left-out", "unknown-name", "zero-iterations", "unknown-flag"],
)
def test_a_mistake_is_one_stderr_line_and_exit_2(args, message):
    """Platform choice: a user mistake is one line saying what was wrong and what to do, never a traceback."""
    result = _bench(*args)
    assert result.returncode == 2
    assert result.stderr == message + "\n"
    assert result.stdout == ""


@pytest.mark.integration
def test_the_remote_benchmark_books_every_loop_once_on_one_and_two_replicas(tmp_path: Path):
    """OSBP spec, booking.create idempotency (over replicas): every loop books, never twice."""
    args = [
        "remote",
        "--remote-calls",
        "2",
        "--remote-warmup",
        "0",
        "--remote-clients",
        "3",
        "--remote-loops",
        "1",
    ]
    result = _bench(*args, "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    figures = json.loads((tmp_path / "remote.json").read_text(encoding="utf-8"))
    assert set(figures["per_tool_p50_ms"]["osbp_service_describe"]) == {"stdio", "streamable_http"}
    runs = {run["replicas"]: run for run in figures["throughput"]}
    assert sorted(runs) == [1, 2]
    for run in runs.values():
        assert (run["booked"], run["platform_appointments"], run["double_bookings"]) == (3, 3, 0)
