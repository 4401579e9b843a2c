"""Money: ISO 4217 minor units from a dated data set, exact conversions, CLDR display strings.

* The minor-unit exponent comes from the ``iso4217`` package (the ISO 4217 maintenance agency's list,
  published date in :data:`ISO4217_PUBLISHED`), never from a local shortlist and never a silent default
  of 2. A currency with no known exponent (unknown code, or a code such as XAU with no minor unit) is
  :class:`MoneyError` ("fails closed"): such a merchant currency is not safe to onboard.
* Conversions are exact ``Decimal`` arithmetic (never rounded by a ``Decimal`` context). A major amount
  with more fractional digits than the exponent allows is rejected, not rounded, and so is one whose
  ``amount_minor`` would exceed :data:`~osbp.protocol.models.AMOUNT_MINOR_MAX` (2**53 - 1).
* A major amount given as **text** is native platform data and is read strictly: ASCII digits, optionally
  a ``.`` and more ASCII digits, at most the exponent's number of fractional digits (``"95"``, ``"95.00"``,
  ``"12000"`` JPY, ``"12.500"`` KWD). Signs, exponents, ``_`` separators, spaces, non-ASCII digits,
  ``NaN`` and ``Infinity`` (all of which ``Decimal()`` and ``int()`` would accept) are a
  :class:`MoneyError`. A ``Decimal``, ``int`` or ``float`` is judged by its value.
* Display strings are CLDR-formatted by babel in the ``en`` locale with the ISO exponent as the number of
  decimals (``$95.00``, ``¥12,000``). Babel does not apply CLDR's currency-spacing rule, so this module
  does: a letter-ending symbol next to a digit gets CLDR's ``insertBetween`` (U+00A0 NO-BREAK SPACE), which
  gives ``KWD 12.500`` with a no-break space. Display is a hint: nothing in OSBP ever parses it.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from functools import lru_cache

import iso4217
from babel import Locale
from babel.numbers import get_currency_symbol, parse_pattern

from osbp.protocol.models import AMOUNT_MINOR_MAX, Money

__all__ = [
    "CURRENCY_SPACING",
    "ISO4217_PUBLISHED",
    "MoneyError",
    "fixed_amount",
    "format_display",
    "is_fixed",
    "major_to_minor",
    "minor_to_major",
    "minor_unit_exponent",
    "money_from_major",
    "money_from_minor",
]

#: The publication date of the ISO 4217 list the exponents come from.
ISO4217_PUBLISHED: str = str(iso4217.__published__)
#: CLDR root ``currencySpacing/insertBetween``.
CURRENCY_SPACING = "\u00a0"
_DISPLAY_LOCALE = "en"
#: A major-unit amount as text: ASCII only (``\d`` and ``str.isdigit`` would take any Unicode digit).
_MAJOR_TEXT = re.compile(r"([0-9]+)(?:\.([0-9]+))?")


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


def _clip(amount: object) -> str:
    text = repr(amount)
    return text if len(text) <= 40 else text[:39] + "…"


def _text_decimal(text: str, exponent: int) -> Decimal | MoneyError:
    match = _MAJOR_TEXT.fullmatch(text)
    if match is None:
        return MoneyError(f"amount {_clip(text)} is not a plain decimal number (digits, optionally . digits)")
    if len(match.group(2) or "") > exponent:
        return MoneyError(f"amount {_clip(text)} has more than {exponent} fractional digits")
    return Decimal(text)


def _decimal(amount: Decimal | int | str | float, exponent: int) -> Decimal | MoneyError:
    if isinstance(amount, str):
        return _text_decimal(amount, exponent)
    if isinstance(amount, bool):
        return MoneyError(f"amount {amount!r} is not a number")
    try:
        # A float goes through its shortest round-trip repr: 12.5 -> "12.5", never 12.4999999….
        value = Decimal(repr(amount)) if isinstance(amount, float) else Decimal(amount)
    except (InvalidOperation, ValueError, TypeError):
        return MoneyError(f"amount {_clip(amount)} is not a number")
    if not value.is_finite():
        return MoneyError(f"amount {_clip(amount)} is not a finite decimal number")
    return value


def major_to_minor(amount: Decimal | int | str | float, currency: str) -> int | MoneyError:
    """Scale a major-unit amount (``"95"``, ``Decimal("12.5")``) to ``amount_minor`` exactly."""
    exponent = minor_unit_exponent(currency)
    if exponent is None:
        return MoneyError(f"currency {currency!r} has no known ISO 4217 minor unit")
    value = _decimal(amount, exponent)
    if isinstance(value, MoneyError):
        return value
    if value < 0:
        return MoneyError(f"amount {_clip(amount)} is negative")
    # Comparisons are exact; checking the bound first keeps every later step within 28 digits, so the
    # default Decimal context never rounds.
    if value > Decimal(AMOUNT_MINOR_MAX).scaleb(-exponent):
        return MoneyError(f"amount {_clip(amount)} exceeds the largest amount_minor (2**53 - 1)")
    quantized = value.quantize(Decimal(1).scaleb(-exponent))
    if quantized != value:
        return MoneyError(f"amount {_clip(amount)} has more than {exponent} fractional digits for {currency}")
    return int(quantized.scaleb(exponent))


def minor_to_major(amount_minor: int, currency: str) -> Decimal | MoneyError:
    """The exact major-unit Decimal of ``amount_minor`` (``9500`` USD -> ``Decimal("95.00")``)."""
    exponent = minor_unit_exponent(currency)
    if exponent is None:
        return MoneyError(f"currency {currency!r} has no known ISO 4217 minor unit")
    return Decimal(amount_minor).scaleb(-exponent)


def _space_symbol(text: str, symbol: str) -> str:
    # CLDR currencySpacing: currencyMatch [[:^S:]&[:^Z:]] next to surroundingMatch [[:digit:]]. The en
    # currency pattern (¤#,##0.00) puts the symbol first and amounts are never negative, so the symbol's
    # last character is the only edge that meets a digit.
    if text.startswith(symbol):
        edge, digit = symbol[-1], text[len(symbol)]
        if digit.isdigit() and unicodedata.category(edge)[0] not in "SZ":
            return symbol + CURRENCY_SPACING + text[len(symbol) :]
    return text


# A pure function of its arguments, and CLDR pattern parsing is most of a translation's cost: the prices a
# server shows repeat, so each is formatted once.
@lru_cache(maxsize=4096)
def format_display(amount_minor: int, currency: str) -> str | None:
    """A CLDR ``en`` display hint (``$95.00``, ``¥12,000``, ``KWD 12.500``); ``None`` if unknown currency."""
    exponent = minor_unit_exponent(currency)
    if exponent is None:
        return None
    major = Decimal(amount_minor).scaleb(-exponent)
    locale = Locale.parse(_DISPLAY_LOCALE)
    pattern = parse_pattern(locale.currency_formats["standard"].pattern)
    # The ISO exponent decides the decimals, not CLDR's own (sometimes different) currency digits.
    pattern.frac_prec = (exponent, exponent)
    text = pattern.apply(major, locale, currency=currency, currency_digits=False)
    return _space_symbol(text, get_currency_symbol(currency, locale=locale))


def money_from_minor(amount_minor: int, currency: str) -> Money | MoneyError:
    """A fixed Money with its display hint from an ``amount_minor``."""
    if not 0 <= amount_minor <= AMOUNT_MINOR_MAX:
        return MoneyError(f"amount_minor {_clip(amount_minor)} is outside 0..2**53 - 1")
    display = format_display(amount_minor, currency)
    if display is None:
        return MoneyError(f"currency {currency!r} has no known ISO 4217 minor unit")
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
