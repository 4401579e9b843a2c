"""The binding probes: each payload field changed alone, and the summary comparison of the fact checks."""

from __future__ import annotations

import datetime as dt
from typing import Any, cast

from osbp.conformance.approval_checks import FACTS, changed_alone
from osbp.conformance.binding_checks import GROUPS, base_payload, variations
from osbp.conformance.grading import Grader
from osbp.conformance.payloads import Payloads
from osbp.conformance.probe import Probe
from osbp.conformance.wire import Wire

NOW = dt.datetime(2030, 4, 1, 12, tzinfo=dt.UTC)
SUMMARY = (
    "Book Fees on Thursday, 2030-05-02 at 10:30 (America/New_York time) with Bea Binding at Conformance "
    "Main. "
    "Price: $60.00. Free cancellation up to 6 hours before the appointment; cancelling later costs a "
    "cancellation fee of $15.00. No-show fee: $25.00."
)


def _probe(fixtures: Any) -> Probe:
    build = Payloads(fixtures, now=NOW, nonce="n")
    return Probe(cast(Wire, None), fixtures, Grader(), build, scenario_url=None, call_timeout=1)


def _differences(base: dict[str, Any], other: dict[str, Any]) -> list[str]:
    """The top-level fields, and the customer's and mandate's fields, that differ."""
    found = [key for key in base.keys() | other.keys() if key not in ("customer", "mandate")]
    found = [key for key in found if base.get(key) != other.get(key)]
    for part in ("customer", "mandate"):
        inner = base[part].keys() | other[part].keys()
        found += [f"{part}.{key}" for key in inner if base[part].get(key) != other[part].get(key)]
    return found


def test_each_variation_changes_exactly_its_field(fixtures):
    """OSBP spec, booking.create: the token and the key bind every field, so each is probed alone."""
    probe = _probe(fixtures)
    base = base_payload(probe)
    found = variations(probe, base)
    assert all(_differences(base, variation.payload) == [variation.field] for variation in found)
    assert {variation.group for variation in found} == set(GROUPS)
    assert {variation.field for variation in found} >= {
        "provider_id",
        "customer.phone",
        "customer.email",
        "mandate.id",
        "mandate.max_extra_fee",
    }


def test_each_variation_stays_inside_the_probes_mandate(fixtures):
    """OSBP spec, Mandate Enforcement: no mandate rule may answer before the key's record does."""
    probe = _probe(fixtures)
    base = base_payload(probe)
    mandate = base["mandate"]
    for variation in variations(probe, base):
        payload = variation.payload
        assert payload["service_id"] in mandate["service_ids"]
        assert payload["schedule_id"] in mandate["schedule_ids"]
        assert payload["provider_id"] in mandate["provider_ids"]
        start = dt.datetime.fromisoformat(f"{payload['date']}T{payload['time']}")
        assert dt.datetime.fromisoformat(payload["mandate"]["earliest_start"]) <= start
        assert start + dt.timedelta(minutes=45) <= dt.datetime.fromisoformat(payload["mandate"]["latest_end"])
        assert payload["mandate"]["organization_id"] == fixtures.organization_id


def test_a_fresh_summary_that_changed_only_the_fact_is_conclusive():
    """Platform choice (docs/conformance.md): a round counts when the new value is all that changed; the
    re-challenge's own lead sentences do not count against it."""
    fresh = "The booking details changed. " + SUMMARY.replace("$15.00", "$123.45")
    assert changed_alone(SUMMARY, fresh, ("123.45",))


def test_a_fresh_summary_that_another_change_reached_is_not_conclusive():
    """Platform choice (docs/conformance.md): another run's price change makes the fee round prove nothing."""
    fresh = SUMMARY.replace("$15.00", "$123.45").replace("$60.00", "$61.00")
    assert not changed_alone(SUMMARY, fresh, ("123.45",))
    assert not changed_alone(SUMMARY, SUMMARY, ("123.45",))


def test_every_summary_fact_has_its_own_check_and_service():
    """OSBP spec, booking.create: price, each fee, the window, the provider and the location are bound."""
    assert [fact.check_id for fact in FACTS] == [
        "approval.token_summary_bound",
        "approval.token_summary_cancellation_fee",
        "approval.token_summary_no_show_fee",
        "approval.token_summary_window",
        "approval.token_summary_provider",
        "approval.token_summary_location",
    ]


def test_the_shipped_fixtures_name_a_service_for_every_fact(fixtures):
    """Platform choice (docs/conformance.md): each fact lives on a service no other check books."""
    services = [fact.target(fixtures) for fact in FACTS]
    assert None not in services
    assert len({service.service for service in services if service is not None}) == len(FACTS)
