"""The agent's approval handling and slot choice."""

from datetime import UTC, datetime
from typing import Any

import pytest

from osbp.demo.playbook import approval_summary, approval_token, create_arguments, pick_slot
from osbp.demo.scenarios import VERTICALS, build_mandate
from osbp.protocol.approval import ApprovalGate
from osbp.protocol.models import BookingCreateInput, Problem
from osbp.protocol.store import StateStore

NOW = datetime(2030, 5, 6, 13, tzinfo=UTC)
SUMMARY = "Book Regular cleaning on Tuesday, 2030-05-07 at 10:00. Price: $120.00."
SLOT = {
    "service_id": "carolyns_dental_cleaning",
    "schedule_id": "carolyns_dental_midtown",
    "provider_id": "carolyns_dental_dr_reyes",
    "starts_at_local": "2030-05-07T10:00:00",
}


@pytest.fixture
def challenge(tmp_path) -> str:
    """The message of a real final-confirmation challenge from the protocol core's approval gate."""
    vertical = VERTICALS["dental"]
    arguments = create_arguments(build_mandate(vertical, NOW), "idem_1", SLOT, vertical.customer)
    gate = ApprovalGate(StateStore(tmp_path / "state.sqlite3"), token_source=lambda: "apv_secret_token")
    decision = gate.evaluate(BookingCreateInput.model_validate(arguments), SUMMARY)
    assert isinstance(decision, Problem)
    return decision.message


def test_the_user_sees_the_summary_without_the_instruction_or_the_token(challenge):
    """OSBP spec, booking.create: the agent shows only the approval summary, never the token."""
    shown = approval_summary(challenge)
    assert shown == SUMMARY
    assert "apv_secret_token" not in shown
    assert "approval.token" not in shown


def test_the_token_is_read_from_the_exact_retry_instruction(challenge):
    """OSBP spec, booking.create: the token is embedded exactly as approval.token="<token>"."""
    assert approval_token(challenge) == "apv_secret_token"
    assert approval_token("Selected service or slot price exceeds BookingMandate.max_price") is None


def _slot(local: str, provider: str) -> dict[str, Any]:
    return {"starts_at_local": local, "provider_id": provider}


def test_the_agent_picks_the_first_slot_at_or_after_the_preferred_time():
    """Platform choice: a deterministic choice, so a fixed clock gives the same transcript."""
    slots = [
        _slot("2030-05-07T09:00:00", "b"),
        _slot("2030-05-07T10:15:00", "a"),
        _slot("2030-05-07T10:00:00", "b"),
    ]
    assert pick_slot(slots, "10:00")["starts_at_local"] == "2030-05-07T10:00:00"
    assert pick_slot(slots, "18:00")["starts_at_local"] == "2030-05-07T09:00:00"
    assert pick_slot(slots, "10:00", skip=1)["starts_at_local"] == "2030-05-07T10:15:00"


def test_create_arguments_round_trip_the_slots_merchant_wall_clock():
    """OSBP spec, availability.find: starts_at_local round-trips into booking.create date and time."""
    vertical = VERTICALS["dental"]
    arguments = create_arguments(build_mandate(vertical, NOW), "idem_1", SLOT, vertical.customer)
    assert (arguments["date"], arguments["time"]) == ("2030-05-07", "10:00")
    assert arguments["mandate"]["id"] == "mnd_demo_dental"
    assert "approval" not in arguments
    BookingCreateInput.model_validate(arguments)  # the strict wire model accepts it
