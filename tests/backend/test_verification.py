"""Verification: a code sent through the outbox, required, checked and consumed by the create."""

from __future__ import annotations

import logging

import pytest
from sqlmodel import func, select

from osbp.backend.models import Customer, IdempotencyRecord, VerificationChallenge
from tests.support.bookwell import booking, create

# The platform's rules hold on both engines (SQLite, PostgreSQL).
pytestmark = pytest.mark.both_engines

PHONE = "+12125550142"
GUS = "/api/organizations/gus_notary"


def _signing(code: str | None = None, time: str = "10:00") -> dict[str, object]:
    extra = {} if code is None else {"verification_code": code}
    return booking(
        service_id="gus_notary_remote_signing",
        location_id="gus_notary_online",
        provider_id="gus_notary_gus",
        time=time,
        customer={"display_name": "Sam Signer", "phone": PHONE},
        **extra,
    )


def _send(client, organization="gus_notary", phone=PHONE, **extra):
    body = {"purpose": f"booking:{organization}", "phone": phone, **extra}
    return client.post(f"/api/organizations/{organization}/verifications", json=body)


def _last_code(client, organization="gus_notary") -> str:
    messages = client.get("/_testing/outbox", params={"organization_id": organization}).json()["messages"]
    return str(messages[-1]["code"])


def test_create_without_a_code_is_428_requires_verification(client):
    """Platform choice (verification): policy sms and no verified code → 428 with a requires-verification
    code."""
    response = create(client, "gus_notary", _signing())
    assert response.status_code == 428
    assert response.json()["code"] == "requires_verification"
    assert response.json()["channel"] == "sms"


def test_send_then_create_with_the_outbox_code_books_and_consumes_it(client):
    """Platform choice (verification): send → outbox → create with the code → 201; the code is consumed."""
    sent = _send(client)
    assert sent.status_code == 202
    assert sent.json()["channel"] == "sms"
    assert sent.json()["expires_in_seconds"] == 600
    assert sent.json()["destination"].endswith("0142")
    code = _last_code(client)
    message = client.get("/_testing/outbox").json()["messages"][-1]
    assert (message["to"], message["channel"], message["purpose"]) == (PHONE, "sms", "booking:gus_notary")
    assert code in message["body"]
    booked = create(client, "gus_notary", _signing(code), key="first")
    assert booked.status_code == 201
    assert booked.json()["verified_by"] == "sms"
    reused = create(client, "gus_notary", _signing(code, time="11:00"), key="second")
    assert (reused.status_code, reused.json()["code"], reused.json()["reason"]) == (
        400,
        "verification_failed",
        "no_challenge",
    )


def test_code_is_six_digits_and_stored_only_as_a_hash(client, runtime):
    """Platform choice (verification): random 6-digit code; only its hash is stored."""
    _send(client)
    code = _last_code(client)
    assert len(code) == 6
    assert code.isdigit()
    with runtime.db.read() as session:
        challenge = session.exec(select(VerificationChallenge)).one()
    assert code not in challenge.code_hash
    assert len(challenge.code_hash) == 64


def test_wrong_code_is_400_verification_failed_distinct_from_428(client):
    """Platform choice (verification): a wrong code → 400 with a verification-failed code."""
    _send(client)
    wrong = "000000" if _last_code(client) != "000000" else "111111"
    response = create(client, "gus_notary", _signing(wrong))
    assert (response.status_code, response.json()["code"], response.json()["reason"]) == (
        400,
        "verification_failed",
        "mismatch",
    )


def test_five_wrong_attempts_lock_the_challenge(client):
    """Platform choice (verification): 5 wrong attempts, then locked (even the right code fails)."""
    _send(client)
    code = _last_code(client)
    wrong = "000000" if code != "000000" else "111111"
    reasons = [create(client, "gus_notary", _signing(wrong), key=f"k{i}").json()["reason"] for i in range(5)]
    assert reasons == ["mismatch"] * 5
    locked = create(client, "gus_notary", _signing(code), key="right")
    assert (locked.status_code, locked.json()["reason"]) == (400, "locked")
    _send(client)
    fresh = create(client, "gus_notary", _signing(_last_code(client)), key="fresh")
    assert fresh.status_code == 201


def test_code_expires_after_ten_minutes(client):
    """Platform choice (verification): expires after 10 minutes (platform clock)."""
    _send(client)
    code = _last_code(client)
    client.post("/_testing/clock", json={"advance_seconds": 600})
    expired = create(client, "gus_notary", _signing(code))
    assert (expired.status_code, expired.json()["reason"]) == (400, "expired")


def test_code_still_valid_just_before_expiry(client):
    """Platform choice (verification): the TTL is 10 minutes, not less."""
    _send(client)
    code = _last_code(client)
    client.post("/_testing/clock", json={"advance_seconds": 599})
    assert create(client, "gus_notary", _signing(code)).status_code == 201


