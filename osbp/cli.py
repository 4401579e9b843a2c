"""The `osbp` command: one entry point, one subcommand per component.

Each subcommand lives in the component it drives (the benchmarks, which drive them all, in `osbp.bench`)
and is imported only when invoked, so `osbp mcp` never pays for FastAPI and `osbp backend` never pays for
the MCP SDK. A subcommand is a callable `main(argv: list[str]) -> int` in its `cli` module. Plain `osbp`
is a usage error (status 2, usage on stderr); `osbp --help` is the usage on stdout.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Sequence
from types import ModuleType

from osbp.collector import collector_paused

__all__ = ["NEEDS_PLATFORM", "PLATFORM_EXTRA", "SUBCOMMANDS", "main", "platform_installed"]

#: name -> (module, one-line help). The module's `main(argv)` receives the remaining arguments.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "backend": ("osbp.backend.cli", "run the synthetic booking platform (FastAPI on loopback)"),
    "mcp": ("osbp.server.cli", "run the OSBP MCP server over stdio or Streamable HTTP"),
    "auth": ("osbp.server.issuer", "development token issuer for a remote server (`osbp auth token`)"),
    "audit": ("osbp.server.audit_cli", "inspect the audit log (`osbp audit verify`)"),
    "demo": ("osbp.demo.cli", "book synthetic appointments end to end through the real stack"),
    "traces": ("osbp.demo.traces_cli", "record or replay the trace gallery"),
    "conformance": (
        "osbp.conformance.cli",
        "grade any OSBP MCP server over the wire (stdio or Streamable HTTP)",
    ),
    "bench": ("osbp.bench.cli", "run the benchmarks against real servers on loopback"),
}


#: The commands that run the synthetic platform, whose web stack is the `platform` extra.
NEEDS_PLATFORM = frozenset({"backend", "demo", "traces", "bench"})
#: What to install when the platform extra is missing.
PLATFORM_EXTRA = (
    "the synthetic platform is the optional `platform` extra: pip install 'osbp[platform]' "
    "(in a checkout: .venv/bin/pip install -e '.[platform]', which `make install` does)"
)


def platform_installed() -> bool:
    """Whether the platform extra (FastAPI, SQLModel, Alembic) is installed."""
    return all(importlib.util.find_spec(name) is not None for name in ("fastapi", "sqlmodel", "alembic"))


def _usage() -> str:
    width = max(len(name) for name in SUBCOMMANDS)
    lines = ["usage: osbp <command> [args...]", "", "commands:"]
    lines += [f"  {name.ljust(width)}  {text}" for name, (_, text) in SUBCOMMANDS.items()]
    lines += ["", "options:", "  -h, --help     show this list", "  -V, --version  print the version of osbp"]
    lines += ["", "Run `osbp <command> --help` for a command's own options."]
    return "\n".join(lines)


def _import_paused(name: str) -> ModuleType:
    """Import a subcommand with the garbage collector paused, its long-lived objects frozen afterwards.

    A subcommand's import (pydantic models, the MCP SDK, FastAPI) creates hundreds of thousands of
    objects and next to no garbage (:mod:`osbp.collector`).
    """
    with collector_paused():
        return importlib.import_module(name)


def main(argv: Sequence[str] | None = None) -> int:
    """Dispatch `osbp <command> ...` to the component that owns the command."""
    args = list(sys.argv[1:] if argv is None else argv)
    if not args:  # a command is required: usage is the answer to a mistake, so stderr and status 2
        print(_usage(), file=sys.stderr)
        return 2
    if args[0] in {"-h", "--help", "help"}:
        print(_usage())
        return 0
    if args[0] in {"-V", "--version"}:
        from osbp.version import __version__

        print(f"osbp {__version__}")
        return 0
    entry = SUBCOMMANDS.get(args[0])
    if entry is None:
        print(f"osbp: unknown command {args[0]!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    if args[0] in NEEDS_PLATFORM and not platform_installed():
        print(f"osbp {args[0]}: {PLATFORM_EXTRA}", file=sys.stderr)
        return 2
    module = _import_paused(entry[0])
    try:
        result: int = module.main(args[1:])
        sys.stdout.flush()
    except BrokenPipeError:
        return _reader_gone()
    except BaseExceptionGroup as group:  # a task group's: the pipe closed under an async command
        closed, rest = group.split(BrokenPipeError)
        if closed is None or rest is not None:
            raise
        return _reader_gone()
    return result


def _reader_gone() -> int:
    """The reader of stdout left (``osbp demo | head -3``): stop quietly, as a command in a pipe does.

    Python would report the closed pipe again when it flushes stdout at exit; pointing stdout at the null
    device first keeps that from printing a second traceback."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
    return 141  # 128 + SIGPIPE (13), what a shell reports for a command whose pipe closed
