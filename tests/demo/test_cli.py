"""`osbp demo` end to end: the real platform, real MCP server subprocesses, the SDK client."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from osbp.demo.cli import main
from tests.support.paths import REPO
from tests.support.processes import alive

NOW = "2030-05-06T13:00:00Z"


def _run_demo(tmp_path: Path, *args: str, now: str = NOW) -> subprocess.CompletedProcess[str]:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = os.environ | {"TMPDIR": str(scratch)}
    command = [
        sys.executable,
        "-m",
        "osbp",
        "demo",
        "--now",
        now,
        "--audit-log",
        str(tmp_path / "audit.jsonl"),
    ]
    return subprocess.run(
        [*command, *args], cwd=REPO, env=env, capture_output=True, text=True, timeout=180, check=False
    )


@pytest.mark.integration
def test_demo_books_four_verticals_and_the_over_cap_booking_is_refused_without_a_write(tmp_path):
    """OSBP spec, Getting Started (run the demo): four receipts, the refusal with price_exceeds_mandate, no
    platform write, exit 0."""
    result = _run_demo(tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout
    assert out.count("Receipt:") == 4
    assert out.count("Booking id: apt_") == 4
    for merchant in ("Carolyn's Dental", "Gus' Notary", "Andy's Auto", "Phil's Spa"):
        assert f"[ok] {merchant}: booked, receipt issued" in out
    assert "→ price_exceeds_mandate (retryable: False)" in out
    assert "[ok] no platform write: appointments 1 → 1, appointment-create requests 1 → 1" in out
    assert "[ok] the platform asked to verify the customer" in out
    # One MCP server for all four merchants; Phil's Spa is confirmed in the host's dialog (MCP
    # elicitation), the others through the token, and the narration says so.
    assert (
        "Demo: one OSBP MCP server for every merchant; bookings confirmed by approval token for "
        "Carolyn's Dental, Gus' Notary, Andy's Auto; only in the host's dialog (MCP elicitation) for "
        "Phil's Spa\n"
    ) in out
    assert "(warned once per endpoint per server process: 1 process(es))" in out
    assert out.count("[ok] the server asked the user through the host (MCP elicitation)") == 1
    assert out.count("Approval summary, exactly as the user sees it") == 3
    assert "[ok] the agent sent no approval token: it never held one" in out
    assert out.count("Operator: GET /api/organizations/{organization_id}/availability is deprecated") == 1
    assert "approval.token" not in out
    assert "[FAILED]" not in out
    # Nothing left behind but the audit log it points to, and that log verifies.
    assert list((tmp_path / "tmp").iterdir()) == []
    assert str(tmp_path / "audit.jsonl") in out
    verify = subprocess.run(
        [sys.executable, "-m", "osbp", "audit", "verify", str(tmp_path / "audit.jsonl")],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert verify.returncode == 0, verify.stdout + verify.stderr


@pytest.mark.integration
def test_the_json_transcript_carries_the_booking_and_no_secret(tmp_path):
    """OSBP spec, Getting Started (run the demo): --json is a machine-readable transcript; the token never
    reaches it."""
    result = _run_demo(tmp_path, "--vertical", "notary", "--json")
    assert result.returncode == 0, result.stderr
    transcript = json.loads(result.stdout)
    assert transcript["ok"] is True
    assert transcript["platform_now"] == NOW
    (notary,) = transcript["verticals"]
    assert notary["receipt"]["id"] == "receipt_idem_demo_notary_1"
    assert notary["booking"]["status"] == "booked"
    assert "schedule_address" not in notary["slot"]
    phases = [step["phase"] for step in notary["steps"]]
    assert phases[-4:] == ["approved_retry", "verification_send", "verification_retry", "status"]
    assert "apv_" not in result.stdout
    assert "+12125550142" not in result.stdout


@pytest.mark.integration
def test_the_demo_runs_at_any_instant_far_from_the_gallerys(tmp_path):
    """Platform choice: the servers' clocks are frozen at --now too, so no instant is too far from today."""
    result = _run_demo(tmp_path, now="2031-01-05T14:00:00Z")
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("Receipt:") == 4
    assert "→ price_exceeds_mandate (retryable: False)" in result.stdout


