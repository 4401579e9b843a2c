"""How the demo agent behaves: the canonical OSBP flow, one careful step at a time.

The agent never books on its own initiative: it reads the service, finds a slot, reads the policy back,
asks booking.create for the final-confirmation summary (no platform write), shows the user only that
summary (the machine instruction and its token are stripped), retries with the approval once the user
said yes, relays a verification code when the platform asks for one (here the demo plays the customer's
phone by reading the platform's outbox), then reads the booking's status back.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date, timedelta
from typing import Any

from osbp.demo.client import ToolCall
from osbp.demo.recorder import FROM_CHALLENGE, FROM_PHONE, MISTYPED, RecordingAgent, Setup
from osbp.protocol.approval import APPROVAL_TOKEN_PATTERN
from osbp.protocol.models import BookingMandate, Customer

__all__ = [
    "Booked",
    "SlotChoice",
    "approval_summary",
    "approval_token",
    "book",
    "create_arguments",
    "find_open_day",
    "pick_slot",
    "read_code_from_phone",
]

#: How many merchant-local days after today the agent looks at before giving up.
SEARCH_DAYS = 10


def approval_token(message: str) -> str | None:
    """The token of a final-confirmation challenge (the spec's ``approval.token="…"`` instruction)."""
    match = APPROVAL_TOKEN_PATTERN.search(message)
    return match.group(1) if match else None


def approval_summary(message: str) -> str:
    """The part of a challenge the user may see: no machine instruction, no token, no agent directions."""
    paragraphs = [part.strip() for part in message.split("\n\n") if part.strip()]
    visible = [part for part in paragraphs if not APPROVAL_TOKEN_PATTERN.search(part)]
    # The lead paragraph tells the agent what to do with the summary; it is not for the user either.
    if len(visible) > 1 and "show the user" in visible[0]:
        visible = visible[1:]
    return "\n\n".join(visible)


@dataclass(frozen=True, slots=True)
class SlotChoice:
    """The day the agent found open and the slots offered on it."""

    day: date
    slots: list[dict[str, Any]]
    call: ToolCall
    #: Days the agent looked at first and found closed or fully booked.
    empty_days: tuple[date, ...] = ()


async def find_open_day(
    agent: RecordingAgent,
    *,
    service_id: str,
    schedule_id: str,
    after: date,
    provider_id: str | None = None,
    earliest_time: str | None = None,
    phase: str = "lookup",
) -> SlotChoice | None:
    """availability.find day by day from the day after ``after`` until a day has slots (from the
    merchant-local ``earliest_time`` "HH:MM" on, when given: a long day answers a page at a time)."""
    empty: list[date] = []
    for offset in range(1, SEARCH_DAYS + 1):
        day = after + timedelta(days=offset)
        arguments: dict[str, Any] = {
            "service_id": service_id,
            "schedule_id": schedule_id,
            "date": day.isoformat(),
        }
        if provider_id is not None:
            arguments["provider_id"] = provider_id
        if earliest_time is not None:
            arguments["earliest_start"] = f"{day.isoformat()}T{earliest_time}:00"
        call = await agent.call("availability.find", arguments, phase=phase)
        if not call.ok:
            return None
        slots = list(call.value or [])
        if slots:
            return SlotChoice(day=day, slots=slots, call=call, empty_days=tuple(empty))
        empty.append(day)
    return None


def pick_slot(slots: Sequence[dict[str, Any]], preferred_time: str, *, skip: int = 0) -> dict[str, Any]:
    """The first slot starting at or after the merchant-local ``preferred_time`` ("HH:MM"), else the first."""
    ordered = sorted(slots, key=lambda slot: (slot["starts_at_local"], slot.get("provider_id") or ""))
    later = [slot for slot in ordered if slot["starts_at_local"][11:16] >= preferred_time] or ordered
    return later[min(skip, len(later) - 1)]


def create_arguments(
    mandate: BookingMandate, idempotency_key: str, slot: dict[str, Any], customer: Customer
) -> dict[str, Any]:
    """booking.create's flat arguments for ``slot``: its create-ready ids and merchant-local date/time."""
    local = str(slot["starts_at_local"])
    return {
        "mandate": mandate.to_wire(),
        "idempotency_key": idempotency_key,
        "service_id": slot["service_id"],
        "schedule_id": slot["schedule_id"],
        "provider_id": slot.get("provider_id") or "",
        "date": local[:10],
        "time": local[11:16],
        "customer": customer.to_wire(),
    }


async def read_code_from_phone(agent: RecordingAgent, purpose: str) -> str | None:
    """The newest code the platform sent for ``purpose`` (the demo plays the customer reading the SMS)."""
    messages = [
        message for message in await agent.control.outbox(agent.organization_id) if message.purpose == purpose
    ]
    return messages[-1].code if messages else None


@dataclass
class Booked:
    """How one booking attempt ended: the calls that matter and the summary the user approved."""

    preflight: ToolCall
    final: ToolCall
    summary: str | None = None
    approved: ToolCall | None = None
    verification_send: ToolCall | None = None

    @property
    def receipt(self) -> dict[str, Any] | None:
        """The receipt when the booking was created."""
        return self.final.value if self.final.ok else None


async def book(
    agent: RecordingAgent,
    arguments: dict[str, Any],
    *,
    approve_setup: Sequence[Setup] = (),
    wrong_code_first: bool = False,
) -> Booked:
    """Preflight → (user approves the summary) → approved retry → verification when asked → the result.

    Stops at the first Problem that is not the final-confirmation challenge or a verification request:
    a fail-closed refusal is the answer, not something to work around.
    """
    preflight = await agent.call(
        "booking.create", arguments, phase="approval_preflight", note="no approval yet: the gate answers"
    )
    token = approval_token(preflight.problem.get("message", "")) if not preflight.ok else None
    if preflight.problem_code != "requires_user_confirmation" or token is None:
        return Booked(preflight=preflight, final=preflight)
    summary = approval_summary(preflight.problem["message"])
    approved_arguments = arguments | {"approval": {"confirmed": True, "token": token}}
    approved = await agent.call(
        "booking.create",
        approved_arguments,
        phase="approved_retry",
        setup=approve_setup,
        sources={"approval.token": FROM_CHALLENGE},
        note="the user approved the summary",
    )
    outcome = Booked(preflight=preflight, final=approved, summary=summary, approved=approved)
    if approved.problem_code != "requires_verification":
        return outcome
    customer = arguments.get("customer") or {}
    contact = {key: customer[key] for key in ("phone", "email") if key in customer}
    purpose = f"booking:{arguments['mandate']['organization_id']}"
    outcome.verification_send = await agent.call(
        "verification.send", {"customer": contact, "purpose": purpose}, phase="verification_send"
    )
    if not outcome.verification_send.ok:
        outcome.final = outcome.verification_send
        return outcome
    code = await read_code_from_phone(agent, purpose)
    if code is None:
        return outcome
    if wrong_code_first:
        wrong = "000000" if code != "000000" else "111111"
        rejected = await agent.call(
            "booking.create",
            approved_arguments | {"verification_code": wrong},
            phase="verification_retry",
            sources={"approval.token": FROM_CHALLENGE, "verification_code": MISTYPED},
            note="the customer mistypes the code",
        )
        outcome.final = rejected
        if rejected.problem_code != "verification_failed":
            return outcome
        outcome.verification_send = await agent.call(
            "verification.send", {"customer": contact, "purpose": purpose}, phase="verification_send"
        )
        code = await read_code_from_phone(agent, purpose)
        if code is None:
            return outcome
    outcome.final = await agent.call(
        "booking.create",
        approved_arguments | {"verification_code": code},
        phase="verification_retry",
        sources={"approval.token": FROM_CHALLENGE, "verification_code": FROM_PHONE},
        note="the customer read the code from their phone",
    )
    return outcome
