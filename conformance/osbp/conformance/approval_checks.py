"""The approval token's two time-bound rules: it dies when the summary's facts change, and when it is old.

booking.create: "If resolved facts such as price or policy text change before the retry, the adapter
re-challenges with a fresh summary instead of accepting the old token. A token expires after a short TTL."

Both need something a black-box battery cannot do alone, so both are SKIP, never PASS, without it:

- `approval.token_summary_*` change one summary fact between the challenge and the approved retry: the
  price of `services.repriced`, or a fee, the cancellation window, the provider's or the schedule's name of
  that fact's `bound_facts` service, through the catalog hook (`--catalog-url`) or the rename hooks
  (`--provider-url`, `--location-url`). Battery runs sharing one platform change the same facts at the
  same time, so every change picks a fresh random value, and a round whose fresh summary shows another
  run's value or differs in anything else is repeated after a random pause, a few times at most.
- `approval.token_expired_current` takes a challenge of `services.repriced` at the start too, and once
  its token has expired reprices the service and retries: the fresh challenge must state a price of now,
  never the price its first summary showed (needs the catalog hook and `approval_ttl_seconds`).
- `approval.token_expired` needs the server's token lifetime (`approval_ttl_seconds` in the fixtures): its
  challenge is taken when the battery starts (:func:`open_expiry`) and retried when the battery ends
  (:func:`grade_expiry`), waiting only what is left of the lifetime plus a margin.
"""

from __future__ import annotations

import re
import secrets
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from decimal import Decimal
from typing import Any

import anyio
from iso4217 import Currency

from osbp.conformance.falsehoods import money_mentions
from osbp.conformance.fixtures import BoundFact, Fixtures
from osbp.conformance.flows import challenge
from osbp.conformance.grading import CheckFailed, expect
from osbp.conformance.payloads import CREATE, approval_token, approved
from osbp.conformance.probe import Probe
from osbp.conformance.scenario import appointments, change_service, rename
from osbp.conformance.summary_checks import price_forms, price_stated, summary_text
from osbp.conformance.wire import Exchange

__all__ = [
    "FACTS",
    "LONGEST_TTL_SECONDS",
    "PendingCurrent",
    "PendingExpiry",
    "changed_alone",
    "grade_current",
    "grade_expiry",
    "grade_summary_bound",
    "open_current",
    "open_expiry",
]

#: The longest token lifetime the battery waits out; a longer one leaves approval.token_expired skipped.
LONGEST_TTL_SECONDS = 60.0
#: How long past the lifetime the battery retries, for clock granularity and the challenge's own latency.
_EXPIRY_MARGIN_SECONDS = 0.5
#: How many change-and-retry rounds a summary-fact check tries before concluding.
_ROUNDS = 5
#: The longest pause, in milliseconds, before a round that another run's change made inconclusive.
_JITTER_MS = 400
#: The new prices and fees, in minor units: well inside the fixtures' cap, never a round default.
_LOWEST, _SPREAD = 10_001, 800_000
_LOWEST_FEE, _SPREAD_FEE = 101, 99_000
#: The new cancellation windows, in whole hours.
_FEWEST_HOURS, _SPREAD_HOURS = 7, 65


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


@dataclass(frozen=True, slots=True)
class _Change:
    """One new value of a summary fact: the hook call that makes it, and how a summary may state it."""

    make: Callable[[], Awaitable[str | None]]
    #: Literal texts a summary may state the new value in (the ones found locate the fact in the summary).
    forms: tuple[str, ...]
    described: str
    stated: Callable[[str], bool]


#: What a fact check needs: the probe, the service, the summary shown before -> the change to make.
_Picker = Callable[[Probe, BoundFact, str], _Change]


@dataclass(frozen=True, slots=True)
class _Fact:
    """One summary fact the binding checks change between a challenge and its retry."""

    check_id: str
    what: str
    #: The probe attribute holding the hook URL the change needs.
    hook: str
    pick: _Picker
    #: The fixtures' service for this fact, if they name one.
    target: Callable[[Fixtures], BoundFact | None]
    #: Whether the platform's appointment count (the stats hook) is read around each retry as well.
    counted: bool = False


def _exponent(currency: str) -> int:
    try:
        return Currency(currency).exponent or 0
    except ValueError:
        return 2


def _money_change(probe: Probe, service: BoundFact, shown: str, field: str, what: str) -> _Change:
    """A random amount in the cap's currency that `shown` does not state, set as the service's `field`."""
    currency = probe.fixtures.max_price.currency
    exponent = _exponent(currency)
    lowest, spread = (_LOWEST, _SPREAD) if field == "price_amount" else (_LOWEST_FEE, _SPREAD_FEE)
    while True:
        minor = lowest + secrets.randbelow(spread)
        money: dict[str, Any] = {"amount_minor": minor, "currency": currency}
        if not price_stated(shown, money):
            break
    amount = f"{Decimal(minor).scaleb(-exponent):.{exponent}f}"
    catalog, org = probe.catalog_url or "", probe.fixtures.organization_id

    async def make() -> str | None:
        return await change_service(
            catalog, org, service.service, field, amount, call_timeout=probe.call_timeout
        )

    return _Change(
        make,
        tuple(price_forms(money)),
        f"the {what} {currency} {amount}",
        lambda text: price_stated(text, money),
    )


