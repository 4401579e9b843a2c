"""The retry policy and the one HTTP helper's retries: only safe requests, bounded, Retry-After honoured."""

from __future__ import annotations

import logging
import random
from collections.abc import Callable

import httpx2
import pytest

from osbp.adapter import AdapterSettings
from osbp.adapter.bookwell import PLATFORM, VERSION_HEADER
from osbp.adapter.retry import RetryPolicy, retry_after_seconds
from osbp.adapter.upstream import LifecycleNotices, Upstream, UpstreamResponse, UpstreamUnavailable
from osbp.protocol.upstream import capture_upstream
from tests.support.logs import capture_logs, events, fields

pytestmark = pytest.mark.anyio

ROUTE = "/api/organizations/{organization_id}"
APPOINTMENTS = ROUTE + "/appointments"
PATH = {"organization_id": "carolyns_dental"}


class Script:
    """A platform answering from a script, one entry per request; records what it was sent."""

    def __init__(self, *answers: int | Callable[[httpx2.Request], httpx2.Response]) -> None:
        self.answers = list(answers)
        self.requests: list[httpx2.Request] = []

    def __call__(self, request: httpx2.Request) -> httpx2.Response:
        """The next scripted answer (a status, or a function of the request)."""
        self.requests.append(request)
        answer = self.answers.pop(0)
        if callable(answer):
            return answer(request)
        return httpx2.Response(answer, json={"id": "carolyns_dental"})


def reset(request: httpx2.Request) -> httpx2.Response:
    """The connection drops with no answer."""
    raise httpx2.ReadError("connection reset by peer", request=request)


def after(seconds: str, status: int = 503) -> Callable[[httpx2.Request], httpx2.Response]:
    """An answer with ``Retry-After: seconds``."""
    return lambda _request: httpx2.Response(status, headers={"retry-after": seconds})


class Waits:
    """The sleeps the helper asked for, without sleeping."""

    def __init__(self) -> None:
        self.seconds: list[float] = []

    async def __call__(self, seconds: float) -> None:
        """Record the wait."""
        self.seconds.append(seconds)


def upstream(script: Script, waits: Waits, **settings: object) -> Upstream:
    """An Upstream over ``script`` with recorded waits and seeded jitter."""
    configured = AdapterSettings(platform_base_url="http://platform.test", organization_id="x", **settings)
    return Upstream(
        configured,
        platform=PLATFORM,
        version_header=VERSION_HEADER,
        transport=httpx2.MockTransport(script),
        notices=LifecycleNotices(),
        sleep=waits,
        rng=random.Random(1),
    )


def test_backoff_doubles_with_jitter_in_its_upper_half_and_stops_at_the_attempts():
    """Platform choice (retry policy): exponential backoff with jitter, bounded attempts."""
    policy = RetryPolicy(attempts=4, backoff_s=0.1, max_backoff_s=0.3)
    rng = random.Random(0)
    first, second, third = (policy.delay(attempt, None, rng) for attempt in (1, 2, 3))
    assert first is not None
    assert 0.05 <= first <= 0.1
    assert second is not None
    assert 0.1 <= second <= 0.2
    assert third is not None
    assert 0.15 <= third <= 0.3
    assert policy.delay(4, None, rng) is None


