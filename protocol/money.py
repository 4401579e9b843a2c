"""Money: ISO 4217 minor units from a dated data set, exact conversions, CLDR display strings.

* The minor-unit exponent comes from the ``iso4217`` package (the ISO 4217 maintenance agency's list,
  published date in :data:`ISO4217_PUBLISHED`), never from a local shortlist and never a silent default
  of 2. A currency with no known exponent (unknown code, or a code such as XAU with no minor unit) is
  :class:`MoneyError` ("fails closed"): such a merchant currency is not safe to onboard.
* Conversions are exact ``Decimal`` arithmetic. A major amount with more fractional digits than the
  exponent allows is rejected, not rounded.
* Display strings are CLDR-formatted by babel in the ``en`` locale with the ISO exponent as the number of
  decimals (``$95.00``, ``¥12,000``). Babel does not apply CLDR's currency-spacing rule, so this module
  does: a letter-ending symbol next to a digit gets CLDR's ``insertBetween`` (U+00A0 NO-BREAK SPACE), which
  gives ``KWD 12.500`` with a no-break space. Display is a hint: nothing in OSBP ever parses it.
"""

from __future__ import annotations

import unicodedata
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache

import iso4217
from babel import Locale
from babel.numbers import get_currency_symbol, parse_pattern

from osbp.protocol.models import Money

__all__ = [
    "CURRENCY_SPACING",
    "ISO4217_PUBLISHED",
    "MoneyError",
    "compare_minor",
    "fixed_amount",
    "format_display",
    "format_major",
    "is_fixed",
    "major_to_minor",
    "minor_to_major",
    "minor_unit_exponent",
    "money_from_major",
    "money_from_minor",
    "same_currency",
]

#: The publication date of the ISO 4217 list the exponents come from.
ISO4217_PUBLISHED: str = str(iso4217.__published__)
#: CLDR root ``currencySpacing/insertBetween``.
CURRENCY_SPACING = "\u00a0"
_DISPLAY_LOCALE = "en"


@dataclass(frozen=True, slots=True)
class MoneyError:
    """Why an amount could not be converted (an expected failure, returned as a value)."""

    reason: str


@lru_cache(maxsize=512)
def minor_unit_exponent(currency: str) -> int | None:
    """The ISO 4217 minor-unit exponent of ``currency``, or ``None`` if it is unknown or has none."""
    if len(currency) != 3 or not currency.isascii() or not currency.isupper():
        return None
    try:
        exponent = iso4217.Currency(currency).exponent
    except ValueError:
        return None
    return exponent if isinstance(exponent, int) else None


def _decimal(amount: Decimal | int | str | float) -> Decimal | None:
    if isinstance(amount, bool):
        return None
    try:
        # A float goes through its shortest round-trip repr: 12.5 -> "12.5", never 12.4999999….
        value = Decimal(repr(amount)) if isinstance(amount, float) else Decimal(amount)
    except (InvalidOperation, ValueError):
        return None
    return value if value.is_finite() else None


def major_to_minor(amount: Decimal | int | str | float, currency: str) -> int | MoneyError:
    """Scale a major-unit amount (``"95"``, ``Decimal("12.5")``) to ``amount_minor`` exactly."""
    exponent = minor_unit_exponent(currency)
    if exponent is None:
        return MoneyError(f"currency {currency!r} has no known ISO 4217 minor unit")
    value = _decimal(amount)
    if value is None:
        return MoneyError(f"amount {amount!r} is not a finite decimal number")
    if value < 0:
        return MoneyError(f"amount {amount!r} is negative")
    scaled = value.scaleb(exponent)
    if scaled != scaled.to_integral_value():
        return MoneyError(f"amount {amount!r} has more than {exponent} fractional digits for {currency}")
    return int(scaled)


