"""The server's stdout as the SDK's message sink, written on the event loop instead of in worker threads.

The SDK's stdio transport writes every message through an AnyIO file wrapper: a ``write`` and a ``flush``,
each a hand-off to a worker thread and back, two per answer. A pipe, which is what every MCP host gives
its server (some give a socket), can be written without blocking: :func:`claimed_stdout` puts the wire on
a private, non-blocking duplicate of fd 1 and :class:`StdoutPipe` writes each message there at once,
waiting on the event loop only when the host is not reading and the pipe is full (a message is written
whole, in order, by the SDK's single writer task, so a partly written one is finished before the next
begins).

While serving, fd 1 points at stderr, as the SDK's own claim does: a stray ``print`` or a child's output
never reaches the wire. On exit the descriptor is put back, blocking again. When fd 1 is neither a pipe
nor a socket (a terminal, a file) nothing is claimed here and the SDK's threaded writer serves it as
before.
"""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager

import anyio

__all__ = ["StdoutPipe", "claimed_stdout"]


class StdoutPipe:
    """The duck-typed ``anyio.AsyncFile[str]`` the SDK's stdout writer uses: ``write`` and ``flush``."""

    def __init__(self, fd: int) -> None:
        self._fd = fd

    async def write(self, text: str) -> int:
        """Write ``text`` (UTF-8) whole; waits on the event loop only while the pipe is full."""
        view = memoryview(text.encode("utf-8"))
        while view:
            try:
                view = view[os.write(self._fd, view) :]
            except BlockingIOError:
                await anyio.wait_writable(self._fd)
        return len(text)

    async def flush(self) -> None:
        """Nothing is buffered: every write went to the pipe."""


@contextmanager
def claimed_stdout(fd: int = 1) -> Iterator[StdoutPipe | None]:
    """The wire as a :class:`StdoutPipe` while ``fd`` points at stderr; ``None`` unless a pipe or socket."""
    mode = os.fstat(fd).st_mode
    if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)):
        yield None
        return
    wire = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    try:
        os.dup2(2, fd)
        try:
            os.set_blocking(wire, False)
            yield StdoutPipe(wire)
        finally:
            os.set_blocking(wire, True)
            os.dup2(wire, fd)
    finally:
        os.close(wire)
