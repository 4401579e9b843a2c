"""`osbp mcp` / `python -m osbp.server`: run the OSBP MCP server over stdio (or Streamable HTTP).

``--transport streamable-http`` serves HTTP instead (:mod:`osbp.server.http`), refused with one line when
it would expose an unauthorized server beyond loopback.

Configuration comes from flags, then ``OSBP_*`` environment variables (:class:`ServerSettings`, whose
fields give the flags), and is validated before anything starts, the state file and the audit log
included (:func:`osbp.server.compose.compose`): a usage error, a missing or malformed setting or an
unusable path is one line on stderr and exit status 2, never a traceback. stdout carries only MCP
messages; logs are JSON lines on stderr. On end of input, SIGTERM or SIGINT the server stops at once,
closes the adapter (its HTTP client) and the audit log (every record is already fsynced).

``--now`` / ``OSBP_NOW`` freezes the process's one clock (:meth:`ServerSettings.clock`) for the adapter
and the audit alike; it is for demos, recorded traces and tests, and the server says so on stderr.
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import logging
import signal
import sys
from collections.abc import Sequence
from contextlib import AsyncExitStack
from datetime import timedelta
from functools import partial
from typing import NoReturn, cast

import anyio
import anyio.abc
from pydantic import ValidationError

from osbp.protocol.clock import Clock, SystemClock
from osbp.protocol.contract import BookingAdapter
from osbp.protocol.retention import DEFAULT_RETENTION, StatePurge
from osbp.protocol.state import StateBackend
from osbp.protocol.timeutil import format_instant
from osbp.server._sdk import stdio_server
from osbp.server.app import create_server
from osbp.server.audit import AuditLog
from osbp.server.compose import close_parts, compose
from osbp.server.confirmation import ConfirmationPolicy
from osbp.server.listening import ListenError
from osbp.server.logs import configure_logging
from osbp.server.purge import purging
from osbp.server.settings import ServerSettings, describe, nest, settings_of
from osbp.server.stdin import StdinLines
from osbp.server.stdout import claimed_stdout

#: The stdio server runs on uvloop where it is installed (a dependency except on Windows): the same
#: asyncio interface, a cheaper loop under each tool call. The HTTP transport keeps uvicorn's asyncio loop.
_UVLOOP = importlib.util.find_spec("uvloop") is not None

__all__ = ["build_parser", "load_settings", "main", "serve"]

logger = logging.getLogger("osbp.server")
PROG = "osbp mcp"


class _Parser(argparse.ArgumentParser):
    """argparse with a usage error on one line (the user's mistake and where to look), not the usage."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    """The `osbp mcp` argument parser: one flag per flagged setting of :class:`ServerSettings`."""
    parser = _Parser(
        prog=PROG,
        description="Run the OSBP MCP server over stdio (default) or Streamable HTTP. Flags override OSBP_* "
        "environment variables.",
    )
    for leaf in settings_of(ServerSettings):
        if leaf.setting.flag is not None:
            dest = ".".join(leaf.path)
            if leaf.field.annotation is bool:  # a switch: present means true (the variable says true/false)
                parser.add_argument(
                    leaf.setting.flag, dest=dest, action="store_const", const=True, help=leaf.help
                )
                continue
            metavar = leaf.setting.metavar or ("{" + ",".join(leaf.choices) + "}" if leaf.choices else None)
            parser.add_argument(leaf.setting.flag, dest=dest, metavar=metavar, help=leaf.help)
    return parser


def load_settings(argv: Sequence[str]) -> ServerSettings | str:
    """The validated settings, or the one-line reason they are unusable."""
    args = vars(build_parser().parse_args(list(argv)))
    given = {tuple(dest.split(".")): value for dest, value in args.items() if value is not None}
    try:
        return ServerSettings(**nest(given, settings_of(ServerSettings)))
    except ValidationError as error:
        return describe(error)


def _fail(message: str) -> int:
    sys.stderr.write(f"{PROG}: {message}\n")
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
    if settings.transport == "streamable-http":
        return _main_http(settings)
    if settings.page_required():
        # Served over authorized Streamable HTTP only: here the organizations that require it book nothing.
        logger.warning(
            "confirmation_page_unavailable",
            extra={
                "detail": "--confirmation page over stdio: every booking.create that requires the "
                "confirmation page is refused (confirmation_unavailable); serve it over streamable-http"
            },
        )
    parts = compose(settings)
    if isinstance(parts, str):
        return _fail(parts)
    try:
        status = anyio.run(
            partial(
                serve,
                confirmation=settings.confirmation_policy(),
                state=parts.state,
                retention=settings.state_retention(),
            ),
            parts.adapter,
            parts.audit,
            parts.clock,
            backend_options={"use_uvloop": _UVLOOP},
        )
    except Exception:
        # A bug, not a configuration problem: one JSON log line with the traceback, then status 1.
        logger.exception("server_crashed")
        return 1
    # Everything is closed and flushed. What is left of the process is its heap, mostly the MCP SDK's and
    # pydantic's long-lived objects; the interpreter's exit would garbage-collect them one by one (a few
    # hundred ms, the bulk of stopping), though the operating system frees them at once. Frozen objects
    # are skipped by those collections; atexit handlers and stream flushing still run as usual.
    gc.freeze()
    return status


def _main_http(settings: ServerSettings) -> int:
    """Serve Streamable HTTP (imported only here: stdio never pays for uvicorn and the auth stack)."""
    from osbp.server import http  # deferred on purpose, see the docstring

    refused = http.refusal(settings)
    if refused is not None:
        return _fail(refused)
    parts = compose(settings)
    if isinstance(parts, str):
        return _fail(parts)
    try:
        return anyio.run(http.serve_http, parts.adapter, parts.audit, settings)
    except ListenError as error:
        return _fail(f"--port {settings.http.port}: {error}; stop what holds it or choose another --port")
    except Exception:
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


async def serve(
    adapter: BookingAdapter,
    audit: AuditLog,
    clock: Clock | None = None,
    *,
    confirmation: ConfirmationPolicy = "auto",
    state: StateBackend | None = None,
    retention: timedelta = DEFAULT_RETENTION,
) -> int:
    """Serve MCP over this process's stdio; always closes the adapter and the audit log.

    ``state``: the OSBP state store, where confirmation rounds are recorded and which is purged of expired
    records (``retention`` past their expiry) in the background while the server serves.
    """
    server = create_server(adapter, audit, clock=clock, confirmation=confirmation, state=state)
    try:
        async with anyio.create_task_group() as group, AsyncExitStack() as background:
            await group.start(_stop_on_signals, group.cancel_scope)
            if state is not None:
                purge = StatePurge(state, clock or SystemClock(), retention=retention)
                await background.enter_async_context(purging(purge))
            where = {"platform": adapter.platform.to_wire(), "audit": str(audit.path)}
            logger.info("serving_stdio", extra=where)
            stdin = StdinLines(sys.stdin.fileno())
            # duck-typed: the SDK only iterates stdin, and only writes and flushes stdout
            with claimed_stdout() as stdout:
                async with stdio_server(
                    stdin=cast("anyio.AsyncFile[str]", stdin),
                    stdout=cast("anyio.AsyncFile[str] | None", stdout),
                ) as (read_stream, write_stream):
                    stdin.answer_through(write_stream)  # lines the SDK cannot read are answered on its writer
                    await server.run(read_stream, write_stream, server.create_initialization_options())
            group.cancel_scope.cancel()
    finally:
        await close_parts(adapter, audit)
    logger.info("stopped")
    return 0
