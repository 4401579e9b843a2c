"""Reading an approval summary: its user-facing part, and the written forms of a price and a date."""

from __future__ import annotations

import datetime as dt

from osbp.conformance.booking_checks import wrong_code
from osbp.conformance.summary_checks import date_forms, payment_problem, price_stated, summary_text

USD_95 = {"amount_minor": 9500, "currency": "USD", "type": "fixed"}


def test_the_summary_is_the_message_before_the_sentence_carrying_the_token():
    """OSBP spec, booking.create: the message carries the user-facing summary, then the machine-directed
    retry instruction with approval.token="…", which is not part of what the user is shown."""
    message = 'Book a haircut at 10:30. No upfront payment is required.\n\nRetry with approval.token="t-1".'
    assert summary_text(message) == "Book a haircut at 10:30. No upfront payment is required."
    inline = 'Book a haircut at 10:30. Retry with the same payload and approval.token="t-1".'
    assert summary_text(inline) == "Book a haircut at 10:30."


def test_a_price_counts_as_stated_with_its_display_or_its_amount_beside_the_currency():
    """OSBP spec, booking.create (the summary states the price): an amount with a currency elsewhere in the
    text, such as a service named "(USD)", is not a price with its currency."""
    assert price_stated("for USD 95.00.", USD_95)
    assert price_stated("Price: $95.00.", USD_95)
    assert price_stated("costs 95.00 USD", USD_95)
    assert price_stated("costs ninety-five", {**USD_95, "display": "ninety-five"})
    assert not price_stated("Fixed price (USD) for 95.00.", USD_95)
    assert not price_stated("USD 195.00", USD_95)
    assert not price_stated("USD 95.001", USD_95)


def test_a_date_may_be_written_in_iso_or_with_the_month_name():
    """Platform choice (docs/conformance.md): the summary is prose, so the usual written forms count."""
    forms = date_forms(dt.date(2030, 5, 2))
    assert {"2030-05-02", "May 2", "2 May", "05/02/2030"} <= set(forms)


def test_the_wrong_code_differs_from_the_right_one_in_every_character():
    """Platform choice: the wrong-code check must not send the sandbox code by accident."""
    assert wrong_code("123456") == "234567"
    assert wrong_code("999999") == "000000"
    assert all(a != b for a, b in zip("a1B9", wrong_code("a1B9"), strict=True))


def test_the_payment_requirement_is_read_from_the_servers_own_policy():
    """OSBP spec, policy.explain and booking.create (read the policy impact back; say "No upfront payment
    or deposit is required" rather than the enum): a deposit needs its amount, a full prepayment must be
    said to be due in advance, and a cancellation deadline is not a prepayment."""
    deposit = {"payment_requirement": "deposit", "deposit": {"amount_minor": 2500, "currency": "USD"}}
    assert payment_problem("A deposit of $25.00 is required.", deposit, "svc") is None
    assert (
        payment_problem("Deposit required: book now.", deposit, "svc")
        == "svc: no deposit of ['25.00', '25.00']"
    )
    prepay = {"payment_requirement": "full_prepay"}
    assert payment_problem("Full payment of $95.00 is required in advance.", prepay, "svc") is None
    cancel_only = "Free cancellation up to 6 hours before the appointment. No upfront payment is required."
    assert payment_problem(cancel_only, prepay, "svc") == "svc: full prepayment is not stated"
    none = {"payment_requirement": "none"}
    assert payment_problem("No upfront payment or deposit is required to book.", none, "svc") is None
    assert payment_problem("Book a haircut at 10:30.", none, "svc") is not None