@pytest.mark.integration
def test_a_demo_long_in_the_past_books_and_audits_at_that_instant(tmp_path):
    """Platform choice: mandate expiry and audit created_at follow --now, not the real clock."""
    result = _run_demo(tmp_path, "--vertical", "dental", "--json", now="2021-03-01T14:00:00Z")
    assert result.returncode == 0, result.stdout + result.stderr
    transcript = json.loads(result.stdout)
    assert transcript["ok"] is True
    (dental,) = transcript["verticals"]
    assert dental["booking"]["status"] == "booked"
    events = (tmp_path / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    assert events
    assert {json.loads(line)["created_at"] for line in events} == {"2021-03-01T14:00:00.000Z"}


@pytest.mark.integration
def test_a_platform_that_cannot_start_is_one_line_and_status_1(tmp_path):
    """Platform choice: the platform's own reason for not starting (here a fault profile in the
    environment that is not JSON) is one line on stderr, exit status 1, and no traceback."""
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = os.environ | {"TMPDIR": str(scratch), "OSBP_BACKEND_FAULTS": "{not json"}
    command = [sys.executable, "-m", "osbp", "demo", "--audit-log", str(tmp_path / "audit.jsonl")]
    result = subprocess.run(
        command, cwd=REPO, env=env, capture_output=True, text=True, timeout=120, check=False
    )
    assert result.returncode == 1
    assert result.stderr.startswith(
        "osbp demo: the platform did not start (exit status 2): osbp backend: OSBP_BACKEND_FAULTS={not json: "
        "the fault profile is not JSON"
    )
    assert result.stderr.count("\n") == 1
    assert list(scratch.iterdir()) == []  # its temporary folder is gone with it


def test_now_must_be_an_instant_with_an_offset(capsys):
    """OSBP spec, Time Discipline: instants carry Z or an offset; a usage error exits 2."""
    assert main(["--now", "2030-05-06T13:00:00"]) == 2
    assert "RFC 3339 instant" in capsys.readouterr().err


def test_the_demo_loads_the_platform_stack_only_when_it_starts_the_platform():
    """Platform choice: `osbp demo` binds the platform's port and spawns its process before anything
    heavy is imported: the platform's web stack (FastAPI, SQLAlchemy, Alembic) is imported in that
    process, alongside the demo's own imports and its MCP server's start-up."""
    code = (
        "import sys, osbp.cli, osbp.demo.cli\n"
        "heavy = ('fastapi', 'sqlalchemy', 'sqlmodel', 'alembic', 'osbp.backend')\n"
        "print(sorted(m for m in sys.modules if any(m == h or m.startswith(h + '.') for h in heavy)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == (
        "['osbp.backend', 'osbp.backend.listening', 'osbp.backend.process', 'osbp.backend.setting_names']"
    )


def test_the_demo_imports_its_client_without_a_garbage_collection():
    """Platform choice (osbp.cli imports a subcommand with collection paused, and the demo its story once
    the platform's process is spawned): the demo's own start-up builds long-lived objects only, so no pass
    over the older generations runs during it (which would traverse them all), and collection is back
    on, with those objects frozen, afterwards."""
    code = (
        "import gc, sys, osbp.cli\n"
        "before = [generation['collections'] for generation in gc.get_stats()]\n"
        "osbp.cli._import_paused('osbp.demo.cli')._import_story()\n"
        "after = [generation['collections'] for generation in gc.get_stats()]\n"
        "loaded = 'mcp.client.session' in sys.modules\n"
        "print(after[1:] == before[1:], gc.isenabled(), gc.get_freeze_count() > 0, loaded)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["True", "True", "True", "True"]


@pytest.mark.integration
def test_the_demos_platform_process_ends_with_the_demo_even_when_it_is_killed(tmp_path):
    """Platform choice: the platform the demo spawns stops when the demo's process ends however it ends
    (here SIGKILL, which runs no clean-up): its stdin pipe closes and it stops by itself."""
    code = (
        "import sys, time, pathlib\n"
        "from osbp.demo.platform_process import spawn_platform\n"
        "platform = spawn_platform(pathlib.Path(sys.argv[1]), None)\n"
        "platform.wait_ready()\n"
        "print(platform.pid, flush=True)\n"
        "time.sleep(120)\n"
    )
    demo = subprocess.Popen([sys.executable, "-c", code, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert demo.stdout is not None
        platform_pid = int(demo.stdout.readline())
        os.kill(platform_pid, 0)  # it serves
        demo.kill()
        demo.wait(timeout=30)
        deadline = time.monotonic() + 30
        while alive(platform_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not alive(platform_pid)
    finally:
        if demo.poll() is None:
            demo.kill()
            demo.wait(timeout=30)
        if demo.stdout is not None:
            demo.stdout.close()


def test_the_child_watchers_note_after_the_loop_closed_is_dropped_and_other_asyncio_records_kept():
    """Platform choice (the CLI's error is one line): only the watcher's "Loop … that handles pid … is
    closed" record, which a server left to exit on its own after a failed start produces, is dropped."""
    import logging

    from osbp.demo.cli import _drop_reaped_after_loop

    def record(msg: str, *args: object) -> logging.LogRecord:
        return logging.LogRecord("asyncio", logging.WARNING, __file__, 1, msg, args, None)

    assert _drop_reaped_after_loop(record("Loop %r that handles pid %r is closed", "loop", 42)) is False
    assert _drop_reaped_after_loop(record("Unknown child process pid %d, will report returncode 255", 42))
    assert _drop_reaped_after_loop(record("Task exception was never retrieved"))
