"""Where a webhook attempt's connection really landed, checked before a byte of the request is written.

The registration check (`webhook_endpoints`) sees a URL; between it and a delivery a name may resolve
elsewhere, or the platform may have been restarted on the very port a receiver had. So every attempt
opens its own connection, and `Guard` (an httpcore `trace` hook on that request) looks at the connected
peer: this platform's own listening address is refused (`target_is_platform`), and so is a non-loopback
peer unless non-loopback webhooks are allowed (`target_not_loopback`). A request whose connection was not
checked is refused as well, so a pooled connection or a changed HTTP stack fails closed.
"""

from __future__ import annotations

from typing import Any

from osbp.backend.listening import OwnAddresses, ip_of

__all__ = ["Guard", "TargetRefused"]

_CONNECTED = "connection.connect_tcp.complete"
_SENDING = "http11.send_request_headers.started"


class TargetRefused(Exception):
    """The attempt's connection was closed unused: `reason` is what the delivery log records."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class Guard:
    """One attempt's `trace` extension: refuses the connection when its peer must not get a webhook."""

    def __init__(self, own: OwnAddresses, *, allow_non_loopback: bool) -> None:
        self._own = own
        self._allow_non_loopback = allow_non_loopback
        self._checked = False

    def refusal(self, peer: tuple[Any, ...] | None) -> str | None:
        """Why a connection to `peer` (a socket address) must carry no webhook, or None."""
        if not peer or (address := ip_of(str(peer[0]))) is None:
            return "target_unknown"
        if self._own.includes(address, int(peer[1])):
            return "target_is_platform"
        if not self._allow_non_loopback and not address.is_loopback:
            return "target_not_loopback"
        return None

    async def __call__(self, event: str, info: dict[str, Any]) -> None:
        """httpcore's trace callback: check the peer once connected; send nothing unchecked."""
        if event == _CONNECTED:
            stream = info["return_value"]
            reason = self.refusal(stream.get_extra_info("server_addr"))
            if reason is not None:
                await stream.aclose()
                raise TargetRefused(reason)
            self._checked = True
        elif event == _SENDING and not self._checked:
            raise TargetRefused("target_unchecked")
