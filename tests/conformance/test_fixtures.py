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
