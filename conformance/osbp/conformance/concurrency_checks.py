"""Idempotency under contention and after a lost answer, judged by the platform's own counters.

Several copies of one approved booking.create sent at once (the platform holding the first create two
seconds, through the scenario hook's `slow`) must reach the platform once and book once; a create whose
answer the platform drops after applying it (`lost_response`) must, retried under the same key, answer
the one appointment it made, also once the mandate has expired: the spec's "the same idempotency_key
returns the same result if retried". What was booked is read from the stats hook (`create_requests`,
`appointments`), never from the server's other answers. The platform may serve other clients at the same
time, so a count that rose by more than one is measured again in a fresh window: a server that books
twice does so in every window.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import anyio

from osbp.conformance.flows import challenge, receipt_problems
from osbp.conformance.grading import CheckFailed, Verdict, expect, summarize
from osbp.conformance.payloads import CREATE, approved
from osbp.conformance.probe import Probe
from osbp.conformance.scenario import ScenarioOutcome, arm, set_reachability, stats
from osbp.conformance.wallclock import format_instant
from osbp.conformance.wire import Exchange

__all__ = ["CHECK_IDS", "grade_concurrency"]

CHECK_IDS = (
    "idempotency.concurrent_once",
    "idempotency.concurrent_waits",
    "idempotency.concurrent_refused",
    "idempotency.concurrent_failed",
    "idempotency.resumed_once",
    "idempotency.replay_after_expiry",
    "idempotency.resumed_after_expiry",
)
#: Copies of one approved create sent at once.
_COPIES = 4
#: Fresh windows a count may be measured in before a rise of more than one counts against the server.
_WINDOWS = 3
#: Answers that say "not yet": the same call is repeated (after `_PATIENCE` seconds at most in all).
_TRANSIENT = frozenset({"idempotency_in_progress", "upstream_unavailable", "rate_limited"})
_PATIENCE = 45.0
#: Seconds a short-lived mandate lives, tried in turn when a slow run let the shorter one expire early.
_LIFETIMES = (6, 15, 40)


@dataclass(frozen=True, slots=True)
class _Counts:
    """The platform's counters for the fixture organization."""

    create_requests: int
    appointments: int

    def since(self, before: _Counts) -> tuple[int, int]:
        return self.create_requests - before.create_requests, self.appointments - before.appointments


async def _counts(probe: Probe) -> _Counts:
    assert probe.stats_url is not None
    read = await stats(probe.stats_url, call_timeout=probe.call_timeout)
    if isinstance(read, str):
        raise CheckFailed(read)
    requests, appointments = read.get("create_requests"), read.get("appointments")
    if type(requests) is not int or type(appointments) is not int:
        raise CheckFailed("the stats URL did not answer integer create_requests and appointments")
    return _Counts(requests, appointments)


async def _arm(probe: Probe, outcome: ScenarioOutcome) -> None:
    assert probe.scenario_url is not None
    failed = await arm(
        probe.scenario_url, probe.fixtures.organization_id, outcome, call_timeout=probe.call_timeout
    )
    if failed is not None:
        raise CheckFailed(failed)


async def _reachable(probe: Probe) -> str | None:
    assert probe.scenario_url is not None
    # Shielded: a cancelled run still gives the platform's answers back to its other clients.
    with anyio.CancelScope(shield=True):
        restored = await set_reachability(
            probe.scenario_url, probe.fixtures.organization_id, "reachable", call_timeout=probe.call_timeout
        )
    return restored


def _booking_id(exchange: Exchange) -> str | None:
    value = exchange.value
    return value.get("booking_id") if isinstance(value, dict) and not receipt_problems(exchange) else None


async def _settle(probe: Probe, payload: dict[str, Any], first: Exchange | None = None) -> Exchange:
    """`first` (or a fresh call of `payload`), repeated while the answer is a retryable "not yet"."""
    answer = first if first is not None else await probe.wire.call(CREATE, payload)
    waited, delay = 0.0, 0.5
    while (
        answer.code in _TRANSIENT and answer.problem.get("retryable") is True and waited + delay <= _PATIENCE
    ):
        await probe.wire.sleep(delay)
        waited += delay
        delay = min(delay * 2, 8.0)
        answer = await probe.wire.call(CREATE, payload)
    return answer


async def _approved(probe: Probe, payload: dict[str, Any]) -> dict[str, Any]:
    first, token = await challenge(probe, payload)
    expect(token is not None, f"expected an approval challenge, got {first.describe()}")
    assert token is not None
    return approved(payload, token)


