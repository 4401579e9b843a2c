"""The reference platform adapter, plugged in with ``--adapter``, that kills its own process on cue.

``OSBP_TEST_CRASH_AT`` names the moment of booking.create at which the server process sends itself
SIGKILL (no ``finally``, no clean-up: what an operator's bad day does to a process):

* ``after_claim``: the key is claimed, nothing was sent to the platform;
* ``before_post``: the approved attempt is marked as placed, the create is not sent yet;
* ``before_answer``: the platform committed the create and answered; the adapter never reads it;
* ``after_answer``: the adapter translated the platform's answer; the core never settles it.
"""

from __future__ import annotations

import os
import signal
from typing import Any

import httpx2

from osbp.adapter import build_platform_adapter
from osbp.adapter.upstream import LifecycleNotices
from osbp.protocol.models import Booking, Problem
from osbp.protocol.port import BookingRequest, Offer
from osbp.server.settings import ServerSettings

__all__ = ["CRASH_AT", "build"]

CRASH_AT = "OSBP_TEST_CRASH_AT"


def _die() -> None:
    os.kill(os.getpid(), signal.SIGKILL)


class _AnswerLost(httpx2.AsyncBaseTransport):
    """The real transport; the process dies once the platform's answer to a create has arrived."""

    def __init__(self) -> None:
        self._inner = httpx2.AsyncHTTPTransport()

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send for real; die after a create's response arrived."""
        response = await self._inner.handle_async_request(request)
        if request.method == "POST" and request.url.path.endswith("/appointments"):
            await response.aread()
            _die()
        return response

    async def aclose(self) -> None:
        """Close the real transport."""
        await self._inner.aclose()


class CrashingAdapter:
    """Delegates to the reference platform adapter, dying at ``at``."""

    def __init__(self, inner: Any, at: str | None) -> None:
        self._inner = inner
        self._at = at

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def resolve_booking(self, request: BookingRequest) -> Offer | Problem:
        """Die right after the claim, before any platform request of the create."""
        if self._at == "after_claim":
            _die()
        result: Offer | Problem = await self._inner.resolve_booking(request)
        return result

    async def place_booking(self, request: BookingRequest, customer_name: str) -> Booking | Problem:
        """Die before sending the create, or after its answer was translated."""
        if self._at == "before_post":
            _die()
        result: Booking | Problem = await self._inner.place_booking(request, customer_name)
        if self._at == "after_answer":
            _die()
        return result


def build(settings: ServerSettings) -> CrashingAdapter:
    """The adapter factory: ``--adapter tests.support.crash_adapter:build``."""
    at = os.environ.get(CRASH_AT) or None
    transport = _AnswerLost() if at == "before_answer" else None
    inner = build_platform_adapter(settings.adapter, transport=transport, notices=LifecycleNotices())
    return CrashingAdapter(inner, at)
