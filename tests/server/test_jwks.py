"""The issuer's JWKS under attack and failure: a real server, a real loopback JWKS URL made slow or failing.

Tokens with invented ``kid`` values come from unauthenticated callers; each could make a naive resource
server fetch the issuer's keys. Here the JWKS endpoint counts what it is asked, and the server must keep
to one fetch per ``OSBP_AUTH_JWKS_REFRESH_S`` and let a token whose key it has cached through meanwhile.
The key set's ageing (refreshed after half an hour, unused after an hour without a good fetch) is tested
on :class:`~osbp.server.auth.KeySet` itself with a clock the test moves, against the same endpoint.
"""

from __future__ import annotations

import itertools
import json
import secrets
import time
from collections.abc import Iterator
from pathlib import Path

import anyio
import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec

from osbp.server.auth import KeySet
from tests.support.remote import HEADERS, INITIALIZE, ISSUER, Issuer, JwksEndpoint, RemoteServer

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

#: Short enough for a test, long against the flood: one fetch per REFRESH_S, none longer than TIMEOUT_S.
REFRESH_S = 3.0
TIMEOUT_S = 1.0
#: Requests with invented kids in one flood (the attack test used 45 and 30).
FLOOD = 45
#: Generous bounds: the endpoint holds a slow answer 30 s, so anything held by it would take longer.
ANSWER_WITHIN_S = 10.0
_FORGER = ec.generate_private_key(ec.SECP256R1())


def invented_kid_token(audience: str) -> str:
    """What an unauthenticated caller can send: a well-formed ES256 JWT naming a random kid."""
    claims = {"iss": ISSUER, "sub": "mallory", "aud": audience, "exp": int(time.time()) + 600}
    return jwt.encode(claims, _FORGER, algorithm="ES256", headers={"kid": secrets.token_hex(8)})


@pytest.fixture
def issuer(tmp_path: Path) -> Issuer:
    """The development issuer whose keys the endpoint serves."""
    return Issuer(tmp_path / "issuer")


@pytest.fixture
def endpoint(issuer: Issuer) -> Iterator[JwksEndpoint]:
    """The issuer's JWKS on a loopback URL, healthy until a test breaks it."""
    with JwksEndpoint(issuer.dev.jwks()) as running:
        yield running


@pytest.fixture
def server(endpoint: JwksEndpoint, tmp_path: Path) -> Iterator[RemoteServer]:
    """An authorized Streamable HTTP server reading its keys from the endpoint."""
    env = {
        "OSBP_PLATFORM_BASE_URL": "http://127.0.0.1:9",  # initialize never reaches the platform
        "OSBP_ORGANIZATION_ID": "*",
        "OSBP_STATE_PATH": str(tmp_path / "state" / "osbp.sqlite3"),
        "OSBP_AUDIT_LOG_PATH": str(tmp_path / "audit" / "events.jsonl"),
        "OSBP_AUTH_ISSUER": ISSUER,
        "OSBP_AUTH_JWKS": endpoint.url,
        "OSBP_AUTH_JWKS_REFRESH_S": str(REFRESH_S),
        "OSBP_AUTH_JWKS_TIMEOUT_S": str(TIMEOUT_S),
    }
    with RemoteServer(env, tmp_path) as running:
        yield running


async def initialize(client: httpx2.AsyncClient, url: str, token: str) -> tuple[int, float]:
    """One ``initialize`` with ``token``: its status and how long it took."""
    started = time.monotonic()
    answer = await client.post(
        url, content=json.dumps(INITIALIZE), headers=HEADERS | {"Authorization": f"Bearer {token}"}
    )
    return answer.status_code, time.monotonic() - started


def at_most_one_fetch_per_interval(fetches: list[float]) -> bool:
    """No two fetches began within REFRESH_S of each other (a little slack for loopback latency)."""
    return all(later - earlier >= REFRESH_S - 0.5 for earlier, later in itertools.pairwise(fetches))


@pytest.mark.parametrize("fault", ["slow", "failing"])
async def test_invented_kids_cost_one_jwks_fetch_per_interval_and_a_known_kid_is_not_held_by_it(
    server: RemoteServer, issuer: Issuer, endpoint: JwksEndpoint, fault: str
) -> None:
    """Platform choice (a kid is attacker input): one fetch per interval, a cached key never waits on it."""
    timeout = httpx2.Timeout(ANSWER_WITHIN_S)
    async with httpx2.AsyncClient(timeout=timeout, trust_env=False) as client:
        assert (await initialize(client, server.url, issuer.token(server.url)))[0] == 200
        assert endpoint.count() == 1  # the first token fetched the keys
        endpoint.fault = fault  # type: ignore[assignment]
        # Until REFRESH_S has passed no invented kid may reach the issuer; then one does, and the
        # endpoint sees it (probing one at a time, each answered 401).
        with anyio.fail_after(REFRESH_S + 30):
            while not endpoint.first_fault_fetch.is_set():
                assert (await initialize(client, server.url, invented_kid_token(server.url)))[0] == 401
        # A flood of invented kids while that fetch is held or has failed, and a valid token among them.
        results: list[tuple[int, float]] = []
        valid: list[tuple[int, float]] = []

        async def attack() -> None:
            results.append(await initialize(client, server.url, invented_kid_token(server.url)))

        async def use() -> None:
            valid.append(await initialize(client, server.url, issuer.token(server.url)))

        async with anyio.create_task_group() as group:
            for _ in range(FLOOD):
                group.start_soon(attack)
            group.start_soon(use)
    assert [status for status, _ in valid] == [200]
    assert [status for status, _ in results] == [401] * FLOOD
    assert max(took for _, took in results + valid) < ANSWER_WITHIN_S
    assert at_most_one_fetch_per_interval(endpoint.fetches), endpoint.fetches
    assert endpoint.count() <= 3, endpoint.fetches  # warm-up, the probe's, at most one more


