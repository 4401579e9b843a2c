"""One meaning of "contact-shaped" for every redaction in the project."""

from __future__ import annotations

import string
import unicodedata
from datetime import datetime

import phonenumbers
import pytest
from email_validator import EmailNotValidError, validate_email
from hypothesis import assume, given
from hypothesis import strategies as st
from phonenumbers import PhoneNumberFormat, PhoneNumberType

from osbp.protocol import contact_shapes
from osbp.protocol.contact_shapes import PHONE_REGIONS, find_contacts, is_contact_shaped, redact_contacts
from osbp.protocol.money import format_display

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


def test_contacts_are_found_inside_prose():
    """OSBP spec, Audit: phone- and email-shaped strings are found inside free text too."""
    text = "Call +1 212 555 0142 or (212) 555-0199, or write to jane.doe@example.com by 2026-05-05 10:30."
    assert find_contacts(text) == ["+1 212 555 0142", "(212) 555-0199", "jane.doe@example.com"]
    assert find_contacts("2026-05-05 10:30, 12.500 KWD") == []


def test_the_contacts_the_attack_test_found_kept_are_found():
    """OSBP spec, Audit: national numbers without a country code and RFC 6531 addresses are contacts."""
    text = "Call 2125550199, 07700 900123 or 030 12345678, or write to zoë@exämple.de."
    assert find_contacts(text) == ["2125550199", "07700 900123", "030 12345678", "zoë@exämple.de"]
    assert redact_contacts(text, "[x]") == "Call [x], [x] or [x], or write to [x]."


# --- phone numbers of every region, as phonenumbers' own example numbers ------------------------------

_EXAMPLES = sorted(
    {
        (region, phonenumbers.format_number(number, PhoneNumberFormat.E164))
        for region in phonenumbers.SUPPORTED_REGIONS
        for kind in vars(PhoneNumberType).values()
        if isinstance(kind, int)
        and (number := phonenumbers.example_number_for_type(region, kind)) is not None
    }
)
_NAMED_EXAMPLES = [(region, e164) for region, e164 in _EXAMPLES if region in PHONE_REGIONS]
#: Around a number: prose in several scripts, punctuation that ends or opens a phrase, a line break.
_AROUND = st.sampled_from(
    [
        "Call {} now.",
        "Tel.: {}",
        "({})",
        "Nummer {}, danke",
        "電話：{}。",
        "{}",
        "Rückruf unter\n{}\nbitte",
        "«{}»",
    ]
)
#: How people separate digit groups; phonenumbers formats with spaces (and hyphens in RFC 3966).
_SEPARATORS = st.sampled_from([" ", "-", ".", "/", "\u00a0", " - ", "  ", ""])


@st.composite
def _numbers(draw: st.DrawFn, national: bool) -> tuple[str, str]:
    """A region and one of its numbers, digits varied, formatted with varied separators."""
    # Half of them from PHONE_REGIONS, whose 7-9 digit national numbers only the matcher tells apart.
    region, e164 = draw(st.sampled_from(_EXAMPLES) | st.sampled_from(_NAMED_EXAMPLES))
    number = phonenumbers.parse(e164)
    tail = draw(st.integers(0, 999))
    varied = phonenumbers.parse(e164[:-3] + f"{tail:03d}")
    if phonenumbers.is_valid_number(varied):
        number = varied
    if national:
        text = phonenumbers.format_number(number, PhoneNumberFormat.NATIONAL)
    else:
        formats = [PhoneNumberFormat.INTERNATIONAL, PhoneNumberFormat.E164, PhoneNumberFormat.RFC3966]
        kind = draw(st.sampled_from(formats))
        text = phonenumbers.format_number(number, kind)
    separator = draw(_SEPARATORS)  # "" keeps phonenumbers' own formatting
    return region, text.replace(" ", separator) if separator else text


def _digits(text: str) -> str:
    return "".join(char for char in text if char.isdigit())


@given(_numbers(national=False), _AROUND)
def test_every_regions_numbers_with_their_country_code_are_redacted_from_free_text(number, around):
    """OSBP spec, Audit (property): an international, E.164 or RFC 3966 number of any region never stays."""
    _region, phone = number
    assume(len(_digits(phone)) >= 7)  # "+" and a 7-digit number at least: shorter is no whole number
    redacted = redact_contacts(around.format(phone), "[redacted]")
    assert _digits(redacted) == "", (phone, redacted)


@given(_numbers(national=True), _AROUND)
def test_national_numbers_without_a_country_code_are_redacted_from_free_text(number, around):
    """OSBP spec, Audit (property): a national number of ten digits and more in any region, or of seven
    to nine digits in a region of PHONE_REGIONS (phonenumbers' matcher), never survives."""
    region, phone = number
    digits = len(_digits(phone))
    assume(digits >= 10 or (digits >= 7 and region in PHONE_REGIONS))
    redacted = redact_contacts(around.format(phone), "[redacted]")
    assert _digits(redacted) == "", (region, phone, redacted)


def test_phonenumbers_decides_the_seven_to_nine_digit_numbers():
    """Platform choice: a short national number is redacted when its region's plan assigns it, not before."""
    assert find_contacts("Oslo: 22 12 34 56.") == ["22 12 34 56"]  # a Norwegian fixed line
    assert find_contacts("Madrid: 912 345 678.") == ["912 345 678"]
    assert find_contacts("Berlin: 030 123456.") == ["030 123456"]
    assert find_contacts("Order 1.500.000 and 1234567.") == []  # no region of PHONE_REGIONS assigns them
    assert find_contacts("Oslo: 22 12 34 56.", regions=()) == []


