"""Two `osbp mcp --transport streamable-http` replicas on one shared state store behave as one server.

Each replica is a real subprocess with its own port and audit log; they share the state store (the
``shared_state`` fixture, once per engine: a SQLite file, whose claims serialise with ``BEGIN IMMEDIATE``,
and a PostgreSQL database, the store replicas on several machines share). Clients are the SDK's
Streamable HTTP client, except where a replica is killed mid-call and a plain HTTP client observes the
broken connection.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.types import CallToolResult, ElicitRequestURLParams, ElicitResult, InputRequiredResult

from osbp.backend.serving import PlatformServer
from osbp.protocol.timeutil import format_instant
from osbp.server.confirmation import CONFIRM_KEY
from tests.support.crash_adapter import CRASH_AT
from tests.support.reference import NOW, ORG, create_input
from tests.support.remote import HEADERS, ISSUER, Issuer, RemoteServer, approved, envelope, remote_client

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

CREATE = "osbp_booking_create"


@pytest.fixture
def shared_state(state_location: str) -> dict[str, str]:
    """Where every replica keeps the shared OSBP state (the settings that name it), on each engine."""
    return {"OSBP_STATE_PATH": state_location}


@pytest.fixture
def issuer(tmp_path: Path) -> Issuer:
    """The development issuer; both replicas accept its tokens."""
    return Issuer(tmp_path / "issuer")


def replica_env(
    base_url: str, tmp_path: Path, issuer: Issuer, shared_state: dict[str, str]
) -> dict[str, str]:
    """The replicas' configuration: the shared state, the same issuer (audit logs: :func:`own_audit`)."""
    return {
        "OSBP_PLATFORM_BASE_URL": base_url,
        "OSBP_ORGANIZATION_ID": ORG,
        "OSBP_NOW": format_instant(NOW),
        "OSBP_AUTH_ISSUER": ISSUER,
        "OSBP_AUTH_JWKS": str(issuer.jwks_path),
        # Both replicas are one resource: tokens name the load balancer's URL, not a replica's port.
        "OSBP_AUTH_RESOURCE_URL": "http://127.0.0.1:8500/mcp",
        # One key seals the host confirmation's request state on both, as the balancer's replicas need.
        "OSBP_REQUEST_STATE_KEY": "replicas-share-this-request-state-key",
        "OSBP_LOG_LEVEL": "INFO",
    } | shared_state


@pytest.fixture
def replicas(
    platform: PlatformServer, tmp_path: Path, issuer: Issuer, shared_state: dict[str, str]
) -> Iterator[tuple[RemoteServer, RemoteServer]]:
    """Replicas A and B."""
    env = replica_env(platform.base_url, tmp_path, issuer, shared_state)
    with (
        RemoteServer(own_audit(env, tmp_path, "a"), tmp_path, name="a") as a,
        RemoteServer(own_audit(env, tmp_path, "b"), tmp_path, name="b") as b,
    ):
        yield a, b


def own_audit(env: dict[str, str], tmp_path: Path, name: str) -> dict[str, str]:
    """A replica's configuration with its own audit log (each replica keeps its own chain)."""
    return env | {"OSBP_AUDIT_LOG_PATH": str(tmp_path / "audit" / f"{name}.jsonl")}


def stats(testing: httpx2.Client) -> dict[str, Any]:
    """The platform's counters for the organization."""
    body: dict[str, Any] = testing.get("/_testing/stats", params={"organization_id": ORG}).json()
    return body


