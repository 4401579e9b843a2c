"""The summary facts, prose and token rules of osbp.conformance.summary_facts, on texts alone."""

from __future__ import annotations

from osbp.conformance.summary_checks import payment_problem
from osbp.conformance.summary_facts import (
    cancellation_problem,
    name_problems,
    null_placeholders,
    policy_terms_problems,
    uncapped_missing,
)

FEE = "Free cancellation up to 6 hours before; cancelling later costs a cancellation fee of $15.00."
POLICY: dict[str, str | bool] = {
    "cancellation_enabled": True,
    "cancellation_window": "PT6H",
    "late_grace": "PT10M",
    "cancellation_note": "Cancel at least 6 hours before the appointment.",
}


def test_a_stated_fee_needs_the_disclaimer_that_the_mandate_does_not_cap_it():
    """OSBP spec, Security: fees are "not capped by the mandate"; the protection is disclosure."""
    assert uncapped_missing(FEE)
    assert not uncapped_missing(
        f"{FEE} These fees are set by the merchant; the booking mandate does not limit them."
    )
    assert not uncapped_missing("Free cancellation up to 6 hours before the appointment.")


def test_cancellation_is_neither_denied_nor_called_unreported_when_policy_explain_reports_it():
    """policy.explain's cancellation_enabled is the fact; OSBP itself not cancelling is no denial."""
    allowed = "Free cancellation up to 6 hours before. Once booked, OSBP cannot cancel or change it."
    assert cancellation_problem(allowed, True, "s") is None
    unreported = "The merchant did not report whether this booking can be cancelled; its deadline is 6 hours."
    assert "unreported" in (cancellation_problem(unreported, True, "s") or "")
    denied = "The merchant does not allow this booking to be cancelled."
    assert "denies" in (cancellation_problem(denied, True, "s") or "")
    assert cancellation_problem(denied, False, "s") is None
    assert "does not say" in (cancellation_problem(allowed, False, "s") or "")


def test_the_window_grace_and_note_policy_explain_reports_are_stated():
    text = "Free cancellation up to 6 hours before. Arriving more than 10 minutes late. "
    text += str(POLICY["cancellation_note"])
    assert policy_terms_problems(text, POLICY, "s") == []
    assert [p.split(": ")[1] for p in policy_terms_problems("Book it.", POLICY, "s")] == [
        "no cancellation window PT6H",
        "no late grace PT10M",
        f"no cancellation note {POLICY['cancellation_note']!r}",
    ]


def test_each_sent_name_field_is_stated_and_never_said_to_be_missing():
    """OSBP spec, booking.create: the summary shows the merchant-visible name so swapped fields show."""
    customer = {"display_name": "Casey Conformance", "given_name": "Casey", "family_name": "Conformance"}
    assert name_problems("Given name: Casey; family name: Conformance.", customer) == []
    shown = "The merchant will see Casey Conformance. Given name: Casey; no family name is sent."
    assert name_problems(shown, customer) == ["says no family name is sent, though 'Conformance' is"]
    assert name_problems("The merchant will see Kasey.", {"given_name": "Casey"}) == [
        "the given name 'Casey' is not stated"
    ]


def test_a_null_where_a_value_belongs_is_a_placeholder_but_none_of_is_english():
    assert null_placeholders("Given name: Casey; family name: None.") != []
    assert null_placeholders("at Annex (None), Conformance Co.") != []
    assert null_placeholders("None A fresh final confirmation is required.") != []
    assert null_placeholders("Arriving more than None late counts as a no-show.") != []
    assert null_placeholders("None of these fees are capped. No deposit is required.") == []


def test_the_payment_sentence_is_read_without_the_service_name_and_for_false_claims():
    """A service named "Deposit required" or "Full prepayment" states nothing by its name."""
    deposit = {"payment_requirement": "deposit", "deposit": {"amount_minor": 2500, "currency": "USD"}}
    wrong = "Book Deposit required. Full payment of $25.00 is required in advance."
    assert payment_problem(wrong, deposit, "d", "Deposit required") is not None
    assert payment_problem("Book X. A deposit of $25.00 is required.", deposit, "d", "X") is None
    prepay = {"payment_requirement": "full_prepay"}
    assert payment_problem(
        "Book Full prepayment. A deposit of $95.00 is required.", prepay, "f", "Full prepayment"
    )
    assert payment_problem("Book X. No upfront payment or deposit is required.", prepay, "f", "X")
    none = {"payment_requirement": "none"}
    assert payment_problem("No upfront payment or deposit is required to book.", none, "n") is None
    claim = "A deposit of $0.00 is required, payable to the merchant (OSBP does not collect it)."
    assert "claims a payment" in (payment_problem(claim, none, "n") or "")


def test_a_time_unit_agrees_with_its_count_and_compound_adjectives_are_left_alone():
    from osbp.conformance.summary_facts import unit_number_errors

    assert unit_number_errors("up to 1 hours 1 minutes before") == ["1 hours", "1 minutes"]
    assert unit_number_errors("Arriving more than 10 minute late.") == ["10 minute"]
    assert unit_number_errors("up to 1 hour 1 minute before; 10 minutes late; a 10 minute grace.") == []
    assert unit_number_errors("a 2-hour window, 21 minutes, 0.1 hours") == []


def test_the_overnight_slot_must_end_on_a_later_date():
    import pytest
    from pydantic import ValidationError

    from osbp.conformance.fixtures import OvernightSlot

    slot = {"schedule_id": "n", "service_id": "s", "provider_id": "p", "timezone": "America/Chicago"}
    ok = OvernightSlot(**slot, starts_at_local="2030-05-02T23:30:00", ends_at_local="2030-05-03T00:15:00")
    assert ok.ends_at_local.startswith("2030-05-03")
    with pytest.raises(ValidationError, match="later date"):
        OvernightSlot(**slot, starts_at_local="2030-05-02T10:30:00", ends_at_local="2030-05-02T11:15:00")