async def test_with_the_issuer_failing_from_the_start_a_flood_of_invented_kids_costs_one_fetch(
    server: RemoteServer, issuer: Issuer, endpoint: JwksEndpoint
) -> None:
    """Platform choice (fail closed without amplification): every token refused, the issuer asked once."""
    endpoint.fault = "failing"
    async with httpx2.AsyncClient(timeout=httpx2.Timeout(ANSWER_WITHIN_S), trust_env=False) as client:
        statuses: list[int] = []

        async def attack() -> None:
            statuses.append((await initialize(client, server.url, invented_kid_token(server.url)))[0])

        async with anyio.create_task_group() as group:
            for _ in range(30):
                group.start_soon(attack)
        # The keys are not there: a valid token is refused too (fail closed), and costs no fetch either.
        assert (await initialize(client, server.url, issuer.token(server.url)))[0] == 401
    assert statuses == [401] * 30
    assert at_most_one_fetch_per_interval(endpoint.fetches), endpoint.fetches


class Clock:
    """A monotonic clock the test moves."""

    def __init__(self) -> None:
        self.now = 1_000.0

    def __call__(self) -> float:
        return self.now


async def test_a_key_set_refreshed_after_half_an_hour_drops_a_key_the_issuer_withdrew(
    issuer: Issuer, endpoint: JwksEndpoint, tmp_path: Path
) -> None:
    """Platform choice (key rotation, as PyJWT's one-hour cache): a withdrawn key stops verifying."""
    clock = Clock()
    keys = KeySet(endpoint.url, refresh_s=REFRESH_S, timeout_s=TIMEOUT_S, clock=clock)
    token = issuer.token("http://127.0.0.1:1/mcp")
    assert (await keys.key_for(token)).key_id == issuer.dev.kid
    assert (await keys.key_for(token)).key_id == issuer.dev.kid  # cached: no second fetch
    assert endpoint.count() == 1
    rotated = Issuer(tmp_path / "rotated")
    endpoint.serve(rotated.dev.jwks())
    clock.now += 1_800
    with pytest.raises(jwt.PyJWKError):
        await keys.key_for(token)  # the refresh it was due for no longer has the old key
    assert (await keys.key_for(rotated.token("http://127.0.0.1:1/mcp"))).key_id == rotated.dev.kid
    assert endpoint.count() == 2


async def test_a_key_set_without_a_good_fetch_for_an_hour_is_no_longer_used(
    issuer: Issuer, endpoint: JwksEndpoint
) -> None:
    """Platform choice (fail closed): a failed refresh keeps the set, but not beyond an hour."""
    clock = Clock()
    keys = KeySet(endpoint.url, refresh_s=REFRESH_S, timeout_s=TIMEOUT_S, clock=clock)
    token = issuer.token("http://127.0.0.1:1/mcp")
    assert (await keys.key_for(token)).key_id == issuer.dev.kid
    endpoint.fault = "failing"
    clock.now += 1_800
    assert (await keys.key_for(token)).key_id == issuer.dev.kid  # refresh failed: the set is kept
    assert endpoint.count() == 2
    clock.now += 1_800
    with pytest.raises(jwt.PyJWKError):
        await keys.key_for(token)
    assert endpoint.count() == 3
    with pytest.raises(jwt.PyJWKError):
        await keys.key_for(token)  # and the next try waits for the interval: no fetch
    assert endpoint.count() == 3


async def test_a_rotated_jwks_file_is_read_again_at_most_once_per_interval(
    issuer: Issuer, tmp_path: Path
) -> None:
    """Platform choice (--auth-jwks FILE): a new kid is picked up after the interval, not on every miss."""
    clock = Clock()
    keys = KeySet(str(issuer.jwks_path), refresh_s=REFRESH_S, timeout_s=TIMEOUT_S, clock=clock)
    assert (await keys.key_for(issuer.token("http://127.0.0.1:1/mcp"))).key_id == issuer.dev.kid
    rotated = Issuer(tmp_path / "rotated")
    issuer.jwks_path.write_text(json.dumps(rotated.dev.jwks()), encoding="utf-8")
    token = rotated.token("http://127.0.0.1:1/mcp")
    with pytest.raises(jwt.PyJWKError):
        await keys.key_for(token)
    assert keys.fetches == 1
    clock.now += REFRESH_S
    assert (await keys.key_for(token)).key_id == rotated.dev.kid
    assert keys.fetches == 2