def _window_change(probe: Probe, service: BoundFact, shown: str) -> _Change:
    """A random whole-hour cancellation window that `shown` does not state in any usual form."""
    while True:
        hours = _FEWEST_HOURS + secrets.randbelow(_SPREAD_HOURS)
        forms = (f"{hours} hours", f"PT{hours}H", f"{hours * 60} minutes", f"{hours}h", f"{hours} hrs")
        pattern = re.compile("|".join(rf"(?<![\d.,]){re.escape(form)}(?!\w)" for form in forms))
        if not pattern.search(shown):
            break
    catalog, org = probe.catalog_url or "", probe.fixtures.organization_id

    async def make() -> str | None:
        return await change_service(
            catalog,
            org,
            service.service,
            "cancellation_window_minutes",
            hours * 60,
            call_timeout=probe.call_timeout,
        )

    return _Change(
        make, forms, f"a cancellation window of {hours} hours", lambda text: bool(pattern.search(text))
    )


def _rename(kind: str, label: str) -> _Picker:
    def pick(probe: Probe, service: BoundFact, shown: str) -> _Change:
        entity = service.provider if kind == "provider" else service.schedule
        url = (probe.provider_url if kind == "provider" else probe.location_url) or ""
        name = f"{label} {secrets.token_hex(3)}"

        async def make() -> str | None:
            return await rename(
                url, probe.fixtures.organization_id, kind, entity or "", name, call_timeout=probe.call_timeout
            )

        return _Change(
            make, (name,), f"the {kind} name {name!r}", lambda text: name.casefold() in text.casefold()
        )

    return pick


def _repriced(fixtures: Fixtures) -> BoundFact | None:
    service = fixtures.services.repriced
    return None if service is None else BoundFact(service=service.id)


def _bound(name: str) -> Callable[[Fixtures], BoundFact | None]:
    return lambda fixtures: getattr(fixtures.bound_facts, name, None)


def _money(field: str, what: str) -> _Picker:
    return lambda probe, service, shown: _money_change(probe, service, shown, field, what)


#: Every summary fact bound to the token, in report order (the price check keeps its original id).
FACTS = (
    _Fact(
        "approval.token_summary_bound",
        "price",
        "catalog_url",
        _money("price_amount", "price"),
        _repriced,
        counted=True,
    ),
    _Fact(
        "approval.token_summary_cancellation_fee",
        "cancellation fee",
        "catalog_url",
        _money("cancellation_fee", "cancellation fee"),
        _bound("cancellation_fee"),
    ),
    _Fact(
        "approval.token_summary_no_show_fee",
        "no-show fee",
        "catalog_url",
        _money("no_show_fee", "no-show fee"),
        _bound("no_show_fee"),
    ),
    _Fact(
        "approval.token_summary_window",
        "cancellation window",
        "catalog_url",
        _window_change,
        _bound("cancellation_window"),
    ),
    _Fact(
        "approval.token_summary_provider",
        "provider name",
        "provider_url",
        _rename("provider", "Annex Host"),
        _bound("provider_name"),
    ),
    _Fact(
        "approval.token_summary_location",
        "location name",
        "location_url",
        _rename("location", "Annex Room"),
        _bound("location_name"),
    ),
)


def _sentences(text: str) -> list[str]:
    return [part for part in re.split(r"(?<=[.!?])\s+|\n+", text) if part.strip()]


def changed_alone(old: str, fresh: str, forms: tuple[str, ...]) -> bool:
    """Whether `fresh` differs from `old` only where it states one of `forms` (sentences `fresh` adds, such
    as a re-challenge's lead, are allowed): every sentence of `old` is in `fresh`, or is a sentence of
    `fresh` with the new value in place of another."""
    present = sorted((form for form in forms if form in fresh), key=len, reverse=True)
    if not present:
        return False
    value = re.compile("|".join(re.escape(form) for form in present))
    kept = set(_sentences(fresh))
    templates = [
        re.compile("(.+?)".join(re.escape(piece) for piece in value.split(sentence)), re.DOTALL)
        for sentence in kept
        if value.search(sentence)
    ]
    return all(
        sentence in kept or any(template.fullmatch(sentence) for template in templates)
        for sentence in _sentences(old)
    )


def _bound_payload(probe: Probe, service: BoundFact) -> dict[str, Any]:
    """A booking of the fact's service at its schedule with its provider (the fixture's by default)."""
    fixtures, build = probe.fixtures, probe.payloads
    schedule = service.schedule or fixtures.schedule.id
    provider = service.provider or fixtures.providers.in_scope
    mandate = build.mandate(service.service, schedule_ids=[schedule], provider_ids=[provider])
    return build.create(service.service, mandate=mandate, schedule_id=schedule, provider_id=provider)


