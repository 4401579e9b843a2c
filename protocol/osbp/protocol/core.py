"""The protocol core as the server sees it: a platform adapter with every OSBP rule around it.

:class:`OsbpCore` turns any :class:`~osbp.protocol.port.PlatformAdapter` into the spec's seven-method
:class:`~osbp.protocol.contract.BookingAdapter`:

* the read and verification tools call the platform adapter, whose value or Problem becomes the
  :data:`~osbp.protocol.contract.AdapterResult`; availability.find gets its protocol rules here
  (:mod:`osbp.protocol.availability`): the ``date`` and ``earliest_start`` checks before any platform call,
  then start order, ``earliest_start``, ``limit`` pages with the partial-page notice, display context once;
* booking.create runs the core's pipeline (:class:`~osbp.protocol.booking.BookingPipeline`): mandate
  validation in the spec's order, the final-confirmation gate, idempotency, receipt and snapshot;
* booking.status reads the platform; only when the platform answers ``upstream_unavailable`` and this
  core created the booking does it answer from the snapshot taken at creation, saying so in
  ``osbp_runtime.message`` (the spec: a local record must not pretend to be fresh platform state).

The idempotency records, approvals and snapshots live in one :class:`~osbp.protocol.store.StateStore`.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import TypeVar

from osbp.protocol.approval import APPROVAL_TTL, ApprovalGate, default_token_source
from osbp.protocol.availability import check_find_input, page_slots
from osbp.protocol.booking import BookingPipeline
from osbp.protocol.clock import Clock, SystemClock
from osbp.protocol.contract import AdapterResult, Failure, Success
from osbp.protocol.idempotency import IdempotencyStore
from osbp.protocol.lifecycle import LifecyclePipeline
from osbp.protocol.lifecycle_models import (
    BookingCancelInput,
    BookingRescheduleInput,
    CancelResult,
    RescheduleResult,
)
from osbp.protocol.lifecycle_port import LifecycleAdapter
from osbp.protocol.models import (
    AvailabilityFindInput,
    Booking,
    BookingCreateInput,
    BookingStatusInput,
    PlatformIdentity,
    Policy,
    PolicyExplainInput,
    Problem,
    Receipt,
    RuntimeDiagnostics,
    Service,
    ServiceDescribeInput,
    Slot,
    VerificationChallenge,
    VerificationSendInput,
    VerificationVerifyInput,
)
from osbp.protocol.port import PlatformAdapter
from osbp.protocol.problems import ExtensionCode
from osbp.protocol.state import StateBackend, StateStoreError, open_state_store

__all__ = ["SNAPSHOT_FALLBACK", "OsbpCore"]

T = TypeVar("T")

#: ``osbp_runtime`` of a booking.status answered from the local snapshot (the spec: never pretend fresh).
SNAPSHOT_FALLBACK = RuntimeDiagnostics(
    message="The booking platform could not be reached. This is the booking as OSBP recorded it when it was "
    "created here, not current platform state; check again later for its current status."
)


class OsbpCore:
    """The seven-method BookingAdapter over one platform adapter and one OSBP state file."""

    def __init__(
        self,
        adapter: PlatformAdapter,
        *,
        state: StateBackend | Path | str,
        clock: Clock | None = None,
        token_source: Callable[[], str] = default_token_source,
        idempotency: IdempotencyStore | None = None,
        approval_ttl: timedelta = APPROVAL_TTL,
    ) -> None:
        if not isinstance(adapter, PlatformAdapter):
            raise TypeError(
                f"{type(adapter).__name__} is not a PlatformAdapter: it needs organization_id, "
                "resolve_booking and place_booking besides the read methods (docs/adapter.md)"
            )
        store = open_state_store(state) if isinstance(state, Path | str) else state
        self._store = store
        self._clock = clock or SystemClock()
        self.adapter = adapter
        self.idempotency = idempotency or IdempotencyStore(store, clock=self._clock)
        self.approvals = ApprovalGate(store, clock=self._clock, token_source=token_source, ttl=approval_ttl)
        self._pipeline = BookingPipeline(
            adapter, idempotency=self.idempotency, approvals=self.approvals, clock=self._clock
        )
        #: booking.cancel and booking.reschedule, when the adapter implements the lifecycle port too.
        self._lifecycle = (
            LifecyclePipeline(
                adapter, idempotency=self.idempotency, approvals=self.approvals, clock=self._clock
            )
            if isinstance(adapter, LifecycleAdapter)
            else None
        )

    @property
    def state(self) -> StateBackend:
        """The state store this core keeps its records in (closed by :meth:`aclose`)."""
        return self._store

    @property
    def platform(self) -> PlatformIdentity:
        """The platform adapter's static identity."""
        return self.adapter.platform

    async def describe_service(self, inp: ServiceDescribeInput) -> AdapterResult[Service]:
        """service.describe (the platform adapter's)."""
        return _result(await self.adapter.describe_service(inp))

    async def find_availability(self, inp: AvailabilityFindInput) -> AdapterResult[list[Slot]]:
        """availability.find: the platform adapter's slots of the day, checked, ordered and paged here."""
        refused = check_find_input(inp)
        if refused is not None:
            return Failure(refused)
        slots = await self.adapter.find_availability(inp)
        if isinstance(slots, Problem):
            return Failure(slots)
        found = page_slots(slots, earliest_start=inp.earliest_start, limit=inp.limit)
        if isinstance(found, Problem):
            return Failure(found)
        return Success(found.slots, runtime=found.notice)

    async def explain_policy(self, inp: PolicyExplainInput) -> AdapterResult[Policy]:
        """policy.explain (the platform adapter's)."""
        return _result(await self.adapter.explain_policy(inp))

    async def send_verification(self, inp: VerificationSendInput) -> AdapterResult[VerificationChallenge]:
        """verification.send (the platform adapter's)."""
        return _result(await self.adapter.send_verification(inp))

    async def verify_code(self, inp: VerificationVerifyInput) -> AdapterResult[VerificationChallenge]:
        """verification.verify (the platform adapter's)."""
        return _result(await self.adapter.verify_code(inp))

    async def create_booking(self, inp: BookingCreateInput) -> AdapterResult[Receipt]:
        """booking.create through the core's pipeline (the adapter only resolves and places)."""
        return await self._pipeline.create(inp)

    @property
    def serves_lifecycle(self) -> bool:
        """Whether the adapter implements the lifecycle port (docs/lifecycle.md)."""
        return self._lifecycle is not None

    async def cancel_booking(self, inp: BookingCancelInput) -> AdapterResult[CancelResult]:
        """booking.cancel through the core's lifecycle pipeline."""
        return await self._lifecycle_pipeline().cancel(inp)

    async def reschedule_booking(self, inp: BookingRescheduleInput) -> AdapterResult[RescheduleResult]:
        """booking.reschedule through the core's lifecycle pipeline."""
        return await self._lifecycle_pipeline().reschedule(inp)

    def _lifecycle_pipeline(self) -> LifecyclePipeline:
        if self._lifecycle is None:
            # A host bug: it offered a lifecycle tool over an adapter without the port.
            raise TypeError(f"{type(self.adapter).__name__} does not implement LifecyclePort")
        return self._lifecycle

    async def get_booking(self, inp: BookingStatusInput) -> AdapterResult[Booking]:
        """booking.status: the platform's current state, or the marked snapshot while it is unreachable."""
        result = _result(await self.adapter.get_booking(inp))
        if (
            isinstance(result, Failure)
            and result.problem.code == ExtensionCode.UPSTREAM_UNAVAILABLE
            and inp.booking_id
        ):
            try:
                snapshot = await self.idempotency.abooking_snapshot(inp.booking_id)
            except StateStoreError:
                return result  # the fallback is unavailable too: the platform's own answer stands
            if snapshot is not None:
                return Success(snapshot, runtime=SNAPSHOT_FALLBACK)
        return result

    async def aclose(self) -> None:
        """Close the platform adapter and the state store's pooled connections."""
        try:
            await self.adapter.aclose()
        finally:
            self._store.close()


def _result(answer: T | Problem) -> AdapterResult[T]:
    """A port answer (its value or a Problem) as the host's result, with no ``osbp_runtime``."""
    if isinstance(answer, Success | Failure):
        # A bug in the plug-in (the host turns it into internal_adapter_error): say which one.
        raise TypeError("a PlatformAdapter method returns its value or a Problem, not an AdapterResult")
    return Failure(answer) if isinstance(answer, Problem) else Success(answer)
