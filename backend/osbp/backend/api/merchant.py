"""Merchant actions: confirm, cancel, complete, no-show and reschedule an appointment, as the merchant.

The merchant's own surface, beside the customer-side `…/appointments/{id}/cancel`; every action queues its
webhook event and wakes the worker. Writing routes stay `def`, in the thread pool (`BEGIN IMMEDIATE`).
"""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import Response

from osbp.backend import merchant
from osbp.backend.api.deps import RuntimeDep, model_response, problem_responses
from osbp.backend.runtime import Runtime
from osbp.backend.wire import AppointmentOut

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["merchant"])

_PATH = "/organizations/{organization_id}/merchant/appointments/{appointment_id}"
# No body and no query: nothing to refuse as `invalid_request`.
_ACTION_PROBLEMS = problem_responses(
    "organization_not_found", "appointment_not_found", "appointment_transition_not_allowed"
)


def _act(runtime: Runtime, organization_id: str, appointment_id: str, name: str) -> Response:
    changed = merchant.act(
        runtime.db,
        organization_id=organization_id,
        appointment_id=appointment_id,
        action=merchant.ACTIONS[name],
        now=runtime.clock.now(),
        tokens=runtime.tokens,
    )
    return model_response(changed)


@router.post(f"{_PATH}/confirm", response_model=AppointmentOut, responses=_ACTION_PROBLEMS)
def merchant_confirm(organization_id: str, appointment_id: str, runtime: RuntimeDep) -> Response:
    """Confirm a pending appointment (the approval queue of consultation services) before its start."""
    return _act(runtime, organization_id, appointment_id, "confirm")


@router.post(f"{_PATH}/cancel", response_model=AppointmentOut, responses=_ACTION_PROBLEMS)
def merchant_cancel(organization_id: str, appointment_id: str, runtime: RuntimeDep) -> Response:
    """Cancel a pending appointment, or a confirmed one before its end (frees the provider's time)."""
    return _act(runtime, organization_id, appointment_id, "cancel")


@router.post(f"{_PATH}/complete", response_model=AppointmentOut, responses=_ACTION_PROBLEMS)
def merchant_complete(organization_id: str, appointment_id: str, runtime: RuntimeDep) -> Response:
    """Record a started confirmed appointment as completed."""
    return _act(runtime, organization_id, appointment_id, "complete")


@router.post(f"{_PATH}/no-show", response_model=AppointmentOut, responses=_ACTION_PROBLEMS)
def merchant_no_show(organization_id: str, appointment_id: str, runtime: RuntimeDep) -> Response:
    """Record that the customer of a started confirmed appointment did not come."""
    return _act(runtime, organization_id, appointment_id, "no-show")


@router.post(
    f"{_PATH}/reschedule",
    response_model=AppointmentOut,
    responses=problem_responses(
        "invalid_request",
        "organization_not_found",
        "appointment_not_found",
        "appointment_transition_not_allowed",
        "slot_taken",
        "slot_unavailable",
    ),
)
def merchant_reschedule(
    organization_id: str, appointment_id: str, body: merchant.Reschedule, runtime: RuntimeDep
) -> Response:
    """Move an upcoming appointment to another free start of the same provider, service and location."""
    moved = merchant.reschedule(
        runtime.db,
        organization_id=organization_id,
        appointment_id=appointment_id,
        request=body,
        now=runtime.clock.now(),
        tokens=runtime.tokens,
    )
    return model_response(moved)
