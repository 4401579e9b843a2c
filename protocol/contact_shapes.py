"""What a phone number or an email address looks like, for redaction wherever OSBP records anything.

The spec asks for contact-shaped strings to be kept out of the operator channel: upstream call paths
(UpstreamMeta.call) and audit events alike. Both the adapter's path-segment check and the server's
redactor read the shapes from here, so "contact-shaped" means one thing in the whole project.
"""

from __future__ import annotations

import re

__all__ = ["EMAIL_PATTERN", "PHONE_PATTERNS", "is_contact_shaped"]

#: Email-shaped substrings (RFC 5322 "dot-atom" shapes, generously).
EMAIL_PATTERN = re.compile(r"[A-Za-z0-9._%+\-]+@[A-Za-z0-9\-]+(?:\.[A-Za-z0-9\-]+)*\.[A-Za-z]{2,}")
#: Phone-shaped substrings: E.164 with optional separators, and NANP-style national numbers. Dates,
#: times, UTC offsets and money amounts do not match these shapes.
PHONE_PATTERNS: tuple[re.Pattern[str], ...] = (
    re.compile(r"\+\d(?:[\s().\-]{0,2}\d){6,14}"),
    re.compile(r"(?<![\w+])(?:\(\d{3}\)\s?|\d{3}[\-.\s])\d{3}[\-.\s]\d{4}(?!\w)"),
)
# A whole value written only in phone notation: 10+ digits is a national number, not a date or an id.
_PHONE_NOTATION = re.compile(r"^[\d\s().\-]+$")


def is_contact_shaped(value: str) -> bool:
    """Whether a whole value (a path segment, an identifier) may carry an email address or a phone number.

    Deliberately eager: any ``@`` counts, as does any phone-shaped run or a bare national number.
    """
    if "@" in value or any(pattern.search(value) for pattern in PHONE_PATTERNS):
        return True
    return bool(_PHONE_NOTATION.match(value)) and sum(char.isdigit() for char in value) >= 10