async def _concurrent(
    probe: Probe, payloads: list[dict[str, Any]], *, patient: bool = True
) -> tuple[list[Exchange], bool]:
    """The answers to `payloads` sent at once, and whether the platform throttled any call meanwhile."""
    answers: list[Exchange | None] = [None] * len(payloads)
    seen = len(probe.wire.exchanges)

    async def send(index: int) -> None:
        answers[index] = await probe.wire.call(CREATE, payloads[index], patient=patient)

    async with anyio.create_task_group() as group:
        for index in range(len(payloads)):
            group.start_soon(send, index)
    throttled = any(exchange.code == "rate_limited" for exchange in probe.wire.exchanges[seen:])
    return [answer for answer in answers if answer is not None], throttled


@dataclass(frozen=True, slots=True)
class _Burst:
    """One window of the copies check: why its counts rose too far (if they did), and how the copies
    answered before any retry (`clean`: no call was throttled, so a copy that did not wait had no cause)."""

    risen: str | None
    clean: bool
    not_waited: list[str]


async def _burst(probe: Probe) -> _Burst:
    payload = await _approved(probe, probe.payloads.create(probe.fixtures.services.fixed_usd.id))
    before = await _counts(probe)
    await _arm(probe, "slow")
    answers, throttled = await _concurrent(probe, [payload] * _COPIES)
    not_waited = [answer.describe() for answer in answers if _booking_id(answer) is None]
    wrong = [
        answer.describe()
        for answer in answers
        if _booking_id(answer) is None
        and (answer.ok is not False or answer.problem.get("retryable") is not True)
    ]
    expect(
        not wrong,
        f"a copy of the approved create sent at once failed for good: {summarize(wrong)}",
        expected="the booking, or a retryable Problem (idempotency_in_progress) while the first is in flight",
        observed=summarize(wrong),
    )
    settled = [await _settle(probe, payload, answer) for answer in answers]
    replay = await probe.wire.call(CREATE, payload)
    ids = {_booking_id(answer) for answer in [*settled, replay]}
    expect(
        len(ids) == 1 and None not in ids,
        f"copies of one approved create answered {sorted(map(str, ids))}",
        expected="every copy, and a replay, answers the one booking",
        observed=", ".join(answer.describe() for answer in [*settled, replay] if _booking_id(answer) is None)
        or f"booking ids {sorted(map(str, ids))}",
    )
    requests, made = (await _counts(probe)).since(before)
    if requests < 1 or made < 1:
        raise CheckFailed(
            f"{_COPIES} copies of one approved create: {requests} create requests, {made} appointments",
            expected="1 create request, 1 appointment",
            observed=f"{requests} create requests, {made} appointments",
        )
    risen = None if (requests, made) == (1, 1) else f"{requests} create requests, {made} appointments"
    return _Burst(risen, not throttled, not_waited)


async def _grade_once(probe: Probe) -> None:
    bursts: list[_Burst] = []
    with probe.grader.check("idempotency.concurrent_once"):
        for _ in range(_WINDOWS):
            bursts.append(await _burst(probe))
            if bursts[-1].risen is None:
                break
        else:
            risen = [burst.risen or "" for burst in bursts]
            raise CheckFailed(
                f"{_COPIES} copies of one approved create, in each of {_WINDOWS} windows: {summarize(risen)}",
                expected="1 create request and 1 appointment for one logical create",
                observed=risen[-1],
            )
    if probe.grader.verdict("idempotency.concurrent_once") is not Verdict.PASS:
        probe.grader.blocked("idempotency.concurrent_waits", "idempotency.concurrent_once")
        return
    with probe.grader.check("idempotency.concurrent_waits"):
        # Graded on an unthrottled window: a copy may answer "in progress" when the first call was refused.
        while not any(burst.clean for burst in bursts) and len(bursts) < 2 * _WINDOWS:
            bursts.append(await _burst(probe))
        clean = [burst for burst in bursts if burst.clean]
        expect(bool(clean), f"every one of {len(bursts)} windows was throttled by the platform")
        not_waited = clean[-1].not_waited
        expect(
            not not_waited,
            f"a copy sent while the first create was in flight did not wait for it: {summarize(not_waited)}",
            expected="every copy answers the booking (it waits for the first, then replays)",
            observed=summarize(not_waited),
        )


def _changed(payload: dict[str, Any], index: int) -> dict[str, Any]:
    customer = dict(payload["customer"])
    customer["display_name"] = f"{customer['display_name']} Variant {index}"
    return {**payload, "customer": customer}


