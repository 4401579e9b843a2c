"""Organizations, locations, providers and services with policies, in the native dialect."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from osbp.backend.models import Service
from osbp.backend.money import exponent, format_amount
from osbp.backend.seed import seed, seed_organization_ids, seed_rows


def test_directory_lists_the_five_seed_organizations(client):
    """Platform choice (seed data): Carolyn's Dental, Gus' Notary, Andy's Auto, Phil's Spa, the conformance
    fixture."""
    ids = [item["id"] for item in client.get("/api/organizations").json()["organizations"]]
    assert sorted(ids) == sorted(seed_organization_ids())


def test_organization_embeds_locations_with_hours_and_providers(client):
    """Platform choice: one GET resolves an organization's locations and providers for the adapter."""
    org = client.get("/api/organizations/gus_notary").json()
    assert (org["time_zone"], org["currency"], org["country"]) == ("America/New_York", "USD", "US")
    online = next(item for item in org["locations"] if item["id"] == "gus_notary_online")
    assert (online["kind"], online["address"], online["coordinates"]) == ("online", None, None)
    assert {"weekday": 5, "open": "18:00", "close": "02:00"} in online["hours"]
    office = next(item for item in org["locations"] if item["id"] == "gus_notary_office")
    assert office["coordinates"] == {"latitude": 40.7196, "longitude": -74.0027}
    gus = next(item for item in org["providers"] if item["id"] == "gus_notary_gus")
    assert gus["location_ids"] == ["gus_notary_office", "gus_notary_online"]


def test_service_carries_its_policy_in_minutes_and_major_units(client):
    """Platform choice (data): duration in minutes; price, fees and deposit as major-unit strings with a
    currency."""
    crown = client.get("/api/organizations/carolyns_dental/services/carolyns_dental_crown").json()
    assert crown["duration_minutes"] == 90
    assert crown["price"] == {"kind": "fixed", "amount": "1200.00", "currency": "USD"}
    assert crown["policy"]["payment"] == {
        "requirement": "deposit",
        "deposit": {"kind": "fixed", "amount": "250.00", "currency": "USD"},
    }
    assert crown["policy"]["no_show_fee"]["amount"] == "50.00"
    assert crown["policy"]["cancellation"]["window_minutes"] == 2880
    filling = client.get("/api/organizations/carolyns_dental/services/carolyns_dental_filling").json()
    assert filling["price"] == {"kind": "insurance_dependent", "amount": None, "currency": "USD"}


def test_services_list_includes_every_policy(client):
    """Platform choice: the services list returns each service with its policy."""
    services = client.get("/api/organizations/conformance_co/services").json()["services"]
    assert len(services) == 25
    by_id = {item["id"]: item for item in services}
    assert by_id["conformance_fixed_jpy"]["price"]["amount"] == "12000"
    assert by_id["conformance_fixed_kwd"]["price"]["amount"] == "12.500"
    assert by_id["conformance_fixed_usd"]["options"] == [
        {
            "id": "conformance_fixed_usd_addon",
            "name": "Add-on (15 minutes)",
            "duration_minutes": 15,
            "price": {"kind": "fixed", "amount": "25.00", "currency": "USD"},
        }
    ]
    assert by_id["conformance_verification"]["policy"]["verification"] == "sms"
    assert by_id["conformance_unknown_payment"]["policy"]["payment"]["requirement"] == "unknown"
    assert by_id["conformance_consultation"]["requires_consultation"] is True
    assert all(item["duration_minutes"] == 45 for item in services)


def test_a_service_of_another_organization_is_not_found(client):
    """Platform choice (errors): ids are scoped to their organization."""
    response = client.get("/api/organizations/carolyns_dental/services/gus_notary_notarization")
    assert (response.status_code, response.json()["code"]) == (404, "service_not_found")


@pytest.mark.parametrize(
    ("amount", "currency", "text"),
    [("120", "USD", "120.00"), ("12000", "JPY", "12000"), ("12.5", "KWD", "12.500"), ("0", "EUR", "0.00")],
)
def test_amounts_use_exactly_the_currencys_minor_digits(amount, currency, text):
    """ISO 4217: "120.00" USD, "12000" JPY, "12.500" KWD."""
    assert format_amount(amount, currency) == text


def test_an_amount_finer_than_the_currency_allows_is_refused():
    """ISO 4217: JPY has no minor unit, so 0.5 yen cannot be expressed."""
    with pytest.raises(ValueError, match="precision"):
        format_amount("0.5", "JPY")


@given(st.integers(min_value=0, max_value=10**9), st.sampled_from(["USD", "EUR", "JPY", "KWD", "GBP", "CLP"]))
def test_minor_units_round_trip_through_the_native_string(minor, currency):
    """ISO 4217: major-unit string × 10^exponent gives back the minor amount."""
    text = format_amount(Decimal(minor).scaleb(-exponent(currency)), currency)
    assert int(Decimal(text).scaleb(exponent(currency))) == minor


def test_every_seed_price_string_has_exactly_its_currencys_digits():
    """ISO 4217: seed amounts are already canonical native strings."""
    for row in seed_rows():
        if isinstance(row, Service):
            for amount in (row.price_amount, row.deposit_amount, row.no_show_fee, row.cancellation_fee):
                if amount is not None:
                    assert format_amount(amount, row.currency) == amount, row.id


def test_reseeding_never_duplicates(runtime):
    """Platform choice (seed data): deterministic and idempotent."""
    from sqlmodel import func, select

    with runtime.db.write() as session:
        seed(session)
    with runtime.db.read() as session:
        assert session.exec(select(func.count()).select_from(Service)).one() == 41
