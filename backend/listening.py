"""The platform's listening socket and base URL, without the web stack (``socket`` only).

A caller that must know the platform's address before paying for FastAPI, SQLAlchemy and uvicorn (``make
demo`` hands it to the MCP servers it starts alongside the platform) binds here and gives the socket to
:class:`osbp.backend.serving.PlatformServer`.
"""

from __future__ import annotations

import socket

__all__ = ["bind_socket", "http_url"]


def http_url(host: str, port: int) -> str:
    """The platform's base URL on ``host``:``port``; an IPv6 literal is bracketed (RFC 3986 section 3.2.2)."""
    return f"http://[{host}]:{port}" if ":" in host else f"http://{host}:{port}"


def bind_socket(host: str, port: int) -> socket.socket:
    """A listening TCP socket on (host, port); port 0 picks a free one."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    # IPPROTO_TCP explicitly: asyncio only sets TCP_NODELAY on accepted sockets whose proto says TCP, and
    # without it every response pays a ~40 ms Nagle/delayed-ACK stall on loopback.
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(2048)
    sock.set_inheritable(True)
    return sock
