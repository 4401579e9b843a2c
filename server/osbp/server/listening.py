"""Binding the HTTP listeners of `osbp mcp --transport streamable-http` and `osbp auth serve`.

Each binds its socket itself before serving, so a busy port is one line (:class:`ListenError`) before
anything says it serves, and the real port of ``--port 0`` is known for the announcement.
"""

from __future__ import annotations

import errno
import socket

__all__ = ["ListenError", "listen", "url_host"]


class ListenError(Exception):
    """The address cannot be listened on (in use, not this machine's): the one line that says so."""


def listen(host: str, port: int) -> socket.socket:
    """A listening TCP socket on ``host``:``port`` (``[::1]`` or ``::1`` for IPv6), or ListenError."""
    bare = host.strip("[]")
    try:
        return socket.create_server(
            (bare, port), family=socket.AF_INET6 if ":" in bare else socket.AF_INET, backlog=2048
        )
    except OSError as error:
        reason = "the address is already in use" if error.errno == errno.EADDRINUSE else error.strerror
        raise ListenError(f"cannot listen on {host}:{port}: {(reason or str(error)).lower()}") from None


def url_host(host: str) -> str:
    """``host`` as a URL writes it: an IPv6 literal in brackets (RFC 3986 section 3.2.2)."""
    bare = host.strip("[]")
    return f"[{bare}]" if ":" in bare else bare
