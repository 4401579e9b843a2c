"""The platform's listening socket and base URL, without the web stack (``socket`` only).

A caller that must know the platform's address before paying for FastAPI, SQLAlchemy and uvicorn (``make
demo`` hands it to the MCP servers it starts alongside the platform) binds here and gives the socket to
:class:`osbp.backend.serving.PlatformServer`.
"""

from __future__ import annotations

import ipaddress
import socket

__all__ = ["adopt_socket", "bind_socket", "http_url"]


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


def adopt_socket(fd: int, *, allow_non_loopback: bool = False) -> socket.socket:
    """The listening TCP socket inherited as descriptor ``fd``; ``ValueError`` says why it is not one.

    Its address must be loopback unless ``allow_non_loopback``, the same rule as binding host and port.
    """
    try:
        sock = socket.socket(fileno=fd)
    except OSError as error:
        raise ValueError(f"descriptor {fd} is not an open socket ({error.strerror or error})") from None
    try:
        listening = sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN)
        if sock.family not in {socket.AF_INET, socket.AF_INET6} or sock.type != socket.SOCK_STREAM:
            raise ValueError(f"descriptor {fd} is not a TCP socket")
        if not listening:
            raise ValueError(f"descriptor {fd} is a TCP socket that is not listening")
        host = sock.getsockname()[0]
        if not allow_non_loopback and not ipaddress.ip_address(host).is_loopback:
            raise ValueError(f"descriptor {fd} listens on {host}, not a loopback address")
    except BaseException:
        sock.detach()  # the descriptor stays its owner's: refused, it is left as it came
        raise
    return sock