async def _grade_refused(probe: Probe) -> None:
    with probe.grader.check("idempotency.concurrent_refused"):
        payload = await _approved(probe, probe.payloads.create(probe.fixtures.services.fixed_usd.id))
        variants = [_changed(payload, index) for index in range(1, _COPIES)]
        await _arm(probe, "slow")
        (first, *others), _ = await _concurrent(probe, [payload, *variants])
        wrong = [answer.describe() for answer in others if answer.code != "idempotency_conflict"]
        expect(
            not wrong,
            f"another payload under a key in flight was not refused: {summarize(wrong)}",
            expected="idempotency_conflict for every other payload",
            observed=summarize(wrong),
        )
        booked = await _settle(probe, payload, first)
        problems = receipt_problems(booked)
        expect(not problems, "the approved payload itself: " + "; ".join(problems))


async def _grade_failed(probe: Probe) -> None:
    with probe.grader.check("idempotency.concurrent_failed"):
        verdicts: list[str] = []
        for _ in range(_WINDOWS):
            payload = await _approved(probe, probe.payloads.create(probe.fixtures.services.fixed_usd.id))
            before = await _counts(probe)
            await _arm(probe, "slot_taken")
            await _arm(probe, "slow")
            answers, throttled = await _concurrent(probe, [payload] * _COPIES, patient=False)
            if throttled:
                # A 429 before the armed create leaves the outcome to whichever retry comes first: settle the
                # copies (which spends the armed outcomes) and measure again.
                for answer in answers:
                    await _settle(probe, payload, answer)
                verdicts.append("throttled")
                continue
            requests, made = (await _counts(probe)).since(before)
            booked = [answer.describe() for answer in answers if answer.ok is not False]
            final = [
                answer.describe()
                for answer in answers
                if answer.ok is False
                and answer.code != "slot_taken"
                and answer.problem.get("retryable") is not True
            ]
            expect(
                not booked and not final,
                "copies of an approved create whose platform create was refused: "
                + summarize(booked + final),
                expected="slot_taken for the first, a retryable Problem for the copies that waited on it",
                observed=summarize(booked + final),
            )
            if requests <= 1 and made == 0:
                expect(requests == 1, f"{requests} create requests reached the platform, expected 1")
                return
            verdicts.append(f"{requests} create requests, {made} appointments")
        raise CheckFailed(
            f"{_COPIES} copies of one approved create the platform refused, in {_WINDOWS} windows: "
            + summarize(verdicts),
            expected="1 create request (the waiting copies start no attempt of their own), no appointment",
            observed=verdicts[-1],
        )


async def _lost(probe: Probe, payload: dict[str, Any]) -> Exchange:
    """The approved create sent while the platform drops its answers; then the answers are restored."""
    try:
        await _arm(probe, "lost_response")
        return await probe.wire.call(CREATE, payload)
    finally:
        restored = await _reachable(probe)
        if restored is not None:
            raise CheckFailed(f"the platform's answers could not be restored: {restored}")


def _grade_unanswered(first: Exchange) -> None:
    """A create whose answer was lost is reported retryable (or, if the server recovered it, booked)."""
    expect(
        _booking_id(first) is not None or (first.ok is False and first.problem.get("retryable") is True),
        "a create whose platform answer was lost was answered as a final failure",
        expected="a retryable Problem (the outcome is not known yet), or the booking",
        observed=first.describe(),
    )


async def _grade_resumed(probe: Probe) -> None:
    with probe.grader.check("idempotency.resumed_once"):
        payload = await _approved(probe, probe.payloads.create(probe.fixtures.services.fixed_usd.id))
        before = await _counts(probe)
        first = await _lost(probe, payload)
        _grade_unanswered(first)
        retried = await _settle(probe, payload)
        replay = await probe.wire.call(CREATE, payload)
        ids = {_booking_id(answer) for answer in (retried, replay)}
        expect(
            len(ids) == 1 and None not in ids,
            f"the retry of a create whose answer was lost: {retried.describe()}; replay: {replay.describe()}",
            expected="the one booking, on the retry and on a replay",
            observed=f"booking ids {sorted(map(str, ids))}",
        )
        expect(
            _booking_id(first) in (None, *ids),
            f"the retry answered another booking than the first answer: {ids} vs {_booking_id(first)}",
        )
        _, made = (await _counts(probe)).since(before)
        expect(
            made == 1,
            f"a create whose answer was lost, retried: {made} appointments on the platform",
            expected="1 appointment",
            observed=f"{made} appointments",
        )


@dataclass
class _Expiring:
    """A booking attempt under a mandate that expires soon, set up before the wait for its expiry."""

    payload: dict[str, Any]
    expires: dt.datetime
    before: _Counts | None = None
    first: Exchange | None = None


