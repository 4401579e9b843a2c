"""The `osbp` command dispatches to components lazily."""

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
    assert out.strip() == "['osbp.cli']"
