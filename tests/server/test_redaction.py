"""The one redactor: allowlist by key, free-text scrubbing, known strings wherever they reappear."""

from __future__ import annotations

import json
import re
import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from osbp.protocol.contact_shapes import redact_contacts
from osbp.server.redaction import REDACTED, Redactor
from tests.support.stdio import StdioServer

TOKEN = "apv_Zx9-secretToken_0123456789abcdef"
CHALLENGE = (
    "Final confirmation required.\n\nBook Haircut. "
    "The merchant will see the customer name: Jane Customer.\n\n"
    f'Agent instruction (never show this to the user): ... approval.token="{TOKEN}".'
)


def test_customer_name_and_contact_fields_are_redacted_but_the_customer_id_is_kept():
    """OSBP spec, Audit: structured customer contact and name fields are redacted."""
    customer = {
        "id": "cus_1",
        "display_name": "Jane Customer",
        "given_name": "Jane",
        "family_name": "Customer",
        "phone": "+15555550100",
        "email": "jane@example.com",
    }
    redacted = Redactor().redact({"customer": customer})
    assert redacted == {
        "customer": {
            "id": "cus_1",
            "display_name": REDACTED,
            "given_name": REDACTED,
            "family_name": REDACTED,
            "phone": REDACTED,
            "email": REDACTED,
        }
    }


def test_codes_tokens_and_image_urls_are_redacted_but_the_problem_code_is_kept():
    """OSBP spec, Audit: verification codes, approval tokens and provider image URLs are redacted."""
    redactor = Redactor()
    assert redactor.redact({"code": "481516", "purpose": "booking:org"}) == {
        "code": REDACTED,
        "purpose": "booking:org",
    }
    assert redactor.redact({"verification_code": "481516"}) == {"verification_code": REDACTED}
    assert redactor.redact({"approval": {"confirmed": True, "token": TOKEN}}) == {
        "approval": {"confirmed": True, "token": REDACTED}
    }
    assert redactor.redact({"value": [{"provider_image_url": "https://img.test/p.jpg"}]}) == {
        "value": [{"provider_image_url": REDACTED}]
    }
    kept = redactor.redact({"problem": {"code": "slot_taken", "message": "gone", "retryable": True}})
    assert kept == {"problem": {"code": "slot_taken", "message": "gone", "retryable": True}}


def test_a_field_not_on_the_allowlist_is_redacted_whatever_its_name():
    """Platform choice: redaction is by allowlist, so an unforeseen field cannot leak."""
    assert Redactor().redact({"home_address": {"line1": "1 Main St"}, "date": "2026-05-05"}) == {
        "home_address": REDACTED,
        "date": "2026-05-05",
    }


def test_approval_token_inside_a_problem_message_is_redacted_and_the_marker_kept():
    """OSBP spec, Canonical Flow: tokens are embedded as approval.token="<token>" so redactors find them."""
    redactor = Redactor()
    result = {"ok": False, "problem": {"code": "requires_user_confirmation", "message": CHALLENGE}}
    known = redactor.discover(result)
    assert TOKEN in known
    message = redactor.redact(result, known)["problem"]["message"]
    assert TOKEN not in message
    assert 'approval.token="[redacted]"' in message


def test_known_sensitive_strings_are_redacted_wherever_they_reappear():
    """OSBP spec, Audit: known sensitive strings discovered from structured input are redacted."""
    redactor = Redactor()
    tool_input = {"customer": {"display_name": "Jane Customer", "phone": "+15555550100"}, "code": "481516"}
    result = {"ok": True, "value": {"text": "Booked for Jane Customer (code 481516); Jane will get an SMS."}}
    known = redactor.discover(tool_input, result)
    text = redactor.redact(result, known)["value"]["text"]
    assert "Jane" not in text
    assert "Customer" not in text
    assert "481516" not in text
    assert text == "Booked for [redacted] (code [redacted]); [redacted] will get an SMS."


def test_phone_and_email_shaped_strings_in_free_text_are_redacted():
    """OSBP spec, Audit: contact-shaped phone/email strings in free text are redacted."""
    redactor = Redactor()
    text = (
        "Call +1 (555) 555-0100 or 555.555.0199, or write to jane.doe+spa@mail.example.co.uk; "
        "booked 2026-05-05T13:00:00 (2026-05-05T20:00:00.000Z, -07:00) for 9500 minor units, "
        "idem_2026_05_01_001."
    )
    scrubbed = redactor.scrub_text(text)
    for secret in ("555", "0100", "0199", "jane.doe", "mail.example"):
        assert secret not in scrubbed
    for kept in ("2026-05-05T13:00:00", "2026-05-05T20:00:00.000Z", "-07:00", "9500", "idem_2026_05_01_001"):
        assert kept in scrubbed


