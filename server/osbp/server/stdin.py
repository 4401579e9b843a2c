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
answer. Each line is screened by :func:`osbp.server.jsonrpc.screen` (the one rule the HTTP transport
applies too): a line the SDK reads passes through untouched and in order, and any other line is answered
here with the JSON-RPC 2.0 error responses of its :class:`~osbp.server.jsonrpc.Rejection` (one per
request id a host waits on: each request of a refused batch). They go out through the SDK's own write
stream (:meth:`StdinLines.answer_through`), so the SDK's single stdout writer puts each on one line of its
own. Blank lines are not messages and are skipped. Each rejection is logged as ``jsonrpc_request_rejected``
with its code, reason and id, never the line (it may carry personal data).
"""

from __future__ import annotations

import logging
import math
import os
import stat
import threading
from collections import deque
from typing import Protocol

import anyio
import anyio.from_thread
import anyio.lowlevel
from mcp.shared.message import SessionMessage

from osbp.server.jsonrpc import Rejection, screen

__all__ = ["StdinLines"]

logger = logging.getLogger("osbp.server")

_CHUNK = 65536


def _pollable(fd: int) -> bool:
    """Whether the event loop can wait on ``fd``: a pipe or a socket on a POSIX system."""
    if os.name != "posix":
        return False
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


def _complete_lines(pending: bytearray, chunk: bytes) -> list[bytearray]:
    """Append ``chunk`` to ``pending`` and take out the lines it completed (each with its newline): a long
    line costs one copy per chunk, not a split of everything read so far on every chunk."""
    pending += chunk
    if b"\n" not in chunk:
        return []
    *complete, rest = pending.split(b"\n")
    pending[:] = rest
    return [line + b"\n" for line in complete]


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
        self._pending = bytearray()
        self._lines: deque[str] = deque()
        self._ended = False
        self._replies: _Replies | None = None
        self._attached = anyio.Event()

    def answer_through(self, replies: _Replies) -> None:
        """Answer rejected lines on ``replies``: the SDK's write stream, whose one writer owns stdout."""
        self._replies = replies
        self._attached.set()

    def _pump(self, token: anyio.lowlevel.EventLoopToken) -> None:
        pending = bytearray()
        try:
            while chunk := os.read(self._fd, _CHUNK):
                for line in _complete_lines(pending, chunk):
                    text = line.decode("utf-8", "replace")
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
            complete = _complete_lines(self._pending, chunk)
            self._lines.extend(line.decode("utf-8", "replace") for line in complete)
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
        if rejection.batch_ids:
            fields["batch_ids"] = list(rejection.batch_ids)
        logger.info("jsonrpc_request_rejected", extra=fields | {"answered": rejection.answered})
        if not rejection.answered:
            return
        await self._attached.wait()
        replies = self._replies
        if replies is None:  # pragma: no cover - the event is set together with the stream
            return
        try:
            for response in rejection.responses():
                await replies.send(SessionMessage(response))
        except (anyio.BrokenResourceError, anyio.ClosedResourceError):
            return  # the server is stopping: nobody is left to write the answer
