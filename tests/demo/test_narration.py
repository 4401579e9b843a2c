"""The demo's sentences and its plain-text narrator."""

import io

from osbp.demo.narration import PlainNarrator, money_text, policy_sentence, service_sentence, slot_sentence


def test_a_policy_reads_back_as_one_sentence_with_fees_and_payment():
    """OSBP spec, Canonical Flow: the agent reads the policy impact back before any mutation."""
    policy = {
        "cancellation_enabled": True,
        "cancellation_window": "PT24H",
        "cancellation_fee": {"amount_minor": 3000, "currency": "EUR", "display": "€30.00"},
        "late_grace": "PT10M",
        "payment_requirement": "none",
        "verification_method": "none",
        "cancellation_note": "Cancel at least 24 hours before.",
        "organization": {"id": "andys_auto", "name": "Andy's Auto"},
    }
    assert policy_sentence(policy) == (
        "Policy at Andy's Auto: cancel at least 24 h ahead or pay a €30.00 cancellation fee; "
        "10 minutes grace if you are late; no upfront payment or deposit; no verification step. "
        'In their words: "Cancel at least 24 hours before."'
    )


def test_a_deposit_and_sms_verification_are_spelled_out():
    """OSBP spec, policy.explain: payment_requirement and verification_method are told to the user."""
    policy = {
        "payment_requirement": "deposit",
        "deposit": {"amount_minor": 5000, "currency": "EUR"},
        "verification_method": "sms",
    }
    sentence = policy_sentence(policy)
    assert "a deposit of €50.00" in sentence
    assert "a code by text message" in sentence


def test_money_without_a_display_hint_is_formatted_from_amount_minor():
    """OSBP spec, Money: display is a hint; amount_minor and currency are the truth."""
    assert money_text({"amount_minor": 15000, "currency": "USD"}) == "$150.00"
    assert money_text({"currency": "USD", "type": "insurance_dependent"}) == "insurance dependent (USD)"


def test_an_online_slot_says_it_has_no_address():
    """OSBP spec, Slot: an online schedule carries no address."""
    slot = {
        "starts_at_local": "2030-05-07T11:00:00",
        "ends_at_local": "2030-05-07T11:40:00",
        "schedule_id": "gus_notary_online",
        "schedule_name": "Gus' Notary Online",
        "schedule_timezone": "America/New_York",
        "provider_name": "Gus Alvarez",
        "starts_at": "2030-05-07T15:00:00Z",
        "price": {"amount_minor": 3500, "currency": "USD", "display": "$35.00"},
    }
    assert slot_sentence(slot) == (
        "2030-05-07 11:00–11:40 America/New_York with Gus Alvarez at Gus' Notary Online "
        "(online, no address), $35.00 (instant 2030-05-07T15:00:00Z)"
    )
    assert service_sentence({"name": "Remote signing", "duration": "PT40M", "price": slot["price"]}) == (
        "Remote signing: 40 minutes, $35.00."
    )


def test_the_plain_narrator_writes_plain_lines():
    """Platform choice: plain text when piped, no escape codes."""
    out = io.StringIO()
    narrator = PlainNarrator(out)
    narrator.section("Dental")
    narrator.say("User", "Book it.")
    narrator.block("Summary", "line one\nline two")
    narrator.check(False, "booked")
    assert (
        out.getvalue()
        == "\n== Dental ==\nUser: Book it.\nSummary:\n    line one\n    line two\n[FAILED] booked\n"
    )
    assert "\x1b" not in out.getvalue()
