"""The adapter contract: the seven methods every OSBP platform adapter implements.

Each method returns an :data:`AdapterResult` value and never raises for an expected failure; an
exception escaping an adapter is a bug that the host turns into ``internal_adapter_error``. The upstream
metadata of the call in progress travels through :mod:`osbp.protocol.upstream`, not through the adapter
object, so one adapter instance can serve overlapping calls.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Generic, Protocol, TypeAlias, TypeVar, runtime_checkable

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

__all__ = ["AdapterResult", "BookingAdapter", "Failure", "PlatformTools", "Success"]

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Success(Generic[T]):
    """An adapter's successful result, optionally with ``osbp_runtime`` diagnostics."""

    value: T
    runtime: RuntimeDiagnostics | None = None


@dataclass(frozen=True, slots=True)
class Failure:
    """An adapter's expected failure as a Problem value, optionally with ``osbp_runtime`` diagnostics."""

    problem: Problem
    runtime: RuntimeDiagnostics | None = None


AdapterResult: TypeAlias = Success[T] | Failure


@runtime_checkable
class PlatformTools(Protocol):
    """What every adapter answers itself: the identity, the read and verification tools, status, close."""

    @property
    def platform(self) -> PlatformIdentity:
        """The static platform identity recorded into audit events."""
        ...

    async def describe_service(self, inp: ServiceDescribeInput) -> AdapterResult[Service]:
        """service.describe."""
        ...

    async def find_availability(self, inp: AvailabilityFindInput) -> AdapterResult[list[Slot]]:
        """availability.find."""
        ...

    async def explain_policy(self, inp: PolicyExplainInput) -> AdapterResult[Policy]:
        """policy.explain."""
        ...

    async def send_verification(self, inp: VerificationSendInput) -> AdapterResult[VerificationChallenge]:
        """verification.send."""
        ...

    async def verify_code(self, inp: VerificationVerifyInput) -> AdapterResult[VerificationChallenge]:
        """verification.verify."""
        ...

    async def get_booking(self, inp: BookingStatusInput) -> AdapterResult[Booking]:
        """booking.status."""
        ...

    async def aclose(self) -> None:
        """Release the adapter's resources (HTTP client, stores)."""
        ...


@runtime_checkable
class BookingAdapter(PlatformTools, Protocol):
    """The spec's seven-method adapter contract (what the server exposes): the tools plus booking.create."""

    async def create_booking(self, inp: BookingCreateInput) -> AdapterResult[Receipt]:
        """booking.create (mandate validation, approval gate and idempotency included)."""
        ...
