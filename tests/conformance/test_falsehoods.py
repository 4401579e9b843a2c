"""False statements in summary and receipt prose, as the prose checks find them."""

from __future__ import annotations

from osbp.conformance.falsehoods import (
    fee_cap_claims,
    hold_claims,
    money_mentions,
    policy_falsehoods,
    span_forms,
    unknown_amounts,
    weekday_falsehoods,
)

#: This project's server's summary of the fees service (a true text: every check finds nothing in it).
SUMMARY = (
    "Book Fees fixture on Thursday, 2030-05-02 at 10:30 until 11:15 (America/New_York time) with Ada "
    "Fixture at Conformance Main (1 Fixture Plaza, New York, NY 10004, US), Conformance Co. Price: $60.00. "
    "No upfront payment or deposit is required to book. Free cancellation with the merchant up to 6 hours "
    "before the appointment; cancelling later costs a cancellation fee of $15.00. Arriving more than 10 "
    "minutes late counts as a no-show. No-show fee: $30.00. These fees are set by the merchant; the booking "
    "mandate does not limit them. The merchant will see the customer name: Casey Conformance."
)
FEES = {"cancellation_fee": 1500, "no_show_fee": 3000}
SIX_HOURS = 6 * 3600


def test_a_true_summary_holds_no_falsehood():
    """OSBP spec, booking.create (the summary states the facts): the reference summary passes every rule."""
    assert weekday_falsehoods(SUMMARY, year=2030) == (1, [])
    assert unknown_amounts(money_mentions(SUMMARY), {("USD", 6000), ("USD", 1500), ("USD", 3000)}) == []
    assert fee_cap_claims(SUMMARY) == []
    assert hold_claims(SUMMARY) == []
    assert policy_falsehoods(SUMMARY, fees=FEES, window=SIX_HOURS) == []


def test_a_weekday_that_is_not_its_dates_is_found_in_each_written_form():
    """Platform choice (prose.weekday): 2030-05-02 is a Thursday, however the date is written."""
    text = "on Friday, 2030-05-02; Fri May 2, 2030; Wednesday 2 May; 2030-05-02 (Thu)"
    count, problems = weekday_falsehoods(text, year=2030)
    assert count == 4
    assert [problem.split(":")[0] for problem in problems] == [
        "'Friday, 2030-05-02'",
        "'Fri May 2, 2030'",
        "'Wednesday 2 May'",
    ]


def test_amounts_are_read_in_the_currencys_minor_unit():
    """OSBP spec, Money: ¥120.00 is not 12000 JPY (yen have no decimals); KWD has three."""
    mentions = money_mentions("¥120.00, ¥12,000, KWD\u00a012.500, 95.00 USD, €90.00 and NY 10004")
    assert [(m.currency, m.minor) for m in mentions] == [
        ("JPY", None),
        ("JPY", 12000),
        ("KWD", 12500),
        ("USD", 9500),
        ("EUR", 9000),
    ]
    assert unknown_amounts(mentions, {("JPY", 12000), ("KWD", 12500), ("USD", 9500), ("EUR", 9000)}) == [
        "'¥120.00' (more decimals than the currency has)"
    ]


def test_a_claim_that_the_mandate_caps_fees_is_found_and_its_disclaimer_is_not():
    """OSBP spec, Mandate Enforcement: fees are not capped by the mandate, so saying so is false."""
    claim = "Cancellation and no-show fees are capped by your booking mandate."
    assert fee_cap_claims(f"{SUMMARY} {claim}") == [claim]
    assert fee_cap_claims("Fees are not limited by the mandate.") == []


def test_a_claim_that_the_slot_is_held_is_found_and_a_denial_is_not():
    """OSBP spec, booking.create (nothing is reserved before the approved create)."""
    assert hold_claims("This slot is held for you for ten minutes.") == [
        "This slot is held for you for ten minutes."
    ]
    assert hold_claims("We have reserved 10:30 for you.") == ["We have reserved 10:30 for you."]
    assert hold_claims("The slot is not held until you confirm.") == []


def test_free_cancellation_under_a_fee_is_true_only_with_its_window():
    """OSBP spec, policy.explain: a cancellation fee makes cancellation free only within the window."""
    assert policy_falsehoods("Free cancellation up to 6 hours before.", fees=FEES, window=SIX_HOURS) == []
    found = policy_falsehoods("Free cancellation with the merchant at any time.", fees=FEES, window=SIX_HOURS)
    assert len(found) == 2  # no window, and "at any time" denies the deadline
    assert policy_falsehoods("There is no cancellation fee.", fees=FEES, window=None) != []
    assert policy_falsehoods("No fees apply.", fees=FEES, window=None) != []


def test_a_fee_the_policy_does_not_have_or_at_another_amount_is_found():
    """OSBP spec, policy.explain: a summary may state only the fees the merchant's policy has."""
    none = {"cancellation_fee": None, "no_show_fee": None}
    assert policy_falsehoods("A cancellation fee of $15.00 applies.", fees=none, window=None) != []
    assert policy_falsehoods("A booking fee of $5.00 applies.", fees=FEES, window=None) != []
    assert policy_falsehoods("No-show fee: $20.00.", fees=FEES, window=None) != []
    assert policy_falsehoods("No-show fee: $30.00.", fees=FEES, window=None) == []


def test_span_forms_cover_hours_and_minutes():
    """Platform choice: a window of PT6H may be written "6 hours", "6-hour" or "360 minutes"."""
    forms = span_forms(SIX_HOURS)
    assert {"6 hour", "6-hour", "360 minute"} <= set(forms)
