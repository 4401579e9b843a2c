"""Platform outcomes → OSBP Problems: the adapter's status mapping, in one table.

| platform answer | OSBP Problem | retryable |
|---|---|---|
| 428 ``requires_verification`` | ``requires_verification`` | yes |
| 400 ``verification_failed`` (wrong, expired, locked, no open challenge) | ``verification_failed`` | no |
| 409 ``slot_taken`` / ``slot_unavailable`` | ``slot_taken`` | yes |
| 412 ``offer_changed`` (a failed ``If-Match``) | ``offer_changed`` (the core resolves again) | yes |
| 422 ``idempotency_key_reused`` (the platform's own idempotency mismatch) | ``idempotency_conflict`` | no |
| 409 ``idempotency_key_in_use`` | ``idempotency_in_progress`` | yes |
| 429 ``rate_limited`` / ``verification_send_limited`` | ``rate_limited`` | yes |
| 404 ``appointment_not_found`` | ``booking_not_found`` | no |
| 404 ``service_not_found`` | ``service_not_found`` | no |
| 404 ``location_not_found`` | ``schedule_not_found`` | no |
| 404 ``provider_not_found`` | ``provider_not_found`` | no |
| 404 ``organization_not_found`` | ``organization_not_found`` (configuration) | no |
| an id outside the grammar of :mod:`osbp.adapter.ids` (no request sent) | its kind's not-found | no |
| 422 ``provider_not_eligible`` | ``provider_not_eligible`` | no |
| 400 ``invalid_contact``, or ``invalid_request`` on a customer field | ``invalid_customer`` | no |
| 400 ``invalid_request`` on ``verification_code`` | ``verification_failed`` | no |
| 400 ``invalid_purpose`` | ``invalid_verification_purpose`` | no |
| 410 ``endpoint_retired`` (past its ``Sunset``; logged for the operator) | ``internal_adapter_error`` | no |
| 5xx, timeout, refused or broken connection (once the retries are spent) | ``upstream_unavailable`` | yes |
| data OSBP cannot represent exactly (a price, currency, weekday) | ``untranslatable_platform_data`` | no |
| anything else, an unreadable body | ``internal_adapter_error`` | no |

Messages are the adapter's own English prose. A platform's ``detail`` text is never copied into a
Problem: it is foreign, may carry customer data, and is not a contract.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import TypeVar

from osbp.adapter.native import NativeProblem
from osbp.adapter.translate import UntranslatableData
from osbp.adapter.upstream import UpstreamResponse, UpstreamUnavailable
from osbp.protocol.contract import AdapterResult, Failure
from osbp.protocol.idempotency import IDEMPOTENCY_IN_PROGRESS
from osbp.protocol.models import Problem
from osbp.protocol.port import OFFER_CHANGED
from osbp.protocol.problems import (
    INVALID_CUSTOMER,
    UNTRANSLATABLE_PLATFORM_DATA,
    UPSTREAM_UNAVAILABLE,
    ProblemCode,
    problem,
)

__all__ = [
    "INVALID_CUSTOMER",
    "INVALID_INPUT",
    "INVALID_VERIFICATION_PURPOSE",
    "MISSING_CONFIG",
    "ORGANIZATION_NOT_FOUND",
    "PRE_VERIFICATION_NOT_SUPPORTED",
    "PROVIDER_NOT_ELIGIBLE",
    "PROVIDER_NOT_FOUND",
    "SCHEDULE_NOT_FOUND",
    "SERVICE_NOT_FOUND",
    "UNTRANSLATABLE_PLATFORM_DATA",
    "UPSTREAM_UNAVAILABLE",
    "VERIFICATION_NOT_SUPPORTED",
    "at_edge",
    "from_response",
    "internal_error",
    "not_found",
    "unavailable",
]

# Adapter-specific codes (the spec allows them beside the protocol-meaningful set).
MISSING_CONFIG = "missing_config"
INVALID_INPUT = "invalid_input"
INVALID_VERIFICATION_PURPOSE = "invalid_verification_purpose"
VERIFICATION_NOT_SUPPORTED = "verification_not_supported"
PRE_VERIFICATION_NOT_SUPPORTED = "pre_verification_not_supported"
ORGANIZATION_NOT_FOUND = "organization_not_found"
SERVICE_NOT_FOUND = "service_not_found"
SCHEDULE_NOT_FOUND = "schedule_not_found"
PROVIDER_NOT_FOUND = "provider_not_found"
PROVIDER_NOT_ELIGIBLE = "provider_not_eligible"
#: The platform answered, but with a value OSBP cannot represent exactly: fail closed (OSBP spec, Money:
#: an amount or currency that cannot be normalized is not safe to show, compare or book against).

T = TypeVar("T")
logger = logging.getLogger("osbp.adapter")

_VERIFICATION_REASONS = {
    "mismatch": "The verification code does not match.",
    "expired": "The verification code has expired.",
    "locked": "Too many wrong attempts locked this verification challenge.",
    "no_challenge": "There is no open verification challenge for this customer.",
}

_NOT_FOUND: dict[str, Problem] = {
    "appointment_not_found": problem(ProblemCode.BOOKING_NOT_FOUND),
    "organization_not_found": problem(
        ORGANIZATION_NOT_FOUND,
        "The platform does not know the configured organization; check OSBP_ORGANIZATION_ID.",
    ),
    "service_not_found": problem(
        SERVICE_NOT_FOUND, "The platform has no such service for this organization."
    ),
    "location_not_found": problem(
        SCHEDULE_NOT_FOUND, "The platform has no such schedule (location) for this organization."
    ),
    "provider_not_found": problem(
        PROVIDER_NOT_FOUND, "The platform has no such provider for this organization."
    ),
}


def not_found(native_code: str) -> Problem:
    """The OSBP Problem the platform's 404 ``native_code`` maps to (``service_not_found`` and the rest)."""
    return _NOT_FOUND[native_code].model_copy()


