"""Mandates and create payloads the battery sends."""

from __future__ import annotations

import datetime as dt
from typing import cast

from osbp.conformance.grading import Grader
from osbp.conformance.mandate_checks import at_offset, mandate_cases
from osbp.conformance.payloads import Payloads, approval_token, approved
from osbp.conformance.probe import Probe
from osbp.conformance.wire import Wire

NOW = dt.datetime(2030, 4, 1, 12, tzinfo=dt.UTC)


def test_the_token_is_read_only_from_the_exact_retry_instruction():
    """OSBP spec, Canonical Flow: the token is embedded exactly as approval.token="<token>"."""
    message = 'Book Haircut at 13:00 for $95.00. Retry with approval.token="tok_ABC-123_x".'
    assert approval_token(message) == "tok_ABC-123_x"
    assert approval_token("approval token: tok_ABC") is None
    assert approval_token("approval.token=tok_ABC") is None


def test_the_approved_retry_is_the_same_payload_plus_approval(fixtures):
    """OSBP spec, booking.create: retry with the same payload, same key, and approval {confirmed, token}."""
    payload = Payloads(fixtures, now=NOW, nonce="n1").create("conformance_fixed_usd")
    retry = approved(payload, "tok", verification_code="123456")
    assert retry == payload | {"approval": {"confirmed": True, "token": "tok"}, "verification_code": "123456"}


def test_keys_and_mandate_ids_are_fresh_and_carry_the_run_nonce(fixtures):
    """OSBP spec, booking.create: a fresh idempotency_key per logical attempt, never shared across runs."""
    build = Payloads(fixtures, now=NOW, nonce="cafe01")
    first, second = build.create("conformance_fixed_usd"), build.create("conformance_fixed_usd")
    assert first["idempotency_key"] != second["idempotency_key"]
    assert first["mandate"]["id"] != second["mandate"]["id"]
    assert "cafe01" in first["idempotency_key"]
    assert "cafe01" in first["mandate"]["id"]


def test_the_default_mandate_is_valid_for_the_fixture_slot(fixtures):
    """OSBP spec, BookingMandate: offset instant, naked wall-clock window, scoped ids, same-currency caps."""
    mandate = Payloads(fixtures, now=NOW, nonce="n").mandate("conformance_fixed_usd")
    assert mandate["expires_at"] == "2030-04-02T12:00:00Z"
    assert (mandate["earliest_start"], mandate["latest_end"]) == (
        "2030-05-02T00:00:00",
        "2030-05-03T00:00:00",
    )
    assert mandate["service_ids"] == ["conformance_fixed_usd"]
    assert mandate["provider_ids"] == ["conformance_provider_ada"]
    assert mandate["max_price"]["currency"] == mandate["max_extra_fee"]["currency"] == "USD"
    assert mandate["allowed_actions"] == ["booking.create"]


def test_each_matrix_row_changes_one_thing_from_the_default(fixtures):
    """OSBP spec, Mandate Enforcement: each fail-closed case isolates one rule."""
    build = Payloads(fixtures, now=NOW, nonce="n")
    probe = Probe(cast(Wire, None), fixtures, Grader(), build, scenario_url=None, call_timeout=1)
    cases = {case.check_id: case for case in mandate_cases(probe)}
    assert cases["mandate.naked_expires_at"].payloads[0]["mandate"]["expires_at"] == "2030-04-02T12:00:00"
    assert cases["mandate.expired"].payloads[0]["mandate"]["expires_at"] == "2030-03-31T12:00:00Z"
    assert cases["mandate.slot_too_early"].payloads[0]["mandate"]["earliest_start"] == "2030-05-02T10:31:00"
    assert cases["mandate.provider_unknown"].payloads[0]["provider_id"] == ""
    assert cases["mandate.service_scope"].payloads[1]["mandate"]["service_ids"] == []
    assert [p["service_id"] for p in cases["mandate.currency_mismatch"].payloads] == [
        "conformance_fixed_eur",
        "conformance_fixed_gbp",
    ]
    assert cases["mandate.unknown_payment"].code == "requires_user_confirmation"


def test_the_scope_rows_try_an_empty_list_and_the_id_row_a_mandate_without_one(fixtures):
    """OSBP spec, BookingMandate: an empty allow-list allows nothing; Mandate Enforcement: the mandate has
    an id."""
    build = Payloads(fixtures, now=NOW, nonce="n")
    probe = Probe(cast(Wire, None), fixtures, Grader(), build, scenario_url=None, call_timeout=1)
    cases = {case.check_id: case for case in mandate_cases(probe)}
    assert cases["mandate.schedule_scope"].payloads[-1]["mandate"]["schedule_ids"] == []
    assert cases["mandate.provider_not_allowed"].payloads[-1]["mandate"]["provider_ids"] == []
    without, empty = cases["mandate.missing_id"].payloads
    assert "id" not in without["mandate"]
    assert empty["mandate"]["id"] == ""


def test_an_offset_expiry_read_without_its_offset_flips_its_verdict():
    """OSBP spec, BookingMandate: expires_at is an instant; dropping its offset moves it by hours."""
    ahead = at_offset(NOW + dt.timedelta(hours=2), -5)
    behind = at_offset(NOW - dt.timedelta(hours=2), 5)
    assert (ahead, behind) == ("2030-04-01T09:00:00-05:00", "2030-04-01T15:00:00+05:00")
    as_utc = [dt.datetime.fromisoformat(value[:19]).replace(tzinfo=dt.UTC) for value in (ahead, behind)]
    assert as_utc[0] < NOW < as_utc[1]
