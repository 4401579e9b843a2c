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


def _closure(requirements: list[str]) -> set[str]:
    """The distributions ``requirements`` pull in, transitively, as installed here (markers evaluated)."""
    from importlib.metadata import PackageNotFoundError, requires

    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    seen: set[str] = set()
    pending: list[tuple[Requirement, tuple[str, ...]]] = [(Requirement(text), ()) for text in requirements]
    while pending:
        requirement, extras = pending.pop()
        environment = {"extra": extras[0]} if extras else {"extra": ""}
        if requirement.marker is not None and not requirement.marker.evaluate(environment):
            continue
        name = canonicalize_name(requirement.name)
        key = name + "[" + ",".join(sorted(requirement.extras)) + "]"
        if key in seen:
            continue
        seen.add(key)
        try:
            listed = requires(name) or []
        except PackageNotFoundError:
            continue
        for text in listed:
            inner = Requirement(text)
            if inner.marker is None or "extra" not in str(inner.marker):
                pending.append((inner, ()))
            else:
                pending += [(inner, (extra,)) for extra in requirement.extras]
    return {key.split("[")[0] for key in seen}


def test_the_mcp_server_alone_installs_no_web_framework_or_orm():
    """Platform choice: `pip install osbp` (no extras) brings none of FastAPI, SQLModel, SQLAlchemy,
    Alembic: they are the synthetic platform's, the `platform` extra."""
    from importlib.metadata import requires

    base = [text for text in requires("osbp") or [] if "extra ==" not in text]
    pulled = _closure(base)
    assert "mcp" in pulled
    assert pulled.isdisjoint({"fastapi", "sqlmodel", "sqlalchemy", "alembic"})
    with_platform = _closure([*base, "osbp[platform]"])
    assert {"fastapi", "sqlmodel", "sqlalchemy", "alembic"} <= with_platform


def test_a_platform_command_without_the_platform_extra_is_one_line(monkeypatch, capsys):
    """Platform choice: `osbp backend` (and demo, traces, bench) without the extra says what to install."""
    monkeypatch.setattr(cli, "platform_installed", lambda: False)
    for command in sorted(cli.NEEDS_PLATFORM):
        assert cli.main([command]) == 2
        err = capsys.readouterr().err
        assert err == f"osbp {command}: {cli.PLATFORM_EXTRA}\n"
