"""Bookwell's endpoints as typed calls: each returns the parsed native shape or an OSBP Problem.

This is the adapter's whole view of the platform's API surface (docs/backend-api.md), on top of the one
HTTP helper :class:`~osbp.adapter.upstream.Upstream`. Non-success answers and transport failures are
mapped by :mod:`osbp.adapter.problems`; an id outside Bookwell's grammar (:mod:`osbp.adapter.ids`) is
answered with its not-found Problem before any request, so no id can reach another route; a body that
does not match the documented shape is ``internal_adapter_error`` (logged by field path only: bodies
may carry customer data).

Catalog reads go through the exact :class:`~osbp.adapter.cache.CatalogCache`: a read given the catalog
version of another answer (``at``) is served from the cache when the entry was vouched for at exactly that
version, and is otherwise a conditional ``GET`` (``If-None-Match``, ``304`` keeps the entry). The
appointment create can carry the offer's ``If-Match`` (``412 offer_changed`` when the facts moved).

Version provenance: Bookwell pins versions with a dated request header, ``Bookwell-Version``; the adapter
sends ``2026-04-01`` (the current version in the platform's API reference) on every request.
"""

from __future__ import annotations

import logging
from typing import Any, TypeVar

from pydantic import ValidationError

from osbp.adapter.cache import CatalogCache
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
from osbp.adapter.upstream import Upstream, UpstreamOutcome, UpstreamResponse, UpstreamUnavailable
from osbp.protocol.canonical import sha256_hex
from osbp.protocol.models import PlatformIdentity, Problem

__all__ = [
    "API_VERSION",
    "PLATFORM",
    "REVISION_HEADER",
    "VERSION_HEADER",
    "BookwellApi",
    "native_idempotency_key",
]

#: Bookwell's request-side version pin: the header and the exact dated value sent on every request, so
#: account defaults can never change the contract under the adapter.
VERSION_HEADER = "Bookwell-Version"
API_VERSION = "2026-04-01"
#: The static platform identity recorded into audit events.
PLATFORM = PlatformIdentity(vendor="bookwell", api_version=API_VERSION)
#: The response header stating the catalog version an answer was computed at.
REVISION_HEADER = "Bookwell-Catalog-Revision"

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
        self._catalog = CatalogCache()

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

    async def _catalog_read(
        self, model: type[M], route: str, *, at: str | None, **path: str
    ) -> tuple[M | Problem, str | None]:
        """A catalog resource and the catalog version it is vouched for at (see the module docstring)."""
        values = {"organization_id": self.organization_id, **path}
        key = route.format(**values)  # the ids passed the grammar check: no encoding needed for a key
        entry = self._catalog.get(key)
        cached = self._catalog.current_at(key, at)
        if isinstance(cached, model):
            return cached, at
        headers = {"If-None-Match": entry.etag} if entry is not None else None
        outcome = await self._upstream.fetch("GET", route, path=values, headers=headers)
        if not isinstance(outcome, UpstreamResponse):
            return self._read(model, outcome, (200,)), None
        revision = outcome.headers.get(REVISION_HEADER)
        if outcome.status == 304:
            vouched = self._catalog.revalidated(key, revision)
            if vouched is not None and isinstance(vouched.value, model):
                return vouched.value, revision
        value = self._read(model, outcome, (200,))
        etag = outcome.headers.get("etag")
        if isinstance(value, Problem) or etag is None:
            self._catalog.drop(key)
        else:
            self._catalog.keep(key, etag, revision, value)
        return value, revision

    def holds(self, *, service_id: str | None = None) -> bool:
        """Whether the cache holds the organization (and ``service_id``'s service), at whatever version.

        Callers that hold them read availability first and the catalog at its version (usually no
        request); callers that do not read everything at once, the availability last (as before).
        """
        keys = [_ORGANIZATION.format(organization_id=self.organization_id)]
        if service_id is not None:
            keys.append(_SERVICE.format(organization_id=self.organization_id, service_id=service_id))
        return all(self._catalog.get(key) is not None for key in keys)

    async def organization(self, *, at: str | None = None) -> NativeOrganization | Problem:
        """``GET /api/organizations/{org}``: the organization with its locations and providers."""
        return (await self._catalog_read(NativeOrganization, _ORGANIZATION, at=at))[0]

    async def services(self) -> NativeServiceList | Problem:
        """``GET …/services``: every service with its policy."""
        return (await self._catalog_read(NativeServiceList, _SERVICES, at=None))[0]

    async def service_read(
        self, service_id: str, *, at: str | None = None
    ) -> tuple[NativeService | Problem, str | None]:
        """``GET …/services/{service_id}``: one service with its policy, and its catalog version."""
        if malformed := _malformed(service_not_found=service_id):
            return malformed, None
        return await self._catalog_read(NativeService, _SERVICE, at=at, service_id=service_id)

    async def service(self, service_id: str, *, at: str | None = None) -> NativeService | Problem:
        """``GET …/services/{service_id}``: one service with its policy."""
        return (await self.service_read(service_id, at=at))[0]

    async def availability(
        self, *, service_id: str, date: str, location_id: str | None = None, provider_id: str | None = None
    ) -> tuple[NativeAvailability | Problem, str | None]:
        """``GET …/availability`` (deprecated upstream, still the only availability endpoint).

        With the catalog version the slots were computed at (``None`` when the answer states none).
        """
        malformed = _malformed(
            service_not_found=service_id,
            location_not_found=location_id or None,
            provider_not_found=provider_id or None,
        )
        if malformed:
            return malformed, None
        params = {"service_id": service_id, "date": date}
        if location_id:
            params["location_id"] = location_id
        if provider_id:
            params["provider_id"] = provider_id
        outcome = await self._upstream.fetch(
            "GET", _AVAILABILITY, path={"organization_id": self.organization_id}, params=params
        )
        revision = outcome.headers.get(REVISION_HEADER) if isinstance(outcome, UpstreamResponse) else None
        return self._read(NativeAvailability, outcome, (200,)), revision

    async def appointment(self, appointment_id: str) -> NativeAppointment | Problem:
        """``GET …/appointments/{id}``: the appointment's current state."""
        if malformed := _malformed(appointment_not_found=appointment_id):
            return malformed
        return await self._call(NativeAppointment, "GET", _APPOINTMENT, appointment_id=appointment_id)

    async def send_verification(self, body: dict[str, Any]) -> NativeVerificationSent | Problem:
        """``POST …/verifications``: the platform sends a code (202)."""
        return await self._call(NativeVerificationSent, "POST", _VERIFICATIONS, ok=(202,), body=body)

    async def create_appointment(
        self, body: dict[str, Any], idempotency_key: str, *, offer_token: str | None = None
    ) -> NativeAppointment | Problem:
        """``POST …/appointments`` with the native ``Idempotency-Key`` (201, or its stored replay).

        With ``offer_token``, only at the offer's facts (``If-Match``; 412 ``offer_changed`` otherwise).
        """
        headers = {"Idempotency-Key": idempotency_key}
        if offer_token is not None:
            headers["If-Match"] = f'"{offer_token}"'
        return await self._call(
            NativeAppointment, "POST", _APPOINTMENTS, ok=(200, 201), body=body, headers=headers
        )

    async def aclose(self) -> None:
        """Close the underlying HTTP client."""
        await self._upstream.aclose()
