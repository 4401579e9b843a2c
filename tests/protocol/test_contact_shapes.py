"""One meaning of "contact-shaped" for every redaction in the project."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from osbp.protocol.contact_shapes import EMAIL_PATTERN, PHONE_PATTERNS, is_contact_shaped

_PHONES = (
    st.from_regex(r"\+[1-9][0-9]{7,14}", fullmatch=True)
    | st.from_regex(r"\([0-9]{3}\) [0-9]{3}-[0-9]{4}", fullmatch=True)
    | st.from_regex(r"[0-9]{3}-[0-9]{3}-[0-9]{4}", fullmatch=True)
    | st.from_regex(r"[0-9]{10,12}", fullmatch=True)
)


@given(st.emails() | _PHONES)
def test_emails_and_phone_numbers_are_contact_shaped(value: str) -> None:
    """OSBP spec, Audit (property): contact-bearing values are recognized in every common notation."""
    assert is_contact_shaped(value)


@pytest.mark.parametrize(
    "value",
    ["carolyns_dental", "apt_7c1e2b9d04f3a6e1", "2026-05-05", "2026-05-05T10:00:00", "10:30", "v1", "12.500"],
)
def test_ids_dates_times_and_amounts_are_not_contact_shaped(value: str) -> None:
    """Platform choice: correlation ids, wall-clock values and amounts stay readable in the audit."""
    assert not is_contact_shaped(value)


def test_free_text_patterns_find_contacts_inside_prose() -> None:
    """OSBP spec, Audit: phone- and email-shaped strings are found inside free text too."""
    text = "Call +1 212 555 0142 or (212) 555-0199, or write to jane.doe@example.com by 2026-05-05 10:30."
    assert EMAIL_PATTERN.findall(text) == ["jane.doe@example.com"]
    e164, national = PHONE_PATTERNS
    assert e164.findall(text) == ["+1 212 555 0142"]
    assert "(212) 555-0199" in national.findall(text)
    assert not any(pattern.search("2026-05-05 10:30, 12.500 KWD") for pattern in PHONE_PATTERNS)
