"""The battery's only connection to the graded server: the MCP SDK's stdio (or Streamable HTTP) client.

`open_wire` spawns the server command with `mcp.client.stdio.stdio_client` (or, for a target with a URL,
connects with `mcp.client.streamable_http.streamable_http_client` and its bearer token), drives one
`ClientSession`, and records every tool call as an `Exchange` (arguments, raw result, parsed envelope)
so that the envelope-wide checks can grade all of them at the end.

Non-protocol stdout is caught where the SDK surfaces it: the stdio transport turns every stdout line that
is not a JSON-RPC message into an `Exception` item that `ClientSession` hands to its `message_handler`.
The battery's handler records those lines, and a logging filter keeps the SDK's parse-error tracebacks
out of the report (they are findings, not crashes).
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import re
import ssl
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass, field
from functools import cache
from typing import IO, Any, TextIO, cast

import anyio
import httpx2
from mcp.client.session import ClientSession, ElicitationFnT
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult, PaginatedRequestParams, TextContent, Tool

__all__ = [
    "PASSTHROUGH_ENV",
    "RATE_LIMIT_PATIENCE",
    "Exchange",
    "ServerTarget",
    "Wire",
    "open_wire",
    "retry_delay",
    "server_env",
    "tls_context",
]

#: Variables passed to the server besides the SDK's own defaults (HOME, LOGNAME, PATH, SHELL, TERM, USER).
PASSTHROUGH_ENV = ("LANG", "LC_ALL", "LC_CTYPE", "TMPDIR", "VIRTUAL_ENV", "SYSTEMROOT")

_MISSING: Any = object()
#: See `Wire.rate_limit_patience`: a little over a typical one-minute rate-limit window.
RATE_LIMIT_PATIENCE = 75.0
_RETRY_AFTER = re.compile(r"retry (?:after|in) (\d+(?:\.\d+)?) ?s", re.IGNORECASE)
#: The backoff when a rate_limited answer names no delay: 1, 2, 4, then 8 seconds per attempt.
_BACKOFF_CAP = 8.0
_INPUT_VALUE = re.compile(r"input_value=(.*?), input_type=")


def server_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment for the server: a few locale and path basics from ours, then `extra`."""
    env = {key: os.environ[key] for key in PASSTHROUGH_ENV if key in os.environ}
    env.update(extra or {})
    return env


@dataclass(frozen=True, slots=True)
class ServerTarget:
    """How to reach the graded server: the command that starts it (stdio), or its Streamable HTTP URL."""

    command: Sequence[str]
    env: Mapping[str, str] = field(default_factory=dict)
    cwd: str | None = None
    #: A running server's Streamable HTTP endpoint; when set, ``command`` is not started.
    url: str | None = None
    #: The bearer token sent to ``url`` (``Authorization: Bearer ...``), if the server wants one.
    token: str | None = field(default=None, repr=False)

    @property
    def shown(self) -> list[str]:
        """How the report names the server: its command line, or its URL."""
        return [self.url] if self.url is not None else list(self.command)


