"""What a phone number or an email address looks like: the one rule for every redaction in the project.

The audit redactor, the adapter's path-segment check and the trace tests all read it from here, so
"contact-shaped" means one thing; docs/protocol.md says what is found and what is left alone.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from phonenumbers import Leniency, PhoneNumberMatcher

__all__ = [
    "EMAIL_PATTERN",
    "PHONE_REGIONS",
    "find_contacts",
    "is_contact_shaped",
    "redact_contacts",
]

#: Regions whose numbers the phonenumbers matcher looks for when a number is written without its country
#: code in 7 to 9 digits. Shorter runs are not told from amounts and codes; 10 or more digits, or a "+",
#: are phone-shaped in every region without asking. So the list only needs the major numbering plans whose
#: national numbers are shorter than 10 digits (Spain's 9, Norway's 8, a Berlin "030 123456"...).
PHONE_REGIONS: tuple[str, ...] = (
    "DE", "ES", "IT", "PL", "PT", "NO", "DK", "SE", "FI", "AT",
    "BE", "CZ", "IE", "HK", "SG", "KR", "IL", "NZ", "CL", "MY",
)  # fmt: skip

# --- email ---------------------------------------------------------------------------------------------
# RFC 6531 addr-spec: a local part of any characters but the RFC 5322 specials (non-ASCII ones included,
# so "zoë" and NFD "zoë" alike), or a quoted string; "@" (or its full-width and small forms, which read
# the same); a domain of labels in any script separated by a dot (or an ideographic or full-width one,
# which IDNA maps to a dot), or an address literal. Broader than deliverable addresses on purpose: a
# typo'd "jane..doe@example.com" is still somebody's contact.
_SPECIALS = r'\s@＠﹫"(),:;<>\[\]\\'
_DOTS = ".。．｡"
# A domain ends at punctuation IDNA never allows in a label (a full-width comma after an address in CJK text).
_NOT_IN_LABELS = "，、；：！？）」』》】”’»…"
_LABEL = rf"[^{_SPECIALS}{_DOTS}{_NOT_IN_LABELS}]+"
#: Email-shaped substrings.
EMAIL_PATTERN = re.compile(
    rf'(?:"(?:[^"\\\r\n]|\\.)*"|[^{_SPECIALS}]+)[@＠﹫](?:\[[^\]\s]*\]|{_LABEL}(?:[{_DOTS}]{_LABEL})*)'
)

# --- phone numbers ---------------------------------------------------------------------------------------
# What may stand between the digits of one number: phonenumbers' punctuation (without its extension
# letter "x") and any space, at most four in a row as in its matcher ("(268) - 406"). \d is any Unicode
# decimal digit, as in phonenumbers: a number in full-width or Arabic-Indic digits is still a number.
_SEP = r"[\s\-‐-―−ー－-／()（）\[\]［］.．/~⁓∼～\u00ad\u200b\u2060]"
_DIGITS = r"\d(?:" + _SEP + r"{0,4}\d)*"
_PLUS = r"[+＋]" + _SEP + r"{0,4}"
#: A run of joined digits (with its "+" or opening bracket): the unit a phone number is found as.
_RUN = re.compile(rf"(?:{_PLUS}|[(（\[［])?{_DIGITS}")
_MIN_DIGITS = 7  # below this a run is an amount, a code or a time, whatever a numbering plan allows
_NATIONAL_DIGITS = 10  # from this a run is a phone number in national notation, whatever the region

# Shapes of other things that are written in digits and separators. They are taken out (masked) before
# runs are cut, so a date next to a number neither hides it nor becomes part of it.
_YEAR, _MONTH, _DAY = r"[12]\d{3}", r"(?:0?[1-9]|1[0-2])", r"(?:0?[1-9]|[12]\d|3[01])"
_ISO_DATE = _YEAR + r"-(?:0[1-9]|1[0-2])-(?:0[1-9]|[12]\d|3[01])"
_HEX = "[0-9A-Fa-f]"
_NOT_PHONES = re.compile(
    "|".join(
        (
            rf"(?<!\d){_ISO_DATE}(?!\d)",  # ISO 8601 / RFC 3339 dates
            rf"(?<![\d./]){_DAY}[./]{_MONTH}[./]{_YEAR}(?![./]?\d)",  # 05.05.2026, 5/5/2026
            rf"(?<![\d./]){_MONTH}/{_DAY}/{_YEAR}(?![./]?\d)",  # 12/31/2026
            rf"(?<![\d./]){_YEAR}/{_MONTH}/{_DAY}(?![./]?\d)",  # 2026/05/05
            # RFC 9562 UUIDs (request ids)
            rf"(?<!{_HEX}){_HEX}{{8}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{4}}-{_HEX}{{12}}(?!{_HEX})",
            r"\A@-?\d{1,15}\Z",  # a whole RFC 9651 Date (the Deprecation header of RFC 9745)
        )
    )
)
_MASK = "D"  # a letter: a number glued to a masked shape is glued to a word (see _glued)
#: Seven joined digits or more, from where a run starts (written to begin with \d, so the regex engine
#: skips from digit to digit in C).
_LONG_RUN = re.compile(rf"\d(?:{_SEP}{{0,4}}\d){{6,}}")
_LONE_DATE = re.compile(_ISO_DATE)
_WORD = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_")
_JOINER = "-"  # kebab-case ids; "_" is a word character already
#: At most this many 7-9 digit runs of one text go to the matcher; any more are redacted unasked, so a
#: text full of numbers costs bounded CPU and still leaks none.
_MAX_MATCHED_RUNS = 4


def _glued(text: str, start: int, end: int) -> bool:
    """Whether the run at ``start:end`` is part of an identifier (``appointment_2125550199``, ``req-…``)."""
    before = text[start - 1] if start else ""
    if before in _WORD or (before == _JOINER and start >= 2 and text[start - 2] in _WORD):
        return True
    after = text[end] if end < len(text) else ""
    return after in _WORD or (after == _JOINER and end + 1 < len(text) and text[end + 1] in _WORD)


def _matched(masked: str, start: int, end: int, regions: Sequence[str]) -> bool:
    """Whether phonenumbers finds a valid number of at least seven digits of one of ``regions`` in a run."""
    # The run and one character either side: the matcher's own checks (no letter, currency sign or "%"
    # next to a number) see the same neighbours as in the whole text.
    # Slashes become spaces: the matcher takes "511/23/40/00" for a date (its check for "11/23/40"), while
    # every date of four-digit year is masked already and one of two-digit year has too few digits.
    window = masked[max(start - 1, 0) : end + 1].replace("/", " ")
    for region in regions:
        # VALID: a number its region's plan assigns. POSSIBLE (length only) takes dates, amounts and
        # coordinates for numbers; the grouping levels miss a number written with other separators than
        # the region's own, which free text (and someone hiding a number) need not use.
        for match in PhoneNumberMatcher(window, region, leniency=Leniency.VALID):
            if sum(char.isdigit() for char in match.raw_string) >= _MIN_DIGITS:
                return True
    return False


def _phone_spans(text: str, regions: Sequence[str]) -> list[tuple[int, int]]:
    # The common case costs a regex search or two: no run of seven digits, or only lone dates (a timestamp,
    # a slot id). A search starts at a run's first digit and takes all of the run, and masking only turns
    # digits into letters: when every long run is a lone date, the masked text has none, and skipping
    # _phone_runs changes nothing (a property test holds the two to the same result).
    run = _LONG_RUN.search(text)
    while run is not None:
        if _LONE_DATE.fullmatch(run.group()) is None:
            return _phone_runs(text, regions)
        run = _LONG_RUN.search(text, run.end())
    return []


def _phone_runs(text: str, regions: Sequence[str]) -> list[tuple[int, int]]:
    masked = _NOT_PHONES.sub(lambda found: _MASK * len(found.group()), text)
    spans: list[tuple[int, int]] = []
    asked = 0
    for run in _RUN.finditer(masked):
        start, end = run.span()
        digits = sum(char.isdigit() for char in run.group())
        if digits < _MIN_DIGITS or _glued(masked, start, end):
            continue
        unasked = digits >= _NATIONAL_DIGITS or run.group()[0] in "+＋" or asked >= _MAX_MATCHED_RUNS
        if unasked:
            spans.append((start, end))
        else:
            asked += 1
            if _matched(masked, start, end, regions):
                spans.append((start, end))
    return spans


def _spans(text: str, regions: Sequence[str]) -> list[tuple[int, int]]:
    """The contacts in ``text`` as sorted, disjoint ``(start, end)`` spans: emails first, then phones."""
    emails = [found.span() for found in EMAIL_PATTERN.finditer(text)] if _has_at(text) else []
    if not emails:
        return _phone_spans(text, regions)
    # Phones are looked for around the addresses, not in them: an address is masked, as a word.
    rest = list(text)
    for start, end in emails:
        rest[start:end] = _MASK * (end - start)
    return sorted(emails + _phone_spans("".join(rest), regions))


def _has_at(text: str) -> bool:
    return "@" in text or "＠" in text or "﹫" in text


def find_contacts(text: str, regions: Sequence[str] = PHONE_REGIONS) -> list[str]:
    """The email addresses and phone numbers in free text, in order of appearance."""
    return [text[start:end] for start, end in _spans(text, regions)]


def redact_contacts(text: str, replacement: str, regions: Sequence[str] = PHONE_REGIONS) -> str:
    """``text`` with every email address and phone number (:func:`find_contacts`) replaced."""
    spans = _spans(text, regions)
    if not spans:
        return text
    parts: list[str] = []
    position = 0
    for start, end in spans:
        parts.append(text[position:start])
        parts.append(replacement)
        position = end
    parts.append(text[position:])
    return "".join(parts)


def is_contact_shaped(value: str, regions: Sequence[str] = PHONE_REGIONS) -> bool:
    """Whether a whole value (a path segment, an identifier) may carry an email address or a phone number.

    Deliberately eager: any "@" counts, as does any phone number :func:`find_contacts` finds in it.
    """
    return _has_at(value) or bool(_phone_spans(value, regions))