def unavailable(outcome: UpstreamUnavailable) -> Problem:
    """A transport failure (no response) as the retryable ``upstream_unavailable``."""
    what = {
        "timeout": "did not answer in time",
        "connect": "refused or could not accept the connection",
        "transport": "broke the connection",
    }[outcome.reason]
    return problem(
        UPSTREAM_UNAVAILABLE,
        f"The booking platform {what}. Nothing is known to have changed; retry shortly with the same input.",
        retryable=True,
    )


def internal_error(reason: str = "The platform sent a response the adapter cannot interpret.") -> Problem:
    """``internal_adapter_error`` with an adapter-written message (never a raw upstream body)."""
    return problem(ProblemCode.INTERNAL_ADAPTER_ERROR, f"{reason} The failure was recorded for the operator.")


def _retry_after(response: UpstreamResponse) -> str:
    value = response.headers.get("retry-after", "")
    return f" Retry after {value} seconds." if value.isdigit() else ""


def _native_problem(response: UpstreamResponse) -> NativeProblem:
    if isinstance(response.body, dict):
        try:
            return NativeProblem.model_validate(response.body)
        except ValueError:
            return NativeProblem()
    return NativeProblem()


def from_response(response: UpstreamResponse) -> Problem:
    """The OSBP Problem for a non-success platform response."""
    native = _native_problem(response)
    code, status = native.code, response.status
    if code == "requires_verification" or status == 428:
        channel = f" by {native.channel}" if native.channel in ("sms", "email") else ""
        return problem(
            ProblemCode.REQUIRES_VERIFICATION,
            f"The platform requires customer verification{channel} before booking: call verification.send, "
            "ask the customer for the code, then retry booking.create with the same idempotency_key, "
            "approval and verification_code.",
        )
    if code == "verification_failed":
        lead = _VERIFICATION_REASONS.get(native.reason or "", "The verification code was rejected.")
        return problem(
            ProblemCode.VERIFICATION_FAILED,
            f"{lead} Call verification.send again and retry booking.create with the new code.",
        )
    if code in ("slot_taken", "slot_unavailable"):
        return problem(ProblemCode.SLOT_TAKEN)
    if code == "offer_changed" or status == 412:
        return problem(
            OFFER_CHANGED,
            "The platform refused the create because the offer's facts changed since they were read; "
            "nothing was booked.",
            retryable=True,
        )
    if code == "idempotency_key_reused":
        return problem(
            ProblemCode.IDEMPOTENCY_CONFLICT,
            "The platform already holds a different booking under this idempotency_key; use a fresh key "
            "for a new booking attempt.",
        )
    if code == "idempotency_key_in_use":
        return problem(
            IDEMPOTENCY_IN_PROGRESS,
            "The platform is still processing an earlier request with this idempotency_key; retry "
            "booking.create with the same idempotency_key and payload shortly.",
            retryable=True,
        )
    if code in ("rate_limited", "verification_send_limited") or status == 429:
        return problem(
            ProblemCode.RATE_LIMITED,
            f"The booking platform is rate limiting requests; back off and retry.{_retry_after(response)}",
        )
    if code in _NOT_FOUND:
        return not_found(code)
    if code == "provider_not_eligible":
        return problem(
            PROVIDER_NOT_ELIGIBLE,
            "The provider does not offer this service at this schedule (location); pick a slot from "
            "availability.find.",
        )
    customer_fields = [error.field for error in native.errors if error.field.startswith("body.customer")]
    if code == "invalid_contact" or (code == "invalid_request" and customer_fields):
        field = native.field or (customer_fields[0].removeprefix("body.") if customer_fields else None)
        where = f" ({field})" if field else ""
        return problem(
            INVALID_CUSTOMER,
            f"The platform rejected the customer's contact details{where}: it needs a display name and an "
            "E.164 phone number (plus sign, country code, number) or a valid email address.",
        )
    if code == "invalid_request" and any(error.field == "body.verification_code" for error in native.errors):
        return problem(
            ProblemCode.VERIFICATION_FAILED,
            "The platform rejected the verification code's form (it must be the code exactly as the customer "
            "received it). Ask the customer for the code again, or call verification.send for a new one.",
        )
    if code == "invalid_purpose":
        return problem(
            INVALID_VERIFICATION_PURPOSE, "The verification purpose must be booking:{organization_id}."
        )
    if code == "endpoint_retired" or status == 410:
        logger.error(
            "upstream_endpoint_retired",
            extra={"call": response.meta.call, "sunset": response.meta.sunset, "successor": native.successor},
        )
        return internal_error(
            "The booking platform retired the endpoint this adapter uses (past its announced sunset); the "
            "adapter must be upgraded, and retrying will not help. Route to handoff.request."
        )
    if status >= 500:
        return problem(
            UPSTREAM_UNAVAILABLE,
            f"The booking platform failed (HTTP {status}). Retry shortly with the same input.",
            retryable=True,
        )
    # The operator must see this: the agent only learns that the adapter failed.
    if status == 404 and code == "not_found":
        # No such route (not an unknown id, which has its own code): the platform URL is likely wrong.
        logger.error(
            "upstream_route_not_found",
            extra={
                "call": response.meta.call,
                "detail": "the platform has no such endpoint: check --platform-url / OSBP_PLATFORM_BASE_URL, "
                "the platform's base URL without /api (the adapter adds the paths), e.g. http://127.0.0.1:8400",
            },
        )
    else:
        logger.error(
            "upstream_unexpected_status", extra={"call": response.meta.call, "status": status, "code": code}
        )
    return internal_error(f"The platform answered HTTP {status} unexpectedly.")


async def at_edge(work: Callable[[], Awaitable[AdapterResult[T]]]) -> AdapterResult[T]:
    """Run one adapter method; data OSBP cannot represent becomes ``untranslatable_platform_data``."""
    try:
        return await work()
    except UntranslatableData as exc:
        logger.error("untranslatable_platform_data", extra={"reason": str(exc)})
        return Failure(
            problem(
                UNTRANSLATABLE_PLATFORM_DATA,
                "The booking platform answered with a value OSBP cannot represent exactly (for example a "
                "price that is not a plain decimal amount in the currency's minor unit), so this call "
                "fails closed. Retrying will not help until the merchant's data is fixed; route to "
                "handoff.request. The failure was recorded for the operator.",
                retryable=False,
            )
        )