@dataclass(slots=True)
class Exchange:
    """One tool call as the battery saw it on the wire."""

    tool: str
    arguments: dict[str, Any]
    result: CallToolResult | None = None
    #: A transport or MCP-level failure (timeout, JSON-RPC error, client-side validation) instead of a result.
    error: str | None = None
    #: The JSON parsed from the single text content block, or `_MISSING`.
    text_json: Any = _MISSING
    text_problem: str | None = None

    @property
    def has_text_json(self) -> bool:
        """Whether the text content parsed as JSON."""
        return self.text_json is not _MISSING

    @property
    def envelope(self) -> dict[str, Any] | None:
        """The OSBP envelope: structuredContent when it is an object, else the text JSON object."""
        if self.result is None:
            return None
        structured = self.result.structured_content
        if isinstance(structured, dict):
            return structured
        if isinstance(self.text_json, dict):
            return self.text_json
        return None

    @property
    def ok(self) -> bool | None:
        """The envelope's `ok`, or None when there is no envelope with a boolean `ok`."""
        envelope = self.envelope
        flag = None if envelope is None else envelope.get("ok")
        return flag if isinstance(flag, bool) else None

    @property
    def value(self) -> Any:
        """The success value, or None."""
        envelope = self.envelope
        return envelope.get("value") if envelope is not None and self.ok is True else None

    @property
    def problem(self) -> dict[str, Any]:
        """The failure Problem, or an empty mapping."""
        envelope = self.envelope
        problem = envelope.get("problem") if envelope is not None and self.ok is False else None
        return problem if isinstance(problem, dict) else {}

    @property
    def code(self) -> str | None:
        """The Problem code, or None."""
        code = self.problem.get("code")
        return code if isinstance(code, str) else None

    @property
    def message(self) -> str:
        """The Problem message, or an empty string."""
        message = self.problem.get("message")
        return message if isinstance(message, str) else ""

    def describe(self) -> str:
        """A short account of the outcome, for failure details."""
        if self.error is not None:
            return f"{self.tool}: {self.error}"
        if self.envelope is None:
            return f"{self.tool}: no OSBP envelope in the result ({self.text_problem or 'unparseable'})"
        if self.ok is True:
            return f"{self.tool}: ok"
        if self.ok is False:
            return f"{self.tool}: {self.code} ({_clip(self.message)})"
        return f"{self.tool}: envelope without a boolean ok"


def _clip(text: str, limit: int = 160) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _read_text(exchange: Exchange) -> None:
    assert exchange.result is not None
    texts = [block.text for block in exchange.result.content if isinstance(block, TextContent)]
    if len(texts) != 1:
        exchange.text_problem = f"{len(texts)} text content blocks, expected exactly 1"
        return
    try:
        exchange.text_json = json.loads(texts[0])
    except ValueError as exc:
        exchange.text_problem = f"text content is not JSON: {exc}"


@cache
def tls_context() -> ssl.SSLContext:
    """The one verifying TLS context of the battery's HTTP clients: httpx builds and loads its CA bundle
    for every client otherwise (tens of milliseconds each, and the hooks open one client per request)."""
    return httpx2.create_ssl_context()


def retry_delay(message: str, attempt: int) -> float:
    """Seconds to wait before repeating a rate-limited call: the message's "retry after N seconds", else a
    backoff by `attempt` (0-based)."""
    match = _RETRY_AFTER.search(message)
    if match:
        return max(float(match.group(1)), 0.1)
    return min(2.0**attempt, _BACKOFF_CAP)


@dataclass(slots=True)
class Wire:
    """A live session with the graded server that records every tool call."""

    session: ClientSession
    call_timeout: float
    tools: list[Tool] = field(default_factory=list)
    exchanges: list[Exchange] = field(default_factory=list)
    #: Non-protocol lines the server wrote to stdout.
    stray_stdout: list[str] = field(default_factory=list)
    #: The most seconds one call waits out retryable rate_limited answers before it takes one as the answer.
    rate_limit_patience: float = RATE_LIMIT_PATIENCE
    #: Seconds spent waiting out rate limits over the run.
    rate_limit_waited: float = 0.0
    #: How the wire waits (replaceable so a test need not).
    sleep: Callable[[float], Awaitable[None]] = anyio.sleep

    async def call(self, tool: str, arguments: Mapping[str, Any], *, patient: bool = True) -> Exchange:
        """Call a tool and record what came back; never raises for what the server does.

        The battery is fair to the platform: a retryable `rate_limited` answer is waited out (the delay the
        message gives as "retry after N seconds", else a short backoff) and the call repeated, up to
        `rate_limit_patience` seconds, unless `patient` is False (the check that arms a 429 itself). Every
        attempt is recorded.
        """
        waited = 0.0
        for attempt in itertools.count():
            exchange = await self._call_once(tool, arguments)
            if (
                not patient
                or exchange.code != "rate_limited"
                or exchange.problem.get("retryable") is not True
            ):
                return exchange
            delay = retry_delay(exchange.message, attempt)
            if waited + delay > self.rate_limit_patience:
                return exchange
            await self.sleep(delay)
            waited += delay
            self.rate_limit_waited += delay
        raise AssertionError("unreachable")  # pragma: no cover - itertools.count() never ends

    async def _call_once(self, tool: str, arguments: Mapping[str, Any]) -> Exchange:
        exchange = Exchange(tool, dict(arguments))
        self.exchanges.append(exchange)
        try:
            with anyio.fail_after(self.call_timeout):
                exchange.result = await self.session.call_tool(tool, exchange.arguments)
        except TimeoutError:
            exchange.error = f"no result within {self.call_timeout:g}s"
        except Exception as exc:  # any client-side failure is a finding about the server
            exchange.error = f"{type(exc).__name__}: {_clip(str(exc))}"
        else:
            _read_text(exchange)
        return exchange

    async def list_tools(self) -> list[Tool]:
        """Every tool the server lists, following pagination."""
        tools: list[Tool] = []
        cursor: str | None = None
        while True:
            with anyio.fail_after(self.call_timeout):
                params = PaginatedRequestParams(cursor=cursor) if cursor else None
                page = await self.session.list_tools(params=params)
            tools.extend(page.tools)
            cursor = page.next_cursor
            if not cursor:
                self.tools = tools
                return tools