def test_a_new_send_replaces_the_open_challenge(client):
    """Platform choice: only the latest code for (organization, purpose, contact) is valid."""
    _send(client)
    first = _last_code(client)
    _send(client)
    second = _last_code(client)
    if first != second:
        assert create(client, "gus_notary", _signing(first), key="old").json()["reason"] == "mismatch"
    assert create(client, "gus_notary", _signing(second), key="new").status_code == 201


def test_slot_refusal_does_not_consume_the_code(client):
    """Platform choice: a create refused for its slot leaves the code usable for another time."""
    _send(client)
    code = _last_code(client)
    refused = create(client, "gus_notary", _signing(code, time="10:05"), key="a")
    assert refused.json()["code"] == "slot_unavailable"
    assert create(client, "gus_notary", _signing(code), key="a").status_code == 201


def test_sends_are_rate_limited_per_contact(client):
    """Platform choice (verification): sends are rate-limited (5 per 10 minutes per contact)."""
    statuses = [_send(client).status_code for _ in range(5)]
    assert statuses == [202] * 5
    limited = _send(client)
    assert (limited.status_code, limited.json()["code"]) == (429, "verification_send_limited")
    assert limited.headers["retry-after"] == "600"
    assert _send(client, phone="+12125550143").status_code == 202


def test_sandbox_organization_always_issues_123456(client):
    """Platform choice (seed data): conformance_co runs a documented sandbox whose code is always 123456."""
    for _ in range(7):  # and the sandbox is exempt from the send limit
        assert _send(client, organization="conformance_co").status_code == 202
    assert _last_code(client, "conformance_co") == "123456"
    body = booking(
        service_id="conformance_verification",
        location_id="conformance_main",
        provider_id="conformance_provider_ada",
        date="2030-05-02",
        time="10:30",
        customer={"display_name": "Fixture", "phone": PHONE},
        verification_code="123456",
    )
    assert create(client, "conformance_co", body).status_code == 201


def test_other_organizations_use_random_codes(client):
    """Platform choice (verification): every organization but the fixture gets real random codes."""
    codes = set()
    for index in range(5):
        _send(client, phone=f"+1212555015{index}")
        codes.add(_last_code(client))
    assert len(codes) > 1


def test_send_refuses_a_foreign_purpose_and_bad_contacts(client):
    """OSBP verification.send: purpose is booking:<organization_id>; contacts are validated."""
    wrong = client.post(f"{GUS}/verifications", json={"purpose": "booking:andys_auto", "phone": PHONE})
    assert (wrong.status_code, wrong.json()["code"]) == (400, "invalid_purpose")
    bad = _send(client, phone="555-0142")
    assert (bad.status_code, bad.json()["code"], bad.json()["field"]) == (400, "invalid_contact", "phone")
    missing = client.post(f"{GUS}/verifications", json={"purpose": "booking:gus_notary", "channel": "email"})
    assert (missing.json()["code"], missing.json()["field"]) == ("invalid_contact", "email")


def test_codes_never_appear_in_logs_or_api_responses(client, caplog):
    """Platform choice (verification): codes never appear in logs or API responses."""
    caplog.set_level(logging.DEBUG)
    sent = _send(client)
    code = _last_code(client)
    booked = create(client, "gus_notary", _signing(code))
    assert code not in sent.text
    assert code not in booked.text
    assert code not in client.get(booked.headers["location"]).text
    assert code not in caplog.text


def test_a_wrong_code_commits_its_attempt_and_nothing_else(client, runtime):
    """Platform choice: the refused create keeps the attempt count, writes no customer, frees its key."""
    _send(client)
    wrong = "000000" if _last_code(client) != "000000" else "111111"
    refused = create(client, "gus_notary", _signing(wrong), key="same")
    assert refused.json()["reason"] == "mismatch"
    with runtime.db.read() as session:
        challenge = session.exec(select(VerificationChallenge)).one()
        assert (challenge.attempts, challenge.state) == (1, "open")
        assert session.exec(select(func.count()).select_from(Customer)).one() == 0
        assert session.exec(select(func.count()).select_from(IdempotencyRecord)).one() == 0
    assert create(client, "gus_notary", _signing(_last_code(client)), key="same").status_code == 201


def test_the_fifth_wrong_code_commits_the_lock(client, runtime):
    """Platform choice: the lock is written by the refused create that caused it, not lost with it."""
    _send(client)
    wrong = "000000" if _last_code(client) != "000000" else "111111"
    for index in range(5):
        create(client, "gus_notary", _signing(wrong), key=f"k{index}")
    with runtime.db.read() as session:
        challenge = session.exec(select(VerificationChallenge)).one()
        assert (challenge.attempts, challenge.state) == (5, "locked")
