"""booking.create's safety pipeline: every OSBP rule, in the spec's order, for any platform port.

:class:`BookingPipeline` drives a :class:`~osbp.protocol.port.PlatformAdapter` through one booking.create:

1. **Replay**: the key already settled with this payload → its stored receipt with
   ``osbp_runtime.idempotency = "local_cache_replay"`` and no platform request (a replay is no mutation,
   so it answers even after the mandate expired).
2. **Mandate, the platform-free steps** (:func:`~osbp.protocol.mandate.precheck_mandate`): well-formed,
   not expired, action, scope, the requested date and time's shape and ``earliest_start``. They answer
   before anything that needs the platform, so an expired mandate is never reported as a platform outage.
3. **Idempotency claim**: another payload under the key → ``idempotency_conflict``; a concurrent duplicate
   waits for the first call, then replays.
4. **Resolve** through the port: the service, slot and policy as the platform reports them now; or, on
   the approved retry, the offer the user approved when it was kept with the approval because it carries
   the platform's validator (no platform request).
5. **Mandate, every step** (:func:`~osbp.protocol.mandate.validate_mandate`) on the resolved facts; when
   the platform does not know the service, the steps that need no service facts still answer first.
6. **Bookable**: no fee of unknown amount (fail closed), a provider id, the platform still offers the
   exact slot (else ``slot_taken`` or the unknown id), and a customer with a name and a contact.
7. **Approval**: the final-confirmation gate on a summary built from the facts just resolved: the
   approval token (the spec's path), or, when the caller installed a confirmer
   (:mod:`osbp.protocol.confirmation`), the user's answer through the host to that summary's hash. An
   answer that came after a wait is checked against the facts resolved again: a changed summary is asked
   again, and nothing is booked on an answer to another summary.
8. **Place** through the port (idempotent per key, with the offer's validator when it has one), each
   send preceded by :func:`~osbp.protocol.effects.before_effect` (the caller's write-ahead record: when it
   cannot be made, nothing is sent and its Problem is the answer), then settle: the receipt and a
   snapshot of the booking stored under the key, the approval token spent.
   When the platform refuses the placement because the offer's facts changed (the port's
   ``offer_changed``), nothing was booked: steps 4-8 run again on freshly resolved facts, so the user is
   challenged again when the summary changed, or gets the Problem the new facts call for. Every other
   outcome hands the key back (shielded from cancellation) so the same attempt can be retried.

The idempotency records are the caller's (:func:`~osbp.protocol.principal.scope_of`: this adapter's
organization and the token subject, or the local caller on stdio), and the platform create carries the
subject's key (:func:`~osbp.protocol.principal.platform_key`): another subject repeating a payload and key
gets its own attempt, through the gate, never the first subject's receipt.

A state store failure (:class:`~osbp.protocol.state.StateStoreError`: a lost PostgreSQL connection,
SQLite's ``database is locked``, a disk error) is an infrastructure failure, answered here, once, as the
retryable ``idempotency_in_progress``: after this call may have reached the platform, with the instruction
to retry the same booking.create with the same idempotency_key (the attempt stays marked as placed, so the
retry resumes it: the platform replays the one appointment), else saying nothing was sent.
"""

from __future__ import annotations

import logging
import unicodedata
from dataclasses import dataclass, replace

import anyio

from osbp.protocol.approval import ApprovalGate, Approved, build_approval_summary, merchant_visible_name
from osbp.protocol.canonical import sha256_hex
from osbp.protocol.clock import Clock
from osbp.protocol.confirmation import (
    Answer,
    CodeCollector,
    ConfirmationStep,
    ConfirmationTrail,
    Refused,
    current_confirmation,
)
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
    booking_payload_hash,
)
from osbp.protocol.mandate import check_requested_wall_clock, precheck_mandate, validate_mandate
from osbp.protocol.models import (
    Booking,
    BookingCreateInput,
    Customer,
    Policy,
    PolicyOrganization,
    Problem,
    Receipt,
    Service,
    Slot,
)
from osbp.protocol.port import (
    OUTCOME_UNKNOWN,
    BookingRequest,
    Offer,
    PlatformAdapter,
    offer_from_json,
    offer_to_json,
)
from osbp.protocol.principal import platform_key, scope_of
from osbp.protocol.problems import ExtensionCode, ProblemCode, problem
from osbp.protocol.state import StateStoreError

