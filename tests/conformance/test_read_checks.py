"""Money as the read checks grade it: the exact minor-unit amount, with a diagnosis when it is off."""

from __future__ import annotations

from osbp.conformance.fixtures import Money
from osbp.conformance.read_checks import fixed_price_problem

JPY = Money(amount_minor=12000, currency="JPY")
KWD = Money(amount_minor=12500, currency="KWD")


def test_the_exact_amount_in_the_minor_unit_passes():
    """OSBP spec, Money: amount_minor is an integer in the currency's ISO 4217 minor unit."""
    assert (
        fixed_price_problem("describe", {"amount_minor": 12000, "currency": "JPY", "type": "fixed"}, JPY)
        is None
    )
    assert fixed_price_problem("describe", {"amount_minor": 12500, "currency": "KWD"}, KWD) is None


def test_jpy_reported_in_cents_is_diagnosed_as_100x_with_the_exponent():
    """OSBP spec, Money: the exponent varies; it is not always cents (JPY is 0)."""
    problem = fixed_price_problem("describe", {"amount_minor": 1200000, "currency": "JPY"}, JPY)
    assert (
        problem == "describe: amount_minor 1200000, expected 12000 JPY (ISO 4217 exponent 0, 100x too large)"
    )


def test_kwd_scaled_by_100_instead_of_1000_is_diagnosed_as_too_small():
    """OSBP spec, Money: KWD has three decimals, so 12.500 KWD is 12500, not 1250."""
    problem = fixed_price_problem("describe", {"amount_minor": 1250, "currency": "KWD"}, KWD)
    assert problem is not None
    assert "10x too small" in problem


def test_a_string_amount_a_wrong_currency_or_a_non_fixed_type_is_refused():
    """OSBP spec, Money: never a bare string amount; currency required; a fixed price is type fixed."""
    assert "not an integer" in str(
        fixed_price_problem("d", {"amount_minor": "12000", "currency": "JPY"}, JPY)
    )
    assert "currency 'USD'" in str(fixed_price_problem("d", {"amount_minor": 12000, "currency": "USD"}, JPY))
    assert "price type 'unknown'" in str(
        fixed_price_problem("d", {"amount_minor": 12000, "currency": "JPY", "type": "unknown"}, JPY)
    )
    assert fixed_price_problem("d", None, JPY) == "d: no price object"
