"""The adapter contract: result values and the BookingAdapter protocol."""

from __future__ import annotations

import dataclasses

import pytest

from osbp.protocol.contract import AdapterResult, BookingAdapter, Failure, Success
from osbp.protocol.idempotency import LOCAL_CACHE_REPLAY
from osbp.protocol.models import (
    AvailabilityFindInput,
    Booking,
    BookingCreateInput,
    BookingStatusInput,
    PlatformIdentity,
    Policy,
    PolicyExplainInput,
    Receipt,
    Service,
    ServiceDescribeInput,
    Slot,
    VerificationChallenge,
    VerificationSendInput,
    VerificationVerifyInput,
)
from osbp.protocol.problems import ProblemCode, problem


class NullAdapter:
    """A minimal adapter that answers every call without a platform."""

    platform = PlatformIdentity(vendor="null", api_version="v0")

    async def describe_service(self, inp: ServiceDescribeInput) -> AdapterResult[Service]:
        return Success(Service(id=inp.service_id or "svc", name="Thing"))

    async def find_availability(self, inp: AvailabilityFindInput) -> AdapterResult[list[Slot]]:
        return Success([])

    async def explain_policy(self, inp: PolicyExplainInput) -> AdapterResult[Policy]:
        return Failure(problem(ProblemCode.INTERNAL_ADAPTER_ERROR))

    async def send_verification(self, inp: VerificationSendInput) -> AdapterResult[VerificationChallenge]:
        return Success(VerificationChallenge(sent=True, method="sms", purpose=inp.purpose or ""))

    async def verify_code(self, inp: VerificationVerifyInput) -> AdapterResult[VerificationChallenge]:
        return Failure(problem("verification_verify_not_supported", "No independent verify primitive."))

    async def create_booking(self, inp: BookingCreateInput) -> AdapterResult[Receipt]:
        return Success(Receipt(id="r", booking_id="b", text="t"), runtime=LOCAL_CACHE_REPLAY)

    async def get_booking(self, inp: BookingStatusInput) -> AdapterResult[Booking]:
        return Failure(problem(ProblemCode.BOOKING_NOT_FOUND))

    async def aclose(self) -> None:
        return None


def test_a_conforming_adapter_satisfies_the_protocol() -> None:
    """The seven methods plus platform and aclose make a BookingAdapter (OSBP spec, Adapter Contract)."""
    adapter: BookingAdapter = NullAdapter()
    assert isinstance(adapter, BookingAdapter)
    assert not isinstance(object(), BookingAdapter)


@pytest.mark.anyio
async def test_results_are_values_with_optional_runtime() -> None:
    """AdapterResult is Success(value, runtime?) | Failure(problem, runtime?) (OSBP spec, Adapter)."""
    adapter = NullAdapter()
    created = await adapter.create_booking(
        BookingCreateInput.model_validate(
            {
                "mandate": {},
                "idempotency_key": "k",
                "service_id": "s",
                "schedule_id": "c",
                "provider_id": "p",
                "date": "2026-05-05",
                "time": "13:00",
            }
        )
    )
    assert isinstance(created, Success)
    assert created.runtime == LOCAL_CACHE_REPLAY
    status = await adapter.get_booking(BookingStatusInput(booking_id="nope"))
    assert isinstance(status, Failure)
    assert status.problem.code == "booking_not_found"
    with pytest.raises(dataclasses.FrozenInstanceError):
        status.problem = problem(ProblemCode.SLOT_TAKEN)  # type: ignore[misc]
