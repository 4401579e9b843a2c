"""The approval token's two time-bound rules: it dies when the summary's facts change, and when it is old.

booking.create: "If resolved facts such as price or policy text change before the retry, the adapter
re-challenges with a fresh summary instead of accepting the old token. A token expires after a short TTL."

Both need something a black-box battery cannot do alone, so both are SKIP, never PASS, without it:

- `approval.token_summary_bound` reprices the fixtures' `services.repriced` through the platform's catalog
  hook (`--catalog-url`) between the challenge and the approved retry. Battery runs sharing one platform
  may reprice that service at the same time, so every change picks a fresh random price and a retry whose
  fresh summary shows another run's price is repeated, a few times at most.
- `approval.token_expired` needs the server's token lifetime (`approval_ttl_seconds` in the fixtures): its
  challenge is taken when the battery starts (:func:`open_expiry`) and retried when the battery ends
  (:func:`grade_expiry`), waiting only what is left of the lifetime plus a margin.
"""

from __future__ import annotations

import secrets
import time
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import anyio
from iso4217 import Currency

from osbp.conformance.flows import challenge
from osbp.conformance.grading import CheckFailed, expect
from osbp.conformance.payloads import CREATE, approval_token, approved
from osbp.conformance.probe import Probe
from osbp.conformance.scenario import appointments, set_price
from osbp.conformance.summary_checks import price_stated, summary_text
from osbp.conformance.wire import Exchange

__all__ = ["LONGEST_TTL_SECONDS", "PendingExpiry", "grade_expiry", "grade_summary_bound", "open_expiry"]

#: The longest token lifetime the battery waits out; a longer one leaves approval.token_expired skipped.
LONGEST_TTL_SECONDS = 60.0
#: How long past the lifetime the battery retries, for clock granularity and the challenge's own latency.
_EXPIRY_MARGIN_SECONDS = 0.5
#: How many reprice-and-retry rounds the summary check tries before concluding.
_REPRICE_ROUNDS = 3
#: The repriced amounts, in minor units: well inside the fixtures' cap, never a round default.
_LOWEST, _SPREAD = 10_001, 800_000


@dataclass(frozen=True, slots=True)
class PendingExpiry:
    """A challenge taken at the start of the run, to be retried once its token has expired."""

    payload: dict[str, Any]
    token: str
    #: When the challenge's answer arrived (time.monotonic): the token was issued before that.
    answered_at: float
    ttl: float


async def _appointments(probe: Probe) -> int | None:
    """The platform's appointment count, when the stats hook reports one (CheckFailed when unreadable).

    Appointments, not create requests: a server may send the create it prepared for the approved facts
    (with the platform's validator) and have the platform refuse it; what must not happen is a booking.
    """
    if probe.stats_url is None:
        return None
    count = await appointments(probe.stats_url, call_timeout=probe.call_timeout)
    expect(not isinstance(count, str), str(count))
    assert not isinstance(count, str)
    return count


def _not_booked(before: int | None, after: int | None, why: str) -> None:
    expect(
        before == after,
        f"the platform holds a new appointment {why}",
        expected="no new appointment",
        observed=f"{(after or 0) - (before or 0)} new appointments",
    )


def _refused_with_fresh_challenge(retry: Exchange, old_token: str, what: str) -> str:
    """The fresh challenge's token; CheckFailed unless `retry` is a re-challenge (never a booking)."""
    expect(
        retry.ok is False,
        f"the approved retry booked {what}",
        expected="requires_user_confirmation with a fresh summary and token",
        observed=retry.describe(),
    )
    expect(
        retry.code == "requires_user_confirmation",
        f"expected a fresh requires_user_confirmation challenge {what}, got {retry.describe()}",
    )
    fresh = approval_token(retry.message)
    expect(fresh is not None, 'the fresh challenge carries no approval.token="…" instruction')
    expect(fresh != old_token, "the fresh challenge repeats the old token")
    assert fresh is not None
    return fresh


