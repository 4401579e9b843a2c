"""Appointments: idempotent create, read, and the deprecated no-show (the customer's changes are
`osbp.backend.api.changes`). Every answer about an appointment carries its `ETag` (its version).

Read routes are `async def` and query SQLite on the event loop: a read is a few indexed rows and a
millisecond or two of Python, WAL readers never wait for a writer, and under the GIL a worker thread
adds no parallelism, only a thread round trip per request. Routes that write (`BEGIN IMMEDIATE`, which
may wait out the busy timeout) stay `def`, in the thread pool.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Header
from starlette.responses import JSONResponse, Response

from osbp.backend import appointments, merchant
from osbp.backend.api.deps import RuntimeDep, model_response, problem_responses
from osbp.backend.changes import not_cancellable
from osbp.backend.idempotency import parse_key
from osbp.backend.openapi import answer_headers, header_parameter
from osbp.backend.problems import Problem, ProblemError
from osbp.backend.validators import appointment_tag
from osbp.backend.wire import AppointmentCreate, AppointmentOut

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["appointments"])

_ARMED_DETAIL: dict[str, Problem] = {
    "slot_taken": Problem("slot_taken", "The selected time was just booked by someone else."),
    "rate_limited": Problem(
        "rate_limited", "Too many booking attempts; retry shortly.", headers={"Retry-After": "1"}
    ),
    "requires_verification": Problem(
        "requires_verification",
        "This booking requires customer verification: send a code, then repeat the create with it.",
        {"channel": "sms"},
    ),
}


#: The create's request headers and examples, as FastAPI cannot state them from the signature.
CREATE_OPENAPI: dict[str, Any] = {
    "parameters": [
        header_parameter(
            "Idempotency-Key",
            "1-255 visible ASCII characters (an RFC 8941 quoted string is unquoted first); the same key "
            "with the same body replays the stored 201.",
            required=True,
            pattern="^[!-~]{1,255}$",
            examples=["create-2026-05-05-jane"],
        ),
        header_parameter(
            "If-Match",
            'The slot\'s offer_token from availability, quoted (`"ofr_…"`); 412 offer_changed when stale.',
            required=False,
            examples=['"ofr_636c30d2c6cfb37f625c1a5425c64884"'],
        ),
    ],
    "requestBody": {
        "content": {
            "application/json": {
                "examples": {
                    "cleaning": {
                        "summary": "A cleaning at Carolyn's Dental",
                        "value": {
                            "service_id": "carolyns_dental_cleaning",
                            "location_id": "carolyns_dental_midtown",
                            "provider_id": "carolyns_dental_dr_reyes",
                            "date": "2026-05-05",
                            "time": "09:00",
                            "customer": {"display_name": "Jane Customer", "phone": "+12125550199"},
                            "metadata": {"mandate_id": "mnd_2026_05_01_001"},
                        },
                    }
                }
            }
        }
    },
}


def _path(organization_id: str, appointment_id: str) -> str:
    return f"/api/organizations/{organization_id}/appointments/{appointment_id}"


@router.post(
    "/organizations/{organization_id}/appointments",
    status_code=201,
    response_model=AppointmentOut,
    responses=problem_responses(
        "invalid_request",
        "invalid_contact",
        "idempotency_key_missing",
        "verification_failed",
        "organization_not_found",
        "service_not_found",
        "location_not_found",
        "provider_not_found",
        "slot_taken",
        "slot_unavailable",
        "offer_changed",
        "idempotency_key_reused",
        "provider_not_eligible",
        "requires_verification",
        "rate_limited",
    )
    | answer_headers(201, "Location", "ETag", "Idempotent-Replayed"),
    openapi_extra=CREATE_OPENAPI,
)
def create_appointment(
    organization_id: str,
    body: AppointmentCreate,
    runtime: RuntimeDep,
    # Both headers are documented by CREATE_OPENAPI: the key as required, though the route reads a
    # missing one itself to answer 400 idempotency_key_missing rather than a generic validation error.
    idempotency_key: Annotated[str | None, Header(alias="Idempotency-Key", include_in_schema=False)] = None,
    if_match: Annotated[str | None, Header(alias="If-Match", include_in_schema=False)] = None,
) -> Response:
    """Book a slot atomically (exactly once per Idempotency-Key), optionally only at the offer's facts."""
    key = parse_key(idempotency_key)
    armed = runtime.take_armed(organization_id)
    if armed is not None:
        raise ProblemError.of(_ARMED_DETAIL[armed])
    outcome = appointments.create(
        runtime.db,
        organization_id=organization_id,
        key=key,
        request=body,
        now=runtime.clock.now(),
        tokens=runtime.tokens,
        if_match=if_match,
    )
    appointment_id = str(outcome.body.get("id", ""))
    headers = {
        "Location": _path(organization_id, appointment_id),
        "ETag": appointment_tag(appointment_id, int(outcome.body.get("version", 1))),
    }
    if outcome.replayed:
        headers["Idempotent-Replayed"] = "true"
    return JSONResponse(outcome.body, status_code=outcome.status_code, headers=headers)


def _with_tag(appointment: AppointmentOut) -> Response:
    """The appointment document with its ETag."""
    return model_response(appointment, {"ETag": appointment_tag(appointment.id, appointment.version)})


@router.get(
    "/organizations/{organization_id}/appointments/{appointment_id}",
    response_model=AppointmentOut,
    responses=problem_responses("organization_not_found", "appointment_not_found")
    | answer_headers(200, "ETag"),
)
async def read_appointment(organization_id: str, appointment_id: str, runtime: RuntimeDep) -> Response:
    """One appointment with its native status."""
    found = appointments.get(
        runtime.db, organization_id=organization_id, appointment_id=appointment_id, now=runtime.clock.now()
    )
    return _with_tag(found)


@router.post(
    "/organizations/{organization_id}/appointments/{appointment_id}/no-show",
    response_model=AppointmentOut,
    responses=problem_responses(
        "organization_not_found", "appointment_not_found", "appointment_not_cancellable"
    )
    | answer_headers(200, "ETag"),
    deprecated=True,
)
def mark_no_show(organization_id: str, appointment_id: str, runtime: RuntimeDep) -> Response:
    """Deprecated (Deprecation, Sunset and Link headers): the merchant's
    `POST …/merchant/appointments/{appointment_id}/no-show` replaces it, with the same rule."""
    changed = merchant.act(
        runtime.db,
        organization_id=organization_id,
        appointment_id=appointment_id,
        action=merchant.ACTIONS["no-show"],
        now=runtime.clock.now(),
        tokens=runtime.tokens,
        actor="merchant",
        refusal=not_cancellable,
    )
    return _with_tag(changed)
