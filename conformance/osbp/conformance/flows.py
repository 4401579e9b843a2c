"""The booking steps several check groups share: the approval challenge, an approved booking, a receipt.

The battery plays agent and customer at once: it reads the token from the `approval.token="…"`
instruction of the challenge and retries with the same payload plus `approval: {confirmed: true, token}`.
"""

from __future__ import annotations

from typing import Any

from osbp.conformance.grading import expect
from osbp.conformance.payloads import CREATE, approval_token, approved
from osbp.conformance.probe import Probe
from osbp.conformance.wire import Exchange

__all__ = ["book", "challenge", "receipt_problems"]


async def challenge(probe: Probe, payload: dict[str, Any]) -> tuple[Exchange, str | None]:
    """The first create call of `payload` and the approval token it carries, if any."""
    exchange = await probe.wire.call(CREATE, payload)
    token = approval_token(exchange.message) if exchange.code == "requires_user_confirmation" else None
    return exchange, token


async def book(probe: Probe, payload: dict[str, Any]) -> Exchange:
    """Challenge then approved retry; the approved exchange, or CheckFailed if no token came back."""
    first, token = await challenge(probe, payload)
    expect(token is not None, f"expected an approval challenge, got {first.describe()}")
    assert token is not None
    return await probe.wire.call(CREATE, approved(payload, token))


def receipt_problems(exchange: Exchange) -> list[str]:
    """Why `exchange` is not a booking receipt with id, booking_id and text (empty when it is one)."""
    receipt = exchange.value
    if not isinstance(receipt, dict):
        return [f"no receipt: {exchange.describe()}"]
    return [
        f"receipt {key} missing"
        for key in ("id", "booking_id", "text")
        if not isinstance(receipt.get(key), str)
    ]