def test_retry_after_sets_a_floor_up_to_the_cap_and_beyond_it_ends_the_retries():
    """RFC 9110 section 10.2.3: Retry-After is honoured, capped so a call never blocks for long."""
    policy = RetryPolicy(attempts=3, backoff_s=0.01, retry_after_cap_s=2)
    assert policy.delay(1, 2.0, random.Random(0)) == 2.0
    assert policy.delay(1, 3.0, random.Random(0)) is None
    assert (retry_after_seconds(" 7 "), retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT")) == (7.0, None)


@pytest.mark.parametrize("first", [reset, 500, 502, 503, 504])
async def test_a_read_is_retried_after_no_answer_or_a_5xx(first):
    """Platform choice (retry policy): reads are safe to repeat; the retry's answer is the outcome."""
    script, waits = Script(first, 200), Waits()
    helper = upstream(script, waits)
    outcome = await helper.fetch("GET", ROUTE, path=PATH)
    await helper.aclose()
    assert isinstance(outcome, UpstreamResponse)
    assert outcome.status == 200
    assert (len(script.requests), len(waits.seconds)) == (2, 1)


async def test_a_create_with_an_idempotency_key_is_retried_with_the_same_key():
    """IETF httpapi idempotency-key draft: a keyed create may be repeated; the key is the same each time."""
    script, waits = Script(reset, after("1"), 201), Waits()
    helper = upstream(script, waits)
    outcome = await helper.fetch(
        "POST", APPOINTMENTS, path=PATH, body={"a": 1}, headers={"Idempotency-Key": "osbp-key"}
    )
    await helper.aclose()
    assert isinstance(outcome, UpstreamResponse)
    assert outcome.status == 201
    assert [request.headers["idempotency-key"] for request in script.requests] == ["osbp-key"] * 3
    assert waits.seconds[1] >= 1.0  # the second wait honoured Retry-After


async def test_a_post_without_a_key_is_never_retried():
    """Platform choice (retry policy): a request that could act twice is sent once (verification send)."""
    script, waits = Script(reset), Waits()
    helper = upstream(script, waits)
    outcome = await helper.fetch("POST", ROUTE + "/verifications", path=PATH, body={})
    await helper.aclose()
    assert outcome == UpstreamUnavailable(
        "POST /api/organizations/carolyns_dental/verifications", "transport"
    )
    assert (len(script.requests), waits.seconds) == (1, [])


@pytest.mark.parametrize("answer", [429, 400, 404, 409, 428])
async def test_a_refusal_or_a_429_is_answered_at_once(answer):
    """OSBP spec, Problem codes: a 429 is the agent's rate_limited to back off on; refusals are final."""
    script, waits = Script(answer), Waits()
    helper = upstream(script, waits)
    outcome = await helper.fetch("GET", ROUTE, path=PATH)
    await helper.aclose()
    assert isinstance(outcome, UpstreamResponse)
    assert outcome.status == answer
    assert len(script.requests) == 1


async def test_each_retry_and_the_giving_up_are_logged_and_every_attempt_is_captured():
    """Platform choice (structured logs): the operator sees endpoint, attempt and reason per retry."""
    script, waits = Script(reset, 503, 503), Waits()
    helper = upstream(script, waits, retry_attempts=3)
    with capture_logs(logging.INFO) as records, capture_upstream() as capture:
        outcome = await helper.fetch("GET", ROUTE, path=PATH)
    await helper.aclose()
    assert isinstance(outcome, UpstreamResponse)
    assert outcome.status == 503
    retries = events(records, "upstream_retry")
    assert [(fields(r)["endpoint"], fields(r)["attempt"], fields(r)["reason"]) for r in retries] == [
        ("GET " + ROUTE, 1, "transport"),
        ("GET " + ROUTE, 2, "http_503"),
    ]
    [gave_up] = events(records, "upstream_gave_up")
    assert (fields(gave_up)["attempt"], fields(gave_up)["reason"], gave_up.levelno) == (
        3,
        "http_503",
        logging.WARNING,
    )
    assert [meta.status for meta in capture.calls if meta is not None] == [503, 503]


async def test_a_retry_after_beyond_the_cap_gives_up_without_waiting():
    """RFC 9110 section 10.2.3 (capped): the platform asked for longer than a call may block."""
    script, waits = Script(after("120")), Waits()
    helper = upstream(script, waits, retry_after_cap_s=5)
    with capture_logs(logging.INFO) as records:
        outcome = await helper.fetch("GET", ROUTE, path=PATH)
    await helper.aclose()
    assert isinstance(outcome, UpstreamResponse)
    assert (outcome.status, waits.seconds) == (503, [])
    [gave_up] = events(records, "upstream_gave_up")
    assert fields(gave_up)["retry_after"] == 120.0


async def test_one_attempt_means_no_retry():
    """Platform choice (retry policy): OSBP_RETRY_ATTEMPTS=1 turns retries off."""
    script, waits = Script(reset), Waits()
    helper = upstream(script, waits, retry_attempts=1)
    outcome = await helper.fetch("GET", ROUTE, path=PATH)
    await helper.aclose()
    assert isinstance(outcome, UpstreamUnavailable)
    assert len(script.requests) == 1