__all__ = ["BookingPipeline", "receipt_text", "unpriced_fees_problem"]

logger = logging.getLogger("osbp.protocol")

# Validator answers that depend on the service's price, policy or kind: when the platform does not know
# the service these are not the real reason, so the unknown service is reported instead.
_NEEDS_SERVICE_FACTS = frozenset(
    {
        ProblemCode.PRICE_EXCEEDS_MANDATE,
        ProblemCode.CURRENCY_MISMATCH,
        ProblemCode.REQUIRES_USER_CONFIRMATION,
        ProblemCode.REQUIRES_CONSULTATION_HANDOFF,
        ProblemCode.REQUIRES_PAYMENT_HANDOFF,
        ProblemCode.POLICY_FEE_EXCEEDS_MANDATE,
    }
)


def receipt_text(
    booking: Booking,
    request: BookingRequest,
    service_name: str,
    *,
    provider_name: str | None = None,
    zone: str | None = None,
) -> str:
    """The human-readable receipt sentence (merchant-local date and time with the IANA zone)."""
    start = booking.starts_at_local or request.starts_at_local
    zone = booking.schedule_timezone or zone
    provider = f" with {provider_name}" if provider_name else ""
    when = f"on {start[:10]} at {start[11:16]}{f' {zone}' if zone else ''}{provider}"
    if booking.status == "pending":
        return (
            f"Requested {service_name} {when}; the merchant must still approve it. Booking id: {booking.id}."
        )
    return f"Booked {service_name} {when}. Booking id: {booking.id}."


def unpriced_fees_problem(fees: tuple[str, ...]) -> Problem:
    """The fail-closed answer (no token) for fees the platform charges without saying how much."""
    return problem(
        ProblemCode.REQUIRES_USER_CONFIRMATION,
        f"The merchant charges a {' and a '.join(fees)} but does not say how much, so this booking cannot "
        "be explained to the user; route to handoff.request. Do not retry as a final-confirmation "
        "challenge: there is no approval token.",
        retryable=False,
    )


#: The answer while an approved attempt's outcome at the platform is not known here yet.
_UNSETTLED = problem(
    ExtensionCode.IDEMPOTENCY_IN_PROGRESS,
    "An approved booking.create with this idempotency_key was sent to the platform and its outcome is not "
    "known here yet. Retry booking.create with the same payload, idempotency_key and approval to settle it; "
    "do not start a new booking attempt for it.",
    retryable=True,
)


#: The state store failed after this call may have reached the platform (the booking may exist).
_STATE_FAILED_PLACED = problem(
    ExtensionCode.IDEMPOTENCY_IN_PROGRESS,
    "The booking platform may have made this booking, but OSBP could not record the outcome: its state "
    "store failed. Retry booking.create with the same payload, idempotency_key and approval: the retry "
    "answers that one booking, never a second; do not start a new booking attempt for it.",
    retryable=True,
)
#: The state store failed before this call sent anything to the platform.
_STATE_FAILED = problem(
    ExtensionCode.IDEMPOTENCY_IN_PROGRESS,
    "OSBP's state store failed, so this call sent nothing to the booking platform. Retry booking.create "
    "with the same payload and idempotency_key (and approval, if you have one) shortly.",
    retryable=True,
)

#: Placements one call tries while the platform keeps answering that the offer's facts just changed.
_PLACE_ROUNDS = 3
#: Rounds one call runs in all: the placements, plus a confirmation through the host before each.
_ROUNDS = 2 * _PLACE_ROUNDS
#: ``Placing.context["confirmation"]`` of an attempt the user confirmed through the host (no token).
_ELICITED = "elicitation"

_KEEPS_CHANGING = problem(
    ExtensionCode.UPSTREAM_UNAVAILABLE,
    "The merchant's catalog kept changing while this booking was placed, so nothing was booked. Retry "
    "booking.create with the same payload, idempotency_key and approval shortly.",
    retryable=True,
)


@dataclass(frozen=True, slots=True)
class _OfferChanged:
    """The platform refused the placement: a fact the offer's validator covers changed (nothing booked)."""


