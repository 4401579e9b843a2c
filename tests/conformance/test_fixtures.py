"""The fixture file format and the shipped reference fixtures."""

from __future__ import annotations

import json
from typing import Any

import pytest
from pydantic import ValidationError

from osbp.conformance.fixtures import Fixtures, load_fixtures, reference_fixtures_path


def _raw() -> dict[str, Any]:
    raw: dict[str, Any] = json.loads(reference_fixtures_path().read_text(encoding="utf-8"))
    return raw


def test_reference_fixtures_describe_the_conformance_organization(fixtures):
    """Platform choice: the shipped file names this project's conformance organization."""
    assert fixtures.organization_id == "conformance_co"
    assert fixtures.schedule.id == "conformance_main"
    assert (fixtures.providers.in_scope, fixtures.providers.other) == (
        "conformance_provider_ada",
        "conformance_provider_grace",
    )
    assert fixtures.slot.start.isoformat() == "2030-05-02T10:30:00"
    assert fixtures.slot.end.isoformat() == "2030-05-02T11:15:00"
    assert fixtures.services.verification.code == "123456"


def test_reference_fixed_prices_are_in_each_currencys_minor_unit(fixtures):
    """OSBP spec, Money: USD/EUR/GBP exponent 2, JPY 0, KWD 3."""
    amounts = {
        currency: service.price.amount_minor for currency, service in fixtures.services.fixed().items()
    }
    assert amounts == {"USD": 9500, "EUR": 9000, "GBP": 8000, "JPY": 12000, "KWD": 12500}


def test_a_fixed_role_priced_in_another_currency_is_rejected():
    """Platform choice: `fixed_jpy` must be priced in JPY, or the money checks would grade nonsense."""
    raw = _raw()
    raw["services"]["fixed_jpy"]["price"]["currency"] = "USD"
    with pytest.raises(ValidationError, match="fixed_jpy must be priced in JPY"):
        Fixtures.model_validate(raw)


def test_a_cap_that_does_not_cover_the_slot_service_is_rejected():
    """Platform choice: the default mandate cap must let the USD slot service book."""
    raw = _raw()
    raw["max_price"]["amount_minor"] = 100
    with pytest.raises(ValidationError, match="cover the fixed_usd price"):
        Fixtures.model_validate(raw)


def test_unknown_fields_and_malformed_values_are_rejected():
    """Platform choice: a typo in a fixture file is an error, not a silently ignored key."""
    raw = _raw()
    raw["organisation_id"] = "typo"
    with pytest.raises(ValidationError, match="organisation_id"):
        Fixtures.model_validate(raw)
    raw = _raw()
    raw["slot"]["time"] = "10:30:00"
    with pytest.raises(ValidationError, match="time"):
        Fixtures.model_validate(raw)


def test_load_fixtures_reads_a_file_and_ignores_its_comment(tmp_path):
    """Platform choice: a `$comment` key documents a fixture file without failing validation."""
    path = tmp_path / "mine.json"
    raw = _raw() | {"$comment": "my platform", "organization_id": "my_org"}
    path.write_text(json.dumps(raw), encoding="utf-8")
    assert load_fixtures(path).organization_id == "my_org"


def test_native_statuses_are_optional_and_map_only_to_protocol_statuses():
    """OSBP spec, booking.status (booked, cancelled, completed, no_show, pending, unknown): a fixture file
    without native_statuses stays valid for another language's server, and a mapping to anything else is
    rejected."""
    raw = _raw()
    assert Fixtures.model_validate(raw).native_statuses["confirmed"] == "booked"
    assert (
        Fixtures.model_validate({k: v for k, v in raw.items() if k != "native_statuses"}).native_statuses
        == {}
    )
    with pytest.raises(ValidationError, match="native_statuses"):
        Fixtures.model_validate({**raw, "native_statuses": {"confirmed": "confirmed"}})