class _DropParseErrors(logging.Filter):
    """Silences the SDK's traceback for an unparseable stdout line; the battery reports it instead."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "Failed to parse JSONRPC message" not in record.getMessage()


@contextmanager
def _quiet_parse_errors() -> Iterator[None]:
    logger = logging.getLogger("mcp.client.stdio")
    quiet = _DropParseErrors()
    logger.addFilter(quiet)
    try:
        yield
    finally:
        logger.removeFilter(quiet)


def _stray_line(exc: Exception) -> str:
    match = _INPUT_VALUE.search(str(exc))
    return _clip(match.group(1) if match else str(exc).splitlines()[0])


@asynccontextmanager
async def _open_http_wire(
    target: ServerTarget, url: str, *, call_timeout: float, elicitation: ElicitationFnT | None
) -> AsyncIterator[Wire]:
    """Connect to a running server over Streamable HTTP (with its bearer token), handshake, yield the wire."""
    headers = {"Authorization": f"Bearer {target.token}"} if target.token else {}
    timeout = httpx2.Timeout(call_timeout, read=call_timeout * 2)
    async with (
        httpx2.AsyncClient(headers=headers, timeout=timeout, trust_env=False, verify=tls_context()) as http,
        streamable_http_client(url, http_client=http) as (read_stream, write_stream),
        ClientSession(
            read_stream, write_stream, read_timeout_seconds=call_timeout, elicitation_callback=elicitation
        ) as session,
    ):
        with anyio.fail_after(call_timeout):
            await session.initialize()
        yield Wire(session, call_timeout)


@asynccontextmanager
async def open_wire(
    target: ServerTarget,
    *,
    call_timeout: float,
    errlog: IO[str],
    elicitation: ElicitationFnT | None = None,
) -> AsyncIterator[Wire]:
    """Start the server (or reach it at its URL), complete the MCP handshake, and yield the recording `Wire`.

    With `elicitation` the client declares form elicitation and answers the server's requests with it
    (the host's UI); without it the client declares none, so the server keeps the token path.
    """
    if target.url is not None:
        async with _open_http_wire(
            target, target.url, call_timeout=call_timeout, elicitation=elicitation
        ) as wire:
            yield wire
        return
    if not target.command:
        raise ValueError("the server command is empty")
    params = StdioServerParameters(
        command=target.command[0], args=list(target.command[1:]), env=dict(target.env), cwd=target.cwd
    )
    stray: list[str] = []

    async def on_message(message: object) -> None:
        if isinstance(message, Exception):
            stray.append(_stray_line(message))

    with _quiet_parse_errors():
        async with (
            stdio_client(params, errlog=cast(TextIO, errlog)) as (read_stream, write_stream),
            ClientSession(
                read_stream,
                write_stream,
                read_timeout_seconds=call_timeout,
                message_handler=on_message,
                elicitation_callback=elicitation,
            ) as session,
        ):
            with anyio.fail_after(call_timeout):
                await session.initialize()
            yield Wire(session, call_timeout, stray_stdout=stray)
