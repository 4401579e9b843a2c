"""The trace gallery's runs: the plays that drive them, over the scenarios of ``scenarios.toml``.

Each :class:`GalleryScenario` plays one run through a :class:`Play` (a recording agent for one
organization, on a platform reset to seed data with its clock frozen at :data:`GALLERY_NOW`). What each run
is (its merchant, request, claim, expected outcome and guardrails) is data, read by
:mod:`osbp.demo.scenarios`; how it plays is code here, one play per :data:`~osbp.demo.scenarios.PlayName`:
the happy path, the idempotent retry, the fail-closed refusals, the verification flow, the runtime
branches armed through the platform's test surface, handoff.request, and the confirmation through the
host (the client plays the host's dialog, and the user answers as the scenario's ``host_answers`` say).
Nothing here writes a trace: :mod:`osbp.demo.traces` records and writes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from osbp.demo.client import ToolCall
from osbp.demo.playbook import Booked, book, create_arguments, find_open_day, pick_slot
from osbp.demo.recorder import ARM, FROM_CHALLENGE, RecordingAgent
from osbp.demo.scenarios import (
    SCENARIOS,
    GalleryEntry,
    HostAnswer,
    Outcome,
    PlayName,
    Refusal,
    Vertical,
    build_mandate,
    local_today,
)
from osbp.demo.trace_format import TraceSelection
from osbp.protocol.models import BookingMandate

__all__ = ["GALLERY", "GALLERY_NOW", "PLAYS", "GalleryScenario", "Play", "gallery_scenario", "scenario_by_id"]

#: The gallery's frozen platform clock: Monday 09:00 in New York, so Tuesday is open everywhere.
GALLERY_NOW = datetime(2030, 5, 6, 13, 0, tzinfo=UTC)


@dataclass
class Play:
    """One recorded run in progress: the agent, the merchant, the clock and what the run produced."""

    agent: RecordingAgent
    vertical: Vertical
    now: datetime
    scenario_id: str
    mandate: BookingMandate | None = None
    #: The name service.describe gave the service being booked (the selection's ``service_name``).
    service_name: str | None = None
    selection: TraceSelection | None = None
    receipt: dict[str, Any] | None = None
    _keys: int = 0

    def idempotency_key(self) -> str:
        """A fresh, readable idempotency key for the next logical booking attempt."""
        self._keys += 1
        return f"idem_{self.scenario_id}_{self._keys}"

    def grant(self, **overrides: Any) -> BookingMandate:
        """The mandate the user grants for this run (the vertical's scope unless overridden)."""
        self.mandate = build_mandate(
            self.vertical, self.now, mandate_id=f"mnd_{self.scenario_id}", **overrides
        )
        return self.mandate

    def select(self, slot: dict[str, Any]) -> None:
        """Remember the slot the agent chose (the trace's ``scenario.selection``)."""
        names = ("organization_name", "schedule_name", "provider_name", "starts_at", "schedule_timezone")
        self.selection = TraceSelection(
            organization_id=slot.get("organization_id") or self.vertical.organization_id,
            service_id=slot["service_id"],
            service_name=self.service_name,
            schedule_id=slot["schedule_id"],
            provider_id=slot["provider_id"],
            date=str(slot["starts_at_local"])[:10],
            time=str(slot["starts_at_local"])[11:16],
            starts_at_local=slot["starts_at_local"],
            price=slot.get("price"),
            **{key: slot[key] for key in names if slot.get(key) is not None},
        )

    async def lookup(
        self, service_id: str, *, preferred_time: str | None = None, skip: int = 0
    ) -> dict[str, Any]:
        """service.describe → availability.find (next open day) → policy.explain; the chosen slot."""
        described = await self.agent.call("service.describe", {"service_id": service_id}, phase="lookup")
        self.service_name = (described.value or {}).get("name") if described.ok else None
        wanted = preferred_time or self.vertical.preferred_time
        choice = await find_open_day(
            self.agent,
            service_id=service_id,
            schedule_id=self.vertical.schedule_id,
            after=local_today(self.now, self.vertical.region.timezone),
            earliest_time=wanted,
        )
        if choice is None:
            raise LookupError(f"{self.scenario_id}: no open day for {service_id}")
        slot = pick_slot(choice.slots, wanted, skip=skip)
        self.select(slot)
        await self.agent.call("policy.explain", {"service_id": service_id}, phase="policy_readback")
        return slot

    async def book(self, slot: dict[str, Any], **options: Any) -> Booked:
        """The approval flow for ``slot`` under the granted mandate; keeps the receipt when booked."""
        assert self.mandate is not None, "grant a mandate first"
        arguments = create_arguments(self.mandate, self.idempotency_key(), slot, self.vertical.customer)
        outcome = await book(self.agent, arguments, **options)
        if outcome.receipt is not None:
            self.receipt = outcome.receipt
        return outcome

    async def book_through_host(self, slot: dict[str, Any]) -> ToolCall:
        """One booking.create: the server asks the user through the host; keeps the receipt when booked."""
        assert self.mandate is not None, "grant a mandate first"
        arguments = create_arguments(self.mandate, self.idempotency_key(), slot, self.vertical.customer)
        booked = await self.agent.call(
            "booking.create",
            arguments,
            phase="host_confirmation",
            note="no approval: the server asks the user in the host's dialog and answers the outcome",
        )
        if booked.ok:
            self.receipt = booked.value
        return booked

    async def status(self) -> None:
        """booking.status of the booked receipt."""
        assert self.receipt is not None, "nothing booked"
        await self.agent.call("booking.status", {"booking_id": self.receipt["booking_id"]}, phase="status")

    async def refuse(self, slot: dict[str, Any]) -> None:
        """booking.create that a guardrail must refuse (no approval is ever offered)."""
        assert self.mandate is not None, "grant a mandate first"
        arguments = create_arguments(self.mandate, self.idempotency_key(), slot, self.vertical.customer)
        await self.agent.call(
            "booking.create", arguments, phase="guardrail", note="refused before any approval"
        )

    async def hand_off(self, reason: str, message: str) -> None:
        """handoff.request: a structured requires_human answer, nothing sent to the merchant."""
        arguments = {"reason": reason, "message": message}
        if self.mandate is not None and self.mandate.id:
            arguments["mandate_id"] = self.mandate.id
        await self.agent.call("handoff.request", arguments, phase="handoff")


PlayFn = Callable[[Play], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class GalleryScenario:
    """One gallery trace: its file name, what it claims, which merchant, and how it plays."""

    id: str
    title: str
    claim: str
    vertical: Vertical
    play: PlayFn
    #: How the run ends: a booking, none, or the booking's receipt replayed (the trace's happy_path).
    outcome: Outcome
    guardrails: tuple[str, ...] = ()
    #: The user's answers in the host's dialog; empty: the client declares no elicitation (the token path).
    host_answers: tuple[HostAnswer, ...] = ()


# --- The plays --------------------------------------------------------------------------------------------


async def _happy(play: Play) -> None:
    play.grant()
    slot = await play.lookup(play.vertical.service_id)
    await play.book(slot)
    await play.status()


async def _wrong_code_first(play: Play) -> None:
    play.grant()
    slot = await play.lookup(play.vertical.service_id)
    await play.book(slot, wrong_code_first=True)
    await play.status()


async def _idempotent_retry(play: Play) -> None:
    play.grant()
    slot = await play.lookup(play.vertical.service_id)
    outcome = await play.book(slot)
    assert outcome.approved is not None
    # The agent lost the answer and retries the very same call: the local cache replays the receipt.
    await play.agent.call(
        "booking.create",
        outcome.approved.arguments,
        phase="idempotent_replay",
        sources={"approval.token": FROM_CHALLENGE},
        note="the same call again: same idempotency_key, same payload",
    )
    # A different slot under the same key is a different booking: refused, nothing sent to the platform.
    changed = dict(outcome.preflight.arguments) | {"time": _later(slot["starts_at_local"], minutes=60)}
    await play.agent.call(
        "booking.create", changed, phase="idempotent_replay", note="same idempotency_key, a different time"
    )
    await play.status()


def _later(local: str, *, minutes: int) -> str:
    hours, mins = divmod(int(local[11:13]) * 60 + int(local[14:16]) + minutes, 60)
    return f"{hours:02d}:{mins:02d}"


def _refusal(refusal: Refusal) -> PlayFn:
    async def run(play: Play) -> None:
        play.grant(service_ids=refusal.grant.service_ids, max_price_minor=refusal.grant.max_price_minor)
        slot = await play.lookup(refusal.service_id)
        await play.refuse(slot)
        if refusal.handoff is not None:
            await play.hand_off(refusal.handoff.reason, refusal.handoff.message)

    return run


async def _outside_window(play: Play) -> None:
    day = (local_today(play.now, play.vertical.region.timezone) + timedelta(days=1)).isoformat()
    # The user allowed mornings only; the agent then picks an afternoon slot anyway.
    play.grant(earliest_start=f"{day}T08:00:00", latest_end=f"{day}T12:00:00")
    slot = await play.lookup(play.vertical.service_id, preferred_time="14:00")
    await play.refuse(slot)


async def _slot_taken(play: Play) -> None:
    play.grant()
    slot = await play.lookup(play.vertical.service_id)
    taken = await play.book(slot, approve_setup=[{ARM: "slot_taken"}])
    assert taken.final.problem_code == "slot_taken"
    # Someone else won the race: look again, offer the next slot, and ask again (a new booking attempt).
    choice = await find_open_day(
        play.agent,
        service_id=play.vertical.service_id,
        schedule_id=play.vertical.schedule_id,
        after=local_today(play.now, play.vertical.region.timezone),
        earliest_time=play.vertical.preferred_time,
        phase="lookup_again",
    )
    assert choice is not None
    later = [
        candidate for candidate in choice.slots if candidate["starts_at_local"] > slot["starts_at_local"]
    ]
    replacement = pick_slot(later or choice.slots, play.vertical.preferred_time)
    play.select(replacement)
    await play.book(replacement)
    await play.status()


async def _rate_limited(play: Play) -> None:
    play.grant()
    slot = await play.lookup(play.vertical.service_id)
    limited = await play.book(slot, approve_setup=[{ARM: "rate_limited"}])
    assert limited.final.problem_code == "rate_limited"
    assert limited.approved is not None
    # Back off, then retry the same attempt: same key, same approval (unspent: nothing was created).
    retried = await play.agent.call(
        "booking.create",
        limited.approved.arguments,
        phase="approved_retry",
        sources={"approval.token": FROM_CHALLENGE},
        note="retried after backing off: the same attempt",
    )
    if retried.ok:
        play.receipt = retried.value
    await play.status()


async def _host_confirmation(play: Play) -> None:
    play.grant()
    slot = await play.lookup(play.vertical.service_id)
    asked = await play.book_through_host(slot)
    if asked.problem_code == "requires_verification":
        # No code had arrived when the host asked for it: have one sent, then the same call again.
        purpose = f"booking:{play.vertical.organization_id}"
        contact = {
            key: value for key, value in asked.arguments["customer"].items() if key in {"phone", "email"}
        }
        await play.agent.call(
            "verification.send", {"customer": contact, "purpose": purpose}, phase="verification_send"
        )
        retried = await play.agent.call(
            "booking.create",
            asked.arguments,
            phase="host_confirmation",
            note="the same call again: the host asks the user for the code, which never reaches the agent",
        )
        if retried.ok:
            play.receipt = retried.value
    if play.receipt is not None:
        await play.status()


#: The play of every name but ``refusal`` (whose play is built from the entry's refusal block).
PLAYS: dict[PlayName, PlayFn] = {
    "happy": _happy,
    "wrong_code_first": _wrong_code_first,
    "idempotent_retry": _idempotent_retry,
    "outside_window": _outside_window,
    "slot_taken": _slot_taken,
    "rate_limited": _rate_limited,
    "host_confirmation": _host_confirmation,
}


def gallery_scenario(entry: GalleryEntry, vertical: Vertical) -> GalleryScenario:
    """The runnable scenario of a gallery entry at ``vertical`` (its request overrides applied)."""
    play = _refusal(entry.refusal) if entry.refusal is not None else PLAYS[entry.play]
    return GalleryScenario(
        id=entry.id,
        title=entry.title,
        claim=entry.claim,
        vertical=vertical.model_copy(update=entry.request.model_dump(exclude_none=True)),
        play=play,
        outcome=entry.outcome,
        guardrails=entry.guardrails,
        host_answers=entry.host_answers,
    )


GALLERY: tuple[GalleryScenario, ...] = tuple(
    gallery_scenario(entry, SCENARIOS.vertical(entry.vertical)) for entry in SCENARIOS.gallery
)


def scenario_by_id(scenario_id: str) -> GalleryScenario:
    """The gallery scenario named ``scenario_id``."""
    for scenario in GALLERY:
        if scenario.id == scenario_id:
            return scenario
    raise KeyError(scenario_id)