@dataclass(frozen=True, slots=True)
class _Reconfirm:
    """The user accepted ``summary_hash`` after a wait: resolve again, book only on the same summary."""

    summary_hash: str


def _wants_code(outcome: AdapterResult[Receipt] | _OfferChanged, inp: BookingCreateInput) -> bool:
    """The platform asked for a verification code the call did not carry."""
    return (
        isinstance(outcome, Failure)
        and outcome.problem.code == ProblemCode.REQUIRES_VERIFICATION
        and inp.verification_code is None
    )


def _authorizes(inp: BookingCreateInput, placing: Placing) -> bool:
    """Whether the call may resume the placed attempt: its approval token, or the user confirmed it.

    An attempt the user confirmed through the host resumes on a retry of the same payload (the key binds
    it), as a token-path attempt does on a retry carrying its token: the user is not asked again.
    """
    if placing.context.get("confirmation") == _ELICITED:
        return True
    return inp.approval is not None and sha256_hex(inp.approval.token) == placing.token_hash


@dataclass
class _Attempt:
    """How far one claimed attempt got: settled, and whether its platform outcome is known."""

    settled: bool = False
    outcome_known: bool = True


@dataclass(frozen=True, slots=True)
class _Bookable:
    """The checked facts of an attempt that may go to the approval gate."""

    service: Service
    slot: Slot
    policy: Policy
    customer: Customer
    customer_name: str
    #: The offer the facts came from (its validator travels with the placement).
    offer: Offer


