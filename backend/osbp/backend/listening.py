"""The platform's listening socket, base URL and own addresses, without the web stack (``socket`` only).

A caller that must know the platform's address before paying for FastAPI, SQLAlchemy and uvicorn (``make
demo`` hands it to the MCP servers it starts alongside the platform) binds here and gives the socket to
:class:`osbp.backend.serving.PlatformServer`. :class:`OwnAddresses` holds what each served socket is
really bound to, so a webhook can be refused when it would reach the platform itself.
"""

from __future__ import annotations

import ipaddress
import socket
import threading
from typing import Any

__all__ = ["IPAddress", "OwnAddresses", "adopt_socket", "bind_socket", "http_url", "ip_of", "resolve"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address


def ip_of(host: str) -> IPAddress | None:
    """``host`` as an IP address, or None for a name: brackets and an IPv6 zone dropped, and an IPv4-mapped
    IPv6 address (``::ffff:127.0.0.1``) as the IPv4 address a connection to it reaches."""
    try:
        address = ipaddress.ip_address(host.strip("[]").partition("%")[0])
    except ValueError:
        return None
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        return address.ipv4_mapped
    return address


def resolve(host: str, port: int) -> list[IPAddress]:
    """The addresses a connection to ``host``:``port`` may reach now (none when the name does not resolve)."""
    literal = ip_of(host)
    if literal is not None:
        return [literal]
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (OSError, UnicodeError):  # socket.gaierror included: an unknown name is no address at all
        return []
    return [address for *_, sockaddr in found if (address := ip_of(str(sockaddr[0]))) is not None]


def _on_this_host(address: IPAddress) -> bool:
    """Whether ``address`` is one of this host's own (a socket can be bound to it)."""
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    with socket.socket(family, socket.SOCK_DGRAM) as probe:
        try:
            probe.bind((str(address), 0))
        except OSError:
            return False
    return True


class OwnAddresses:
    """The (address, port) pairs this platform process accepts connections on, as its sockets are bound.

    ``includes`` errs on the side of refusing: on a port the platform listens on, every loopback address
    (any of ``127.0.0.0/8``, ``::1``) and the unspecified ones (``0.0.0.0``, ``::``, which reach this host)
    count as the platform, whichever one it bound; so does any address of this host when it is bound to
    the unspecified address.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._bound: frozenset[tuple[IPAddress, int]] = frozenset()

    def add(self, sockname: tuple[Any, ...]) -> None:
        """Record a served socket's ``getsockname()`` (the real bound address: an ephemeral port included)."""
        address = ip_of(str(sockname[0]))
        if address is None:
            raise ValueError(f"not an IP socket address: {sockname!r}")
        with self._lock:
            self._bound = self._bound | {(address, int(sockname[1]))}

    @property
    def bound(self) -> frozenset[tuple[IPAddress, int]]:
        """What has been recorded."""
        return self._bound

    def includes(self, address: IPAddress | str, port: int) -> bool:
        """Whether a connection to ``address``:``port`` would reach this platform process."""
        target = ip_of(str(address))
        if target is None:
            return False
        for bound, bound_port in self._bound:
            if port != bound_port:
                continue
            if target.is_loopback or target.is_unspecified or target == bound:
                return True
            if bound.is_unspecified and _on_this_host(target):
                return True
        return False


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
