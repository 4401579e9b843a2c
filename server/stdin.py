"""The server's stdin as an async line stream that a shutdown can always interrupt and that answers
every line the MCP SDK cannot read.

The SDK's stdio transport reads stdin in an AnyIO worker thread, which cannot be cancelled: on SIGTERM
the server would wait for the host to write another line before it could stop. Here a pipe or a socket
(how a host connects a stdio server) is read on the event loop itself: it waits until the descriptor is
readable, then takes what is there with one plain ``os.read``, so a request reaches its handler without a
thread hand-off and cancelling the wait is immediate. Anything the event loop cannot wait on (a regular
file, a terminal on some systems, Windows) is read by a daemon thread with plain ``os.read`` (no ``io``
buffer lock that interpreter shutdown would wait for), which hands complete lines to the event loop
through a memory stream; cancelling the reader never waits on its blocked read: the daemon thread simply
ends with the process.

The SDK drops a line its parser rejects (it logs it at debug level), so a host would wait forever for the
answer. :func:`screen` reads each line with the SDK's own parser first; a line it accepts passes through
untouched and in order, and any other line is answered here with a JSON-RPC 2.0 error response (§5.1):
``-32700`` Parse error for text that is not JSON, or not I-JSON (a lone surrogate escape, RFC 7493 §2.1),
or nests deeper than the parser reads; ``-32600`` Invalid Request for JSON that is not a request the SDK
takes (a batch included: MCP 2025-06-18 removed batching and the SDK has none). The error carries the
request's ``id`` when it can be read, else ``null`` (§5). It goes out through the SDK's own write stream
(:meth:`StdinLines.answer_through`), so the SDK's single stdout writer puts it on one line of its own.
Only a line that is a valid JSON-RPC 2.0 notification (§4.1: no ``id``) which MCP still cannot take, such
as one with array ``params``, gets no answer (§4.1: never reply to a notification); a line that is not a
valid Request object at all is not a notification and is answered with ``id: null``, as §5.1 and the
specification's own examples do. Blank lines are not messages and are skipped. Each rejection is logged
as ``jsonrpc_request_rejected`` with its code, reason and id, never the line (it may carry personal data).
"""

from __future__ import annotations

import json
import logging
import math
import os
import stat
import threading
from collections import deque
from dataclasses import dataclass
from typing import Any, Protocol

import anyio
import anyio.from_thread
import anyio.lowlevel
from mcp.shared.message import SessionMessage
from mcp.types.jsonrpc import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    RequestId,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

__all__ = ["Rejection", "StdinLines", "screen"]

logger = logging.getLogger("osbp.server")

_CHUNK = 65536
_MESSAGES = {PARSE_ERROR: "Parse error", INVALID_REQUEST: "Invalid Request"}
#: Why a line was rejected: the suffix of the error message, by the reason logged.
_EXPLAINED = {
    "not_json": "the line is not JSON",
    "lone_surrogate": "a string holds a lone surrogate escape, which is not I-JSON (RFC 7493)",
    "too_deep": "the JSON nests deeper than the server reads",
    "batch": "batches are not supported (MCP 2025-06-18 removed JSON-RPC batching)",
    "not_a_request": "not a JSON-RPC 2.0 request object the server takes",
}


@dataclass(frozen=True)
class Rejection:
    """A line the SDK cannot read: the JSON-RPC error code, why, the request id if readable, and whether
    it is answered (everything but a valid JSON-RPC notification is)."""

    code: int
    reason: str
    id: RequestId | None
    answered: bool = True

    def response(self) -> JSONRPCError:
        """The JSON-RPC 2.0 error response that answers the line."""
        message = f"{_MESSAGES[self.code]}: {_EXPLAINED[self.reason]}"
        return JSONRPCError(jsonrpc="2.0", id=self.id, error=ErrorData(code=self.code, message=message))


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _loads(line: str) -> tuple[str | None, Any]:
    """``(None, value)`` when ``line`` is JSON by RFC 8259 (lone surrogates allowed), else the reason."""
    try:
        return None, json.loads(line, parse_constant=_reject_constant)
    except RecursionError:
        return "too_deep", None
    except ValueError:
        return "not_json", None


