"""The protocol core as the server sees it: a platform adapter with every OSBP rule around it.

:class:`OsbpCore` turns any :class:`~osbp.protocol.port.PlatformAdapter` into the spec's seven-method
:class:`~osbp.protocol.contract.BookingAdapter`:

* the read and verification tools pass straight through to the platform adapter;
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

from osbp.protocol.approval import APPROVAL_TTL, ApprovalGate, default_token_source
from osbp.protocol.booking import BookingPipeline
from osbp.protocol.clock import Clock, SystemClock
from osbp.protocol.contract import AdapterResult, Failure, Success
from osbp.protocol.idempotency import IdempotencyStore
from osbp.protocol.models import (
    AvailabilityFindInput,
    Booking,
    BookingCreateInput,
    BookingStatusInput,
    PlatformIdentity,
    Policy,
    PolicyExplainInput,
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
from osbp.protocol.problems import UPSTREAM_UNAVAILABLE
from osbp.protocol.state import StateBackend, StateStoreError, open_state_store

__all__ = ["SNAPSHOT_FALLBACK", "OsbpCore"]

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
        return await self.adapter.describe_service(inp)

    async def find_availability(self, inp: AvailabilityFindInput) -> AdapterResult[list[Slot]]:
        """availability.find (the platform adapter's)."""
        return await self.adapter.find_availability(inp)

    async def explain_policy(self, inp: PolicyExplainInput) -> AdapterResult[Policy]:
        """policy.explain (the platform adapter's)."""
        return await self.adapter.explain_policy(inp)

    async def send_verification(self, inp: VerificationSendInput) -> AdapterResult[VerificationChallenge]:
        """verification.send (the platform adapter's)."""
        return await self.adapter.send_verification(inp)

    async def verify_code(self, inp: VerificationVerifyInput) -> AdapterResult[VerificationChallenge]:
        """verification.verify (the platform adapter's)."""
        return await self.adapter.verify_code(inp)

    async def create_booking(self, inp: BookingCreateInput) -> AdapterResult[Receipt]:
        """booking.create through the core's pipeline (the adapter only resolves and places)."""
        return await self._pipeline.create(inp)

    async def get_booking(self, inp: BookingStatusInput) -> AdapterResult[Booking]:
        """booking.status: the platform's current state, or the marked snapshot while it is unreachable."""
        result = await self.adapter.get_booking(inp)
        if isinstance(result, Failure) and result.problem.code == UPSTREAM_UNAVAILABLE and inp.booking_id:
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