def test_a_text_crowded_with_short_numbers_is_still_redacted_whole():
    """Platform choice: past the matcher's budget per text, a 7-9 digit run is redacted unasked."""
    text = " ".join(["Oslo 22 12 34 56,", "ref 1.500.000,"] * 12)
    redacted = redact_contacts(text, "[x]")
    assert "22 12 34 56" not in redacted
    # The first four runs are asked (two of them the order number, which stays); the rest go unasked.
    assert redacted.count("ref 1.500.000,") == 2


# --- RFC 6531 addresses ------------------------------------------------------------------------------

_SCRIPTS = [
    string.ascii_lowercase + string.digits,
    "äöüßéèêñçøåæœ",
    "абвгдежзийклмнопрстуфхцчшщыэюя",
    "αβγδεζηθικλμνξοπρστυφχψω",
    "用户名测试例子公司中文电子邮件",
    "अजयकुमारहिन्दीभारत",
]
_ATEXT = "!#$%&'*+/=?^_`{|}~-"
_TLDS = ["de", "com", "org", "рф", "中国", "公司", "भारत", "ελ", "xn--p1ai", "co.uk"]


@st.composite
def _addresses(draw: st.DrawFn) -> str:
    """An RFC 6531 address (one script per label) that email_validator accepts."""
    local_script = draw(st.sampled_from(_SCRIPTS))
    atoms = draw(
        st.lists(
            st.text(
                st.sampled_from(local_script + _ATEXT[: draw(st.integers(0, 19))]), min_size=1, max_size=10
            ),
            min_size=1,
            max_size=3,
        )
    )
    labels = draw(
        st.lists(
            st.sampled_from(_SCRIPTS).flatmap(
                lambda script: st.text(st.sampled_from(script), min_size=1, max_size=12)
            ),
            min_size=1,
            max_size=2,
        )
    )
    address = f"{'.'.join(atoms)}@{'.'.join(labels)}.{draw(st.sampled_from(_TLDS))}"
    try:
        validate_email(address, check_deliverability=False)  # no DNS here, and none is needed for a shape
    except EmailNotValidError:
        assume(False)
    return address


_AROUND_ADDRESSES = ["Write to {}.", "<{}>", "mailto:{}", "({})", "E-Mail: {}, bitte", "联系 {}，谢谢", "{}"]


@given(_addresses(), st.sampled_from(_AROUND_ADDRESSES))
def test_internationalized_addresses_are_redacted_from_free_text(address, around):
    """RFC 6531 and OSBP spec, Audit (property): an address with a Unicode local part or IDN domain, in NFC
    or NFD, never survives, and the text around it does."""
    for form in ("NFC", "NFD"):
        written = unicodedata.normalize(form, address)
        assert redact_contacts(around.format(written), "[redacted]") == around.format("[redacted]")


def test_an_address_glued_to_prose_takes_the_prose_with_it():
    """Platform choice: a local part may hold any non-ASCII character, so unspaced CJK prose goes too."""
    assert redact_contacts("请联系张伟@例子.公司，谢谢", "[x]") == "[x]，谢谢"


# --- what is not contact data stays ------------------------------------------------------------------

_HEX = "0123456789abcdef"
_IDS = (
    st.from_regex(r"appointment_[0-9]{1,12}", fullmatch=True)
    | st.text(st.sampled_from(_HEX), min_size=32, max_size=32).map("aud_{}".format)
    | st.text(st.sampled_from(_HEX), min_size=16, max_size=16).map("apt_{}".format)
    | st.from_regex(r"idem_[0-9a-z_]{1,24}", fullmatch=True).map(lambda key: f"receipt_{key}")
    | st.from_regex(r"[a-z]{2,8}(-[0-9a-z]{1,10}){1,4}", fullmatch=True)  # kebab-case idempotency keys
    | st.uuids().map(str)
    | st.uuids().map(lambda uuid: str(uuid).upper())
)
# Years 1000-2999: a "3001-01-01" is no date OSBP writes, and reading one as a number costs nothing.
_FIRST, _LAST = datetime(1000, 1, 1), datetime(2999, 12, 31, 23, 59, 59)
_WHEN = (
    st.datetimes(_FIRST, _LAST).map(lambda moment: moment.isoformat(timespec="seconds"))
    | st.datetimes(_FIRST, _LAST).map(lambda moment: moment.isoformat(timespec="milliseconds") + "Z")
    | st.dates(_FIRST.date(), _LAST.date()).map(lambda day: day.isoformat())
    | st.times().map(lambda moment: moment.strftime("%H:%M"))
)
_MONEY = st.builds(
    format_display,
    st.integers(0, 10**12),
    st.sampled_from(["USD", "EUR", "GBP", "JPY", "KWD", "IDR", "VND", "CHF", "INR", "BRL"]),
)


@given(_IDS, _WHEN, _MONEY, _WHEN)
def test_ids_instants_and_amounts_in_free_text_survive(identifier, when, money, slot_start):
    """Platform choice (property): ids, ISO 8601 instants and money displays keep the audit readable."""
    text = (
        f"Booked {identifier} at {when} for {money}; slot sch_1:prv_1:svc_1:{slot_start} "
        f"(idem_2026_05_01_001, aud_{identifier})."
    )
    assert find_contacts(text) == []
    assert redact_contacts(text, "[redacted]") == text


@given(
    st.lists(
        st.sampled_from(["2026-05-05", "T13:00:00", " ", "-", ".", "(", ")", "+", "_", "a", "@", "/", ":"])
        | st.text(string.digits, min_size=1, max_size=5),
        max_size=12,
    ).map("".join)
)
def test_skipping_texts_without_a_long_run_finds_exactly_what_the_full_scan_finds(text):
    """Platform choice (property): skipping the scan for texts without a long run never changes a result."""
    assert contact_shapes._phone_spans(text, PHONE_REGIONS) == contact_shapes._phone_runs(text, PHONE_REGIONS)
