"""`osbp mcp` / `python -m osbp.server`: run the OSBP MCP server over stdio.

Configuration comes from flags, then ``OSBP_*`` environment variables (:class:`ServerSettings`), and is
validated before anything starts: a missing or malformed setting is one clear line on stderr and exit
status 2, never a traceback. stdout carries only MCP messages; logs are JSON lines on stderr. On end of
input, SIGTERM or SIGINT the server stops, closes the adapter (its HTTP client) and the audit log (every
record is already fsynced).

``--now`` / ``OSBP_NOW`` freezes the process's one clock (:meth:`ServerSettings.clock`) for the adapter
and the audit alike; it is for demos, recorded traces and tests, and the server says so on stderr.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
from collections.abc import Sequence
from typing import Any, cast

import anyio
import anyio.abc
from pydantic import ValidationError

from osbp.protocol.clock import Clock
from osbp.protocol.contract import BookingAdapter
from osbp.protocol.timeutil import format_instant
from osbp.server._sdk import stdio_server
from osbp.server.adapter_factory import AdapterFactoryError, compose
from osbp.server.app import create_server
from osbp.server.audit import AuditLog
from osbp.server.logs import configure_logging
from osbp.server.settings import ServerSettings
from osbp.server.stdin import StdinLines

__all__ = ["build_parser", "load_settings", "main", "serve"]

logger = logging.getLogger("osbp.server")

_FLAGS = {
    "platform_base_url": "--platform-url",
    "organization_id": "--organization-id",
    "state_path": "--state-path",
    "audit_log_path": "--audit-log-path",
    "log_level": "--log-level",
    "adapter_factory": "--adapter",
    "now": "--now",
}


def build_parser() -> argparse.ArgumentParser:
    """The `osbp mcp` argument parser."""
    parser = argparse.ArgumentParser(
        prog="osbp mcp",
        description="Run the OSBP MCP server over stdio. Flags override OSBP_* environment variables.",
    )
    parser.add_argument(
        "--platform-url", dest="platform_base_url", help="platform base URL [OSBP_PLATFORM_BASE_URL]"
    )
    parser.add_argument("--organization-id", help="the one organization served [OSBP_ORGANIZATION_ID]")
    parser.add_argument("--state-path", help="local OSBP state file [OSBP_STATE_PATH]")
    parser.add_argument("--audit-log-path", help="audit log file [OSBP_AUDIT_LOG_PATH]")
    parser.add_argument(
        "--log-level", choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"], help="[OSBP_LOG_LEVEL]"
    )
    parser.add_argument("--adapter", dest="adapter_factory", help="module:function [OSBP_ADAPTER_FACTORY]")
    parser.add_argument(
        "--now",
        metavar="INSTANT",
        help="freeze this process's clock at an RFC 3339 instant; demos, traces and tests only [OSBP_NOW]",
    )
    return parser


def _describe(error: ValidationError) -> str:
    parts = []
    for item in error.errors(include_url=False, include_input=False):
        field = str(item["loc"][0]) if item["loc"] else "?"
        flag = _FLAGS.get(field, field)
        parts.append(f"{flag} / OSBP_{field.upper()}: {item['msg']}")
    return "; ".join(parts)


def load_settings(argv: Sequence[str]) -> ServerSettings | str:
    """The validated settings, or the one-line reason they are unusable."""
    args = build_parser().parse_args(list(argv))
    overrides: dict[str, Any] = {key: value for key, value in vars(args).items() if value is not None}
    try:
        settings = ServerSettings(**overrides)
    except ValidationError as error:
        return f"invalid configuration: {_describe(error)}"
    if missing := settings.missing():
        return "missing configuration: " + "; ".join(missing)
    return settings


def _fail(message: str) -> int:
    sys.stderr.write(f"osbp mcp: {message}\n")
    return 2


def main(argv: Sequence[str] | None = None) -> int:
    """Validate the configuration, build the adapter and serve MCP over stdio until the input ends."""
    try:
        loaded = load_settings(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:  # argparse: --help (0) or a usage error (2, already explained on stderr)
        return int(exc.code or 0)
    if isinstance(loaded, str):
        return _fail(loaded)
    settings = loaded
    configure_logging(settings.log_level)
    if settings.now is not None:
        # A frozen clock never lets a mandate or an approval expire: make it impossible to miss.
        logger.warning(
            "fixed_clock",
            extra={
                "now": format_instant(settings.now),
                "note": "this process's time is frozen (demos, traces and tests only)",
            },
        )
    try:
        adapter = compose(settings)
    except AdapterFactoryError as error:
        return _fail(str(error))
    except ValidationError as error:
        return _fail(f"invalid adapter configuration: {_describe(error)}")
    audit = AuditLog(settings.audit_log_path, key=settings.audit_key_bytes())
    try:
        audit.open()
    except OSError as error:
        anyio.run(adapter.aclose)
        return _fail(f"cannot open the audit log {settings.audit_log_path}: {error.strerror}")
    try:
        return anyio.run(serve, adapter, audit, settings.clock())
    except Exception:
        # A bug, not a configuration problem: one JSON log line with the traceback, then status 1.
        logger.exception("server_crashed")
        return 1


async def _stop_on_signals(
    scope: anyio.CancelScope, *, task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED
) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        task_status.started()
        async for signum in signals:
            logger.info("stopping_on_signal", extra={"signal": signal.Signals(signum).name})
            scope.cancel()
            return


async def serve(adapter: BookingAdapter, audit: AuditLog, clock: Clock | None = None) -> int:
    """Serve MCP over this process's stdio; always closes the adapter and the audit log."""
    server = create_server(adapter, audit, clock=clock)
    try:
        async with anyio.create_task_group() as group:
            await group.start(_stop_on_signals, group.cancel_scope)
            where = {"platform": adapter.platform.to_wire(), "audit": str(audit.path)}
            logger.info("serving_stdio", extra=where)
            stdin = cast("anyio.AsyncFile[str]", StdinLines(sys.stdin.fileno()))  # duck-typed: only iterated
            async with stdio_server(stdin=stdin) as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
            group.cancel_scope.cancel()
    finally:
        with anyio.CancelScope(shield=True):
            try:
                await adapter.aclose()
            except Exception:
                logger.exception("adapter_close_failed")
            audit.close()
    logger.info("stopped")
    return 0