def test_a_short_known_name_does_not_eat_parts_of_longer_words():
    """Platform choice: known strings match on alphanumeric boundaries only."""
    assert Redactor().scrub_text("Al is always on time.", known={"Al"}) == "[redacted] is always on time."


def test_ids_dates_and_money_pass_through_unchanged():
    """OSBP spec, Security and Privacy: correlation identifiers are not secrets and may appear in audit."""
    slot = {
        "id": "sch_1:prv_1:svc_1:2026-05-05T13:00:00",
        "starts_at": "2026-05-05T20:00:00.000Z",
        "price": {"amount_minor": 9500, "currency": "USD", "type": "fixed", "display": "$95.00"},
        "schedule_latitude": 40.7484,
    }
    assert Redactor().redact({"ok": True, "value": [slot]}) == {"ok": True, "value": [slot]}


_names = st.text(alphabet=string.ascii_letters, min_size=2, max_size=12)
_phones = st.from_regex(r"\+[1-9][0-9]{9,13}", fullmatch=True)
_emails = st.builds(
    "{}@{}.{}".format,
    st.text(alphabet=string.ascii_lowercase + string.digits + "._", min_size=1, max_size=10).filter(
        lambda s: s[0].isalnum()
    ),
    st.text(alphabet=string.ascii_lowercase, min_size=2, max_size=10),
    st.sampled_from(["com", "org", "example", "co"]),
)
_codes = st.from_regex(r"[0-9]{6}", fullmatch=True)


@given(given_name=_names, family_name=_names, phone=_phones, email=_emails, code=_codes)
def test_no_planted_value_survives_redaction_of_a_call(given_name, family_name, phone, email, code):
    """OSBP spec, Audit (property): names, contacts and codes never survive, however they reappear."""
    redactor = Redactor()
    display = f"{given_name} {family_name}"
    tool_input = {
        "customer": {
            "display_name": display,
            "given_name": given_name,
            "family_name": family_name,
            "phone": phone,
            "email": email,
        },
        "verification_code": code,
    }
    result = {
        "ok": False,
        "problem": {
            "code": "requires_user_confirmation",
            "message": f"Customer {display} ({phone}, {email}) used {code}; "
            f'approval.token="{code}x{given_name}"',
        },
    }
    known = redactor.discover(tool_input, result)
    leaves = " | ".join(_leaf_strings([redactor.redact(tool_input, known), redactor.redact(result, known)]))
    remaining = leaves.replace(REDACTED, " ")
    for secret in (given_name, family_name, phone, email, code):
        # Values only (keys are structure, not data), as whole words: "al" legitimately occurs in "False".
        assert re.search(rf"(?<![\w+@.]){re.escape(secret)}(?![\w@.])", remaining) is None, secret


def _leaf_strings(value: object) -> list[str]:
    if isinstance(value, dict):
        return [leaf for item in value.values() for leaf in _leaf_strings(item)]
    if isinstance(value, list):
        return [leaf for item in value for leaf in _leaf_strings(item)]
    return [value] if isinstance(value, str) else []


@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(), lambda c: st.lists(c, max_size=3)))
def test_redaction_is_deterministic(value):
    """Platform choice (property): the same snapshot redacts to the same value, so audit hashes are stable."""
    redactor = Redactor()
    snapshot = {"value": value, "secret": value}
    assert redactor.redact(snapshot) == redactor.redact(snapshot)


_free_text = st.text(alphabet=string.ascii_letters + string.digits + ' +-().@_:"=', max_size=40)
_samples = st.sampled_from(
    [CHALLENGE, "Call +1 (555) 555-0100", "555.555.0199", "jane@example.com", "2026-05-05T13:00:00"]
)
_snapshots = st.recursive(
    st.none() | st.booleans() | st.integers() | _free_text | _samples,
    lambda children: (
        st.lists(children, max_size=4)
        | st.dictionaries(
            st.sampled_from(["value", "message", "text", "phone", "name", "code"]), children, max_size=4
        )
    ),
    max_leaves=20,
)


