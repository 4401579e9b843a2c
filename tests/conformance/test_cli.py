"""`osbp conformance`: flags, output, exit status."""

from __future__ import annotations

import json
import os
import pty
import shlex
import subprocess
import sys

import pytest

from osbp.conformance import CATALOG, reference_fixtures_path
from osbp.conformance.audit_checks import CHECK_IDS as AUDIT_CHECKS
from osbp.conformance.cli import main
from osbp.conformance.concurrency_checks import CHECK_IDS as CONCURRENCY_CHECKS
from osbp.conformance.elicitation_checks import CHECK_IDS
from osbp.conformance.outage_checks import CHECK_IDS as OUTAGE_CHECKS
from tests.conformance.toy_fixtures import FORMAT_2_CHECKS, write_toy_fixtures
from tests.support.toy import TOY_SERVER


def _server(*flags: str) -> str:
    return shlex.join([sys.executable, str(TOY_SERVER), *flags])


@pytest.mark.integration
def test_osbp_conformance_grades_the_toy_incomplete_with_exit_0_when_skips_are_allowed(scenario, tmp_path):
    """Platform choice (docs/conformance.md): one line per check under its spec section, the final line
    INCOMPLETE naming the skipped checks, exit status 0 with --allow-skips when nothing failed; the six
    platform hooks are flags, the token lifetime a fixture."""
    toy = _server(
        "--arm-file", str(scenario.arm_file),
        "--stats-file", str(scenario.stats_file),
        "--status-file", str(scenario.status_file),
        "--catalog-file", str(scenario.catalog_file),
        "--approval-ttl", "1",
    )  # fmt: skip
    fixtures = write_toy_fixtures(tmp_path / "fixtures.json", approval_ttl_seconds=1)
    command = [
        sys.executable, "-m", "osbp", "conformance",
        "--server", toy,
        "--fixtures", str(fixtures),
        "--scenario-url", scenario.url,
        "--stats-url", scenario.stats_url,
        "--status-url", scenario.status_url,
        "--catalog-url", scenario.catalog_url,
        "--provider-url", scenario.provider_url,
        "--location-url", scenario.location_url,
        "--timeout", "10",
        "--allow-skips",
    ]  # fmt: skip
    run = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    lines = run.stdout.splitlines()
    assert run.returncode == 0, run.stdout + run.stderr
    # The toy keeps the token path alone (no confirmation through the host), writes no audit log, its
    # own format-1 file states none of the oracle's facts, and its stats count no appointments.
    ungraded = {*CHECK_IDS, *AUDIT_CHECKS, *FORMAT_2_CHECKS, *CONCURRENCY_CHECKS}
    skipped = [check.id for check in CATALOG if check.id in ungraded]
    passed = len(CATALOG) - len(skipped)
    assert lines[-1] == (
        f"INCOMPLETE {passed}/{len(CATALOG)} checks passed (0 failed, {len(skipped)} skipped: "
        + ", ".join(skipped)
        + ")"
    )
    verdicts = ("  PASS ", "  FAIL ", "  SKIP ")  # a SKIP's reason follows on a deeper line
    check_lines = [line.split()[:2] for line in lines[:-1] if line.startswith(verdicts)]
    expected = [["SKIP" if check.id in skipped else "PASS", check.id] for check in CATALOG]
    assert sorted(check_lines) == sorted(expected)


