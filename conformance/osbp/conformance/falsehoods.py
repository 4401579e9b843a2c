"""False statements in prose: what a summary or receipt claims that its facts do not support.

Pure text functions the prose checks apply to every approval summary and receipt of a run: a weekday
named beside a date that is not that date's weekday, a money amount that is none of the oracle's amounts
in that currency (``¥120.00`` for 12000 JPY), a claim that the mandate caps the fees, a claim that the
slot is held before booking, and cancellation or fee statements the oracle's policy does not support. A
negated sentence ("the mandate does not limit them", "the slot is not held") is a true disclaimer, not a
claim.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation

from iso4217 import Currency

__all__ = [
    "MoneyMention",
    "fee_cap_claims",
    "hold_claims",
    "money_mentions",
    "policy_falsehoods",
    "sentences",
    "span_forms",
    "unknown_amounts",
    "weekday_falsehoods",
]

_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_MONTHS = (
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
)
_WEEKDAY = r"(?P<wd>(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)[a-z]*)\.?"
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)[a-z]*\.?"
_DATE = (
    r"(?P<iso>\d{4}-\d{2}-\d{2})"
    rf"|(?P<month>{_MONTH})\s+(?P<day>\d{{1,2}})(?:st|nd|rd|th)?(?:,?\s+(?P<year>\d{{4}}))?"
    rf"|(?P<day2>\d{{1,2}})(?:st|nd|rd|th)?\s+(?P<month2>{_MONTH})(?:,?\s+(?P<year2>\d{{4}}))?"
)
_WEEKDAY_THEN_DATE = re.compile(rf"\b{_WEEKDAY},?\s+(?:the\s+)?(?:{_DATE})")
_DATE_THEN_WEEKDAY = re.compile(rf"(?P<iso>\d{{4}}-\d{{2}}-\d{{2}})\s*[,(]\s*{_WEEKDAY}")

#: Currency signs prose writes instead of the ISO code (the ambiguous "$" read as USD).
_SIGNS = {"US$": "USD", "$": "USD", "€": "EUR", "£": "GBP", "¥": "JPY", "円": "JPY"}
_NUMBER = r"\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?"
_SIGN = "|".join(re.escape(sign) for sign in sorted(_SIGNS, key=len, reverse=True))
_MONEY = re.compile(
    rf"(?P<sign>{_SIGN})\s?(?P<n1>{_NUMBER})"
    rf"|\b(?P<code>[A-Z]{{3}})[\s\u00a0](?P<n2>{_NUMBER})"
    rf"|(?<![\d.,])(?P<n3>{_NUMBER})[\s\u00a0]?(?P<code3>[A-Z]{{3}}\b|円)"
)

#: A negation ("no-show" is a noun, not one).
_NEGATION = re.compile(
    r"\b(?:not|never|cannot|without|nothing|neither|nor)\b|\bno\b(?![- ]?show)|n't\b", re.IGNORECASE
)
_FEE_WORD = re.compile(r"\b(?:fees?|charges?|penalt(?:y|ies))\b", re.IGNORECASE)
_CAP_WORD = re.compile(
    r"\b(?:cap(?:ped|s)?|limit(?:ed|s)?|bounded|covered|capped|within|maximum|protected)\b", re.IGNORECASE
)
_MANDATE_WORD = re.compile(
    r"\b(?:mandate|authori[sz]ation|spending limit|your limit|max_extra_fee|max_price)\b", re.IGNORECASE
)
_HOLD_WORD = re.compile(
    r"\b(?:held|hold(?:ing|s)?|reserv(?:ed|e|es|ing)|locked|blocked|kept for you|saved for you|set aside)\b",
    re.IGNORECASE,
)
_FREE_CANCELLATION = re.compile(
    r"\bfree cancellation\b|\bcancel(?:lation)?\s+(?:is\s+)?(?:free|at no (?:cost|charge))\b"
    r"|\bcancel\s+(?:for free|free of charge)\b",
    re.IGNORECASE,
)
_NO_CANCELLATION_FEE = re.compile(r"\b(?:no|without (?:a|any)?)\s*cancellation fee\b", re.IGNORECASE)
_NO_NO_SHOW_FEE = re.compile(r"\b(?:no|without (?:a|any)?)\s*no-?show fee\b", re.IGNORECASE)
_NO_FEES = re.compile(
    r"\b(?:no|without any|free of any)\s+(?:additional |extra |other )?fees\b", re.IGNORECASE
)
_NO_DEADLINE = re.compile(r"\bno (?:cancellation )?deadline\b|\bat any time\b|\banytime\b", re.IGNORECASE)
_CANCEL_WORD = re.compile(r"\bcancel", re.IGNORECASE)
#: Fee names prose may use, by the Policy member each one is (None: a fee the protocol has no member for).
_FEE_NAMES: tuple[tuple[re.Pattern[str], str | None], ...] = (
    (re.compile(r"\bcancell?ation fee\b", re.IGNORECASE), "cancellation_fee"),
    (re.compile(r"\bno[- ]?show fee\b", re.IGNORECASE), "no_show_fee"),
    (
        re.compile(
            r"\b(?:late|booking|service|processing|change|reschedul\w*|admin\w*) fee\b", re.IGNORECASE
        ),
        None,
    ),
)


def sentences(text: str) -> list[str]:
    """`text` cut into sentences (at ". ", "! ", "? " and line breaks; "; " keeps a sentence whole)."""
    return [part.strip() for part in re.split(r"(?<=[.!?])\s+|\n+", text) if part.strip()]


def _weekday_index(name: str) -> int | None:
    stem = name.rstrip(".").lower()
    for index, full in enumerate(_WEEKDAYS):
        if len(stem) >= 3 and full.lower().startswith(stem):
            return index
    return None


def _month_index(name: str) -> int | None:
    stem = name.rstrip(".").lower()
    for index, full in enumerate(_MONTHS, start=1):
        if len(stem) >= 3 and full.lower().startswith(stem):
            return index
    return None


def _date_of(match: re.Match[str], year: int) -> dt.date | None:
    groups = match.groupdict()
    try:
        if groups.get("iso"):
            return dt.date.fromisoformat(groups["iso"])
        month_name, day, year_text = (
            (groups["month"], groups["day"], groups["year"])
            if groups.get("month")
            else (groups.get("month2"), groups.get("day2"), groups.get("year2"))
        )
        month = _month_index(month_name or "")
        if month is None or day is None:
            return None
        return dt.date(int(year_text) if year_text else year, month, int(day))
    except ValueError:
        return None


def weekday_falsehoods(text: str, *, year: int) -> tuple[int, list[str]]:
    """How many weekdays `text` names beside a date, and each one that is not that date's weekday
    (a date without its year is read in `year`)."""
    count, problems = 0, []
    for pattern in (_WEEKDAY_THEN_DATE, _DATE_THEN_WEEKDAY):
        for match in pattern.finditer(text):
            weekday, day = _weekday_index(match.group("wd")), _date_of(match, year)
            if weekday is None or day is None:
                continue
            count += 1
            if day.weekday() != weekday:
                problems.append(f"{match.group(0)!r}: {day.isoformat()} is a {_WEEKDAYS[day.weekday()]}")
    return count, problems


class MoneyMention:
    """One amount written in prose: the text, its currency and its minor-unit amount (None if the text
    has more decimals than the currency's minor unit, or is not a number)."""

    __slots__ = ("currency", "minor", "text")

    def __init__(self, text: str, currency: str, minor: int | None) -> None:
        self.text, self.currency, self.minor = text, currency, minor

    def __repr__(self) -> str:
        return f"MoneyMention({self.text!r}, {self.currency}, {self.minor})"


def _exponent(code: str) -> int | None:
    try:
        return Currency(code).exponent or 0
    except ValueError:
        return None


def money_mentions(text: str) -> list[MoneyMention]:
    """Every amount beside a currency sign or ISO 4217 code in `text`."""
    found = []
    for match in _MONEY.finditer(text):
        sign, code = match.group("sign"), match.group("code") or match.group("code3")
        currency = _SIGNS[sign] if sign else _SIGNS.get(code or "", code or "")
        number = match.group("n1") or match.group("n2") or match.group("n3") or ""
        exponent = _exponent(currency)
        if exponent is None:
            continue  # three capitals that are not a currency ("NYC 10")
        try:
            value = Decimal(number.replace(",", ""))
        except InvalidOperation:
            continue
        decimals = len(number.split(".")[1]) if "." in number else 0
        scaled = value.scaleb(exponent)
        minor = int(scaled) if decimals <= exponent and scaled == scaled.to_integral_value() else None
        found.append(MoneyMention(match.group(0), currency, minor))
    return found


def fee_cap_claims(text: str) -> list[str]:
    """The sentences that claim the mandate caps or limits the fees (negated ones are disclaimers)."""
    return [
        sentence
        for sentence in sentences(text)
        if _FEE_WORD.search(sentence)
        and _CAP_WORD.search(sentence)
        and _MANDATE_WORD.search(sentence)
        and not _NEGATION.search(sentence)
    ]


def hold_claims(text: str) -> list[str]:
    """The sentences that claim the slot is held or reserved (said before booking, always false)."""
    return [
        sentence
        for sentence in sentences(text)
        if _HOLD_WORD.search(sentence) and not _NEGATION.search(sentence)
    ]


def span_forms(seconds: float) -> list[str]:
    """How prose may write a duration: "6 hours", "6-hour", "360 minutes", "1 day"."""
    minutes = int(seconds // 60)
    forms = [f"{minutes} minute", f"{minutes}-minute", f"{minutes} min"]
    if minutes % 60 == 0:
        hours = minutes // 60
        forms += [f"{hours} hour", f"{hours}-hour", f"{hours}h", f"{hours} h"]
        if hours % 24 == 0:
            forms += [f"{hours // 24} day", f"{hours // 24}-day"]
    elif minutes > 60:
        forms.append(f"{minutes // 60} hour{'s' * (minutes >= 120)} {minutes % 60} minute")
    return forms


def policy_falsehoods(
    text: str,
    *,
    fees: Mapping[str, int | None],
    window: float | None,
) -> list[str]:
    """Cancellation and fee statements in `text` that the policy does not support.

    `fees` maps each fee member the oracle states (``cancellation_fee``, ``no_show_fee``) to its
    minor-unit amount, or None for "no such fee"; `window` is the cancellation window in seconds when
    stated. Free cancellation under a cancellation fee holds only with the window it is free within.
    """
    problems = []
    has_fee = {name: amount is not None for name, amount in fees.items()}
    windows = span_forms(window) if window is not None else []
    for sentence in sentences(text):
        said = sentence.casefold()
        if has_fee.get("cancellation_fee") and _NO_CANCELLATION_FEE.search(sentence):
            problems.append(f"{sentence!r} denies the cancellation fee")
        elif (
            has_fee.get("cancellation_fee")
            and _FREE_CANCELLATION.search(sentence)
            and not any(form.casefold() in said for form in windows)
        ):
            problems.append(f"{sentence!r} claims free cancellation without the window it holds in")
        if has_fee.get("no_show_fee") and _NO_NO_SHOW_FEE.search(sentence):
            problems.append(f"{sentence!r} denies the no-show fee")
        if any(has_fee.values()) and _NO_FEES.search(sentence):
            problems.append(f"{sentence!r} denies the fees")
        if windows and _CANCEL_WORD.search(sentence) and _NO_DEADLINE.search(sentence):
            problems.append(f"{sentence!r} denies the cancellation deadline")
        problems += _fee_statement_problems(sentence, fees)
    return problems


def _fee_statement_problems(sentence: str, fees: Mapping[str, int | None]) -> list[str]:
    mentions = money_mentions(sentence)
    if not mentions:
        return []
    named = [member for pattern, member in _FEE_NAMES if pattern.search(sentence)]
    problems = []
    for member in named:
        if member is None:
            problems.append(f"{sentence!r} states a fee the policy does not have")
        elif member in fees and fees[member] is None:
            problems.append(f"{sentence!r} states a {member.replace('_', ' ')} the policy does not have")
        elif len(named) == 1 and member in fees and all(m.minor != fees[member] for m in mentions):
            shown = ", ".join(m.text for m in mentions)
            problems.append(f"{sentence!r} states the {member.replace('_', ' ')} as {shown}")
    return problems


def unknown_amounts(mentions: Iterable[MoneyMention], allowed: set[tuple[str, int]]) -> list[str]:
    """The mentions whose currency and amount are none of `allowed`."""
    return [
        f"{mention.text!r}" + (" (more decimals than the currency has)" if mention.minor is None else "")
        for mention in mentions
        if mention.minor is None or (mention.currency, mention.minor) not in allowed
    ]
