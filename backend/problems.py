"""Problems: every expected refusal as a value, rendered as RFC 9457 `application/problem+json`.

Service functions return a `Problem`; the edge (routes, middleware, exception handlers) renders it. The
shape is always type, title, status, detail, code, request_id, plus the listed extension members.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from starlette.responses import Response

from osbp.backend.logs import current_request_id

__all__ = ["PROBLEM_BASE", "PROBLEM_MEDIA_TYPE", "TITLES", "Problem", "problem_response"]

PROBLEM_MEDIA_TYPE = "application/problem+json"
PROBLEM_BASE = "https://developer.bookwell.example/problems/"

#: code -> (status, title). The stable machine contract documented in docs/backend-api.md.
TITLES: dict[str, tuple[int, str]] = {
    "unsupported_version": (400, "Unsupported API version"),
    "invalid_request": (400, "Invalid request"),
    "invalid_contact": (400, "Invalid contact data"),
    "idempotency_key_missing": (400, "Idempotency-Key required"),
    "invalid_purpose": (400, "Invalid verification purpose"),
    "verification_failed": (400, "Verification failed"),
    "not_found": (404, "Not found"),
    "organization_not_found": (404, "Organization not found"),
    "service_not_found": (404, "Service not found"),
    "location_not_found": (404, "Location not found"),
    "provider_not_found": (404, "Provider not found"),
    "appointment_not_found": (404, "Appointment not found"),
    "method_not_allowed": (405, "Method not allowed"),
    "slot_taken": (409, "Slot taken"),
    "slot_unavailable": (409, "Slot unavailable"),
    "idempotency_key_in_use": (409, "Idempotency-Key in use"),
    "appointment_not_cancellable": (409, "Appointment cannot change status"),
    "idempotency_key_reused": (422, "Idempotency-Key reused with a different request"),
    "provider_not_eligible": (422, "Provider not eligible"),
    "requires_verification": (428, "Customer verification required"),
    "rate_limited": (429, "Too many requests"),
    "verification_send_limited": (429, "Too many verification messages"),
    "internal_error": (500, "Internal error"),
}


@dataclass(frozen=True)
class Problem:
    """An expected failure: a machine `code`, human `detail`, optional extension members and headers."""

    code: str
    detail: str
    extras: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)

    @property
    def status(self) -> int:
        """The HTTP status for this code."""
        return TITLES[self.code][0]

    def body(self) -> dict[str, Any]:
        """The problem+json document."""
        status, title = TITLES[self.code]
        document: dict[str, Any] = {
            "type": PROBLEM_BASE + self.code.replace("_", "-"),
            "title": title,
            "status": status,
            "detail": self.detail,
            "code": self.code,
        }
        request_id = current_request_id.get()
        if request_id is not None:
            document["request_id"] = request_id
        document.update(self.extras)
        return document


def problem_response(problem: Problem) -> Response:
    """Render `problem` as an `application/problem+json` response."""
    content = json.dumps(problem.body(), separators=(",", ":")).encode()
    return Response(
        content=content,
        status_code=problem.status,
        media_type=PROBLEM_MEDIA_TYPE,
        headers=problem.headers,
    )
