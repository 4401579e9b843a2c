"""The customer's changes of an appointment: its change quote, cancel and reschedule.

Beside the merchant's actions (`osbp.backend.api.merchant`), through the same status table
(`osbp.backend.merchant.ACTIONS`). Every answer carries the appointment's `ETag`; the writes honour
`If-Match` with it and `Idempotency-Key` (required on the reschedule), and stay `def`, in the thread pool
(`BEGIN IMMEDIATE`).
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header
from starlette.responses import JSONResponse, Response

from osbp.backend import changes
from osbp.backend.api.deps import RuntimeDep, model_response, problem_responses
from osbp.backend.changes import Changed
from osbp.backend.idempotency import parse_key
from osbp.backend.openapi import answer_headers, header_parameter
from osbp.backend.problems import Problem, ProblemError
from osbp.backend.wire import (
    AppointmentCancelled,
    AppointmentReschedule,
    AppointmentRescheduled,
    ChangeQuoteOut,
)

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["appointments"])

_PATH = "/organizations/{organization_id}/appointments/{appointment_id}"

_ARMED: dict[str, Problem] = {
    "slot_taken": Problem(
        "slot_taken", "The selected time was just booked by someone else; the appointment is unchanged."
    ),
    "rate_limited": Problem(
        "rate_limited", "Too many change requests; retry shortly.", headers={"Retry-After": "1"}
    ),
}


def _headers(*, key_required: bool) -> dict[str, Any]:
    """The write's request headers, as FastAPI cannot state them from the signature."""
    replay = "the same key for the same change replays the stored 200 (`Idempotent-Replayed: true`)"
    return {
        "parameters": [
            header_parameter(
                "Idempotency-Key",
                "1-255 visible ASCII characters (an RFC 8941 quoted string is unquoted first); "
                + replay
                + ("." if key_required else "; without one, the change is not recorded for replay."),
                required=key_required,
                pattern="^[!-~]{1,255}$",
                examples=["change-2026-05-05-jane"],
            ),
            header_parameter(
                "If-Match",
                "The appointment's ETag (from its change quote or any answer about it); 412 "
                "appointment_changed when it changed since.",
                required=False,
                examples=['"3f1c0a9be2d44c1e8a0b7d6f5e4c3b2a"'],
            ),
        ]
    }


def _answer(changed: Changed) -> Response:
    headers = {"ETag": changed.etag}
    if changed.replayed:
        headers["Idempotent-Replayed"] = "true"
    return JSONResponse(changed.body, headers=headers)


def _armed(runtime: RuntimeDep, organization_id: str, operation: str) -> None:
    armed = runtime.take_armed(organization_id, operation)
    if armed is not None:
        raise ProblemError.of(_ARMED[armed])


@router.get(
    f"{_PATH}/change-quote",
    response_model=ChangeQuoteOut,
    responses=problem_responses("organization_not_found", "appointment_not_found")
    | answer_headers(200, "ETag"),
)
async def read_change_quote(organization_id: str, appointment_id: str, runtime: RuntimeDep) -> Response:
    """What cancelling or moving the appointment costs now (platform clock), whether each is possible in
    its current status, and its version as the `ETag` to send as `If-Match`."""
    terms, etag = changes.quote(
        runtime.db, organization_id=organization_id, appointment_id=appointment_id, now=runtime.clock.now()
    )
    return model_response(terms, {"ETag": etag})


@router.post(
    f"{_PATH}/cancel",
    response_model=AppointmentCancelled,
    responses=problem_responses(
        "idempotency_key_missing",
        "organization_not_found",
        "appointment_not_found",
        "appointment_not_cancellable",
        "appointment_changed",
        "idempotency_key_reused",
    )
    | answer_headers(200, "ETag", "Idempotent-Replayed"),
    openapi_extra=_headers(key_required=False),
)
def cancel_appointment(
    organization_id: str,
    appointment_id: str,
    runtime: RuntimeDep,
    # Both headers are documented by _headers().
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key", include_in_schema=False)] = None,
    if_match: Annotated[str | None, Header(alias="If-Match", include_in_schema=False)] = None,
) -> Response:
    """Cancel a pending or upcoming appointment (frees the provider's time), charging the cancellation fee
    that applies now; cancelling a cancelled appointment answers it unchanged, so a retry is safe."""
    key = None if idempotency_key is None else parse_key(idempotency_key)
    _armed(runtime, organization_id, "cancel")
    changed = changes.cancel(
        runtime.db,
        organization_id=organization_id,
        appointment_id=appointment_id,
        key=key,
        if_match=if_match,
        now=runtime.clock.now(),
        tokens=runtime.tokens,
    )
    return _answer(changed)


@router.post(
    f"{_PATH}/reschedule",
    response_model=AppointmentRescheduled,
    responses=problem_responses(
        "invalid_request",
        "idempotency_key_missing",
        "organization_not_found",
        "appointment_not_found",
        "location_not_found",
        "provider_not_found",
        "slot_taken",
        "slot_unavailable",
        "appointment_not_reschedulable",
        "appointment_changed",
        "idempotency_key_reused",
        "provider_not_eligible",
    )
    | answer_headers(200, "ETag", "Idempotent-Replayed"),
    openapi_extra=_headers(key_required=True),
)
def reschedule_appointment(
    organization_id: str,
    appointment_id: str,
    body: AppointmentReschedule,
    runtime: RuntimeDep,
    # Both headers are documented by _headers(): the key as required, though the route reads a missing
    # one itself to answer 400 idempotency_key_missing rather than a generic validation error.
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key", include_in_schema=False)] = None,
    if_match: Annotated[str | None, Header(alias="If-Match", include_in_schema=False)] = None,
) -> Response:
    """Move an upcoming appointment (the same id) to another free slot of its service, in one transaction
    that takes the new time and releases the old one, or changes nothing."""
    key = parse_key(idempotency_key)
    _armed(runtime, organization_id, "reschedule")
    changed = changes.reschedule(
        runtime.db,
        organization_id=organization_id,
        appointment_id=appointment_id,
        key=key,
        if_match=if_match,
        request=body,
        now=runtime.clock.now(),
        tokens=runtime.tokens,
    )
    return _answer(changed)