def _format_1(raw: dict[str, Any]) -> dict[str, Any]:
    """The reference file as format 1 wrote it: ids and roles, none of the oracle's facts."""
    old = {key: value for key, value in raw.items() if key not in ("fixture_format", "all_day", "slots")}
    old["schedule"] = {"id": raw["schedule"]["id"], "has_coordinates": True}
    old["providers"] = {key: raw["providers"][key] for key in ("in_scope", "other")}
    kept = {"id", "price", "deposit", "method", "code"}
    old["services"] = {
        role: {key: value for key, value in service.items() if key in kept}
        for role, service in raw["services"].items()
        if role not in ("free", "fees")
    }
    for service in old["services"].values():
        if service.get("price", {}).get("type") not in (None, "fixed"):
            del service["price"]
        for money in (service.get("price"), service.get("deposit")):
            if money is not None:
                money.pop("type", None)
                money.pop("display", None)
    return old


def test_the_reference_file_is_format_2_and_states_the_oracles_facts(fixtures):
    """Platform choice (fixture format 2): the shipped file states every fact the oracle checks read."""
    assert fixtures.fixture_format == 2
    jpy = fixtures.services.fixed_jpy
    assert (jpy.price.amount_minor, jpy.price.display) == (12000, "¥12,000")
    fees = fixtures.services.fees
    assert fees is not None
    assert (fees.cancellation_fee.amount_minor, fees.no_show_fee.amount_minor) == (1500, 3000)
    assert fixtures.services.fixed_usd.states("cancellation_fee")  # stated as null: no fee
    assert not fixtures.services.repriced.states("price")
    assert fixtures.all_day is not None and fixtures.all_day.timezone == "America/New_York"
    assert fixtures.slots["dst_fold"].starts_at == "2030-11-03T05:30:00Z"
    assert fixtures.native_statuses["archived"] == "unknown"


def test_a_format_1_file_still_loads_without_the_oracles_facts():
    """Platform choice (fixture format 2): a file written for format 1 loads; its new facts are absent."""
    old = Fixtures.model_validate(_format_1(_raw()))
    assert old.fixture_format == 1
    assert old.all_day is None and old.slots == {} and old.services.free is None
    assert not old.services.fixed_usd.states("name")
    assert not old.services.fixed_usd.states("cancellation_fee")


def test_a_format_1_file_that_states_a_format_2_member_is_rejected():
    """Platform choice: an oracle fact in a file that does not declare format 2 is a forgotten version."""
    raw = _format_1(_raw()) | {"all_day": _raw()["all_day"]}
    with pytest.raises(ValidationError, match='all_day need "fixture_format": 2'):
        Fixtures.model_validate(raw)


def test_an_oracle_instant_that_is_not_its_wall_clock_is_rejected():
    """OSBP spec, Time Discipline: an oracle slot's instant must be one occurrence of its wall-clock in the
    schedule's zone, or the DST checks would fail a right server over a typo."""
    raw = _raw()
    raw["slots"]["dst_gap"]["starts_at"] = "2030-03-10T08:00:00Z"
    with pytest.raises(ValidationError, match="is not 2030-03-10T03:00:00"):
        Fixtures.model_validate(raw)
    raw = _raw()
    raw["slots"]["dst_fold"]["starts_at"] = "2030-11-03T06:30:00Z"  # the fold's other occurrence: allowed
    assert Fixtures.model_validate(raw).slots["dst_fold"].starts_at == "2030-11-03T06:30:00Z"


def test_fees_must_differ_from_each_other_and_from_the_price():
    """Platform choice: a fee equal to the price (or to the other fee) would let a server that reports one
    amount for all of them pass the fee checks."""
    raw = _raw()
    raw["services"]["fees"]["no_show_fee"]["amount_minor"] = 1500
    with pytest.raises(ValidationError, match="distinct"):
        Fixtures.model_validate(raw)


def test_the_free_role_must_cost_nothing():
    """Platform choice: the free role is the zero-price case of the approval gate."""
    raw = _raw()
    raw["services"]["free"]["price"]["amount_minor"] = 100
    with pytest.raises(ValidationError, match="free must cost 0 USD"):
        Fixtures.model_validate(raw)
