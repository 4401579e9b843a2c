"""Bookwell's endpoints as typed calls: each returns the parsed native shape or an OSBP Problem.

This is the adapter's whole view of the platform's API surface (docs/backend-api.md), on top of the one
HTTP helper :class:`~osbp.adapter.upstream.Upstream`. Non-success answers and transport failures are
mapped by :mod:`osbp.adapter.problems`; an id outside Bookwell's grammar (:mod:`osbp.adapter.ids`) is
answered with its not-found Problem before any request, so no id can reach another route; a body that
does not match the documented shape is ``internal_adapter_error`` (logged by field path only: bodies
may carry customer data).

Version provenance: Bookwell pins versions with a dated request header, ``Bookwell-Version``; the adapter
sends ``2026-04-01`` (the current version in the platform's API reference) on every request.
"""

from __future__ import annotations

import logging
from typing import Any, TypeVar

from pydantic import ValidationError

from osbp.adapter.ids import is_platform_id
from osbp.adapter.native import (
    NativeAppointment,
    NativeAvailability,
    NativeModel,
    NativeOrganization,
    NativeService,
    NativeServiceList,
    NativeVerificationSent,
)
from osbp.adapter.problems import from_response, internal_error, not_found, unavailable
from osbp.adapter.upstream import Upstream, UpstreamOutcome, UpstreamUnavailable
from osbp.protocol.canonical import sha256_hex
from osbp.protocol.models import PlatformIdentity, Problem

__all__ = ["API_VERSION", "PLATFORM", "VERSION_HEADER", "BookwellApi", "native_idempotency_key"]

#: Bookwell's request-side version pin: the header and the exact dated value sent on every request, so
#: account defaults can never change the contract under the adapter.
VERSION_HEADER = "Bookwell-Version"
API_VERSION = "2026-04-01"
#: The static platform identity recorded into audit events.
PLATFORM = PlatformIdentity(vendor="bookwell", api_version=API_VERSION)

_ORGANIZATION = "/api/organizations/{organization_id}"
_SERVICES = _ORGANIZATION + "/services"
_SERVICE = _SERVICES + "/{service_id}"
_AVAILABILITY = _ORGANIZATION + "/availability"
_VERIFICATIONS = _ORGANIZATION + "/verifications"
_APPOINTMENTS = _ORGANIZATION + "/appointments"
_APPOINTMENT = _APPOINTMENTS + "/{appointment_id}"

logger = logging.getLogger("osbp.adapter")
M = TypeVar("M", bound=NativeModel)


def native_idempotency_key(organization_id: str, idempotency_key: str) -> str:
    """The platform Idempotency-Key for an OSBP key: stable, visible ASCII, scoped to the organization."""
    return "osbp-" + sha256_hex({"organization_id": organization_id, "idempotency_key": idempotency_key})[:48]


def _malformed(**ids: str | None) -> Problem | None:
    """The not-found Problem of the first given id outside Bookwell's grammar (the platform's own order)."""
    for native_code, value in ids.items():
        if value is not None and not is_platform_id(value):
            return not_found(native_code)
    return None


def _error_paths(exc: ValidationError) -> list[str]:
    return [".".join(str(part) for part in error["loc"]) for error in exc.errors()]


class BookwellApi:
    """One organization's Bookwell endpoints."""

    def __init__(self, upstream: Upstream, organization_id: str) -> None:
        self._upstream = upstream
        self.organization_id = organization_id

    def _read(self, model: type[M], outcome: UpstreamOutcome, ok: tuple[int, ...]) -> M | Problem:
        if isinstance(outcome, UpstreamUnavailable):
            logger.warning("upstream_unavailable", extra={"call": outcome.call, "reason": outcome.reason})
            return unavailable(outcome)
        if outcome.status not in ok:
            return from_response(outcome)
        try:
            return model.model_validate(outcome.body)
        except ValidationError as exc:
            where = {"call": outcome.meta.call, "fields": _error_paths(exc)}
            logger.error("upstream_unreadable", extra=where)
            return internal_error()

    async def _call(
        self,
        model: type[M],
        method: str,
        route: str,
        *,
        ok: tuple[int, ...] = (200,),
        params: dict[str, str] | None = None,
        body: Any = None,
        headers: dict[str, str] | None = None,
        **path: str,
    ) -> M | Problem:
        outcome = await self._upstream.fetch(
            method,
            route,
            path={"organization_id": self.organization_id, **path},
            params=params,
            body=body,
            headers=headers,
        )
        return self._read(model, outcome, ok)

    async def organization(self) -> NativeOrganization | Problem:
        """``GET /api/organizations/{org}``: the organization with its locations and providers."""
        return await self._call(NativeOrganization, "GET", _ORGANIZATION)

    async def services(self) -> NativeServiceList | Problem:
        """``GET …/services``: every service with its policy."""
        return await self._call(NativeServiceList, "GET", _SERVICES)

    async def service(self, service_id: str) -> NativeService | Problem:
        """``GET …/services/{service_id}``: one service with its policy."""
        if malformed := _malformed(service_not_found=service_id):
            return malformed
        return await self._call(NativeService, "GET", _SERVICE, service_id=service_id)

    async def availability(
        self, *, service_id: str, date: str, location_id: str | None = None, provider_id: str | None = None
    ) -> NativeAvailability | Problem:
        """``GET …/availability`` (deprecated upstream, still the only availability endpoint)."""
        malformed = _malformed(
            service_not_found=service_id,
            location_not_found=location_id or None,
            provider_not_found=provider_id or None,
        )
        if malformed:
            return malformed
        params = {"service_id": service_id, "date": date}
        if location_id:
            params["location_id"] = location_id
        if provider_id:
            params["provider_id"] = provider_id
        return await self._call(NativeAvailability, "GET", _AVAILABILITY, params=params)

    async def appointment(self, appointment_id: str) -> NativeAppointment | Problem:
        """``GET …/appointments/{id}``: the appointment's current state."""
        if malformed := _malformed(appointment_not_found=appointment_id):
            return malformed
        return await self._call(NativeAppointment, "GET", _APPOINTMENT, appointment_id=appointment_id)

    async def send_verification(self, body: dict[str, Any]) -> NativeVerificationSent | Problem:
        """``POST …/verifications``: the platform sends a code (202)."""
        return await self._call(NativeVerificationSent, "POST", _VERIFICATIONS, ok=(202,), body=body)

    async def create_appointment(
        self, body: dict[str, Any], idempotency_key: str
    ) -> NativeAppointment | Problem:
        """``POST …/appointments`` with the native ``Idempotency-Key`` (201, or its stored replay)."""
        return await self._call(
            NativeAppointment,
            "POST",
            _APPOINTMENTS,
            ok=(200, 201),
            body=body,
            headers={"Idempotency-Key": idempotency_key},
        )

    async def aclose(self) -> None:
        """Close the underlying HTTP client."""
        await self._upstream.aclose()
