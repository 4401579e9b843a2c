"""Problems: every expected refusal, rendered as RFC 9457 `application/problem+json`.

Service functions and routes `raise ProblemError(code, detail, ...)`; the app's exception handler renders
its `Problem` once (the edge middleware renders the few it makes itself). The status and title come from
the code (`TITLES`); the shape is always type, title, status, detail, code, request_id, plus the listed
extension members.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from starlette.responses import Response

from osbp.backend.logs import current_request_id

__all__ = ["PROBLEM_BASE", "PROBLEM_MEDIA_TYPE", "TITLES", "Problem", "ProblemError", "problem_response"]

PROBLEM_MEDIA_TYPE = "application/problem+json"
PROBLEM_BASE = "https://developer.bookwell.example/problems/"

#: code -> (status, title): the platform's one table of problem codes, the stable machine contract that
#: docs/backend-api.md lists (tests/backend/test_problems.py compares the two, and every code a module
#: spells with this table). A `Problem` of any other code is refused when it is made.
TITLES: dict[str, tuple[int, str]] = {
    "unsupported_version": (400, "Unsupported API version"),
    "invalid_request": (400, "Invalid request"),
    "invalid_contact": (400, "Invalid contact data"),
    "idempotency_key_missing": (400, "Idempotency-Key required"),
    "invalid_purpose": (400, "Invalid verification purpose"),
    "verification_failed": (400, "Verification failed"),
    "webhook_url_not_allowed": (400, "Webhook URL not allowed"),
    "webhook_url_targets_platform": (400, "Webhook URL targets the platform itself"),
    "not_found": (404, "Not found"),
    "organization_not_found": (404, "Organization not found"),
    "service_not_found": (404, "Service not found"),
    "location_not_found": (404, "Location not found"),
    "provider_not_found": (404, "Provider not found"),
    "appointment_not_found": (404, "Appointment not found"),
    "webhook_endpoint_not_found": (404, "Webhook endpoint not found"),
    "method_not_allowed": (405, "Method not allowed"),
    "slot_taken": (409, "Slot taken"),
    "slot_unavailable": (409, "Slot unavailable"),
    "appointment_not_cancellable": (409, "Appointment cannot change status"),
    "appointment_not_reschedulable": (409, "Appointment cannot be rescheduled"),
    "endpoint_retired": (410, "Endpoint retired"),
    "appointment_transition_not_allowed": (409, "Merchant action not allowed in this status"),
    "offer_changed": (412, "Offer changed"),
    "appointment_changed": (412, "Appointment changed"),
    "idempotency_key_reused": (422, "Idempotency-Key reused with a different request"),
    "provider_not_eligible": (422, "Provider not eligible"),
    "requires_verification": (428, "Customer verification required"),
    "rate_limited": (429, "Too many requests"),
    "verification_send_limited": (429, "Too many verification messages"),
    "internal_error": (500, "Internal error"),
    "bad_gateway": (502, "Bad gateway"),
    "service_unavailable": (503, "Service unavailable"),
}


@dataclass(frozen=True)
class Problem:
    """An expected failure: a machine `code`, human `detail`, optional extension members and headers."""

    code: str
    detail: str
    extras: dict[str, Any] = field(default_factory=dict)
    headers: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.code not in TITLES:
            raise ValueError(f"unknown problem code {self.code!r}")

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


class ProblemError(Exception):
    """An expected refusal raised inside the platform; the app's exception handler renders `problem`.

    The status is the code's (`TITLES`), so a raise names only the code, the detail and any extension
    members or headers (`Retry-After`).
    """

    def __init__(
        self,
        code: str,
        detail: str,
        extras: Mapping[str, Any] | None = None,
        *,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        self.problem = Problem(code, detail, dict(extras or {}), dict(headers or {}))
        super().__init__(f"{code}: {detail}")

    @classmethod
    def of(cls, problem: Problem) -> ProblemError:
        """A fresh error carrying a prepared `problem`."""
        return cls(problem.code, problem.detail, problem.extras, headers=problem.headers)

    @property
    def code(self) -> str:
        """The problem's machine code."""
        return self.problem.code


def problem_response(problem: Problem) -> Response:
    """Render `problem` as an `application/problem+json` response."""
    content = json.dumps(problem.body(), separators=(",", ":")).encode()
    return Response(
        content=content,
        status_code=problem.status,
        media_type=PROBLEM_MEDIA_TYPE,
        headers=problem.headers,
    )
