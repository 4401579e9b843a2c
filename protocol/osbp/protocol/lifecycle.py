"""booking.cancel and booking.reschedule's safety pipeline (docs/lifecycle.md), for any lifecycle port.

:class:`LifecyclePipeline` runs each change in this order, the first refusal answering:

1. **Replay**: the key settled with this payload → the stored result, ``local_cache_replay``, no platform
   request; an approved attempt already sent to the platform is resumed (same key, same version).
2. **Mandate, platform-free** (:func:`~osbp.protocol.lifecycle_mandate.precheck_change`): well-formed, not
   expired, the action, the organization, ``booking_ids``; for a reschedule the new date and time's shape.
3. **Ownership**: a create of this caller's scope (organization and principal) settled here with this
   booking id; anything else is ``booking_not_found``, the very answer an unknown id gets.
4. **Idempotency claim**: the key with another payload, or the other tool, → ``idempotency_conflict``.
5. **Quote** through the port, then the **status** (not cancellable / not reschedulable).
6. For a reschedule, the **new slot** through booking.create's own rules (scope, window, price in full,
   currency, consultation, payment, unpriced fees, still offered).
7. The **fee cap**: unknown or not fixed fails closed (terminal ``requires_user_confirmation``).
8. The **gate**: the approval token bound to the payload hash and to the summary and the quote's version
   (and the new slot's facts), read again on every call, so any difference refuses the old token with a
   fresh challenge.
9. The **write**: marked as placed before it is sent (after :func:`~osbp.protocol.effects.before_effect`),
   at the quote's version, then settled with the result, the token spent.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Any, cast

import anyio

from osbp.protocol.approval import ApprovalGate, Approved
from osbp.protocol.canonical import sha256_hex
from osbp.protocol.clock import Clock
from osbp.protocol.contract import AdapterResult, Failure, Success
from osbp.protocol.effects import before_effect
from osbp.protocol.idempotency import (
    LOCAL_CACHE_REPLAY,
    Claimed,
    Conflict,
    IdempotencyStore,
    InProgress,
    Placing,
    Replay,
)
from osbp.protocol.lifecycle_mandate import UNKNOWN_BOOKING, check_fee, check_new_slot, precheck_change
from osbp.protocol.lifecycle_models import (
    BookingCancelInput,
    BookingRescheduleInput,
    CancelResult,
    LifecycleAction,
    RescheduleResult,
    SlotPosition,
)
from osbp.protocol.lifecycle_port import (
    CancelRequest,
    ChangedBooking,
    ChangeQuote,
    ChangeRequest,
    CurrentSlot,
    LifecycleAdapter,
    RescheduleRequest,
)
from osbp.protocol.lifecycle_summary import (
    cancel_summary,
    cancel_text,
    free_until_sentence,
    reschedule_summary,
    reschedule_text,
)
from osbp.protocol.mandate import check_requested_wall_clock
from osbp.protocol.models import BookingCreateInput, Problem, ToolName
from osbp.protocol.port import OUTCOME_UNKNOWN, BookingRequest, receipt_id
from osbp.protocol.principal import platform_key, scope_of
from osbp.protocol.problems import ExtensionCode, ProblemCode, problem
from osbp.protocol.state import StateStoreError

__all__ = ["LifecyclePipeline", "change_payload_hash"]

logger = logging.getLogger("osbp.protocol")

ChangeInput = BookingCancelInput | BookingRescheduleInput
_TRANSIENT_FIELDS = frozenset({"approval", "verification_code"})


def change_payload_hash(action: LifecycleAction, inp: ChangeInput) -> str:
    """SHA-256 of the tool name and the input without its transient fields (the idempotency key included)."""
    wire = {key: value for key, value in inp.to_wire().items() if key not in _TRANSIENT_FIELDS}
    return sha256_hex({"tool": action, "input": wire})


def _in_progress(action: str, what: str) -> Problem:
    return problem(
        ExtensionCode.IDEMPOTENCY_IN_PROGRESS,
        f"{what} Retry {action} with the same payload and idempotency_key (and approval, if you have one); "
        "do not start a new change for it.",
        retryable=True,
    )


def _position(slot: CurrentSlot) -> SlotPosition:
    return SlotPosition(
        starts_at=slot.starts_at,
        starts_at_local=slot.starts_at_local,
        ends_at=slot.ends_at,
        ends_at_local=slot.ends_at_local,
        schedule_timezone=slot.schedule_timezone,
        provider_id=slot.provider_id,
    )


def _not_changeable(action: LifecycleAction, quote: ChangeQuote) -> Problem | None:
    if action == "booking.cancel" and not quote.cancellable:
        code, verb = ExtensionCode.BOOKING_NOT_CANCELLABLE, "cancelled"
    elif action == "booking.reschedule" and not quote.reschedulable:
        code, verb = ExtensionCode.BOOKING_NOT_RESCHEDULABLE, "rescheduled"
    else:
        return None
    state = "it has already started" if quote.status == "booked" else f"its status is {quote.status}"
    return problem(code, f"This appointment can no longer be {verb} through OSBP: {state}.")


@dataclass
class _Attempt:
    """How far one claimed attempt got: settled, and whether its platform outcome is known."""

    settled: bool = False
    outcome_known: bool = True


@dataclass(frozen=True, slots=True)
class _Call:
    """One lifecycle call: the tool, its input, its payload hash and its platform key."""

    action: LifecycleAction
    inp: ChangeInput
    payload_hash: str
    key: str


class LifecyclePipeline:
    """booking.cancel and booking.reschedule over one lifecycle adapter, with the core's stores."""

    def __init__(
        self,
        adapter: LifecycleAdapter,
        *,
        idempotency: IdempotencyStore,
        approvals: ApprovalGate,
        clock: Clock,
    ) -> None:
        self._adapter = adapter
        self._idempotency = idempotency
        self._approvals = approvals
        self._clock = clock

    async def cancel(self, inp: BookingCancelInput) -> AdapterResult[CancelResult]:
        """Run booking.cancel end to end (see the module docstring for the order)."""
        return cast(AdapterResult[CancelResult], await self._run("booking.cancel", inp))

    async def reschedule(self, inp: BookingRescheduleInput) -> AdapterResult[RescheduleResult]:
        """Run booking.reschedule end to end (see the module docstring for the order)."""
        return cast(AdapterResult[RescheduleResult], await self._run("booking.reschedule", inp))

    async def _run(self, action: LifecycleAction, inp: ChangeInput) -> AdapterResult[Any]:
        key = platform_key(inp.idempotency_key) or inp.idempotency_key
        call = _Call(action, inp, change_payload_hash(action, inp), key)
        attempt = _Attempt()
        try:
            return await self._change(call, attempt)
        except StateStoreError as error:
            logger.error(
                "state_store_failed", extra={"outcome_known": attempt.outcome_known, "error": str(error)}
            )
            if attempt.outcome_known:
                return Failure(
                    _in_progress(action, "OSBP's state store failed, so nothing was sent to the platform.")
                )
            return Failure(
                _in_progress(action, "The platform may have made this change, but OSBP could not record it.")
            )

    async def _change(self, call: _Call, attempt: _Attempt) -> AdapterResult[Any]:
        inp, organization_id = call.inp, self._adapter.organization_id
        scope = scope_of(organization_id)
        earlier = await self._idempotency.apeek(inp.idempotency_key, call.payload_hash, scope)
        if isinstance(earlier, Replay):
            return Success(self._stored(call, earlier.stored), runtime=LOCAL_CACHE_REPLAY)
        unsettled = _in_progress(
            call.action, f"An approved {call.action} with this key may have reached the platform."
        )
        if isinstance(earlier, Placing) and not self._authorizes(call, earlier):
            return Failure(unsettled)
        if earlier is None:
            refused = precheck_change(
                inp.mandate,
                action=call.action,
                booking_id=inp.booking_id,
                organization_id=organization_id,
                now=self._clock.now(),
            )
            if refused is None and isinstance(inp, BookingRescheduleInput):
                start = check_requested_wall_clock(inp.date, inp.time)
                refused = start if isinstance(start, Problem) else None
            if refused is None and not await self._idempotency.acreated_in_scope(inp.booking_id, scope):
                refused = UNKNOWN_BOOKING
            if refused is not None:
                return Failure(refused)
        claim = await self._idempotency.aclaim(inp.idempotency_key, call.payload_hash, scope)
        if isinstance(claim, Replay):
            return Success(self._stored(call, claim.stored), runtime=LOCAL_CACHE_REPLAY)
        if isinstance(claim, Conflict | InProgress):
            return Failure(claim.problem)
        try:
            if claim.placing is not None:
                if not self._authorizes(call, claim.placing):
                    attempt.outcome_known = False
                    return Failure(unsettled)
                token = inp.approval.token if inp.approval is not None else ""
                return await self._write(call, claim, attempt, claim.placing.context, token)
            if earlier is not None:
                return Failure(unsettled)  # the mark was cleared meanwhile: the retry runs every check
            return await self._first(call, claim, attempt)
        finally:
            if not attempt.settled:
                with anyio.CancelScope(shield=True):
                    await self._idempotency.arelease(claim.lease, outcome_known=attempt.outcome_known)

    @staticmethod
    def _stored(call: _Call, stored: str) -> CancelResult:
        model = CancelResult if call.action == "booking.cancel" else RescheduleResult
        return model.model_validate_json(stored)

    @staticmethod
    def _authorizes(call: _Call, placing: Placing) -> bool:
        approval = call.inp.approval
        return approval is not None and sha256_hex(approval.token) == placing.token_hash

    async def _first(self, call: _Call, claim: Claimed, attempt: _Attempt) -> AdapterResult[Any]:
        """Quote, status, new slot, fee cap and gate; then the write at the quoted version."""
        inp = call.inp
        quote = await self._adapter.quote_change(ChangeRequest(inp.booking_id, inp.customer))
        if isinstance(quote, Problem):
            return Failure(UNKNOWN_BOOKING if quote.code == ProblemCode.BOOKING_NOT_FOUND else quote)
        if quote.booking_id != inp.booking_id or quote.organization_id != inp.mandate.organization_id:
            return Failure(UNKNOWN_BOOKING)
        refused = _not_changeable(call.action, quote)
        if refused is not None:
            return Failure(refused)
        context: dict[str, str | None] = {
            "version": quote.version,
            "service_name": quote.slot.service_name,
            "previous": _position(quote.slot).to_wire_json(),
        }
        if isinstance(inp, BookingRescheduleInput):
            summary_or_refusal = await self._reschedule_facts(inp, quote, call, context)
        else:
            summary_or_refusal = self._cancel_facts(inp, quote)
        if isinstance(summary_or_refusal, Problem):
            return Failure(summary_or_refusal)
        summary, bound = summary_or_refusal
        decision = await self._approvals.aevaluate_payload(
            call.payload_hash, inp.approval, summary, summary_hash=bound, tool=call.action
        )
        if not isinstance(decision, Approved):
            return Failure(decision)
        await self._idempotency.amark_placing(claim.lease, decision.token, context)
        return await self._write(call, claim, attempt, context, decision.token)

    @staticmethod
    def _cancel_facts(inp: BookingCancelInput, quote: ChangeQuote) -> tuple[str, str] | Problem:
        when_free = free_until_sentence(quote)
        refused = check_fee(inp.mandate, quote.cancellation_fee, "cancellation", when_free=when_free)
        if refused is not None:
            return refused
        summary = cancel_summary(quote)
        return summary, sha256_hex({"summary": summary, "version": quote.version})

    async def _reschedule_facts(
        self, inp: BookingRescheduleInput, quote: ChangeQuote, call: _Call, context: dict[str, str | None]
    ) -> tuple[str, str] | Problem:
        start_local = check_requested_wall_clock(inp.date, inp.time)
        if isinstance(start_local, Problem):  # unreachable: the pre-check passed it
            return start_local
        # The new slot is what a create of the booking's service there would book: the adapter resolves
        # it as it does for booking.create, and create's rules check it.
        fields: dict[str, Any] = {"customer": inp.customer} if inp.customer is not None else {}
        create = BookingCreateInput(
            mandate=inp.mandate,
            idempotency_key=inp.idempotency_key,
            service_id=quote.slot.service_id,
            schedule_id=inp.schedule_id,
            provider_id=inp.provider_id,
            date=inp.date,
            time=inp.time,
            **fields,
        )
        offer = await self._adapter.resolve_booking(
            BookingRequest(create, start_local, platform_key=call.key)
        )
        bookable = check_new_slot(inp.mandate, offer, provider_id=inp.provider_id, now=self._clock.now())
        if isinstance(bookable, Problem):
            return bookable
        refused = check_fee(inp.mandate, quote.reschedule_fee, "reschedule")
        if refused is not None:
            return refused
        slot, service = bookable
        summary = reschedule_summary(quote, slot, slot.price or service.price)
        current = SlotPosition(
            starts_at=slot.starts_at,
            starts_at_local=slot.starts_at_local,
            ends_at=slot.ends_at,
            ends_at_local=slot.ends_at_local,
            schedule_timezone=slot.schedule_timezone,
            provider_id=slot.provider_id,
        )
        validator = offer.validator if not isinstance(offer, Problem) else None
        context.update({"current": current.to_wire_json(), "validator": validator})
        bound = sha256_hex({"summary": summary, "version": quote.version, "new_slot": slot.to_wire()})
        return summary, bound

    async def _write(
        self, call: _Call, claim: Claimed, attempt: _Attempt, context: dict[str, str | None], token: str
    ) -> AdapterResult[Any]:
        """Send the change (also a resumed one: the same key and version, which the platform replays)."""
        inp, version = call.inp, context.get("version") or ""
        # The write-ahead seam is typed by v0.1.0's tool names until the server serves this extension.
        refused = await before_effect(cast(ToolName, call.action))
        if refused is not None:
            attempt.outcome_known = claim.placing is None
            return Failure(refused)
        attempt.outcome_known = False  # from here the platform may make the change
        changed: ChangedBooking | Problem
        if isinstance(inp, BookingRescheduleInput):
            current = SlotPosition.model_validate_json(context.get("current") or "{}")
            request = RescheduleRequest(
                inp.booking_id,
                call.key,
                version,
                inp.schedule_id,
                inp.provider_id,
                current.starts_at_local,
                customer=inp.customer,
                validator=context.get("validator"),
                verification_code=inp.verification_code,
            )
            changed = await self._adapter.reschedule(request)
        else:
            changed = await self._adapter.cancel(
                CancelRequest(inp.booking_id, call.key, version, inp.customer)
            )
        if isinstance(changed, Problem):
            said_nothing = changed.code in OUTCOME_UNKNOWN or (
                claim.placing is not None and changed.code == ProblemCode.RATE_LIMITED
            )
            attempt.outcome_known = not said_nothing
            if changed.code == ProblemCode.SLOT_TAKEN:
                changed = changed.model_copy(
                    update={"message": f"{changed.message} The original appointment is unchanged."}
                )
            return Failure(UNKNOWN_BOOKING if changed.code == ProblemCode.BOOKING_NOT_FOUND else changed)
        result = self._result(call, context, changed)
        await self._idempotency.acomplete(claim.lease, result)
        attempt.settled = True
        try:
            await self._approvals.amark_spent(token)
        except StateStoreError as error:
            logger.warning("approval_not_spent", extra={"error": str(error)})
        return Success(result)

    @staticmethod
    def _result(call: _Call, context: dict[str, str | None], changed: ChangedBooking) -> CancelResult:
        inp, booking = call.inp, changed.booking
        previous = SlotPosition.model_validate_json(context.get("previous") or "{}")
        service_name = context.get("service_name") or booking.service_id or "the appointment"
        common: dict[str, Any] = {
            "id": receipt_id(inp.idempotency_key),
            "booking_id": booking.id,
            "status": booking.status,
            "fee": changed.fee,
        }
        if call.action == "booking.cancel":
            return CancelResult(**common, text=cancel_text(service_name, previous, changed.fee))
        planned = SlotPosition.model_validate_json(context.get("current") or "{}")
        current = SlotPosition(
            starts_at=booking.starts_at or planned.starts_at,
            starts_at_local=booking.starts_at_local or planned.starts_at_local,
            ends_at=booking.ends_at or planned.ends_at,
            ends_at_local=booking.ends_at_local or planned.ends_at_local,
            schedule_timezone=booking.schedule_timezone or planned.schedule_timezone,
            provider_id=booking.provider_id or planned.provider_id,
        )
        text = reschedule_text(service_name, previous, current, changed.fee)
        return RescheduleResult(**common, text=text, previous=previous, current=current)
