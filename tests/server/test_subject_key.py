"""The audit's subject hash is keyed: with OSBP_AUDIT_KEY, else with the deployment's salt in the state.

The remote cases run the real `osbp mcp --transport streamable-http` subprocess against the real platform
with tokens of the development issuer, and read the subject of the audit record it wrote.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import sqlite3
import stat
from pathlib import Path

import pytest

from osbp.backend.serving import PlatformServer
from osbp.protocol.canonical import canonical_json, sha256_hex
from osbp.protocol.state import open_state_store
from osbp.protocol.timeutil import format_instant
from osbp.server.subject_key import deployment_salt
from tests.support.mcp import read_events
from tests.support.reference import CLEANING, NOW, ORG, create_input
from tests.support.remote import ISSUER, Issuer, RemoteServer, approved, envelope, remote_client

AUDIT_KEY = "audit-key-" + "0123456789abcdef" * 3
NEW_AUDIT_KEY = "audit-key-" + "fedcba9876543210" * 3
SUBJECT = "jane@example.com"  # a guessable subject: the hash must not let a guess be checked


def hmac_hex(key: bytes) -> str:
    """HMAC-SHA256 of the canonical issuer and subject under ``key``."""
    identity = canonical_json({"iss": ISSUER, "sub": SUBJECT})
    return hmac.new(key, identity, hashlib.sha256).hexdigest()


def test_the_deployment_salt_is_made_once_and_shared_by_every_store_on_the_state(state_location: str) -> None:
    """docs/server.md, Replicas: servers sharing one state (and a restarted one) key subjects alike."""
    first, second = open_state_store(state_location), open_state_store(state_location)
    try:
        salt = deployment_salt(first)
        assert len(salt) == 32
        assert deployment_salt(second) == salt == deployment_salt(first)
    finally:
        first.close()
        second.close()
    if not state_location.startswith("postgresql"):
        assert stat.S_IMODE(os.stat(state_location).st_mode) == 0o600  # private, like the rest of the state


def remote_env(base_url: str, workdir: Path, issuer: Issuer, **extra: str) -> dict[str, str]:
    """One authorized remote server for Carolyn's Dental."""
    return {
        "OSBP_PLATFORM_BASE_URL": base_url,
        "OSBP_ORGANIZATION_ID": ORG,
        "OSBP_STATE_PATH": str(workdir / "state" / "osbp.sqlite3"),
        "OSBP_AUDIT_LOG_PATH": str(workdir / "audit" / "events.jsonl"),
        "OSBP_NOW": format_instant(NOW),
        "OSBP_AUTH_ISSUER": ISSUER,
        "OSBP_AUTH_JWKS": str(issuer.jwks_path),
    } | extra


async def audited_subject(server: RemoteServer, issuer: Issuer, log: Path) -> str:
    """The ``subject`` of the audit record of one service.describe by SUBJECT."""
    async with remote_client(server.url, issuer.token(server.url, subject=SUBJECT)) as client:
        answer = envelope(await client.call_tool("osbp_service_describe", {"service_id": CLEANING}))
    [record] = [event for event in read_events(log) if event["id"] == answer["audit_event_id"]]
    subject: str = record["subject"]
    return subject


@pytest.mark.integration
@pytest.mark.anyio
async def test_with_an_audit_key_the_recorded_subject_is_its_hmac_not_a_plain_sha256(
    platform: PlatformServer, tmp_path: Path
) -> None:
    """OSBP spec, Security and Privacy: a subject in the audit log cannot be recovered by hashing guesses."""
    issuer = Issuer(tmp_path / "issuer")
    env = remote_env(platform.base_url, tmp_path, issuer, OSBP_AUDIT_KEY=AUDIT_KEY)
    with RemoteServer(env, tmp_path) as server:
        subject = await audited_subject(server, issuer, tmp_path / "audit" / "events.jsonl")
    assert subject == hmac_hex(AUDIT_KEY.encode())
    assert subject != sha256_hex({"iss": ISSUER, "sub": SUBJECT})
    assert subject != hashlib.sha256(SUBJECT.encode()).hexdigest()


@pytest.mark.integration
@pytest.mark.anyio
async def test_without_an_audit_key_the_subject_is_keyed_with_the_salt_kept_in_the_state(
    platform: PlatformServer, tmp_path: Path
) -> None:
    """OSBP spec, Security and Privacy; docs/server.md: the salt is the deployment's, so a restarted
    server hashes one subject alike (approvals and confirmation pages bound to it stay redeemable)."""
    issuer = Issuer(tmp_path / "issuer")
    log = tmp_path / "audit" / "events.jsonl"
    with RemoteServer(remote_env(platform.base_url, tmp_path, issuer), tmp_path) as server:
        first = await audited_subject(server, issuer, log)
    with RemoteServer(remote_env(platform.base_url, tmp_path, issuer), tmp_path) as server:
        again = await audited_subject(server, issuer, log)
    with sqlite3.connect(tmp_path / "state" / "osbp.sqlite3") as db:
        [(salt,)] = db.execute("SELECT value FROM deployment_secrets WHERE name = 'subject_salt'").fetchall()
    assert first == again == hmac_hex(bytes.fromhex(salt))
    assert first != sha256_hex({"iss": ISSUER, "sub": SUBJECT})


@pytest.mark.integration
@pytest.mark.anyio
async def test_an_approval_issued_before_the_audit_key_changed_still_books_the_one_appointment(
    platform: PlatformServer, tmp_path: Path
) -> None:
    """OSBP spec, booking.create (one logical attempt across retries); docs/server.md: the state keys a
    subject with the deployment's salt, so a restart with another OSBP_AUDIT_KEY keeps scopes and approvals,
    while each audit record's subject is keyed with the audit key of the server that wrote it."""
    issuer = Issuer(tmp_path / "issuer")
    log = tmp_path / "audit" / "events.jsonl"
    arguments = create_input(idempotency_key="idem-audit-key-change").to_wire()
    with RemoteServer(
        remote_env(platform.base_url, tmp_path, issuer, OSBP_AUDIT_KEY=AUDIT_KEY), tmp_path
    ) as server:
        async with remote_client(server.url, issuer.token(server.url, subject=SUBJECT)) as client:
            challenge = envelope(await client.call_tool("osbp_booking_create", arguments))
    env = remote_env(platform.base_url, tmp_path, issuer, OSBP_AUDIT_KEY=NEW_AUDIT_KEY)
    with RemoteServer(env, tmp_path) as server:
        async with remote_client(server.url, issuer.token(server.url, subject=SUBJECT)) as client:
            receipt = envelope(await client.call_tool("osbp_booking_create", approved(arguments, challenge)))
            replay = envelope(await client.call_tool("osbp_booking_create", arguments))
    assert receipt["ok"] is True, receipt
    assert replay["ok"] is True
    assert replay["value"] == receipt["value"]
    assert replay["osbp_runtime"]["idempotency"] == "local_cache_replay"
    subjects = {event["id"]: event["subject"] for event in read_events(log)}
    assert subjects[challenge["audit_event_id"]] == hmac_hex(AUDIT_KEY.encode())
    assert subjects[receipt["audit_event_id"]] == hmac_hex(NEW_AUDIT_KEY.encode())
