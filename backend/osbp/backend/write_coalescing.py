"""One socket write per response: a transport that sends what one event-loop turn wrote, together.

uvicorn writes a response's head and its body with two ``transport.write`` calls, so every response
costs two ``send`` system calls and, with ``TCP_NODELAY``, two TCP segments the client reads separately.
:func:`coalescing` wraps a protocol class so that its transport collects the writes of one event-loop
turn and hands them to the socket as one write at the end of the turn (sooner when the collected bytes
reach :data:`FLUSH_AT`, and always before the connection is closed). Nothing about the bytes changes:
the same bytes in the same order, only fewer system calls. Reading, flow control and everything else are
the real transport's.
"""

from __future__ import annotations

import asyncio
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["FLUSH_AT", "CoalescingTransport", "coalescing"]

#: Collected bytes at which a write goes out at once (a large body is not held back for the turn's end).
FLUSH_AT = 64 * 1024


class CoalescingTransport(asyncio.Transport):
    """A transport sending the bytes written within one event-loop turn as one write to ``inner``."""

    def __init__(self, inner: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        super().__init__()
        self._inner = inner
        self._loop = loop
        self._pending: list[bytes] = []
        self._size = 0
        self._scheduled = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        """Collect ``data``; it goes out with the rest of this turn's writes."""
        if not data:
            return
        self._pending.append(bytes(data))
        self._size += len(data)
        if self._size >= FLUSH_AT:
            self.flush()
        elif not self._scheduled:
            self._scheduled = True
            self._loop.call_soon(self.flush)

    def writelines(self, list_of_data: Any) -> None:
        """Collect each of ``list_of_data``."""
        for data in list_of_data:
            self.write(data)

    def flush(self) -> None:
        """Hand the collected bytes to the real transport now, as one write."""
        self._scheduled = False
        if not self._pending:
            return
        data = self._pending[0] if len(self._pending) == 1 else b"".join(self._pending)
        self._pending.clear()
        self._size = 0
        if not self._inner.is_closing():
            self._inner.write(data)

    def close(self) -> None:
        """Send what is collected, then close."""
        self.flush()
        self._inner.close()

    def abort(self) -> None:
        """Drop what is collected and abort."""
        self._pending.clear()
        self._size = 0
        self._inner.abort()

    def is_closing(self) -> bool:
        """The real transport's state."""
        return self._inner.is_closing()

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        """The real transport's (peer and socket names, ``ssl_object``, ...)."""
        return self._inner.get_extra_info(name, default)

    def pause_reading(self) -> None:
        """Flow control: the real transport's."""
        self._inner.pause_reading()

    def resume_reading(self) -> None:
        """Flow control: the real transport's."""
        self._inner.resume_reading()

    def is_reading(self) -> bool:
        """The real transport's state."""
        return self._inner.is_reading()

    def set_write_buffer_limits(self, high: int | None = None, low: int | None = None) -> None:
        """The real transport's write-buffer limits."""
        self._inner.set_write_buffer_limits(high, low)

    def get_write_buffer_size(self) -> int:
        """Bytes not yet sent: collected here and buffered in the real transport."""
        return self._size + self._inner.get_write_buffer_size()

    def get_write_buffer_limits(self) -> tuple[int, int]:
        """The real transport's write-buffer limits."""
        return self._inner.get_write_buffer_limits()

    def can_write_eof(self) -> bool:
        """Whether the real transport can half-close."""
        return self._inner.can_write_eof()

    def write_eof(self) -> None:
        """Send what is collected, then half-close."""
        self.flush()
        self._inner.write_eof()

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        """The real transport's protocol."""
        self._inner.set_protocol(protocol)

    def get_protocol(self) -> asyncio.BaseProtocol:
        """The real transport's protocol."""
        return self._inner.get_protocol()


def coalescing(protocol: type[H11Protocol]) -> type[H11Protocol]:
    """A subclass of ``protocol`` whose connections write through a :class:`CoalescingTransport`."""

    class CoalescingProtocol(protocol):  # type: ignore[valid-type,misc]  # a class made at run time
        """``protocol`` with one socket write per event-loop turn."""

        def connection_made(self, transport: asyncio.Transport) -> None:
            super().connection_made(CoalescingTransport(transport, self.loop))

    CoalescingProtocol.__name__ = CoalescingProtocol.__qualname__ = f"Coalescing{protocol.__name__}"
    return CoalescingProtocol
