"""A per-client fixed-window rate limiter and its IETF RateLimit header fields.

Each client (keyed by peer address) gets `quota` requests per `window` seconds, counted from its first
request in the window. Headers follow draft-ietf-httpapi-ratelimit-headers:
`RateLimit-Policy: "default";q=<quota>;w=<window>` and `RateLimit: "default";r=<remaining>;t=<reset>`,
both RFC 9651 structured-field lists serialised by http-sf.
Time is a monotonic source, injected, independent of the (possibly frozen) business clock.

The windows are per process, on purpose: the limiter runs before any request touches the database, and
counting in the database would turn every read into a write on the shared database it protects. With N
processes behind a balancer a client gets up to N × `quota` per window; a deployment that needs one
global limit sets it at the balancer (which sees every request), or divides `quota` by N. What must hold
across processes is kept in the database: the verification send limit counts challenge rows.
"""

from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import http_sf
from http_sf.types import ParamsType

__all__ = ["POLICY_NAME", "Decision", "RateLimiter"]

POLICY_NAME = "default"
_PRUNE_ABOVE = 10_000


@dataclass(frozen=True)
class Decision:
    """The limiter's answer for one request."""

    allowed: bool
    quota: int
    window: int
    remaining: int
    reset_seconds: int

    def headers(self) -> dict[str, str]:
        """RateLimit-Policy and RateLimit header fields (plus Retry-After when refused)."""
        fields = {
            "RateLimit-Policy": _policy_field(self.quota, self.window),
            "RateLimit": _LIMIT_FORMAT.format(int(self.remaining), int(self.reset_seconds)),
        }
        if not self.allowed:
            fields["Retry-After"] = str(self.reset_seconds)
        return fields


def _limit_field(**parameters: int) -> str:
    """A one-member structured-field list: the policy name with integer parameters, in call order."""
    params: ParamsType = dict(parameters)
    return http_sf.ser([(POLICY_NAME, params)])


#: ``RateLimit`` as RFC 9651 serialises it (the String member, then ``;r=`` and ``;t=`` Integers), formatted
#: directly: it differs on every response, and the generic serialiser costs more than all the other edge
#: headers together. Equal to :func:`_limit_field` for every integer a structured field can hold (tested).
_LIMIT_FORMAT = '"' + POLICY_NAME + '";r={};t={}'


@functools.lru_cache(maxsize=8)
def _policy_field(quota: int, window: int) -> str:
    # The same on every response of a limiter: serialised once, not per request.
    return _limit_field(q=quota, w=window)


class RateLimiter:
    """Fixed windows per client key, thread-safe."""

    def __init__(self, quota: int, window: int, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.quota = quota
        self.window = window
        self._monotonic = monotonic
        self._lock = threading.Lock()
        self._windows: dict[str, tuple[float, int]] = {}

    def hit(self, key: str) -> Decision:
        """Count one request for `key` and say whether it is allowed."""
        now = self._monotonic()
        with self._lock:
            started, used = self._windows.get(key, (now, 0))
            if now - started >= self.window:
                started, used = now, 0
            allowed = used < self.quota
            if allowed:
                used += 1
            self._windows[key] = (started, used)
            if len(self._windows) > _PRUNE_ABOVE:
                # Many distinct clients: forget the ones whose window has ended, so memory stays bounded.
                self._windows = {
                    client: span for client, span in self._windows.items() if now - span[0] < self.window
                }
        reset = max(1, math.ceil(started + self.window - now))
        return Decision(allowed, self.quota, self.window, self.quota - used, reset)

    def clear(self) -> None:
        """Forget every client's window."""
        with self._lock:
            self._windows.clear()
