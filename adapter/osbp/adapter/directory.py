"""Many Bookwell organizations on one platform connection, and which organization an id belongs to.

A server that serves several organizations routes each call by the ids it carries
(:mod:`osbp.server.orgs`). :class:`BookwellDirectory` answers, from the platform itself:

* which organizations there are (``GET /api/organizations``), for a server serving every one;
* the owner of a service id (each organization's service list) and of a schedule id (each organization's
  locations): catalog reads through every organization's exact catalog cache, so after the first call a
  lookup is a conditional ``GET`` or no request at all;
* the owner of a booking id: Bookwell's appointment ids carry no organization, so each candidate
  organization is asked for it in turn until one knows it (``404`` is "not mine").

Owners are kept once known (an id never changes organization on Bookwell); an unknown service or
schedule id reads each candidate's catalog again at most once a second, so unknown ids cannot multiply
platform traffic. A lookup answers ``None`` for an id none of the candidates owns: the caller cannot
tell an id of an organization it may not act for from one that does not exist.

:meth:`BookwellDirectory.adapter` builds each organization's :class:`~osbp.adapter.reference.ReferenceAdapter`
on the shared connection and the organization's shared :class:`~osbp.adapter.bookwell.BookwellApi`.
"""

from __future__ import annotations

import time
from collections.abc import Iterable

import anyio
import httpx2

from osbp.adapter.bookwell import PLATFORM, VERSION_HEADER, BookwellApi
from osbp.adapter.ids import is_platform_id
from osbp.adapter.native import NativeModel
from osbp.adapter.problems import from_response, internal_error, unavailable
from osbp.adapter.reference import ReferenceAdapter
from osbp.adapter.settings import AdapterSettings
from osbp.adapter.upstream import Upstream, UpstreamUnavailable
from osbp.protocol.models import Problem
from osbp.protocol.problems import ProblemCode

__all__ = ["BookwellDirectory"]

_ORGANIZATIONS = "/api/organizations"
#: Unknown service/schedule ids read the catalogs again at most this often.
_RELIST_EVERY_S = 1.0


class _Listed(NativeModel):
    id: str


class _OrganizationList(NativeModel):
    organizations: list[_Listed]


class _Shared(ReferenceAdapter):
    """A reference adapter on the directory's shared connection: closing it leaves the connection open."""

    async def aclose(self) -> None:
        """Nothing to close: the directory owns the connection (:meth:`BookwellDirectory.aclose`)."""


class BookwellDirectory:
    """Every organization's API on one connection, with the exact id → organization mapping."""

    def __init__(
        self, settings: AdapterSettings, *, transport: httpx2.AsyncBaseTransport | None = None
    ) -> None:
        self._settings = settings
        self._upstream = Upstream(
            settings, platform=PLATFORM, version_header=VERSION_HEADER, transport=transport
        )
        self._apis: dict[str, BookwellApi] = {}
        self._owners: dict[tuple[str, str], str] = {}
        self._listed_at: dict[tuple[str, str], float] = {}

    def _api(self, organization_id: str) -> BookwellApi:
        api = self._apis.get(organization_id)
        if api is None:
            api = self._apis[organization_id] = BookwellApi(self._upstream, organization_id)
        return api

    def adapter(self, organization_id: str) -> ReferenceAdapter:
        """The reference adapter of one organization (same settings, this organization)."""
        settings = self._settings.model_copy(update={"organization_id": organization_id})
        return _Shared(settings, api=self._api(organization_id))

    async def organizations(self) -> tuple[str, ...] | Problem:
        """Every organization on the platform, in the platform's order."""
        outcome = await self._upstream.fetch("GET", _ORGANIZATIONS)
        if isinstance(outcome, UpstreamUnavailable):
            return unavailable(outcome)
        if outcome.status != 200:
            return from_response(outcome)
        try:
            listed = _OrganizationList.model_validate(outcome.body)
        except ValueError:
            return internal_error()
        return tuple(item.id for item in listed.organizations)

    async def _catalog_owner(self, kind: str, value: str, among: tuple[str, ...]) -> str | Problem | None:
        known = self._owners.get((kind, value))
        if known is not None or not is_platform_id(value):
            return known if known in among else None
        now = time.monotonic()
        # Each organization's catalog is read again at most once a second, whatever the candidates.
        due = [
            organization_id
            for organization_id in among
            if now - self._listed_at.get((kind, organization_id), -_RELIST_EVERY_S) >= _RELIST_EVERY_S
        ]
        for organization_id in due:
            self._listed_at[(kind, organization_id)] = now
        listed: dict[str, list[str] | Problem] = {}

        async def read(organization_id: str) -> None:
            ids = await self._catalog_ids(kind, organization_id)
            listed[organization_id] = ids if isinstance(ids, Problem) else list(ids)

        # The catalogs are read at once (one round trip of waiting, not one per organization).
        async with anyio.create_task_group() as group:
            for organization_id in due:
                group.start_soon(read, organization_id)
        for organization_id in due:  # in the candidates' order: the first one's problem is the answer
            ids = listed[organization_id]
            if isinstance(ids, Problem):
                return ids
            for item in ids:
                self._owners[(kind, item)] = organization_id
        owner = self._owners.get((kind, value))
        return owner if owner in among else None

    async def _catalog_ids(self, kind: str, organization_id: str) -> Iterable[str] | Problem:
        api = self._api(organization_id)
        if kind == "service":
            services = await api.services()
            return services if isinstance(services, Problem) else (item.id for item in services.services)
        organization = await api.organization()
        return (
            organization
            if isinstance(organization, Problem)
            else (item.id for item in organization.locations)
        )

    async def service_owner(self, service_id: str, among: tuple[str, ...]) -> str | Problem | None:
        """The organization among ``among`` that has service ``service_id``, if any."""
        return await self._catalog_owner("service", service_id, among)

    async def schedule_owner(self, schedule_id: str, among: tuple[str, ...]) -> str | Problem | None:
        """The organization among ``among`` that has the schedule (location) ``schedule_id``, if any."""
        return await self._catalog_owner("schedule", schedule_id, among)

    async def booking_owner(self, booking_id: str, among: tuple[str, ...]) -> str | Problem | None:
        """The organization among ``among`` that has appointment ``booking_id``, if any."""
        known = self._owners.get(("booking", booking_id))
        if known is not None or not is_platform_id(booking_id):
            return known if known in among else None
        for organization_id in among:
            found = await self._api(organization_id).appointment(booking_id)
            if isinstance(found, Problem):
                if found.code == ProblemCode.BOOKING_NOT_FOUND:
                    continue
                return found
            self._owners[("booking", booking_id)] = found.organization_id
            return found.organization_id if found.organization_id in among else None
        return None

    async def aclose(self) -> None:
        """Close the shared connection."""
        await self._upstream.aclose()
