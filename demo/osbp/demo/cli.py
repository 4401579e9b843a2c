"""`osbp demo` (`make demo`): book synthetic appointments end to end and show the guardrail refusing.

Starts the platform on an ephemeral loopback port with a fresh temporary database and its test surface,
launches one OSBP MCP server subprocess serving all four merchants, plays the agent through the MCP SDK
client, stops everything it started and leaves only the audit log it prints. Exit status 0 when every
expected outcome happened, 1 when one did not, 2 for a usage error.
"""

from __future__ import annotations

import argparse
import importlib
import json
import logging
import sys
import tempfile
import tomllib
from collections.abc import Sequence
from datetime import datetime
from importlib import resources
from pathlib import Path

from osbp.collector import collector_paused
from osbp.demo import platform_process
from osbp.protocol.timeutil import parse_instant

__all__ = ["DEFAULT_AUDIT_LOG", "build_parser", "main"]

#: Where the demo's audit log goes (relative to the working directory; `.osbp/` is git-ignored).
DEFAULT_AUDIT_LOG = Path(".osbp/demo/audit.jsonl")


def _vertical_keys() -> list[str]:
    """The scenario file's verticals in demo order, read without validating the file.

    ``osbp.demo.scenarios`` validates it (pydantic models) once the platform's process is on its way;
    the command line only needs the names.
    """
    text = resources.files("osbp.demo").joinpath("scenarios.toml").read_text(encoding="utf-8")
    return list(tomllib.loads(text).get("verticals", {}))


def build_parser() -> argparse.ArgumentParser:
    """The `osbp demo` command line."""
    parser = argparse.ArgumentParser(
        prog="osbp demo", description=__doc__.splitlines()[0] if __doc__ else None
    )
    parser.add_argument(
        "--vertical",
        action="append",
        choices=_vertical_keys(),
        help="vertical to run (repeatable; default: all four)",
    )
    parser.add_argument(
        "--now",
        metavar="INSTANT",
        help="freeze the platform's and the MCP servers' clocks at this RFC 3339 instant, past or future "
        "(deterministic dates, slots, mandate expiry and audit times)",
    )
    parser.add_argument("--json", action="store_true", help="print a machine-readable transcript instead")
    parser.add_argument(
        "--audit-log",
        type=Path,
        default=DEFAULT_AUDIT_LOG,
        help=f"audit log path (default {DEFAULT_AUDIT_LOG})",
    )
    return parser


def _parse_now(value: str | None) -> datetime | str | None:
    if value is None:
        return None
    instant = parse_instant(value)
    if instant is None:
        return f"--now must be an RFC 3339 instant with Z or an offset, got {value!r}"
    return instant


def _import_story() -> None:
    """Import what tells the story (the MCP SDK's client, the scenarios' models, the narration) with the
    collector paused: it builds long-lived objects only."""
    with collector_paused():
        importlib.import_module("osbp.demo.walkthrough")


def _start_error(error: BaseException) -> platform_process.PlatformStartError | None:
    """The platform's failed start behind ``error`` (raised inside a task group, it comes wrapped)."""
    if isinstance(error, platform_process.PlatformStartError):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            if (found := _start_error(inner)) is not None:
                return found
    return None


#: asyncio's child watcher reports a child that exits after its event loop closed. When the platform fails
#: to start, the task group cancels the MCP server's launch; a server spawned but not yet handed to the
#: SDK's stdio client then exits on its own (stdin closed) after `anyio.run` returns: only this line says so.
_REAPED_AFTER_LOOP = "Loop %r that handles pid %r is closed"


def _drop_reaped_after_loop(record: logging.LogRecord) -> bool:
    """Keep every asyncio record but the child watcher's note above (the CLI's error stays one line)."""
    return record.msg != _REAPED_AFTER_LOOP


def main(argv: Sequence[str]) -> int:
    """Run the demo; 0 when every expected outcome happened."""
    args = build_parser().parse_args(list(argv))
    logging.getLogger("asyncio").addFilter(_drop_reaped_after_loop)
    now = _parse_now(args.now)
    if isinstance(now, str):
        print(f"osbp demo: {now}", file=sys.stderr)
        return 2
    args.audit_log.parent.mkdir(parents=True, exist_ok=True)
    args.audit_log.unlink(missing_ok=True)  # the log shows this run's events only
    with tempfile.TemporaryDirectory(prefix="osbp-platform-") as workdir:
        # The platform's process starts first, so its imports run on another core while this process
        # imports the MCP SDK's client and the rest of the demo (POSIX; elsewhere it starts in a thread).
        process = (
            platform_process.spawn_platform(Path(workdir), now) if platform_process.supported() else None
        )
        try:
            _import_story()
            import anyio

            from osbp.demo.narration import make_narrator
            from osbp.demo.scenarios import VERTICALS
            from osbp.demo.stack import SpawnedPlatform
            from osbp.demo.walkthrough import run_demo

            verticals = list(dict.fromkeys(args.vertical or VERTICALS))
            narrator = make_narrator(json_mode=args.json)
            platform = SpawnedPlatform(process) if process is not None else None
            result = anyio.run(
                lambda: run_demo(
                    verticals, now=now, audit_log=args.audit_log, narrator=narrator, spawned=platform
                )
            )
        except Exception as error:
            failed = _start_error(error)
            if failed is None:
                raise
            print(f"osbp demo: {failed}", file=sys.stderr)
            return 1
        finally:
            if process is not None:
                process.stop()
    if args.json:
        print(json.dumps(result.transcript, indent=2, sort_keys=True, ensure_ascii=False))
    elif not result.ok:
        print(f"\n{len(result.failures)} expected outcome(s) did not happen:", file=sys.stderr)
        for failure in result.failures:
            print(f"  - {failure}", file=sys.stderr)
    return 0 if result.ok else 1
