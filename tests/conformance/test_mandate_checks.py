"""The mandate rows on fee caps and cap shapes, and the payment-handoff prose check."""

from __future__ import annotations

import datetime as dt
from typing import cast

from osbp.conformance.grading import Grader
from osbp.conformance.mandate_checks import (
    _DEPOSIT,
    _FULL_PAYMENT,
    mandate_cases,
    payment_kind_claims,
)
from osbp.conformance.payloads import Payloads
from osbp.conformance.probe import Probe
from osbp.conformance.wire import Wire

NOW = dt.datetime(2030, 4, 1, 12, tzinfo=dt.UTC)


def _cases(fixtures):
    build = Payloads(fixtures, now=NOW, nonce="n")
    probe = Probe(cast(Wire, None), fixtures, Grader(), build, scenario_url=None, call_timeout=1)
    return {case.check_id: case for case in mandate_cases(probe)}


def test_the_fee_cap_currency_row_allows_the_fee_in_another_currency_only(fixtures):
    """OSBP spec, Mandate Enforcement: a required payment must match the max_extra_fee currency."""
    (payload,) = _cases(fixtures)["mandate.policy_fee_currency"].payloads
    mandate = payload["mandate"]
    assert payload["service_id"] == fixtures.services.deposit.id
    assert mandate["allow_policy_fee"] is True
    assert mandate["max_extra_fee"]["currency"] != fixtures.services.deposit.deposit.currency
    # The amount covers the deposit and the price stays in the max_price currency: only the currency fails.
    assert mandate["max_extra_fee"]["amount_minor"] > fixtures.services.deposit.deposit.amount_minor
    assert mandate["max_price"]["currency"] == fixtures.services.deposit.deposit.currency
    assert _cases(fixtures)["mandate.policy_fee_currency"].code == "currency_mismatch"


def test_the_unfixed_cap_row_sends_each_cap_without_an_amount(fixtures):
    """OSBP spec, BookingMandate: the server validates every field; a cap with no amount bounds nothing."""
    case = _cases(fixtures)["mandate.cap_unfixed"]
    fee, price = (payload["mandate"] for payload in case.payloads)
    assert "amount_minor" not in fee["max_extra_fee"]
    assert "amount_minor" in fee["max_price"]
    assert "amount_minor" not in price["max_price"]
    assert "amount_minor" in price["max_extra_fee"]
    assert case.code == "invalid_mandate"


def test_an_offset_on_the_requested_time_is_a_wall_clock_row(fixtures):
    """OSBP spec, Time Discipline: booking.create's time is merchant wall-clock, never with an offset."""
    payloads = _cases(fixtures)["mandate.wall_clock_offset"].payloads
    assert payloads[-1]["time"] == f"{fixtures.slot.time}-04:00"


def test_a_deposit_refusal_claiming_full_payment_is_found():
    """OSBP spec, Security: payment handoffs must not misstate what the merchant requires."""
    wrong = (
        "This booking requires full payment in advance, which the BookingMandate does not allow "
        "(allow_policy_fee is not true). OSBP does not collect payment; route to handoff.request."
    )
    assert payment_kind_claims(wrong, claimed=_FULL_PAYMENT, actual=_DEPOSIT) == [
        "This booking requires full payment in advance"
    ]
    right = wrong.replace("full payment in advance", "a deposit")
    assert payment_kind_claims(right, claimed=_FULL_PAYMENT, actual=_DEPOSIT) == []


def test_a_full_prepayment_refusal_claiming_a_deposit_is_found():
    """OSBP spec, Security: a full prepayment is not a deposit."""
    assert payment_kind_claims(
        "This booking requires a deposit. Route to handoff.request.", claimed=_DEPOSIT, actual=_FULL_PAYMENT
    ) == ["This booking requires a deposit"]


def test_negated_or_hedged_payment_clauses_claim_nothing():
    """Falsehoods only: a clause that negates the kind, or names both kinds, is not a false claim."""
    for message in (
        "Full prepayment is required, not a deposit.",
        "A deposit or full prepayment is required; hand off.",
        "The merchant requires payment up front; hand off.",
    ):
        assert payment_kind_claims(message, claimed=_DEPOSIT, actual=_FULL_PAYMENT) == [], message
    assert (
        payment_kind_claims(
            "A deposit is required, not full payment.", claimed=_FULL_PAYMENT, actual=_DEPOSIT
        )
        == []
    )