def _is_i_json(value: Any) -> bool:
    """No lone surrogate anywhere in the value (paired escapes are already one character here)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    except (ValueError, RecursionError):
        return True  # not a surrogate problem: the nesting, which the caller reports
    return True


def _request_id(value: Any) -> RequestId | None:
    """The id of a would-be request, when it is one MCP can echo (an integer or a UTF-8 string)."""
    if not isinstance(value, dict) or "result" in value or "error" in value:
        return None  # a response's id names one of the server's requests, not a request to answer
    found = value.get("id")
    if isinstance(found, bool) or not isinstance(found, int | str):
        return None
    if isinstance(found, str) and not _is_i_json(found):
        return None
    return found


def _is_notification(value: Any) -> bool:
    """A valid JSON-RPC 2.0 Request object without an id (§4, §4.1)."""
    return (
        isinstance(value, dict)
        and "id" not in value
        and value.get("jsonrpc") == "2.0"
        and isinstance(value.get("method"), str)
        and isinstance(value.get("params", {}), dict | list)
    )


def screen(line: str) -> Rejection | None:
    """``None`` when the SDK reads the line as a JSON-RPC message (or it is blank), else its rejection."""
    if not line.strip():
        return None
    try:
        jsonrpc_message_adapter.validate_json(line, by_name=False)
    except ValidationError as error:
        not_json = any(detail["type"] == "json_invalid" for detail in error.errors())
    else:
        return None
    unreadable, value = _loads(line)
    if unreadable is not None:
        return Rejection(PARSE_ERROR, unreadable, None)
    if not_json:
        reason = "too_deep" if _is_i_json(value) else "lone_surrogate"
        return Rejection(PARSE_ERROR, reason, _request_id(value))
    if isinstance(value, list):
        return Rejection(INVALID_REQUEST, "batch", None)
    if _is_notification(value):
        return Rejection(INVALID_REQUEST, "not_a_request", None, answered=False)
    return Rejection(INVALID_REQUEST, "not_a_request", _request_id(value))


def _pollable(fd: int) -> bool:
    """Whether the event loop can wait on ``fd``: a pipe or a socket on a POSIX system."""
    if os.name != "posix":
        return False
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


class _Replies(Protocol):
    async def send(self, item: SessionMessage, /) -> None: ...


class StdinLines:
    """``async for line in StdinLines(fd)``: the lines of the descriptor the SDK can read, until end of
    input; every other line is answered through the stream given to :meth:`answer_through`."""

    def __init__(self, fd: int = 0) -> None:
        self._fd = fd
        #: Read on the event loop (a pipe or a socket), else by the daemon thread, which hands lines over
        #: through this memory stream.
        self._polled = _pollable(fd)
        self._send, self._receive = anyio.create_memory_object_stream[str](0 if self._polled else math.inf)
        if self._polled:
            self._send.close()
        self._started = False
        self._pending = b""
        self._lines: deque[str] = deque()
        self._ended = False
        self._replies: _Replies | None = None
        self._attached = anyio.Event()

    def answer_through(self, replies: _Replies) -> None:
        """Answer rejected lines on ``replies``: the SDK's write stream, whose one writer owns stdout."""
        self._replies = replies
        self._attached.set()

    def _pump(self, token: anyio.lowlevel.EventLoopToken) -> None:
        pending = b""
        try:
            while chunk := os.read(self._fd, _CHUNK):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    text = (line + b"\n").decode("utf-8", "replace")
                    anyio.from_thread.run_sync(self._send.send_nowait, text, token=token)
            if pending:
                last = pending.decode("utf-8", "replace")
                anyio.from_thread.run_sync(self._send.send_nowait, last, token=token)
            anyio.from_thread.run_sync(self._send.close, token=token)
        except (RuntimeError, anyio.BrokenResourceError, anyio.ClosedResourceError, OSError):
            # The loop or the stream is gone (the server is stopping): nothing left to hand a line to.
            return

    def __aiter__(self) -> StdinLines:
        if not self._started and not self._polled:
            self._started = True
            token = anyio.lowlevel.current_token()
            threading.Thread(target=self._pump, args=(token,), name="osbp-stdin", daemon=True).start()
        return self

    async def _polled_line(self) -> str:
        """The next line read on the event loop; ``EndOfStream`` after the last one."""
        while not self._lines:
            if self._ended:
                raise anyio.EndOfStream
            await anyio.wait_readable(self._fd)
            try:
                chunk = os.read(self._fd, _CHUNK)
            except BlockingIOError:  # another reader of the descriptor took what was there
                continue
            if not chunk:
                self._ended = True
                if self._pending:
                    self._lines.append(self._pending.decode("utf-8", "replace"))
                continue
            *complete, self._pending = (self._pending + chunk).split(b"\n")
            self._lines.extend((line + b"\n").decode("utf-8", "replace") for line in complete)
        return self._lines.popleft()

    async def __anext__(self) -> str:
        while True:
            try:
                line = await (self._polled_line() if self._polled else self._receive.receive())
            except anyio.EndOfStream:
                self._receive.close()
                raise StopAsyncIteration from None
            rejection = screen(line)
            if rejection is None:
                if line.strip():
                    return line
                continue
            await self._answer(rejection)

    async def _answer(self, rejection: Rejection) -> None:
        fields = {"code": rejection.code, "reason": rejection.reason, "id": rejection.id}
        logger.info("jsonrpc_request_rejected", extra=fields | {"answered": rejection.answered})
        if not rejection.answered:
            return
        await self._attached.wait()
        replies = self._replies
        if replies is None:  # pragma: no cover - the event is set together with the stream
            return
        try:
            await replies.send(SessionMessage(rejection.response()))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return  # the server is stopping: nobody is left to write the answer