async def call(url: str, token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One tool call over the SDK's Streamable HTTP client; the envelope."""
    async with remote_client(url, token) as client:
        return envelope(await client.call_tool(tool, arguments))


def raw_call(url: str, token: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """One stateless tools/call over plain HTTP; ``None`` when the connection broke (the replica died)."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": tool, "arguments": arguments},
    }
    headers = HEADERS | {"Authorization": f"Bearer {token}"}
    try:
        answer = httpx2.post(url, content=json.dumps(body), headers=headers, trust_env=False, timeout=60)
    except httpx2.TransportError:
        return None
    structured: dict[str, Any] = answer.json()["result"]["structuredContent"]
    return structured


async def test_an_approval_challenged_on_one_replica_is_redeemed_on_another(
    replicas: tuple[RemoteServer, RemoteServer], issuer: Issuer, testing: httpx2.Client
) -> None:
    """OSBP spec, Final Confirmation, over replicas: the approval lives in the shared state, not a process."""
    a, b = replicas
    token = issuer.token("http://127.0.0.1:8500/mcp")
    arguments = create_input(idempotency_key="idem-replica-redeem").to_wire()
    challenge = await call(a.url, token, CREATE, arguments)
    receipt = await call(b.url, token, CREATE, approved(arguments, challenge))
    assert receipt["ok"] is True, receipt
    assert stats(testing)["active_appointments"] == 1
    replay = await call(a.url, token, CREATE, approved(arguments, challenge))
    assert replay["value"] == receipt["value"]
    assert replay["osbp_runtime"]["idempotency"] == "local_cache_replay"


async def test_the_same_approved_create_sent_to_both_replicas_at_once_books_once(
    replicas: tuple[RemoteServer, RemoteServer], issuer: Issuer, testing: httpx2.Client
) -> None:
    """OSBP spec, booking.create idempotency, over replicas: one appointment, every answer about it."""
    a, b = replicas
    token = issuer.token("http://127.0.0.1:8500/mcp")
    arguments = create_input(idempotency_key="idem-replica-race").to_wire()
    ready = approved(arguments, await call(a.url, token, CREATE, arguments))
    answers: list[dict[str, Any]] = []

    async def send(url: str) -> None:
        answers.append(await call(url, token, CREATE, ready))

    async with anyio.create_task_group() as group:
        for url in (a.url, b.url, a.url, b.url):
            group.start_soon(send, url)
    booked = [answer for answer in answers if answer["ok"]]
    assert booked, answers
    assert {answer["value"]["booking_id"] for answer in booked} == {booked[0]["value"]["booking_id"]}
    others = [answer["problem"]["code"] for answer in answers if not answer["ok"]]
    assert set(others) <= {"idempotency_in_progress"}, answers
    counters = stats(testing)
    assert counters["appointments"] == 1, counters
    assert counters["active_appointments"] == 1, counters


async def test_a_booking_asked_on_one_replica_is_confirmed_on_the_others_page_and_booked_there_once(
    replicas: tuple[RemoteServer, RemoteServer], issuer: Issuer, testing: httpx2.Client
) -> None:
    """Platform choice (URL-mode confirmation over replicas): the page and the sealed state are shared."""
    a, b = replicas
    token = issuer.token("http://127.0.0.1:8500/mcp")
    arguments = create_input(idempotency_key="idem-replica-page").to_wire()
    async with (
        remote_client(a.url, token, elicitation=unanswered) as on_a,
        remote_client(b.url, token, elicitation=unanswered) as on_b,
    ):
        first = await on_a.session.call_tool(CREATE, arguments, allow_input_required=True)
        assert isinstance(first, InputRequiredResult), first
        assert first.input_requests is not None
        ask = first.input_requests[CONFIRM_KEY].params
        assert isinstance(ask, ElicitRequestURLParams)
        # The page's URL names the balancer; this test is the balancer, sending the browser to B.
        page = ask.url.replace("http://127.0.0.1:8500", b.url.removesuffix("/mcp"))
        async with httpx2.AsyncClient(trust_env=False) as browser:
            shown = await browser.get(page)
            assert shown.status_code == 200, shown.text
            summary_hash = shown.text.split('name=summary_hash value="')[1].split('"')[0]
            origin = b.url.removesuffix("/mcp")
            form = {"decision": "confirm", "summary_hash": summary_hash}
            assert (await browser.post(page, data=form, headers={"Origin": origin})).status_code == 200
        booked = await on_b.session.call_tool(
            CREATE,
            arguments,
            input_responses={CONFIRM_KEY: ElicitResult(action="accept")},
            request_state=first.request_state,
            allow_input_required=True,
        )
    assert isinstance(booked, CallToolResult)
    assert envelope(booked)["ok"] is True, booked
    counters = stats(testing)
    assert counters["appointments"] == 1, counters


async def unanswered(context: Any, params: Any) -> ElicitResult:
    """The host callback of a client whose rounds the test answers itself: never called."""
    raise AssertionError("the test answers the rounds itself")


@pytest.mark.parametrize("moment", ["before_post", "before_answer"])
async def test_a_replica_killed_mid_create_leaves_nothing_the_other_cannot_finish(
    platform: PlatformServer,
    tmp_path: Path,
    issuer: Issuer,
    shared_state: dict[str, str],
    testing: httpx2.Client,
    moment: str,
) -> None:
    """OSBP spec, booking.create idempotency: a retry on another replica settles the one appointment."""
    env = own_audit(replica_env(platform.base_url, tmp_path, issuer, shared_state), tmp_path, "b")
    crashing = {"OSBP_ADAPTER_FACTORY": "tests.support.crash_adapter:build", CRASH_AT: moment}
    doomed_env = own_audit(env, tmp_path, "doomed") | crashing
    token = issuer.token("http://127.0.0.1:8500/mcp")
    arguments = create_input(idempotency_key=f"idem-replica-kill-{moment}").to_wire()
    with (
        RemoteServer(doomed_env, tmp_path, name="doomed") as doomed,
        RemoteServer(env, tmp_path, name="b") as b,
    ):
        ready = approved(arguments, await call(doomed.url, token, CREATE, arguments))
        assert raw_call(doomed.url, token, CREATE, ready) is None
        assert doomed.process is not None
        assert doomed.process.wait(10) == -9  # SIGKILL: no clean-up ran
        receipt = await call(b.url, token, CREATE, ready)
        assert receipt["ok"] is True, receipt
        assert receipt["value"]["id"] == "receipt_idem-replica-kill-" + moment
        again = await call(b.url, token, CREATE, ready)
        assert again["value"] == receipt["value"]
    counters = stats(testing)
    assert counters["appointments"] == 1, counters
