"""The oracle's fact comparisons: Money against the fixture file's, policy facts, display strings."""

from __future__ import annotations

from osbp.conformance.fixtures import Money, OptionFact, QuotedPrice, Schedule, ServiceRef
from osbp.conformance.oracle_checks import (
    _displays,
    _option_problems,
    _place_problems,
    _policy_problems,
    money_problem,
)

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


def test_a_stated_option_must_be_listed_with_its_facts():
    """OSBP spec, Core Objects: Service.options expose add-ons for display; their facts are the oracle's."""
    price = Money(amount_minor=2500, currency="USD", type="fixed", display="$25.00")
    service = ServiceRef(
        id="s", options=[OptionFact(id="addon", name="Add-on", duration="PT15M", price=price)]
    )
    right = {"id": "addon", "name": "Add-on", "duration": "PT15M", "price": price.model_dump()}
    assert _option_problems(service, [right], "d") == []
    assert _option_problems(service, None, "d") == ["d option addon: not listed (options None)"]
    assert _option_problems(service, [{**right, "duration": None}], "d") == [
        "d option addon: duration None, expected PT15M"
    ]
    assert _option_problems(service, [{k: v for k, v in right.items() if k != "price"}], "d") == [
        "d option addon price: no Money, expected $25.00"
    ]
    assert _option_problems(ServiceRef(id="s"), None, "d") == []


def test_a_schedule_address_or_name_other_than_the_oracles_is_named():
    """OSBP spec, Core Objects: slots are denormalized with the schedule's display context."""
    schedule = Schedule(id="main", name="Main", address="1 Fixture Plaza, New York, NY 10004, US")
    slot = {"schedule_name": "Main", "schedule_address": "1 Fixture Plaza, New York, NY 10004, US"}
    assert _place_problems(schedule, slot) == []
    assert _place_problems(schedule, {**slot, "schedule_address": None}) == [
        "main: schedule_address None, expected '1 Fixture Plaza, New York, NY 10004, US'"
    ]
    assert _place_problems(Schedule(id="main"), {}) == []
    assert _place_problems(schedule, "no slot") == ["no slot"]