@pytest.mark.integration
def test_json_output_of_a_broken_server_exits_1_naming_the_failed_check(capsys, tmp_path):
    """Platform choice (docs/conformance.md): --json gives the report object; exit status is 0 only when
    nothing failed."""
    fixtures = write_toy_fixtures(tmp_path / "fixtures.json")
    status = main(["--server", _server("--break", "jpy_cents"), "--fixtures", str(fixtures), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert status == 1
    assert (report["ok"], report["verdict"]) == (False, "FAIL")
    assert {c["id"] for c in report["checks"] if c["status"] == "FAIL"} == {"money.jpy_minor_units"}
    assert {c["id"] for c in report["checks"] if c["status"] == "SKIP"} == {
        "runtime.slot_taken",
        "runtime.rate_limited",
        *OUTAGE_CHECKS,
        *AUDIT_CHECKS,
        "idempotency.replay_offline",
        "status.native_mapping",
        "approval.token_summary_bound",
        "approval.token_summary_cancellation_fee",
        "approval.token_summary_no_show_fee",
        "approval.token_summary_window",
        "approval.token_summary_provider",
        "approval.token_summary_location",
        "approval.token_expired_current",
        "approval.token_expired",
        *CHECK_IDS,  # the toy keeps the token path: no confirmation through the host
        *FORMAT_2_CHECKS,  # the toy's own file is format 1
        *CONCURRENCY_CHECKS,  # no scenario or stats URL
    }


@pytest.mark.integration
@pytest.mark.parametrize(("flags", "status"), [((), 1), (("--allow-skips",), 0)])
def test_a_run_with_skips_exits_1_unless_skips_are_allowed(capsys, tmp_path, flags, status):
    """Platform choice (docs/conformance.md): a run that skipped checks is INCOMPLETE, not a pass; only
    --allow-skips accepts it."""
    fixtures = write_toy_fixtures(tmp_path / "fixtures.json")
    argv = ["--server", _server(), "--fixtures", str(fixtures), "--json", *flags]
    assert main(argv) == status
    report = json.loads(capsys.readouterr().out)
    assert (report["ok"], report["verdict"], report["summary"]["failed"]) == (True, "INCOMPLETE", 0)


@pytest.mark.integration
def test_env_options_reach_the_server_and_its_stderr_can_be_kept(tmp_path, capsys):
    """Platform choice: --env KEY=VALUE configures the server; --server-log keeps its stderr."""
    script = tmp_path / "env_server.py"
    script.write_text(
        "import os, sys\nprint('OSBP_MARK=' + os.environ.get('OSBP_MARK', ''), file=sys.stderr)\n"
    )
    log = tmp_path / "server.log"
    status = main(
        [
            "--server", shlex.join([sys.executable, str(script)]),
            "--fixtures", str(reference_fixtures_path()),
            "--env", "OSBP_MARK=seen",
            "--server-log", str(log),
            "--timeout", "5",
        ]
    )  # fmt: skip
    assert status == 1
    assert "OSBP_MARK=seen" in log.read_text(encoding="utf-8")
    lines = capsys.readouterr().out.splitlines()
    assert [line for line in lines if line.startswith("  FAIL")] == [
        next(line for line in lines if line.startswith("  FAIL wire.initialize"))
    ]


def test_list_checks_prints_the_catalog(capsys):
    """Platform choice (docs/conformance.md): every check has a stable id, a one-line requirement and a spec
    reference."""
    assert main(["--list-checks"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in lines] == [check.id for check in CATALOG]


def test_a_malformed_env_option_is_a_usage_error(capsys):
    """Platform choice: usage errors exit 2."""
    with pytest.raises(SystemExit) as exited:
        main(["--server", "x", "--fixtures", str(reference_fixtures_path()), "--env", "NOVALUE"])
    assert exited.value.code == 2
    assert "--env expects KEY=VALUE" in capsys.readouterr().err


def test_server_without_fixtures_is_a_usage_error(capsys):
    """Platform choice (docs/conformance.md): the fixture file is what the battery grades against."""
    with pytest.raises(SystemExit) as exited:
        main(["--server", "x"])
    assert exited.value.code == 2
    assert "--server needs --fixtures" in capsys.readouterr().err


def test_an_unreadable_fixture_file_exits_2(tmp_path, capsys):
    """Platform choice: a broken fixture file is a usage problem, not a failed grade."""
    path = tmp_path / "broken.json"
    path.write_text("{}", encoding="utf-8")
    assert main(["--server", "x", "--fixtures", str(path)]) == 2
    assert "cannot read the fixture file" in capsys.readouterr().err


def test_help_imports_neither_the_battery_nor_the_platform() -> None:
    """Platform choice: `osbp conformance --help` answers at once: the battery (the MCP SDK) and the
    platform `--self` starts are imported only when a run needs them."""
    code = (
        "import sys, contextlib, io\n"
        "from osbp.conformance import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.suppress(SystemExit):\n"
        "    cli.main(['--help'])\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in ('mcp', 'fastapi', 'sqlalchemy')\n"
        "          or m in ('osbp.conformance.battery', 'osbp.backend.app')]\n"
        "print(sorted(loaded))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"


def _stderr_on_a_terminal(command: list[str]) -> tuple[int, bytes, str]:
    """Run ``command`` with stderr on a pseudo-terminal; its status, what the terminal showed, stdout."""
    leader, follower = pty.openpty()
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=follower, text=True) as process:
        os.close(follower)
        shown = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the terminal's last writer closed it
                break
            if not chunk:
                break
            shown += chunk
        stdout = process.stdout.read() if process.stdout is not None else ""
        status = process.wait(timeout=60)
    os.close(leader)
    return status, shown, stdout


def test_a_run_on_a_terminal_shows_progress_on_stderr_and_a_piped_report_stays_plain() -> None:
    """Platform choice: a grading run says it is working (a spinner, the time elapsed) on a terminal;
    the report on stdout is unchanged by it."""
    slow = f"{sys.executable} -c 'import time; time.sleep(3)'"
    command = [
        sys.executable, "-m", "osbp", "conformance", "--server", slow,
        "--fixtures", str(reference_fixtures_path()), "--timeout", "2",
    ]  # fmt: skip
    status, shown, stdout = _stderr_on_a_terminal(command)
    assert status == 1
    assert b"osbp conformance: grading" in shown
    assert "osbp conformance: grading" not in stdout
    assert stdout.splitlines()[-1].startswith("FAIL 0/")


def test_grading_another_server_imports_nothing_of_the_platform() -> None:
    """Platform choice: `osbp conformance --server …` works with the MCP server alone installed (no
    `platform` extra): only `--self` imports this project's platform."""
    code = (
        "import sys, contextlib, io\n"
        "from osbp.conformance import cli\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    cli.main(['--server', 'false', '--fixtures', {str(reference_fixtures_path())!r}])\n"
        "print(sorted(m for m in sys.modules if m.split('.')[0] in ('fastapi', 'sqlalchemy', 'sqlmodel')\n"
        "             or m.startswith('osbp.backend')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert result.stdout.strip() == "[]"