async def _grade_fact(probe: Probe, fact: _Fact, service: BoundFact) -> None:
    with probe.grader.check(fact.check_id):
        payload = _bound_payload(probe, service)
        first, token = await challenge(probe, payload)
        expect(token is not None, f"expected an approval challenge, got {first.describe()}")
        assert token is not None
        shown, observed, wanted = summary_text(first.message), "", ""
        # Runs sharing the platform change the same facts: a round whose fresh summary differs elsewhere
        # too (or shows another run's value) proves nothing either way, and is repeated.
        for _ in range(_ROUNDS):
            change = fact.pick(probe, service, shown)
            failed = await change.make()
            expect(failed is None, str(failed))
            before = await _appointments(probe) if fact.counted else None
            retry = await probe.wire.call(CREATE, approved(payload, token))
            after = await _appointments(probe) if fact.counted else None
            token = _refused_with_fresh_challenge(retry, token, f"after {change.described} was set")
            _not_booked(before, after, f"for a token whose {fact.what} changed")
            fresh = summary_text(retry.message)
            if change.stated(fresh) and changed_alone(shown, fresh, change.forms):
                return
            shown, observed, wanted = fresh, fresh, change.described
            # Two runs in the same phase would collide round after round: a random pause parts them.
            await anyio.sleep(secrets.randbelow(_JITTER_MS) / 1000)
        raise CheckFailed(
            f"in {_ROUNDS} rounds the fresh challenge's summary never showed the changed {fact.what} "
            "(and nothing else changed)",
            expected=f"a summary stating {wanted}",
            observed=observed,
        )


async def grade_summary_bound(probe: Probe) -> None:
    """A token stops approving once a fact of its summary changed: the retry is re-challenged, and the fresh
    summary shows the new fact (price, each fee, the cancellation window, the provider and location names)."""
    for fact in FACTS:
        service = fact.target(probe.fixtures)
        if service is None:
            where = "services.repriced" if fact.counted else "bound_facts"
            probe.grader.skipped(fact.check_id, f"the fixtures name no {where} service for the {fact.what}")
        elif getattr(probe, fact.hook) is None:
            hook = fact.hook.removesuffix("_url")
            probe.grader.skipped(fact.check_id, f"no --{hook}-url: the battery cannot change the {fact.what}")
        else:
            await _grade_fact(probe, fact, service)


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


# --- An expired token's fresh challenge shows the facts as they are now -------------------------------


@dataclass(frozen=True, slots=True)
class PendingCurrent:
    """A challenge of the repriced service taken at the start, retried once expired after a new price."""

    payload: dict[str, Any]
    token: str
    shown: str
    answered_at: float
    ttl: float


async def open_current(probe: Probe) -> PendingCurrent | None:
    """Take `approval.token_expired_current`'s challenge now (None, with the check graded, if it cannot)."""
    check_id, ttl = "approval.token_expired_current", probe.fixtures.approval_ttl_seconds
    service = _repriced(probe.fixtures)
    if service is None or probe.catalog_url is None:
        probe.grader.skipped(check_id, "no services.repriced or no --catalog-url: the price cannot change")
        return None
    if ttl is None or ttl > LONGEST_TTL_SECONDS:
        probe.grader.skipped(check_id, "no approval_ttl_seconds the battery waits out")
        return None
    payload = _bound_payload(probe, service)
    first, token = await challenge(probe, payload)
    if token is None:
        probe.grader.failed(check_id, f"expected an approval challenge, got {first.describe()}")
        return None
    return PendingCurrent(payload, token, summary_text(first.message), time.monotonic(), ttl)


async def grade_current(probe: Probe, pending: PendingCurrent | None) -> None:
    """Reprice, then retry the expired token: the fresh challenge states a price of now, never the old one.

    Other runs on the platform may reprice the service too (always to a fresh random amount), so any price
    but the one shown at the start passes; the old price in the fresh summary is the stale offer.
    """
    if pending is None:
        return
    service = _repriced(probe.fixtures)
    assert service is not None
    with probe.grader.check("approval.token_expired_current"):
        expired_at = pending.answered_at + pending.ttl + _EXPIRY_MARGIN_SECONDS
        await anyio.sleep(max(0.0, expired_at - time.monotonic()))
        change = _money_change(probe, service, pending.shown, "price_amount", "price")
        failed = await change.make()
        expect(failed is None, str(failed))
        retry = await probe.wire.call(CREATE, approved(pending.payload, pending.token))
        _refused_with_fresh_challenge(retry, pending.token, f"with a token older than {pending.ttl:g} s")
        fresh = summary_text(retry.message)

        def amounts(text: str) -> set[tuple[str, int | None]]:
            return {(mention.currency, mention.minor) for mention in money_mentions(text)}

        old = amounts(pending.shown)
        expect(
            change.stated(fresh) or not (old and old <= amounts(fresh)),
            "the expired token's fresh challenge shows the price of its first summary, not the price now",
            expected=f"a summary stating {change.described}",
            observed=repr(fresh[:400]),
        )