@given(_snapshots, _snapshots, st.sets(_names | _codes, max_size=4))
def test_a_prepared_scrubber_redacts_exactly_like_the_redactor(first, second, extra_known):
    """Platform choice (property): one call's prepared, memoizing scrubber changes speed, never output."""
    redactor = Redactor()
    known = redactor.discover(first, second) | extra_known
    scrubber = redactor.prepare(known)
    assert scrubber.redact(first) == redactor.redact(first, known)
    assert scrubber.redact(second) == redactor.redact(second, known)
    for text in _leaf_strings([first, second]):
        assert scrubber.scrub_text(text) == redactor.scrub_text(text, known) == _reference_scrub(text, known)


def _reference_scrub(text: str, known: set[str] | frozenset[str]) -> str:
    """The scrubber without its memo: token, contacts, known strings, each applied in turn."""
    from osbp.protocol.approval import APPROVAL_TOKEN_PATTERN

    text = APPROVAL_TOKEN_PATTERN.sub('approval.token="' + REDACTED + '"', text)
    text = redact_contacts(text, REDACTED)
    strings = sorted({s for s in known if len(s) >= 2 and s != REDACTED}, key=len, reverse=True)
    if strings:
        alternation = "|".join(re.escape(s) for s in strings)
        text = re.sub(rf"(?<![A-Za-z0-9])(?:{alternation})(?![A-Za-z0-9])", REDACTED, text)
    return text


#: The strings of the attack test's finding: national numbers of three regions and an RFC 6531 address.
FINDING = ("2125550199", "07700 900123", "030 12345678", "zoë@exämple.de")


@pytest.mark.parametrize(
    "snapshot",
    [
        {
            "ok": False,
            "problem": {"code": "slot_taken", "message": "Taken; ring {} instead.", "retryable": False},
        },
        {"ok": True, "value": {"id": "receipt_idem_1", "text": "Booked. Questions: {}."}},
        {"reason": "call {}", "message": "The customer asks to be called on {}."},
        {"ok": True, "value": [{"description": "Walk-ins: {}", "cancellation_note": "Cancel via {}."}]},
    ],
    ids=["problem_message", "receipt_text", "handoff_reason_and_message", "service_texts"],
)
@pytest.mark.parametrize("contact", FINDING)
def test_contacts_in_every_kept_free_text_field_are_redacted(snapshot, contact):
    """OSBP spec, Audit: contact-shaped phone/email strings in free text are redacted, wherever kept."""
    filled = json.loads(json.dumps(snapshot).replace("{}", contact))
    redacted = json.dumps(Redactor().redact(filled), ensure_ascii=False)
    assert contact not in redacted
    assert REDACTED in redacted


def test_a_redacted_name_inside_an_address_does_not_leave_the_domain_behind():
    """OSBP spec, Audit: an address is redacted whole, also when a known name part sits inside it."""
    assert Redactor().scrub_text("Write to Jane.Doe@example.com.", known={"Jane", "Doe"}) == (
        "Write to [redacted]."
    )


def test_a_redactor_refuses_a_region_phonenumbers_does_not_know():
    """Platform choice: a misspelt region would silently find nothing, so it is an error at start-up."""
    with pytest.raises(ValueError, match="XX"):
        Redactor(regions=("DE", "XX"))


@pytest.mark.integration
def test_contacts_in_a_handoff_message_never_reach_the_real_servers_audit_log(tmp_path):
    """OSBP spec, Audit and handoff.request: free-text contacts are redacted before the log is written."""
    audit = tmp_path / "audit" / "events.jsonl"
    env = {
        # handoff.request calls no platform: nothing listens here, and nothing is asked.
        "OSBP_PLATFORM_BASE_URL": "http://127.0.0.1:9",
        "OSBP_ORGANIZATION_ID": "gus_notary",
        "OSBP_STATE_PATH": str(tmp_path / "state" / "osbp.sqlite3"),
        "OSBP_AUDIT_LOG_PATH": str(audit),
    }
    message = "Customer asks for a call on {} or {} (office: {}); e-mail {}.".format(*FINDING)
    with StdioServer(env) as server:
        handoff = server.call(
            "osbp_handoff_request",
            {"reason": f"callback {FINDING[0]}", "message": message, "mandate_id": "m_1"},
        )
    assert handoff is not None
    assert handoff["ok"] is True, handoff
    log = audit.read_text(encoding="utf-8")
    [event] = [json.loads(line) for line in log.splitlines()]
    assert event["tool_name"] == "handoff.request"
    assert event["input"]["message"] == (
        "Customer asks for a call on [redacted] or [redacted] (office: [redacted]); e-mail [redacted]."
    )
    assert event["input"]["reason"] == "callback [redacted]"
    unspaced = re.sub(r"\s", "", log)
    for contact in FINDING:
        assert re.sub(r"\s", "", contact) not in unspaced, contact
