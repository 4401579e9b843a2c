"""The `osbp` command dispatches to components lazily."""

import os
import subprocess
import sys

from osbp import cli


def test_help_lists_every_subcommand(capsys):
    """Platform choice: `osbp --help` names every component command."""
    assert cli.main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in cli.SUBCOMMANDS:
        assert f"  {name}" in out


def test_unknown_subcommand_exits_2_with_usage(capsys):
    """Platform choice: a typo gets usage on stderr and exit status 2, not a traceback."""
    assert cli.main(["bookit"]) == 2
    assert "unknown command 'bookit'" in capsys.readouterr().err


def test_cli_import_loads_no_component():
    """Platform choice: importing the CLI loads no component, so each subcommand pays only for itself."""
    code = "import sys, osbp.cli; print(sorted(m for m in sys.modules if m.startswith('osbp.')))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "['osbp.cli', 'osbp.collector']"


def _osbp(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "osbp", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_no_command_is_a_usage_error_on_stderr_with_status_2():
    """Platform choice: `osbp` alone is a mistake: the usage goes to stderr and the status is 2."""
    result = _osbp()
    assert result.returncode == 2
    assert result.stdout == ""
    assert result.stderr.startswith("usage: osbp <command> [args...]\n")
    assert "  bench  " in result.stderr


def test_help_is_the_usage_on_stdout_with_status_0():
    """Platform choice: `osbp --help` is asked for, so it answers on stdout and succeeds."""
    result = _osbp("--help")
    assert result.returncode == 0
    assert result.stderr == ""
    assert result.stdout.startswith("usage: osbp <command> [args...]\n")


def test_a_subcommand_is_imported_with_collection_paused_and_its_objects_frozen():
    """Platform choice: a subcommand's import makes next to no garbage, so the collector is paused for it
    and its long-lived objects are frozen; collection is on again when the subcommand runs."""
    code = (
        "import gc, sys, osbp.cli\n"
        "frozen = gc.get_freeze_count()\n"
        "module = osbp.cli._import_paused('osbp.server.audit_cli')\n"
        "print(gc.isenabled(), gc.get_freeze_count() > frozen)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["True", "True"]


def test_help_lists_the_version_option():
    """Platform choice: `--version` works, so `--help` says it exists."""
    result = _osbp("--help")
    assert "  -V, --version  print the version of osbp\n" in result.stdout


def test_a_reader_that_leaves_the_pipe_ends_the_command_quietly_with_the_sigpipe_status():
    """Platform choice: `osbp conformance --list-checks | head -1` ends with no traceback once the reader
    has gone; the command's status is the shell's for a closed pipe (141)."""
    read_end, write_end = os.pipe()
    command = [sys.executable, "-m", "osbp", "conformance", "--list-checks"]
    with subprocess.Popen(command, stdout=write_end, stderr=subprocess.PIPE) as process:
        os.close(write_end)
        os.close(read_end)  # the reader is gone before the command writes its first line
        assert process.stderr is not None
        errors = process.stderr.read().decode()
        status = process.wait(timeout=60)
    assert errors == ""
    assert status == 141
