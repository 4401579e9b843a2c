"""Verification sends: a code to the customer's phone or email, through the outbox."""

from __future__ import annotations

from fastapi import APIRouter
from starlette.responses import JSONResponse, Response

from osbp.backend.api.deps import RuntimeDep, problem_responses
from osbp.backend.catalog import get_organization
from osbp.backend.verification import send_code
from osbp.backend.wire import VerificationOut, VerificationSend

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["verification"])


@router.post(
    "/organizations/{organization_id}/verifications",
    status_code=202,
    response_model=VerificationOut,
    responses=problem_responses(
        "invalid_request",
        "invalid_contact",
        "invalid_purpose",
        "organization_not_found",
        "verification_send_limited",
    ),
    openapi_extra={
        "requestBody": {
            "content": {
                "application/json": {
                    "examples": {
                        "sms": {
                            "summary": "A code by SMS for a Gus' Notary booking",
                            "value": {
                                "purpose": "booking:gus_notary",
                                "channel": "sms",
                                "phone": "+12125550142",
                            },
                        }
                    }
                }
            }
        }
    },
)
def send_verification(organization_id: str, body: VerificationSend, runtime: RuntimeDep) -> Response:
    """Send a 6-digit code (expires in 10 minutes; the create consumes it)."""
    settings = runtime.settings
    with runtime.db.write() as session:
        organization = get_organization(session, organization_id)
        sent = send_code(
            session,
            organization=organization,
            request=body,
            now=runtime.clock.now(),
            tokens=runtime.tokens,
            send_limit=settings.verification_send_limit,
            send_window_seconds=settings.verification_send_window_seconds,
        )
    return JSONResponse(sent.model_dump(mode="json"), status_code=202)
