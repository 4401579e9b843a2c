"""The trace gallery's scenarios: what each recorded run does and what it claims.

Each :class:`GalleryScenario` plays one run through a :class:`Play` (a recording agent for one
organization, on a platform reset to seed data with its clock frozen at :data:`GALLERY_NOW`). The happy
paths reuse the demo's verticals; the other runs exercise one rule each: the idempotent retry, the
fail-closed guardrails, the verification flow, the runtime branches armed through the platform's test
surface, and handoff.request. Nothing here writes a trace: :mod:`osbp.demo.traces` records and writes.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta
from typing import Any

from osbp.demo.playbook import Booked, book, create_arguments, find_open_day, pick_slot
from osbp.demo.recorder import ARM, FROM_CHALLENGE, RecordingAgent
from osbp.demo.scenarios import VERTICALS, Region, Vertical, build_mandate, local_today
from osbp.demo.trace_format import TraceOutcome, TraceSelection
from osbp.protocol.models import BookingMandate, Customer

__all__ = ["GALLERY", "GALLERY_NOW", "GalleryScenario", "Play", "scenario_by_id"]

#: The gallery's frozen platform clock: Monday 09:00 in New York, so Tuesday is open everywhere.
GALLERY_NOW = datetime(2030, 5, 6, 13, 0, tzinfo=UTC)

_FIXTURE = Vertical(
    key="fixture",
    title="Conformance fixture merchant",
    organization_id="conformance_co",
    organization_name="Conformance Co",
    business_type="conformance_fixture",
    modality="in_person",
    region=Region(country="US", currency="USD", timezone="America/New_York"),
    intent="book a service whose payment terms are unknown",
    user_request="Book the 'Unknown payment requirement' service at Conformance Co soon, up to $100.",
    service_id="conformance_unknown_payment",
    schedule_id="conformance_main",
    customer=Customer(display_name="Taylor Wren", phone="+12125550177"),
    allowed_service_ids=("conformance_unknown_payment",),
    max_price_minor=10000,
)


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
        choice = await find_open_day(
            self.agent,
            service_id=service_id,
            schedule_id=self.vertical.schedule_id,
            after=local_today(self.now, self.vertical.region.timezone),
        )
        if choice is None:
            raise LookupError(f"{self.scenario_id}: no open day for {service_id}")
        slot = pick_slot(choice.slots, preferred_time or self.vertical.preferred_time, skip=skip)
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
    outcome: TraceOutcome
    guardrails: tuple[str, ...] = ()


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


def _refusal(service_id: str, *, handoff: tuple[str, str] | None = None, **grant: Any) -> PlayFn:
    async def run(play: Play) -> None:
        play.grant(**grant)
        slot = await play.lookup(service_id)
        await play.refuse(slot)
        if handoff is not None:
            await play.hand_off(*handoff)

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


_DENTAL, _NOTARY, _AUTO, _SPA = (VERTICALS[key] for key in ("dental", "notary", "auto", "spa"))

GALLERY: tuple[GalleryScenario, ...] = (
    GalleryScenario(
        "dental_happy_path",
        "Dental cleaning in New York",
        "A USD booking inside the mandate: lookup, policy readback, approval preflight with no "
        "platform write, approved retry, status.",
        _DENTAL,
        _happy,
        outcome="booking_created",
    ),
    GalleryScenario(
        "notary_remote_signing",
        "Remote notary signing, online with SMS verification",
        "An online service: the slot carries no address; the platform asks for verification after the "
        "approved retry and the agent relays the customer's code.",
        _NOTARY,
        _happy,
        outcome="booking_created",
        guardrails=("requires_verification",),
    ),
    GalleryScenario(
        "auto_happy_path",
        "Oil change in Berlin (EUR)",
        "A EUR booking in Europe/Berlin: the cancellation fee is disclosed in the approval summary, "
        "not capped.",
        _AUTO,
        _happy,
        outcome="booking_created",
    ),
    GalleryScenario(
        "spa_happy_path",
        "Swedish massage in London (GBP)",
        "A GBP booking in Europe/London in British Summer Time: 14:00 merchant-local is the instant 13:00Z.",
        _SPA,
        _happy,
        outcome="booking_created",
    ),
    GalleryScenario(
        "verification_flow",
        "Verification: a mistyped code, a new code, then booked",
        "A rejected code is verification_failed; the agent sends a new code and retries with the same "
        "idempotency_key and approval.",
        _NOTARY,
        _wrong_code_first,
        outcome="booking_created",
        guardrails=("requires_verification", "verification_failed"),
    ),
    GalleryScenario(
        "idempotent_retry",
        "Idempotent retry and idempotency_conflict",
        "The same call again replays the receipt from the local cache with no platform request; the same key "
        "with a different payload is idempotency_conflict, again with no platform request.",
        _DENTAL,
        _idempotent_retry,
        outcome="same_receipt_replayed",
        guardrails=("idempotency_conflict",),
    ),
    GalleryScenario(
        "guardrail_price_cap",
        "Over the price cap",
        "Whitening at $250.00 under a $150.00 cap is refused with price_exceeds_mandate before any approval "
        "or platform write.",
        _DENTAL,
        _refusal("carolyns_dental_whitening"),
        outcome="no_booking_created",
        guardrails=("price_exceeds_mandate",),
    ),
    GalleryScenario(
        "guardrail_consultation",
        "Consultation service: hand off",
        "A service the merchant must approve case by case is requires_consultation_handoff; the agent routes "
        "to handoff.request.",
        replace(
            _AUTO,
            user_request="My brakes grind. Get Andy's Auto to look at the car and quote the repair.",
            intent="book a repair consultation",
        ),
        _refusal(
            "andys_auto_repair_consultation",
            service_ids=("andys_auto_repair_consultation",),
            handoff=(
                "requires_consultation_handoff",
                "The workshop confirms each repair consultation itself; please request it directly.",
            ),
        ),
        outcome="no_booking_created",
        guardrails=("requires_consultation_handoff",),
    ),
    GalleryScenario(
        "guardrail_payment_handoff",
        "Deposit required: payment handoff",
        "A deposit the mandate does not allow (allow_policy_fee false) is requires_payment_handoff; "
        "OSBP never collects payment and hands off.",
        replace(
            _AUTO,
            user_request="Book new front brake pads at Andy's Auto in the next two weeks, up to 300 euros.",
            intent="book a brake pad replacement",
        ),
        _refusal(
            "andys_auto_brakes",
            service_ids=("andys_auto_brakes",),
            max_price_minor=30000,
            handoff=(
                "requires_payment_handoff",
                "This service requires a deposit. Please complete the booking with the merchant directly.",
            ),
        ),
        outcome="no_booking_created",
        guardrails=("requires_payment_handoff",),
    ),
    GalleryScenario(
        "guardrail_currency_mismatch",
        "Currency mismatch: a JPY price under a GBP cap",
        "OSBP never converts currencies: a JPY-priced service under a GBP cap is currency_mismatch.",
        replace(
            _SPA,
            user_request="Book the Tokyo onsen gift experience at Phil's Spa, up to 100 pounds.",
            intent="book a gift experience",
        ),
        _refusal("phils_spa_onsen_gift", service_ids=("phils_spa_onsen_gift",)),
        outcome="no_booking_created",
        guardrails=("currency_mismatch",),
    ),
    GalleryScenario(
        "guardrail_time_window",
        "Outside the mandate's time window",
        "The user allowed 08:00–12:00 merchant time; an afternoon slot is slot_too_late, compared as "
        "merchant wall-clock.",
        replace(
            _DENTAL,
            user_request="Book a cleaning at Carolyn's Dental tomorrow morning, before noon, up to $150.",
        ),
        _outside_window,
        outcome="no_booking_created",
        guardrails=("slot_too_late",),
    ),
    GalleryScenario(
        "guardrail_unknown_payment",
        "Unknown payment requirement: fail closed",
        "An unknown payment requirement is the fail-closed requires_user_confirmation: not retryable, no "
        "approval token; the agent hands off.",
        _FIXTURE,
        _refusal(
            "conformance_unknown_payment",
            handoff=(
                "requires_user_confirmation",
                "The merchant's payment terms for this service are unknown. Please book it directly.",
            ),
        ),
        outcome="no_booking_created",
        guardrails=("requires_user_confirmation",),
    ),
    GalleryScenario(
        "runtime_slot_taken",
        "Slot taken at the last moment",
        "The approved create loses the race (slot_taken, retryable, no write); the agent looks again "
        "and asks the user to approve the next slot as a new attempt.",
        _DENTAL,
        _slot_taken,
        outcome="booking_created",
        guardrails=("slot_taken",),
    ),
    GalleryScenario(
        "runtime_rate_limited",
        "Rate limited by the platform",
        "The platform answers 429: rate_limited (retryable, no write); the agent backs off and retries "
        "the same attempt with the same approval.",
        _SPA,
        _rate_limited,
        outcome="booking_created",
        guardrails=("rate_limited",),
    ),
)


def scenario_by_id(scenario_id: str) -> GalleryScenario:
    """The gallery scenario named ``scenario_id``."""
    for scenario in GALLERY:
        if scenario.id == scenario_id:
            return scenario
    raise KeyError(scenario_id)
