"""The fixed-window limiter: per client, exact arithmetic."""

from __future__ import annotations

from typing import Any

import http_sf
from hypothesis import given
from hypothesis import strategies as st

from osbp.backend.ratelimit import POLICY_NAME, Decision, RateLimiter

_SF_INTEGER = st.integers(min_value=0, max_value=999_999_999_999_999)  # RFC 9651 sf-integer range


def test_each_client_has_its_own_window():
    """Platform choice: a real limiter per client."""
    now = [0.0]
    limiter = RateLimiter(2, 10, monotonic=lambda: now[0])
    assert [limiter.hit("a").allowed for _ in range(3)] == [True, True, False]
    assert limiter.hit("b").allowed


def test_refusal_reports_retry_after_until_the_window_resets():
    """IETF RateLimit draft / RFC 9110 Retry-After: seconds until the quota returns, rounded up."""
    now = [100.0]
    limiter = RateLimiter(1, 10, monotonic=lambda: now[0])
    limiter.hit("a")
    now[0] = 103.2
    refused = limiter.hit("a")
    assert (refused.allowed, refused.remaining, refused.reset_seconds) == (False, 0, 7)
    assert refused.headers()["Retry-After"] == "7"
    now[0] = 110.0
    assert limiter.hit("a").allowed


def test_clear_forgets_all_windows():
    """Platform choice: reset to seeds also resets the limiter."""
    limiter = RateLimiter(1, 60, monotonic=lambda: 0.0)
    limiter.hit("a")
    limiter.clear()
    assert limiter.hit("a").allowed


def test_expired_windows_of_many_clients_are_forgotten():
    """Platform choice: the limiter's memory stays bounded under many distinct clients."""
    now = [0.0]
    limiter = RateLimiter(1, 10, monotonic=lambda: now[0])
    for index in range(10_001):
        limiter.hit(f"client-{index}")
    assert len(limiter._windows) == 10_001  # all still inside their window: nothing to forget
    now[0] = 20.0
    assert limiter.hit("late").allowed
    assert list(limiter._windows) == ["late"]


@given(quota=_SF_INTEGER, window=_SF_INTEGER, remaining=_SF_INTEGER, reset=_SF_INTEGER)
def test_ratelimit_fields_are_structured_lists_that_parse_back_to_the_numbers(
    quota, window, remaining, reset
):
    """draft-ietf-httpapi-ratelimit-headers / RFC 9651: one list member, the policy name with q/w, r/t."""
    fields = Decision(True, quota, window, remaining, reset).headers()
    policy: Any = http_sf.parse(fields["RateLimit-Policy"].encode(), tltype="list")
    limit: Any = http_sf.parse(fields["RateLimit"].encode(), tltype="list")
    assert policy == [(POLICY_NAME, {"q": quota, "w": window})]
    assert limit == [(POLICY_NAME, {"r": remaining, "t": reset})]
    assert "Retry-After" not in fields


@given(remaining=_SF_INTEGER, reset=_SF_INTEGER)
def test_the_ratelimit_field_is_exactly_what_the_structured_field_serialiser_writes(remaining, reset):
    """RFC 9651 §4.1: the per-response RateLimit field is the serialiser's own bytes."""
    field = Decision(True, 10, 60, remaining, reset).headers()["RateLimit"]
    assert field == http_sf.ser([(POLICY_NAME, {"r": remaining, "t": reset})])
