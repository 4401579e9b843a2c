"""Native money: major-unit decimal strings with exactly the currency's ISO 4217 minor digits.

`"120.00"` USD, `"12000"` JPY, `"12.500"` KWD. The exponent comes from the `iso4217` data set, never a
local shortlist.
"""

from __future__ import annotations

from decimal import Decimal

from iso4217 import Currency

__all__ = ["exponent", "format_amount"]


def exponent(currency: str) -> int:
    """The ISO 4217 minor-unit exponent of `currency` (e.g. 2 for USD, 0 for JPY, 3 for KWD)."""
    value = Currency(currency).exponent
    return int(value) if value is not None else 0


def format_amount(amount: Decimal | str, currency: str) -> str:
    """Format a major-unit amount with exactly the currency's minor digits (`Decimal("12")` JPY → `"12"`)."""
    digits = exponent(currency)
    quantum = Decimal(1).scaleb(-digits)
    value = Decimal(amount).quantize(quantum)
    if value != Decimal(amount):
        raise ValueError(f"{amount} has more precision than {currency} allows")
    return f"{value:.{digits}f}"
