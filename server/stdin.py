"""The server's stdin as an async line stream that a shutdown can always interrupt.

The SDK's stdio transport reads stdin in an AnyIO worker thread, which cannot be cancelled: on SIGTERM
the server would wait for the host to write another line before it could stop. Here a daemon thread reads
the descriptor with plain ``os.read`` (no ``io`` buffer lock that interpreter shutdown would wait for) and
hands complete lines to the event loop through a memory stream, so cancelling the reader never waits on a
blocked read: the daemon thread simply ends with the process.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import AsyncIterator

import anyio
import anyio.from_thread
import anyio.lowlevel

__all__ = ["StdinLines"]

_CHUNK = 65536


class StdinLines:
    """``async for line in StdinLines(fd)``: decoded lines of the descriptor until end of input."""

    def __init__(self, fd: int = 0) -> None:
        self._fd = fd
        self._send, self._receive = anyio.create_memory_object_stream[str](math.inf)
        self._started = False

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

    def __aiter__(self) -> AsyncIterator[str]:
        if not self._started:
            self._started = True
            token = anyio.lowlevel.current_token()
            threading.Thread(target=self._pump, args=(token,), name="osbp-stdin", daemon=True).start()
        return self._receive.__aiter__()