def minor_to_major(amount_minor: int, currency: str) -> Decimal | MoneyError:
    """The exact major-unit Decimal of ``amount_minor`` (``9500`` USD -> ``Decimal("95.00")``)."""
    exponent = minor_unit_exponent(currency)
    if exponent is None:
        return MoneyError(f"currency {currency!r} has no known ISO 4217 minor unit")
    return Decimal(amount_minor).scaleb(-exponent)


def format_major(amount_minor: int, currency: str) -> str | MoneyError:
    """The plain major-unit string with exactly the exponent's decimals (``"95.00"``, ``"12000"``)."""
    major = minor_to_major(amount_minor, currency)
    if isinstance(major, MoneyError):
        return major
    exponent = minor_unit_exponent(currency) or 0
    return f"{major:.{exponent}f}"


def _space_symbol(text: str, symbol: str) -> str:
    # CLDR currencySpacing: currencyMatch [[:^S:]&[:^Z:]] next to surroundingMatch [[:digit:]].
    if text.startswith(symbol) and len(text) > len(symbol):
        edge, digit = symbol[-1], text[len(symbol)]
        if digit.isdigit() and unicodedata.category(edge)[0] not in "SZ":
            return symbol + CURRENCY_SPACING + text[len(symbol) :]
    if text.endswith(symbol) and len(text) > len(symbol):
        edge, digit = symbol[0], text[-len(symbol) - 1]
        if digit.isdigit() and unicodedata.category(edge)[0] not in "SZ":
            return text[: -len(symbol)] + CURRENCY_SPACING + symbol
    return text


def format_display(amount_minor: int, currency: str) -> str | None:
    """A CLDR ``en`` display hint (``$95.00``, ``¥12,000``, ``KWD 12.500``); ``None`` if unknown currency."""
    major = minor_to_major(amount_minor, currency)
    exponent = minor_unit_exponent(currency)
    if isinstance(major, MoneyError) or exponent is None:
        return None
    locale = Locale.parse(_DISPLAY_LOCALE)
    pattern = parse_pattern(locale.currency_formats["standard"].pattern)
    # The ISO exponent decides the decimals, not CLDR's own (sometimes different) currency digits.
    pattern.frac_prec = (exponent, exponent)
    text = pattern.apply(major, locale, currency=currency, currency_digits=False)
    return _space_symbol(text, get_currency_symbol(currency, locale=locale))


def money_from_minor(amount_minor: int, currency: str) -> Money | MoneyError:
    """A fixed Money with its display hint from an ``amount_minor``."""
    display = format_display(amount_minor, currency)
    if display is None:
        return MoneyError(f"currency {currency!r} has no known ISO 4217 minor unit")
    if amount_minor < 0:
        return MoneyError("amount_minor is negative")
    return Money(amount_minor=amount_minor, currency=currency, type="fixed", display=display)


def money_from_major(amount: Decimal | int | str | float, currency: str) -> Money | MoneyError:
    """A fixed Money from a major-unit amount (the usual native platform representation)."""
    minor = major_to_minor(amount, currency)
    if isinstance(minor, MoneyError):
        return minor
    return money_from_minor(minor, currency)


def is_fixed(money: Money) -> bool:
    """True when ``money`` has a fixed amount (``type`` absent or ``fixed``, and ``amount_minor`` set)."""
    return money.amount_minor is not None and money.type in (None, "fixed")


def fixed_amount(money: Money) -> int | None:
    """The ``amount_minor`` of a fixed Money, else ``None``."""
    return money.amount_minor if is_fixed(money) else None


def same_currency(a: Money, b: Money) -> bool:
    """True when both amounts are in the same ISO 4217 currency (OSBP never converts)."""
    return a.currency == b.currency


def compare_minor(a: Money, b: Money) -> int:
    """-1, 0 or 1 comparing two fixed, same-currency amounts; a cross-currency call is a bug (ValueError)."""
    left, right = fixed_amount(a), fixed_amount(b)
    if not same_currency(a, b) or left is None or right is None:
        raise ValueError("compare_minor needs two fixed amounts in the same currency")
    return (left > right) - (left < right)
