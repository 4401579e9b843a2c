"""booking.create for Bookwell, in the order the spec and issue 3 fix.

1. **Idempotency**: a settled key with the same payload replays the stored receipt with
   ``osbp_runtime.idempotency = "local_cache_replay"`` and no platform request; another payload is
   ``idempotency_conflict``; a concurrent duplicate waits for the first call, then replays.
2. **Resolve** the service (with its policy), the organization (locations, providers, zone) and the
   requested slot: three concurrent GETs, nothing fetched twice.
3. **Mandate**: :func:`~osbp.protocol.mandate.validate_mandate` on the resolved facts, so mandate problems
   come back on the first call, before any approval challenge, and scope wins over availability (an empty
   provider_id is ``provider_unknown``, a provider outside the mandate ``provider_not_allowed``, never
   ``slot_taken``; an id the platform does not know is reported only after the mandate allowed it).
4. **Bookable**: the platform still offers the exact slot, else ``slot_taken``; the customer has a name
   and a contact (the platform needs both, so this fails before the user is asked to approve).
5. **Approval**: the final-confirmation gate on a summary built from the facts just resolved.
6. **Create** with a native ``Idempotency-Key`` derived from the OSBP key, the mandate id and the receipt
   id in the appointment metadata, the customer passed through, and the verification code passed
   through (never stored, never logged) when present.
7. **Receipt** stored under the idempotency key, with a snapshot of the booking as created (the
   documented fallback of booking.status); the approval token spent.

booking.create never defaults anything: every id, the date and the time come from the input.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import anyio

from osbp.adapter import translate
from osbp.adapter.bookwell import BookwellApi, native_idempotency_key
from osbp.adapter.native import NativeAppointment, NativeOrganization, NativeService, NativeSlot
from osbp.adapter.problems import INVALID_CUSTOMER, SERVICE_NOT_FOUND, at_edge
from osbp.protocol.approval import ApprovalGate, Approved, build_approval_summary, merchant_visible_name
from osbp.protocol.canonical import sha256_hex
from osbp.protocol.clock import Clock
from osbp.protocol.contract import AdapterResult, Failure, Success
from osbp.protocol.idempotency import (
    LOCAL_CACHE_REPLAY,
    Conflict,
    IdempotencyStore,
    InProgress,
    Lease,
    Replay,
    booking_payload_hash,
)
from osbp.protocol.mandate import check_requested_wall_clock, validate_mandate
from osbp.protocol.models import (
    BookingCreateInput,
    Customer,
    Policy,
    PolicyOrganization,
    Problem,
    Receipt,
    Service,
    Slot,
)
from osbp.protocol.problems import ProblemCode, problem

__all__ = ["BookingFlow", "receipt_id", "receipt_text"]

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
_METADATA_VALUE_MAX = 500  # Bookwell's limit on one metadata value


def receipt_id(idempotency_key: str) -> str:
    """The OSBP receipt id of one logical booking attempt."""
    return f"receipt_{idempotency_key}"


def receipt_text(created: NativeAppointment, service_name: str, provider_name: str | None) -> str:
    """The human-readable receipt sentence (merchant-local date and time with the IANA zone)."""
    provider = f" with {provider_name}" if provider_name else ""
    when = f"on {created.date} at {created.time} {created.time_zone}{provider}"
    if translate.booking_status(created.status) == "pending":
        return (
            f"Requested {service_name} {when}; the merchant must still approve it. Booking id: {created.id}."
        )
    return f"Booked {service_name} {when}. Booking id: {created.id}."


def _metadata_value(value: str) -> str:
    # An over-long id is recorded by its hash rather than truncated into something that looks real.
    return value if len(value) <= _METADATA_VALUE_MAX else "sha256:" + sha256_hex(value)


@dataclass(frozen=True, slots=True)
class _Resolved:
    """The facts one booking.create resolved from the platform."""

    service: Service
    native_service: NativeService
    slot: Slot
    policy: Policy
    #: ``None`` when the platform offers the slot, else why not (``slot_taken`` or an unknown id).
    not_offered: Problem | None


class BookingFlow:
    """booking.create against one Bookwell organization."""

    def __init__(
        self, api: BookwellApi, *, idempotency: IdempotencyStore, approvals: ApprovalGate, clock: Clock
    ) -> None:
        self._api = api
        self._idempotency = idempotency
        self._approvals = approvals
        self._clock = clock

    async def create(self, inp: BookingCreateInput) -> AdapterResult[Receipt]:
        """Run booking.create end to end (see the module docstring for the order)."""
        claim = await self._idempotency.aclaim(inp.idempotency_key, booking_payload_hash(inp))
        if isinstance(claim, Replay):
            return Success(claim.receipt, runtime=LOCAL_CACHE_REPLAY)
        if isinstance(claim, Conflict | InProgress):
            return Failure(claim.problem)
        settled = False
        try:
            result = await at_edge(lambda: self._attempt(inp, claim.lease))
            settled = isinstance(result, Success)
            return result
        finally:
            if not settled:
                # Shielded: a cancelled call must still hand the key back so the attempt can be retried.
                with anyio.CancelScope(shield=True):
                    await self._idempotency.arelease(claim.lease)

    async def _attempt(self, inp: BookingCreateInput, lease: Lease) -> AdapterResult[Receipt]:
        start_local = check_requested_wall_clock(inp.date, inp.time)
        if isinstance(start_local, Problem):
            return Failure(start_local)
        resolved = await self._resolve(inp, start_local)
        if isinstance(resolved, Problem):
            return Failure(resolved)
        slot, service, policy = resolved.slot, resolved.service, resolved.policy
        failed = validate_mandate(
            inp.mandate, slot=slot, service=service, policy=policy, now=self._clock.now()
        )
        if failed is not None:
            return Failure(failed)
        unknown = translate.unknown_fees(resolved.native_service)
        if unknown:
            return Failure(
                problem(
                    ProblemCode.REQUIRES_USER_CONFIRMATION,
                    f"The merchant charges a {' and a '.join(unknown)} but does not say how much, so this "
                    "booking cannot be explained to the user; route to handoff.request. Do not retry as a "
                    "final-confirmation challenge: there is no approval token.",
                    retryable=False,
                )
            )
        if not inp.provider_id:
            return Failure(
                problem(ProblemCode.PROVIDER_UNKNOWN, "booking.create needs the slot's provider_id.")
            )
        if resolved.not_offered is not None:
            return Failure(resolved.not_offered)
        customer = inp.customer or Customer()
        name = merchant_visible_name(customer)
        if not name or not (customer.phone or customer.email):
            return Failure(
                problem(
                    INVALID_CUSTOMER,
                    "booking.create needs the customer's name (display_name, or given_name and family_name) "
                    "and a phone number or email address; the platform requires both.",
                )
            )
        summary = build_approval_summary(service, slot, policy, customer, customer_name=name)
        decision = await self._approvals.aevaluate(inp, summary)
        if not isinstance(decision, Approved):
            return Failure(decision)
        created = await self._api.create_appointment(
            self._create_body(inp, start_local, customer, name),
            native_idempotency_key(self._api.organization_id, inp.idempotency_key),
        )
        if isinstance(created, Problem):
            return Failure(created)
        service_name = created.service_name or service.name
        receipt = Receipt(
            id=receipt_id(inp.idempotency_key),
            booking_id=created.id,
            text=receipt_text(created, service_name, slot.provider_name),
        )
        # The booking as the platform just reported it: booking.status's not-fresh fallback.
        await self._idempotency.acomplete(lease, receipt, translate.booking(created))
        await self._approvals.amark_spent(decision.token)
        return Success(receipt)

    async def _resolve(self, inp: BookingCreateInput, start_local: str) -> _Resolved | Problem:
        native_service, organization, availability = await asyncio.gather(
            self._api.service(inp.service_id),
            self._api.organization(),
            self._api.availability(
                service_id=inp.service_id,
                date=start_local[:10],
                location_id=inp.schedule_id,
                provider_id=inp.provider_id or None,
            ),
        )
        if isinstance(organization, Problem):
            return organization
        if isinstance(native_service, Problem):
            if native_service.code != SERVICE_NOT_FOUND:
                return native_service
            return self._unknown_service(inp, organization, start_local, native_service)
        offered: NativeSlot | None = None
        not_offered = problem(ProblemCode.SLOT_TAKEN)
        if isinstance(availability, Problem):
            if availability.retryable or availability.code == ProblemCode.INTERNAL_ADAPTER_ERROR:
                return availability
            # An unknown schedule or provider means "not offered" here: the mandate answers first.
            not_offered = availability
        else:
            wanted = (inp.schedule_id, inp.provider_id, inp.service_id, start_local[:10], start_local[11:16])
            offered = next(
                (
                    native
                    for native in availability.slots
                    if (native.location_id, native.provider_id, native.service_id, native.date, native.time)
                    == wanted
                ),
                None,
            )
        slot = (
            translate.slot(offered, organization)
            if offered is not None
            else translate.slot_from_request(
                organization,
                native_service,
                schedule_id=inp.schedule_id,
                provider_id=inp.provider_id,
                starts_at_local=start_local,
            )
        )
        return _Resolved(
            service=translate.service(native_service),
            native_service=native_service,
            slot=slot,
            policy=translate.policy(native_service, organization),
            not_offered=None if offered is not None else not_offered,
        )

    def _unknown_service(
        self, inp: BookingCreateInput, organization: NativeOrganization, start_local: str, not_found: Problem
    ) -> Problem:
        """Scope and window still answer first when the platform does not know the service."""
        placeholder = Slot(
            id=translate.slot_id(inp.schedule_id, inp.provider_id, inp.service_id, start_local),
            organization_id=organization.id,
            schedule_id=inp.schedule_id,
            provider_id=inp.provider_id or None,
            service_id=inp.service_id,
            starts_at_local=start_local,
            ends_at_local=start_local,
        )
        failed = validate_mandate(
            inp.mandate,
            slot=placeholder,
            service=Service(id=inp.service_id, name=inp.service_id),
            policy=Policy(organization=PolicyOrganization(id=organization.id)),
            now=self._clock.now(),
        )
        if failed is not None and failed.code not in _NEEDS_SERVICE_FACTS:
            return failed
        return not_found

    def _create_body(
        self, inp: BookingCreateInput, start_local: str, customer: Customer, name: str
    ) -> dict[str, Any]:
        native_customer = {
            "display_name": name,
            "given_name": customer.given_name,
            "family_name": customer.family_name,
            "phone": customer.phone,
            "email": customer.email,
        }
        body: dict[str, Any] = {
            "service_id": inp.service_id,
            "location_id": inp.schedule_id,
            "provider_id": inp.provider_id,
            "date": start_local[:10],
            "time": start_local[11:16],
            "customer": {key: value for key, value in native_customer.items() if value is not None},
            "metadata": {
                "mandate_id": _metadata_value(inp.mandate.id or ""),
                "osbp_receipt_id": _metadata_value(receipt_id(inp.idempotency_key)),
            },
        }
        if inp.verification_code is not None:
            body["verification_code"] = inp.verification_code
        return body
