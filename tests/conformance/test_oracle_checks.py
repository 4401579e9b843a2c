"""The oracle's fact comparisons: Money against the fixture file's, policy facts, display strings."""

from __future__ import annotations

from osbp.conformance.fixtures import Money, QuotedPrice, ServiceRef
from osbp.conformance.oracle_checks import _displays, _policy_problems, money_problem

JPY = Money(amount_minor=12000, currency="JPY", type="fixed", display="¥12,000")


def test_money_equal_to_the_oracle_passes_and_each_difference_is_named():
    """OSBP spec, Money: amount, currency and type are facts; the oracle states them."""
    right = {"amount_minor": 12000, "currency": "JPY", "type": "fixed", "display": "¥12,000"}
    assert money_problem("p", right, JPY) is None
    assert (
        money_problem("p", {**right, "amount_minor": 1200000}, JPY)
        == "p: amount_minor 1200000, expected 12000 JPY"
    )
    assert money_problem("p", {**right, "currency": "USD"}, JPY) == "p: currency 'USD', expected JPY"
    quote = QuotedPrice(currency="USD", type="quote_required")
    assert money_problem("q", {"currency": "USD", "type": "quote_required"}, quote) is None
    assert (
        money_problem("q", {"currency": "USD", "type": "quote_required", "amount_minor": 0}, quote)
        is not None
    )


def test_a_display_divided_by_100_is_found():
    """OSBP spec, Money (display is the currency's own form): ¥120.00 is not how 12000 yen is written."""
    service = ServiceRef(id="jpy", price=JPY)
    count, problems = _displays(service, {"price": {**JPY.model_dump(), "display": "¥120.00"}}, {})
    assert count == 1
    assert problems == ["service.describe jpy price: display '¥120.00', expected '¥12,000'"]


def test_a_dropped_fee_and_a_fee_the_oracle_has_not_are_policy_problems():
    """OSBP spec, policy.explain: the fees are the merchant's facts, stated by the oracle."""
    fee = Money(amount_minor=1500, currency="USD", type="fixed", display="$15.00")
    with_fee = ServiceRef(id="fees", cancellation_fee=fee, no_show_fee="none", payment_requirement="none")
    assert (
        _policy_problems(with_fee, {"payment_requirement": "none", "cancellation_fee": fee.model_dump()})
        == []
    )
    dropped = _policy_problems(with_fee, {"payment_requirement": "none"})
    assert dropped == ["policy.explain fees cancellation_fee: no Money, expected $15.00"]
    extra = {
        "payment_requirement": "none",
        "cancellation_fee": fee.model_dump(),
        "no_show_fee": fee.model_dump(),
    }
    assert _policy_problems(with_fee, extra) == ["policy.explain fees: no_show_fee 1500 USD, expected none"]


def test_a_format_1_service_states_nothing_so_nothing_is_graded():
    """Platform choice (fixture format 1): a fact the file does not state is not graded."""
    assert _policy_problems(ServiceRef(id="old"), {"payment_requirement": "deposit"}) == []
