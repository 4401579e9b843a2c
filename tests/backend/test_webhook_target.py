"""The delivery-time guard: where an attempt's connection landed decides whether anything is sent."""

from __future__ import annotations

from typing import Any

import pytest

from osbp.backend.listening import OwnAddresses
from osbp.backend.webhook_target import Guard, TargetRefused


def _guard(*, allow_non_loopback: bool = False) -> Guard:
    own = OwnAddresses()
    own.add(("127.0.0.1", 8400))
    return Guard(own, allow_non_loopback=allow_non_loopback)


@pytest.mark.parametrize(
    ("peer", "allow_non_loopback", "reason"),
    [
        (("127.0.0.1", 8400), False, "target_is_platform"),
        (("::ffff:127.0.0.1", 8400, 0, 0), False, "target_is_platform"),
        (("127.0.0.1", 8400), True, "target_is_platform"),
        (("192.0.2.10", 443), False, "target_not_loopback"),
        (("192.0.2.10", 443), True, None),
        (("127.0.0.1", 9000), False, None),
        (None, False, "target_unknown"),
    ],
)
def test_a_connection_is_refused_when_its_peer_is_the_platform_or_off_loopback(
    peer, allow_non_loopback, reason
):
    """Platform choice (fail closed): the connected peer, not the URL, decides at delivery."""
    assert _guard(allow_non_loopback=allow_non_loopback).refusal(peer) == reason


class _Stream:
    def __init__(self, peer: tuple[Any, ...]) -> None:
        self.peer = peer
        self.closed = False

    def get_extra_info(self, info: str) -> Any:
        return self.peer if info == "server_addr" else None

    async def aclose(self) -> None:
        self.closed = True


@pytest.mark.anyio
async def test_a_refused_connection_is_closed_and_an_unchecked_one_sends_nothing():
    """Platform choice (fail closed): a refused connection is closed unused; no request goes out unchecked."""
    stream = _Stream(("127.0.0.1", 8400))
    with pytest.raises(TargetRefused) as refused:
        await _guard()("connection.connect_tcp.complete", {"return_value": stream})
    assert (refused.value.reason, stream.closed) == ("target_is_platform", True)
    with pytest.raises(TargetRefused) as unchecked:
        await _guard()("http11.send_request_headers.started", {"request": None})
    assert unchecked.value.reason == "target_unchecked"
    passed = _guard()
    await passed("connection.connect_tcp.complete", {"return_value": _Stream(("127.0.0.1", 9000))})
    await passed("http11.send_request_headers.started", {"request": None})
