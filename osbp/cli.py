"""The `osbp` command: one entry point, one subcommand per component.

Each subcommand lives in the component it drives (the benchmarks, which drive them all, in `osbp.bench`)
and is imported only when invoked, so `osbp mcp` never pays for FastAPI and `osbp backend` never pays for
the MCP SDK. A subcommand is a callable `main(argv: list[str]) -> int` in its `cli` module. Plain `osbp`
is a usage error (status 2, usage on stderr); `osbp --help` is the usage on stdout.
"""

from __future__ import annotations

import gc
import importlib
import sys
from collections.abc import Sequence
from types import ModuleType

__all__ = ["SUBCOMMANDS", "main"]

#: name -> (module, one-line help). The module's `main(argv)` receives the remaining arguments.
SUBCOMMANDS: dict[str, tuple[str, str]] = {
    "backend": ("osbp.backend.cli", "run the synthetic booking platform (FastAPI on loopback)"),
    "mcp": ("osbp.server.cli", "run the OSBP MCP server over stdio or Streamable HTTP"),
    "auth": ("osbp.server.issuer", "development token issuer for a remote server (`osbp auth token`)"),
    "audit": ("osbp.server.audit_cli", "inspect the audit log (`osbp audit verify`)"),
    "demo": ("osbp.demo.cli", "book synthetic appointments end to end through the real stack"),
    "traces": ("osbp.demo.traces_cli", "record or replay the trace gallery"),
    "conformance": ("osbp.conformance.cli", "grade any OSBP stdio MCP server over the wire"),
    "bench": ("osbp.bench.cli", "run the benchmarks against real servers on loopback"),
}


def _usage() -> str:
    width = max(len(name) for name in SUBCOMMANDS)
    lines = ["usage: osbp <command> [args...]", "", "commands:"]
    lines += [f"  {name.ljust(width)}  {text}" for name, (_, text) in SUBCOMMANDS.items()]
    lines += ["", "Run `osbp <command> --help` for a command's own options."]
    return "\n".join(lines)


def _import_paused(name: str) -> ModuleType:
    """Import a subcommand with the garbage collector paused, its long-lived objects frozen afterwards.

    A subcommand's import (pydantic models, the MCP SDK, FastAPI) creates hundreds of thousands of
    objects and next to no garbage: collecting during it is pure start-up cost, and so is traversing
    those objects again in later collections (``gc.freeze`` exempts them).
    """
    collecting = gc.isenabled()
    gc.disable()
    try:
        return importlib.import_module(name)
    finally:
        gc.freeze()
        if collecting:
            gc.enable()


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
        from osbp import __version__

        print(f"osbp {__version__}")
        return 0
    entry = SUBCOMMANDS.get(args[0])
    if entry is None:
        print(f"osbp: unknown command {args[0]!r}\n\n{_usage()}", file=sys.stderr)
        return 2
    module = _import_paused(entry[0])
    result: int = module.main(args[1:])
    return result