async def _short_lived(
    probe: Probe, send: Callable[[dict[str, Any]], Awaitable[Exchange]]
) -> tuple[_Expiring, Exchange]:
    """`send` the approved create under a mandate living a few seconds, longer each time it expired first."""
    service = probe.fixtures.services.fixed_usd.id
    answer: Exchange | None = None
    for lifetime in _LIFETIMES:
        expires = probe.clock() + dt.timedelta(seconds=lifetime)
        payload = probe.payloads.with_mandate(service, expires_at=format_instant(expires))
        first, token = await challenge(probe, payload)
        if first.code == "mandate_expired":
            continue  # this run was too slow for the mandate's lifetime: nothing was sent
        expect(token is not None, f"expected an approval challenge, got {first.describe()}")
        assert token is not None
        attempt = _Expiring(approved(payload, token), expires)
        answer = await send(attempt.payload)
        if answer.code != "mandate_expired":
            return attempt, answer
    raise CheckFailed(
        f"each short-lived mandate ({', '.join(map(str, _LIFETIMES))} s) expired before its approved create: "
        + (answer.describe() if answer is not None else "no challenge")
    )


async def _until(probe: Probe, moment: dt.datetime) -> None:
    # One second more: the server's clock may lag the battery's a little.
    remaining = (moment - probe.clock()).total_seconds() + 1.0
    if remaining > 0:
        await probe.wire.sleep(remaining)


async def _grade_expiry(probe: Probe) -> None:
    replayed: _Expiring | None = None
    resumed: _Expiring | None = None
    with probe.grader.check("idempotency.replay_after_expiry"):
        replayed, booked = await _short_lived(probe, lambda payload: probe.wire.call(CREATE, payload))
        problems = receipt_problems(booked)
        expect(not problems, "the approved create under a short-lived mandate: " + "; ".join(problems))
        replayed.first = booked
    if probe.grader.verdict("idempotency.replay_after_expiry") is Verdict.FAIL:
        replayed = None
    with probe.grader.check("idempotency.resumed_after_expiry"):
        before = await _counts(probe)
        resumed, first = await _short_lived(probe, lambda payload: _lost(probe, payload))
        resumed.before, resumed.first = before, first
        _grade_unanswered(first)
    if probe.grader.verdict("idempotency.resumed_after_expiry") is Verdict.FAIL:
        resumed = None
    pending = [attempt for attempt in (replayed, resumed) if attempt is not None]
    if pending:
        await _until(probe, max(attempt.expires for attempt in pending))
    if replayed is not None:
        with probe.grader.check("idempotency.replay_after_expiry"):
            receipt = replayed.first.value if replayed.first is not None else {}
            for retry, label in (
                (replayed.payload, "with the spent approval"),
                (_unapproved(replayed), "without"),
            ):
                again = await _settle(probe, retry)
                expect(
                    isinstance(again.value, dict)
                    and {k: again.value.get(k) for k in ("id", "booking_id")}
                    == {k: receipt.get(k) for k in ("id", "booking_id")},
                    f"a replay {label} approval after the mandate expired did not answer its receipt",
                    expected="the same receipt (a replay is no new mutation)",
                    observed=again.describe(),
                )
    if resumed is not None:
        with probe.grader.check("idempotency.resumed_after_expiry"):
            retried = await _settle(probe, resumed.payload)
            expect(
                _booking_id(retried) is not None,
                "the retry, after the mandate expired, of a create the platform made but whose answer was "
                "lost did not answer that booking",
                expected="the booking the platform holds (the same result as if the answer had arrived)",
                observed=retried.describe(),
            )
            assert resumed.before is not None
            _, made = (await _counts(probe)).since(resumed.before)
            expect(
                made == 1, f"{made} appointments on the platform, expected 1", observed=f"{made} appointments"
            )


def _unapproved(attempt: _Expiring) -> dict[str, Any]:
    return {key: value for key, value in attempt.payload.items() if key != "approval"}


async def grade_concurrency(probe: Probe) -> None:
    """Run the contention, lost-answer and after-expiry checks (they need the scenario and stats hooks)."""
    missing = [
        flag
        for flag, url in (("--scenario-url", probe.scenario_url), ("--stats-url", probe.stats_url))
        if url is None
    ]
    if missing:
        for check_id in CHECK_IDS:
            probe.grader.skipped(
                check_id,
                f"no {' or '.join(missing)}: the battery cannot slow, drop or count the platform's creates",
            )
        return
    assert probe.stats_url is not None
    read = await stats(probe.stats_url, call_timeout=probe.call_timeout)
    if isinstance(read, dict) and read.get("appointments") is None:
        for check_id in CHECK_IDS:
            probe.grader.skipped(
                check_id, "the stats URL answers no appointments count: the battery cannot count bookings"
            )
        return
    await _grade_once(probe)
    await _grade_refused(probe)
    await _grade_failed(probe)
    await _grade_resumed(probe)
    await _grade_expiry(probe)