class BookingPipeline:
    """booking.create over one platform adapter, with the core's idempotency store and approval gate."""

    def __init__(
        self,
        adapter: PlatformAdapter,
        *,
        idempotency: IdempotencyStore,
        approvals: ApprovalGate,
        clock: Clock,
    ) -> None:
        self._adapter = adapter
        self._idempotency = idempotency
        self._approvals = approvals
        self._clock = clock

    async def create(self, inp: BookingCreateInput) -> AdapterResult[Receipt]:
        """Run booking.create end to end (see the module docstring for the order)."""
        attempt = _Attempt()
        try:
            return await self._create(inp, attempt)
        except StateStoreError as error:
            # The one place a state failure is answered: the pipeline knows whether the platform may hold
            # the booking, and the attempt's placed mark (if written) makes the retry resume it.
            logger.error(
                "state_store_failed",
                extra={"outcome_known": attempt.outcome_known, "error": str(error)},
            )
            return Failure(_STATE_FAILED if attempt.outcome_known else _STATE_FAILED_PLACED)

    async def _create(self, inp: BookingCreateInput, attempt: _Attempt) -> AdapterResult[Receipt]:
        payload_hash = booking_payload_hash(inp)
        scope = scope_of(self._adapter.organization_id)
        earlier = await self._idempotency.apeek(inp.idempotency_key, payload_hash, scope)
        if isinstance(earlier, Replay):
            return Success(earlier.receipt, runtime=LOCAL_CACHE_REPLAY)
        if isinstance(earlier, Placing) and not _authorizes(inp, earlier):
            return Failure(_UNSETTLED)
        start_local: str | None = None
        if earlier is None:
            checked = precheck_mandate(
                inp, organization_id=self._adapter.organization_id, now=self._clock.now()
            )
            if isinstance(checked, Problem):
                return Failure(checked)
            start_local = checked
        claim = await self._idempotency.aclaim(inp.idempotency_key, payload_hash, scope)
        if isinstance(claim, Replay):
            return Success(claim.receipt, runtime=LOCAL_CACHE_REPLAY)
        if isinstance(claim, Conflict | InProgress):
            return Failure(claim.problem)
        try:
            if claim.placing is not None:
                if not _authorizes(inp, claim.placing):
                    attempt.outcome_known = False
                    return Failure(_UNSETTLED)
                return await self._resume(inp, claim, claim.placing, attempt)
            if start_local is None:
                # The placed mark was cleared (a known refusal) between the look and the claim: this call
                # skipped the mandate pre-check, so it books nothing; the retry runs every check afresh.
                return Failure(_UNSETTLED)
            request = BookingRequest(inp, start_local, platform_key=platform_key(inp.idempotency_key))
            return await self._first(request, claim, attempt)
        finally:
            if not attempt.settled:
                # Shielded: a cancelled call must still hand the key back so the attempt can be retried;
                # an attempt that may have reached the platform stays marked, so the retry resumes it.
                with anyio.CancelScope(shield=True):
                    await self._idempotency.arelease(claim.lease, outcome_known=attempt.outcome_known)

    async def _first(
        self, request: BookingRequest, claim: Claimed, attempt: _Attempt
    ) -> AdapterResult[Receipt]:
        """A new attempt: every check on the offer, the gate, then the platform create.

        The offer is the one the user approved when the approval carries one kept with its token (placed
        with its validator), else the platform's facts resolved now.
        """
        return await self._rounds(request, await self._kept_offer(request.input), claim, attempt)

    async def _kept_offer(self, inp: BookingCreateInput) -> Offer | None:
        kept = await self._approvals.aapproved_offer(inp)
        if kept is None:
            return None
        try:
            return offer_from_json(kept)
        except (ValueError, KeyError):  # kept by another version in another shape: resolve afresh
            return None

    async def _rounds(
        self, request: BookingRequest, offer: Offer | None, claim: Claimed, attempt: _Attempt
    ) -> AdapterResult[Receipt]:
        """Check, approve and place; when the platform says the offer's facts changed, resolve again.

        Also resolved again: the facts after the user confirmed them through the host, so the booking
        placed is the one whose summary they accepted (``confirmed``, its hash).
        """
        confirmed: str | None = None
        refused_placements = 0
        for _round in range(_ROUNDS):
            resolved = offer if offer is not None else await self._adapter.resolve_booking(request)
            outcome = await self._approve_and_place(request, resolved, claim, attempt, confirmed)
            if isinstance(outcome, _Reconfirm):
                confirmed = outcome.summary_hash
            elif isinstance(outcome, _OfferChanged):
                refused_placements += 1
                if refused_placements == _PLACE_ROUNDS:
                    break
            else:
                return outcome
            offer = None  # nothing was booked: the next round resolves the current facts
        return Failure(_KEEPS_CHANGING)

    async def _confirm(
        self, trail: ConfirmationTrail, inp: BookingCreateInput, summary: str, confirmed: str | None
    ) -> Problem | _Reconfirm | None:
        """The host path of the gate: ``None`` when the user confirmed exactly this summary."""
        summary_hash = sha256_hex(summary)
        if confirmed == summary_hash:
            return None  # accepted, and the facts resolved again still give the same summary
        assert trail.confirmer is not None
        answer = await trail.confirmer.confirm(inp, summary, summary_hash)
        if isinstance(answer, Refused):
            step = ConfirmationStep(trail.host_mode, summary_hash, booking_payload_hash(inp), answer.answer)
            trail.record(step)
            return answer.problem
        accepted = answer.summary_hash == summary_hash
        # An answer bound to another summary confirms nothing: it is recorded and asked again.
        step_hash = answer.summary_hash if accepted else summary_hash
        trail.record(
            ConfirmationStep(
                trail.host_mode, step_hash, booking_payload_hash(inp), "accept" if accepted else "asked"
            )
        )
        if not accepted:
            return _Reconfirm(summary_hash="")
        return _Reconfirm(summary_hash) if answer.recheck else None

    async def _approve_and_place(
        self,
        request: BookingRequest,
        resolved: Offer | Problem,
        claim: Claimed,
        attempt: _Attempt,
        confirmed: str | None = None,
    ) -> AdapterResult[Receipt] | _OfferChanged | _Reconfirm:
        bookable = self._check(request, resolved)
        if isinstance(bookable, Problem):
            return Failure(bookable)
        summary = build_approval_summary(
            bookable.service,
            bookable.slot,
            bookable.policy,
            bookable.customer,
            customer_name=bookable.customer_name,
        )
        offer = bookable.offer
        context = {
            "service_name": bookable.service.name,
            "provider_name": bookable.slot.provider_name,
            "schedule_timezone": bookable.slot.schedule_timezone,
        }
        trail = current_confirmation()
        if trail is not None and trail.confirmer is not None:
            refused = await self._confirm(trail, request.input, summary, confirmed)
            if isinstance(refused, Problem):
                return Failure(refused)
            if refused is not None:
                return refused
            token = ""  # no token: the placing mark says the user confirmed it
            context["confirmation"] = _ELICITED
        else:
            kept = offer_to_json(offer) if offer.validator is not None else None
            decision = await self._approvals.aevaluate(request.input, summary, kept)
            if trail is not None:
                answer: Answer = "token" if isinstance(decision, Approved) else "challenged"
                payload_hash = booking_payload_hash(request.input)
                trail.record(ConfirmationStep("token", sha256_hex(summary), payload_hash, answer))
            if not isinstance(decision, Approved):
                return Failure(decision)
            token = decision.token
        if offer.validator is not None:
            # Kept for a resume after a crash: it re-sends the create on the same approved facts.
            context["offer_validator"] = offer.validator
        if request.platform_key is not None:
            # Kept for a resume: it re-sends the create under the same key at the platform.
            context["platform_key"] = request.platform_key
        await self._idempotency.amark_placing(claim.lease, token, context)
        placed = replace(request, validator=offer.validator)
        inp = placed.input
        outcome = await self._place(placed, bookable.customer_name, token, context, claim, attempt)
        # Typed as object: a confirmer may also collect codes (a second protocol), or not.
        collector: object = trail.confirmer if trail is not None else None
        if trail is None or not isinstance(collector, CodeCollector) or not _wants_code(outcome, inp):
            return outcome
        code = await self._collect_code(trail, collector, inp)
        if isinstance(code, Problem):
            return Failure(code)
        # The code goes to the platform only: the input the agent sent (and the audit records) has none.
        coded = replace(placed, input=inp.model_copy(update={"verification_code": code}))
        return await self._place(coded, bookable.customer_name, token, context, claim, attempt)

    @staticmethod
    async def _collect_code(
        trail: ConfirmationTrail, collector: CodeCollector, inp: BookingCreateInput
    ) -> str | Problem:
        """The platform wants the verification code: the user enters it through the host."""
        code = await collector.collect_code(inp)
        summary_hash = trail.steps[-1].summary_hash if trail.steps else ""
        answer: Answer = code.answer if isinstance(code, Refused) else "code_entered"
        trail.record(ConfirmationStep(trail.host_mode, summary_hash, booking_payload_hash(inp), answer))
        return code.problem if isinstance(code, Refused) else code

    async def _resume(
        self, inp: BookingCreateInput, claim: Claimed, placing: Placing, attempt: _Attempt
    ) -> AdapterResult[Receipt]:
        """An approved attempt that may have reached the platform: send the same create again.

        No availability re-check (the slot may be taken by this very attempt's appointment): the platform's
        idempotency replays the appointment it made under the same key, or makes it now, with the approved
        offer's validator when it had one (so not at facts that changed since: then this resolves again).
        """
        start_local = check_requested_wall_clock(inp.date, inp.time)
        name = merchant_visible_name(inp.customer)
        elicited = placing.context.get("confirmation") == _ELICITED
        if isinstance(start_local, Problem) or name is None or (inp.approval is None and not elicited):
            attempt.outcome_known = False  # it passed when placed
            return Failure(_UNSETTLED)
        token = inp.approval.token if inp.approval is not None and not elicited else ""
        # An attempt placed before subjects were scoped has no platform key kept: it went under the OSBP key.
        key = placing.context.get("platform_key")
        request = BookingRequest(
            inp, start_local, validator=placing.context.get("offer_validator"), platform_key=key
        )
        outcome = await self._place(request, name, token, placing.context, claim, attempt)
        if isinstance(outcome, _OfferChanged):
            fresh = BookingRequest(inp, start_local, platform_key=key)
            return await self._rounds(fresh, None, claim, attempt)
        return outcome

    async def _place(
        self,
        request: BookingRequest,
        customer_name: str,
        token: str,
        context: dict[str, str | None],
        claim: Claimed,
        attempt: _Attempt,
    ) -> AdapterResult[Receipt] | _OfferChanged:
        refused = await before_effect("booking.create")
        if refused is not None:
            # Nothing was sent. A resumed attempt may still have booked before: its mark stays, so the
            # retry resumes it; a fresh attempt hands its key back as nothing happened.
            attempt.outcome_known = claim.placing is None
            return Failure(refused)
        attempt.outcome_known = False  # from here the platform may create the appointment
        booking = await self._adapter.place_booking(request, customer_name)
        if isinstance(booking, Problem):
            # A platform answer past its own idempotency layer (a changed offer, a taken slot) says that no
            # create under this key committed: the platform would have replayed it. A 429 comes before that
            # layer and says nothing of a resumed attempt's earlier create, whose answer was lost and which
            # may still have booked: its mark stays, and the retry resumes it again.
            said_nothing = booking.code in OUTCOME_UNKNOWN or (
                claim.placing is not None and booking.code == ProblemCode.RATE_LIMITED
            )
            attempt.outcome_known = not said_nothing
            if booking.code == ExtensionCode.OFFER_CHANGED:
                return _OfferChanged()
            return Failure(booking)
        receipt = Receipt(
            id=request.receipt_id,
            booking_id=booking.id,
            text=receipt_text(
                booking,
                request,
                context.get("service_name") or request.input.service_id,
                provider_name=context.get("provider_name"),
                zone=context.get("schedule_timezone"),
            ),
        )
        # The booking as the platform just reported it: booking.status's not-fresh fallback.
        await self._idempotency.acomplete(claim.lease, receipt, booking)
        attempt.settled = True
        try:
            await self._approvals.amark_spent(token)
        except StateStoreError as error:
            # Settled: the receipt is the truth, and an unspent token of a settled payload only replays.
            logger.warning("approval_not_spent", extra={"error": str(error)})
        return Success(receipt)

    def _check(self, request: BookingRequest, offer: Offer | Problem) -> _Bookable | Problem:
        if isinstance(offer, Problem):
            return offer
        if offer.service is None or offer.slot is None or offer.policy is None:
            return self._unknown_service(request, offer)
        inp = request.input
        failed = validate_mandate(
            inp.mandate, slot=offer.slot, service=offer.service, policy=offer.policy, now=self._clock.now()
        )
        if failed is not None:
            return failed
        if offer.unpriced_fees:
            return unpriced_fees_problem(offer.unpriced_fees)
        if not inp.provider_id:
            return problem(ProblemCode.PROVIDER_UNKNOWN, "booking.create needs the slot's provider_id.")
        if offer.not_offered is not None:
            return offer.not_offered
        customer = inp.customer or Customer()
        name = merchant_visible_name(customer)
        if not name or not (customer.phone or customer.email):
            return problem(
                ExtensionCode.INVALID_CUSTOMER,
                "booking.create needs the customer's name (display_name, or given_name and family_name) "
                "and a phone number or email address; the platform requires both.",
            )
        controlled = [
            field
            for field in ("display_name", "given_name", "family_name")
            if any(unicodedata.category(char) == "Cc" for char in getattr(customer, field) or "")
        ]
        if controlled:
            # A name the user cannot read in the summary must not reach the merchant (nor be approved).
            return problem(
                ExtensionCode.INVALID_CUSTOMER,
                f"customer.{controlled[0]} contains a control character (such as a tab, newline or NUL); "
                "send the name as plain text.",
            )
        return _Bookable(offer.service, offer.slot, offer.policy, customer, name, offer)

    def _unknown_service(self, request: BookingRequest, offer: Offer) -> Problem:
        """Scope and window still answer first when the platform does not know the service."""
        if offer.not_offered is None:
            raise ValueError(
                "an Offer without a service must say why in not_offered (PlatformAdapter contract)"
            )
        inp = request.input
        organization_id = self._adapter.organization_id
        placeholder = Slot(
            id=f"{inp.schedule_id}:{inp.provider_id}:{inp.service_id}:{request.starts_at_local}",
            organization_id=organization_id,
            schedule_id=inp.schedule_id,
            provider_id=inp.provider_id or None,
            service_id=inp.service_id,
            starts_at_local=request.starts_at_local,
            ends_at_local=request.starts_at_local,
        )
        failed = validate_mandate(
            inp.mandate,
            slot=placeholder,
            service=Service(id=inp.service_id, name=inp.service_id),
            policy=Policy(organization=PolicyOrganization(id=organization_id)),
            now=self._clock.now(),
        )
        if failed is not None and failed.code not in _NEEDS_SERVICE_FACTS:
            return failed
        return offer.not_offered