def _new_price(old_summary: str, currency: str) -> tuple[int, str]:
    """A random price (minor units, and the hook's major-unit decimal) that the old summary does not state."""
    try:
        exponent = Currency(currency).exponent or 0
    except ValueError:
        exponent = 2
    while True:
        minor = _LOWEST + secrets.randbelow(_SPREAD)
        if not price_stated(old_summary, {"amount_minor": minor, "currency": currency}):
            return minor, f"{Decimal(minor).scaleb(-exponent):.{exponent}f}"


async def grade_summary_bound(probe: Probe) -> None:
    """A token stops approving once the price it was shown with changed: the retry is re-challenged."""
    check_id, service = "approval.token_summary_bound", probe.fixtures.services.repriced
    if service is None:
        probe.grader.skipped(check_id, "the fixtures name no services.repriced")
        return
    if probe.catalog_url is None:
        probe.grader.skipped(check_id, "no --catalog-url: the battery cannot change a price")
        return
    currency = probe.fixtures.max_price.currency
    with probe.grader.check(check_id):
        payload = probe.payloads.create(service.id)
        first, token = await challenge(probe, payload)
        expect(token is not None, f"expected an approval challenge, got {first.describe()}")
        assert token is not None
        shown, observed = summary_text(first.message), ""
        for _ in range(_REPRICE_ROUNDS):
            minor, amount = _new_price(shown, currency)
            failed = await set_price(
                probe.catalog_url,
                probe.fixtures.organization_id,
                service.id,
                amount,
                call_timeout=probe.call_timeout,
            )
            expect(failed is None, str(failed))
            before = await _appointments(probe)
            retry = await probe.wire.call(CREATE, approved(payload, token))
            after = await _appointments(probe)
            token = _refused_with_fresh_challenge(retry, token, f"after the price changed to {amount}")
            _not_booked(before, after, "for a token whose price changed")
            shown = summary_text(retry.message)
            if price_stated(shown, {"amount_minor": minor, "currency": currency}):
                return
            observed = shown
        raise CheckFailed(
            "the fresh challenge's summary does not show the changed price",
            expected=f"a summary stating the new price ({currency} {amount})",
            observed=observed,
        )


async def open_expiry(probe: Probe) -> PendingExpiry | None:
    """Take the expiry check's challenge now (None, with the check graded, when it cannot run)."""
    check_id, ttl = "approval.token_expired", probe.fixtures.approval_ttl_seconds
    if ttl is None:
        probe.grader.skipped(check_id, "the fixtures name no approval_ttl_seconds")
        return None
    if ttl > LONGEST_TTL_SECONDS:
        probe.grader.skipped(
            check_id,
            f"approval_ttl_seconds {ttl:g} is longer than the battery waits ({LONGEST_TTL_SECONDS:g})",
        )
        return None
    # Graded only at the end: a run that ends early leaves the check "not graded", never passed.
    payload = probe.payloads.create(probe.fixtures.services.fixed_usd.id)
    first, token = await challenge(probe, payload)
    if token is None:
        probe.grader.failed(check_id, f"expected an approval challenge, got {first.describe()}")
        return None
    return PendingExpiry(payload, token, time.monotonic(), ttl)


async def grade_expiry(probe: Probe, pending: PendingExpiry | None) -> None:
    """Retry the opening challenge once its token is older than the TTL: it must be re-challenged."""
    if pending is None:
        return
    with probe.grader.check("approval.token_expired"):
        expired_at = pending.answered_at + pending.ttl + _EXPIRY_MARGIN_SECONDS
        await anyio.sleep(max(0.0, expired_at - time.monotonic()))
        before = await _appointments(probe)
        retry = await probe.wire.call(CREATE, approved(pending.payload, pending.token))
        after = await _appointments(probe)
        _refused_with_fresh_challenge(retry, pending.token, f"with a token older than {pending.ttl:g} s")
        _not_booked(before, after, "for an expired token")
