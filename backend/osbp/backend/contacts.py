"""Contact data checks: E.164 phone numbers and email addresses, refused with the field named.

Phone numbers must already be in E.164 form (`+` and digits, a possible number for its region); the
synthetic 555 numbers pass because they are possible, if unassigned. Emails are checked syntactically
(no DNS: deliverability is never checked).
"""

from __future__ import annotations

import phonenumbers
from email_validator import EmailNotValidError, validate_email

from osbp.backend.problems import ProblemError

__all__ = ["check_email", "check_phone", "mask"]


def check_phone(value: str, field: str) -> str:
    """The number unchanged if it is E.164, else 400 `invalid_contact` naming `field`."""
    try:
        number = phonenumbers.parse(value, None)
    except phonenumbers.NumberParseException:
        number = None
    if (
        number is None
        or not phonenumbers.is_possible_number(number)
        or phonenumbers.format_number(number, phonenumbers.PhoneNumberFormat.E164) != value
    ):
        raise ProblemError(
            "invalid_contact",
            f"{field} must be an E.164 phone number such as +12125550100.",
            {"field": field},
        )
    return value


def check_email(value: str, field: str) -> str:
    """The normalized address if it is well formed, else 400 `invalid_contact` naming `field`."""
    try:
        result = validate_email(value, check_deliverability=False)
    except EmailNotValidError:
        raise ProblemError(
            "invalid_contact", f"{field} must be an email address such as jane@example.com.", {"field": field}
        ) from None
    return str(result.normalized)


def mask(contact: str) -> str:
    """A display hint that hides most of a contact (`+1•••••••0142`, `j•••@example.com`)."""
    if "@" in contact:
        local, _, domain = contact.partition("@")
        return f"{local[:1]}•••@{domain}"
    return contact[:2] + "•" * max(0, len(contact) - 6) + contact[-4:]
