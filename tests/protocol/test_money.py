"""Money: ISO 4217 exponents, exact conversions, display hints."""

from __future__ import annotations

from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from osbp.protocol.models import Money
from osbp.protocol.money import (
    CURRENCY_SPACING,
    ISO4217_PUBLISHED,
    MoneyError,
    fixed_amount,
    format_display,
    is_fixed,
    major_to_minor,
    minor_to_major,
    minor_unit_exponent,
    money_from_major,
    money_from_minor,
)


@pytest.mark.parametrize(
    ("currency", "exponent"),
    [("USD", 2), ("EUR", 2), ("JPY", 0), ("CLP", 0), ("VND", 0), ("KWD", 3), ("JOD", 3), ("TND", 3)],
)
def test_exponents_come_from_iso4217(currency: str, exponent: int) -> None:
    """The spec's example exponents match the ISO 4217 data set (OSBP spec, Money)."""
    assert minor_unit_exponent(currency) == exponent


@pytest.mark.parametrize("currency", ["ZZZ", "XAU", "usd", "US", "", "XXX"])
def test_unknown_or_unit_less_currency_fails_closed(currency: str) -> None:
    """An unknown exponent is never defaulted to 2 (OSBP spec, Money: not safe to onboard)."""
    assert minor_unit_exponent(currency) is None
    assert isinstance(major_to_minor("1", currency), MoneyError)
    assert format_display(100, currency) is None


def test_data_set_is_dated() -> None:
    """The exponent data carries its ISO 4217 publication date (OSBP spec, Money: dated snapshot)."""
    assert ISO4217_PUBLISHED[:4].isdigit()


@pytest.mark.parametrize(
    ("major", "currency", "minor"),
    [
        ("95", "USD", 9500),
        (Decimal("95.5"), "USD", 9550),
        (80, "USD", 8000),
        ("12000", "JPY", 12000),
        ("12.5", "KWD", 12500),
        (12.5, "KWD", 12500),
        ("0.01", "EUR", 1),
        ("0", "JPY", 0),
    ],
)
def test_major_to_minor_scales_by_the_exponent(major: object, currency: str, minor: int) -> None:
    """Major units scale by the currency exponent, not a fixed factor of 100 (OSBP spec, Money)."""
    assert major_to_minor(major, currency) == minor  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("major", "currency"),
    [
        ("12.345", "USD"),
        ("1.5", "JPY"),
        ("1.0005", "KWD"),
        ("-1", "USD"),
        ("NaN", "USD"),
        ("abc", "USD"),
        (True, "USD"),
        (float("inf"), "USD"),
        ("90071992547409.92", "USD"),  # one minor unit past 2**53 - 1
        (Decimal("1e30"), "JPY"),
        (2**53, "JPY"),
        (Decimal("12.0000000000000000000000000000001"), "USD"),  # rounds to 12.00 in a 28-digit context
        ("１２", "JPY"),  # full-width digits: Decimal() would read 12
        ("1e2", "JPY"),
        (" 12", "JPY"),
        ("12.000", "USD"),  # text carries at most the exponent's digits
    ],
)
def test_major_to_minor_rejects_inexact_negative_and_non_numbers(major: object, currency: str) -> None:
    """Extra fractional digits are rejected, never rounded (platform choice: exact money)."""
    assert isinstance(major_to_minor(major, currency), MoneyError)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("minor", "currency", "display"),
    [
        (9500, "USD", "$95.00"),
        (12000, "JPY", "¥12,000"),
        (12500, "KWD", f"KWD{CURRENCY_SPACING}12.500"),
        (250000, "EUR", "€2,500.00"),
        (0, "USD", "$0.00"),
    ],
)
def test_display_is_cldr_en(minor: int, currency: str, display: str) -> None:
    """Display hints are CLDR-formatted with the ISO exponent (OSBP spec, Money)."""
    assert format_display(minor, currency) == display


def test_money_from_minor_refuses_amounts_past_the_json_safe_bound() -> None:
    """RFC 8785: an amount_minor past 2**53 - 1 could not be hashed, so no Money is built for it."""
    assert isinstance(money_from_minor(2**53, "JPY"), MoneyError)
    assert isinstance(money_from_minor(-1, "JPY"), MoneyError)
    assert money_from_minor(2**53 - 1, "JPY") == Money(
        amount_minor=2**53 - 1, currency="JPY", type="fixed", display="¥9,007,199,254,740,991"
    )


def test_money_from_major_builds_a_fixed_money_with_display() -> None:
    """Adapters normalize native major units into amount_minor plus a display hint (OSBP spec, Money)."""
    assert money_from_major("95", "USD") == Money(
        amount_minor=9500, currency="USD", type="fixed", display="$95.00"
    )


def test_non_fixed_money_is_not_fixed() -> None:
    """A price without a fixed amount_minor has no fixed amount (OSBP spec, Money: fail closed)."""
    quote = Money(currency="USD", type="quote_required")
    assert not is_fixed(quote)
    assert fixed_amount(quote) is None
    assert fixed_amount(Money(amount_minor=100, currency="USD")) == 100


@given(
    st.sampled_from(["JPY", "USD", "EUR", "KWD", "TND", "CLP"]), st.integers(min_value=0, max_value=10**15)
)
def test_minor_major_round_trip_is_exact(currency: str, minor: int) -> None:
    """minor -> major string -> minor is the identity for exponents 0/2/3 (property; OSBP spec, Money)."""
    as_decimal = minor_to_major(minor, currency)
    assert isinstance(as_decimal, Decimal)
    exponent = minor_unit_exponent(currency)
    assert exponent is not None
    assert major_to_minor(f"{as_decimal:.{exponent}f}", currency) == minor
    assert major_to_minor(as_decimal, currency) == minor


@given(
    st.sampled_from(["JPY", "USD", "KWD"]),
    st.decimals(min_value=0, max_value=10**9, allow_nan=False, allow_infinity=False, places=4),
)
def test_major_to_minor_accepts_exactly_the_representable_amounts(currency: str, amount: Decimal) -> None:
    """An amount converts iff it has at most exponent fractional digits (property; platform choice)."""
    exponent = minor_unit_exponent(currency)
    assert exponent is not None
    representable = amount.scaleb(exponent) == amount.scaleb(exponent).to_integral_value()
    result = major_to_minor(amount, currency)
    assert isinstance(result, int) == representable
