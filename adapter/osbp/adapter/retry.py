"""The adapter's retry policy: which platform outcomes are retried, and how long to wait before each retry.

A request is retried only when repeating it cannot do anything twice: a read (``GET``), or a create that
carries the native ``Idempotency-Key`` (the retry sends the same key, so the platform replays the
appointment a lost answer made instead of booking again). It is retried only on an outcome that says
nothing was answered or the platform failed: no response (timeout, refused or broken connection), or a
``500``/``502``/``503``/``504``. A ``429`` is never retried here: it reaches the agent as ``rate_limited`` at
once (the spec's mapping), and retrying would add load to a platform that asked for less.

Waits are exponential with jitter (``backoff_s``, doubled per retry, capped at ``max_backoff_s``, drawn
from the upper half of that span so retries of many clients spread out without ever being immediate). A
``Retry-After`` in seconds is honoured (the wait is at least that long) up to ``retry_after_cap_s``; a
longer one ends the retries, and the caller gets its Problem. Small code rather than a retry library: the
outcomes are values, not exceptions, and the wait depends on the answer's ``Retry-After``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass

from osbp.adapter.settings import AdapterSettings

__all__ = ["RETRIED_STATUSES", "RetryPolicy", "retry_after_seconds"]

#: Statuses that say the platform failed (without doing the request, or harmlessly under the same key).
RETRIED_STATUSES = frozenset({500, 502, 503, 504})


def retry_after_seconds(value: str | None) -> float | None:
    """A ``Retry-After`` in delay-seconds, or ``None`` (absent, or an HTTP-date: not honoured)."""
    value = (value or "").strip()
    return float(value) if value.isdigit() else None


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """Bounded attempts and the waits between them."""

    attempts: int = 3
    backoff_s: float = 0.2
    max_backoff_s: float = 2.0
    retry_after_cap_s: float = 5.0

    @classmethod
    def of(cls, settings: AdapterSettings) -> RetryPolicy:
        """The policy the settings give."""
        return cls(
            attempts=settings.retry_attempts,
            backoff_s=settings.retry_backoff_s,
            max_backoff_s=settings.retry_max_backoff_s,
            retry_after_cap_s=settings.retry_after_cap_s,
        )

    def delay(self, attempt: int, asked: float | None, rng: random.Random) -> float | None:
        """Seconds to wait after failed ``attempt`` (1-based) that asked ``Retry-After: asked``, or ``None``.

        ``None``: no retry, the attempts are spent or the platform asked for a longer wait than the cap.
        """
        if attempt >= self.attempts:
            return None
        if asked is not None and asked > self.retry_after_cap_s:
            return None
        span = min(self.max_backoff_s, self.backoff_s * 2 ** (attempt - 1))
        wait = rng.uniform(span / 2, span)
        return max(wait, asked) if asked is not None else wait
