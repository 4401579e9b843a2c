"""Idempotency keys belong to their caller, over the real Streamable HTTP server with JWT subjects.

One authorized `osbp mcp --transport streamable-http` subprocess serves every organization on the platform
(on loopback, frozen at the reference instant). The records a booking.create leaves (its receipt, its
placed attempt, its key's payload) are the caller's: the organization's and the token subject's. Another
subject repeating the same payload and key meets the approval gate afresh and gets its own booking, never
the first subject's receipt; another organization can use the same key.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from osbp.backend.serving import PlatformServer
from osbp.protocol.timeutil import format_instant
from tests.support.reference import DAY, NOW, create_input
from tests.support.remote import ISSUER, Issuer, RemoteServer, approved, envelope, remote_client

pytestmark = [pytest.mark.integration, pytest.mark.anyio]

CREATE = "osbp_booking_create"
#: The conformance fixture organization books one slot any number of times (a flagged test affordance),
#: so a second subject's own booking of the same slot is not refused as taken.
CONFORMANCE = "conformance_co"


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The server's working directory (state, audit, issuer key)."""
    return tmp_path_factory.mktemp("scopes")


@pytest.fixture(scope="module")
def issuer(workdir: Path) -> Issuer:
    """The development issuer, its JWKS in a file the server reads."""
    return Issuer(workdir / "issuer")


@pytest.fixture(scope="module")
def server(platform: PlatformServer, workdir: Path, issuer: Issuer) -> Iterator[RemoteServer]:
    """One authorized Streamable HTTP server for every organization on the platform."""
    env = {
        "OSBP_PLATFORM_BASE_URL": platform.base_url,
        "OSBP_ORGANIZATION_ID": "*",
        "OSBP_STATE_PATH": str(workdir / "state" / "osbp.sqlite3"),
        "OSBP_AUDIT_LOG_PATH": str(workdir / "audit" / "events.jsonl"),
        "OSBP_NOW": format_instant(NOW),
        "OSBP_AUTH_ISSUER": ISSUER,
        "OSBP_AUTH_JWKS": str(issuer.jwks_path),
    }
    with RemoteServer(env, workdir) as running:
        yield running


def conformance_args(key: str) -> dict[str, Any]:
    """booking.create arguments for the conformance fixture's slot on the reference day under ``key``."""
    inp = create_input(
        idempotency_key=key,
        service_id="conformance_fixed_usd",
        schedule_id="conformance_main",
        provider_id="conformance_provider_ada",
        time="10:30",
    )
    mandate = inp.mandate.model_copy(update={"organization_id": CONFORMANCE, "latest_end": f"{DAY}T23:00:00"})
    return inp.model_copy(update={"mandate": mandate}).to_wire()


def appointments(testing: httpx2.Client, organization_id: str) -> int:
    """The platform's active appointments of one organization."""
    body: dict[str, Any] = testing.get("/_testing/stats", params={"organization_id": organization_id}).json()
    return int(body["active_appointments"])


async def call(server: RemoteServer, token: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """One booking.create over the SDK's Streamable HTTP client; the envelope."""
    async with remote_client(server.url, token) as client:
        return envelope(await client.call_tool(CREATE, arguments))


async def book(server: RemoteServer, token: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Preflight, approve and create; the receipt envelope."""
    challenge = await call(server, token, arguments)
    receipt = await call(server, token, approved(arguments, challenge))
    assert receipt["ok"] is True, receipt
    return receipt


async def test_another_subject_repeating_a_payload_and_key_meets_the_gate_and_never_gets_the_receipt(
    server: RemoteServer, issuer: Issuer, testing: httpx2.Client
) -> None:
    """OSBP spec, Final Confirmation and booking.create idempotency (a replay returns the caller's own
    earlier result): a receipt is only ever replayed to the subject that approved it."""
    alice = issuer.token(server.url, subject="alice")
    mallory = issuer.token(server.url, subject="mallory")
    arguments = conformance_args("idem-scope-subjects")
    before = appointments(testing, CONFORMANCE)
    alice_challenge = await call(server, alice, arguments)
    receipt = await call(server, alice, approved(arguments, alice_challenge))
    assert receipt["ok"] is True, receipt

    repeated = await call(server, mallory, arguments)
    assert repeated["ok"] is False, repeated
    assert repeated["problem"]["code"] == "requires_user_confirmation"
    stolen = await call(server, mallory, approved(arguments, alice_challenge))
    assert stolen["ok"] is False, stolen
    assert stolen["problem"]["code"] == "requires_user_confirmation"
    assert "not valid for this booking" in stolen["problem"]["message"]
    assert appointments(testing, CONFORMANCE) == before + 1

    # Mallory's own approval books her own appointment: a fresh logical create, not Alice's replayed.
    own = await call(server, mallory, approved(arguments, repeated))
    assert own["ok"] is True, own
    assert own["value"]["booking_id"] != receipt["value"]["booking_id"]
    assert appointments(testing, CONFORMANCE) == before + 2
    replay = await call(server, alice, approved(arguments, alice_challenge))
    assert replay["value"] == receipt["value"]
    assert replay["osbp_runtime"]["idempotency"] == "local_cache_replay"


async def test_two_organizations_served_by_one_server_can_each_use_the_same_key(
    server: RemoteServer, issuer: Issuer, testing: httpx2.Client
) -> None:
    """OSBP spec, booking.create idempotency (a key is the caller's, for one logical booking): the same
    key used for one merchant is no conflict for a booking with another."""
    token = issuer.token(server.url, subject="alice")
    key = "idem-scope-shared-across-organizations"
    dental = await book(server, token, create_input(idempotency_key=key).to_wire())
    async with remote_client(server.url, token) as client:
        first = envelope(await client.call_tool(CREATE, conformance_args(key)))
    assert first["ok"] is False, first
    assert first["problem"]["code"] == "requires_user_confirmation", first
    fixture = await call(server, token, approved(conformance_args(key), first))
    assert fixture["ok"] is True, fixture
    assert fixture["value"]["booking_id"] != dental["value"]["booking_id"]
    assert (appointments(testing, "carolyns_dental"), appointments(testing, CONFORMANCE)) == (1, 1)
