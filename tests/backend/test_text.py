"""Free text in requests: control characters are refused with the field named; all other Unicode passes."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from osbp.backend.text import first_control_character
from tests.support.bookwell import booking, create

#: C0 (NUL, BEL, ESC, and the tab, line feed and carriage return), DEL and C1 (NEL, CSI).
CONTROLS = ["\x00", "\x07", "\x1b", "\t", "\n", "\r", "\x7f", "\x85", "\x9b"]
CUSTOMER = {"display_name": "Jane Customer", "phone": "+12125550199"}


def _with(field: str, value: str) -> tuple[dict[str, Any], str]:
    """An appointment-create body with `value` at `field`, and the field's name in `errors`."""
    if field.startswith("customer."):
        name = field.removeprefix("customer.")
        return booking(customer=CUSTOMER | {name: value}), f"body.{field}"
    if field == "metadata value":
        return booking(metadata={"note": value}), "body.metadata.note"
    if field == "metadata key":
        return booking(metadata={value: "x"}), f"body.metadata.{value}.[key]"
    body = booking()
    body[field] = value
    return body, f"body.{field}"


FIELDS = [
    "customer.display_name",
    "customer.given_name",
    "customer.family_name",
    "service_id",
    "location_id",
    "provider_id",
    "verification_code",
    "metadata value",
    "metadata key",
]


def _assert_refused(response: Any, field: str, control: str) -> None:
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/problem+json"
    problem = response.json()
    assert problem["code"] == "invalid_request"
    assert problem["errors"] == [
        {
            "field": field,
            "message": f"must not contain control characters (found U+{ord(control):04X} as character 4)",
        }
    ]


@pytest.mark.parametrize("control", CONTROLS, ids=[f"U+{ord(c):04X}" for c in CONTROLS])
@pytest.mark.parametrize("field", FIELDS)
def test_a_control_character_in_an_appointment_field_is_invalid_request_naming_the_field(
    client, field, control
):
    """Platform choice: text fields hold no control characters (Unicode Cc); 400 names the field."""
    body, name = _with(field, f"abc{control}def")
    _assert_refused(create(client, "carolyns_dental", body), name, control)


@pytest.mark.parametrize("control", CONTROLS, ids=[f"U+{ord(c):04X}" for c in CONTROLS])
def test_a_control_character_in_a_verification_purpose_is_invalid_request_naming_the_field(client, control):
    """Platform choice: the verification purpose is text like the others."""
    body = {"purpose": f"boo{control}king:gus_notary", "phone": "+12125550142"}
    response = client.post("/api/organizations/gus_notary/verifications", json=body)
    _assert_refused(response, "body.purpose", control)


@pytest.mark.parametrize(
    ("customer", "field"),
    [
        ({"display_name": "Jane", "phone": "+1212555\x000199"}, "customer.phone"),
        ({"display_name": "Jane", "phone": "+12125550199\x07"}, "customer.phone"),
        ({"display_name": "Jane", "email": "ja\x07ne@example.com"}, "customer.email"),
        ({"display_name": "Jane", "email": "jane@example.com\x1b"}, "customer.email"),
    ],
    ids=["phone-nul", "phone-bel", "email-bel", "email-esc"],
)
def test_a_control_character_in_a_contact_is_invalid_contact_naming_the_field(client, customer, field):
    """Platform choice: phone and email keep their own check: a control character makes them malformed."""
    response = create(client, "carolyns_dental", booking(customer=customer))
    assert response.status_code == 400
    assert (response.json()["code"], response.json()["field"]) == ("invalid_contact", field)


@pytest.mark.parametrize(
    "name",
    [
        "Zoë Ångström-Núñez",
        "O'Brien, Jr.",
        "山田 太郎",
        "محمد الأحمد",
        "Ελένη Παπαδοπούλου",
        "José 😀",
        "👨\u200d👩\u200d👧 family",  # zero-width joiners: format characters, not controls
        "Renée\u00a0Dupont",  # no-break space
    ],
)
def test_names_in_any_script_with_accents_and_emoji_are_accepted_unchanged(client, name):
    """Platform choice: only control characters are refused; every other name books and reads back as sent."""
    customer = CUSTOMER | {"display_name": name, "given_name": name, "family_name": name}
    created = create(client, "carolyns_dental", booking(customer=customer, metadata={name: name}))
    assert created.status_code == 201, created.text
    body = created.json()
    assert body["customer"]["display_name"] == body["customer"]["given_name"] == name
    assert body["metadata"] == {name: name}


def test_the_openapi_document_states_the_rule_as_a_pattern(client):
    """Platform choice: the published contract carries the refusal (a pattern on each text field and key)."""
    schemas = client.get("/openapi.json").json()["components"]["schemas"]
    pattern = "^[^\\u0000-\\u001f\\u007f-\\u009f]*$"
    assert schemas["CustomerIn"]["properties"]["display_name"]["pattern"] == pattern
    assert schemas["VerificationSend"]["properties"]["purpose"]["pattern"] == pattern
    metadata = schemas["AppointmentCreate"]["properties"]["metadata"]
    assert metadata["propertyNames"] == {"pattern": pattern}
    assert metadata["additionalProperties"]["pattern"] == pattern


@given(st.text())
def test_the_first_control_character_is_found_exactly_where_category_cc_is(text):
    """Unicode Character Database, General_Category Cc (property): C0, DEL and C1, nothing else."""
    expected = next((i for i, c in enumerate(text) if c < "\x20" or "\x7f" <= c <= "\x9f"), None)
    assert first_control_character(text) == expected
