"""Organizations and their services (each service with its policy).

Answers are rendered once per catalog revision and then served from the runtime's `CatalogCache`
(`osbp.backend.catalog_cache`): the revision is read in the same transaction as the rows. Each answer
carries its strong `ETag` and the catalog version it was computed at (`Bookwell-Catalog-Revision`), and a
matching `If-None-Match` is answered `304` without a body (`osbp.backend.validators`).

Read routes are `async def` and query SQLite on the event loop: a read is a few indexed rows and a
millisecond or two of Python, WAL readers never wait for a writer, and under the GIL a worker thread
adds no parallelism, only a thread round trip per request. Routes that write (`BEGIN IMMEDIATE`, which
may wait out the busy timeout) stay `def`, in the thread pool.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Header
from sqlmodel import Session, col, select
from starlette.responses import Response

from osbp.backend.api.deps import RuntimeDep, model_json, problem_responses
from osbp.backend.catalog import (
    get_organization,
    get_service,
    locations_of,
    organization_out,
    organization_summary,
    providers_of,
    service_out,
    services_of,
)
from osbp.backend.catalog_cache import catalog_revision, catalog_version
from osbp.backend.models import Organization
from osbp.backend.openapi import answer_headers, not_modified
from osbp.backend.runtime import Runtime
from osbp.backend.validators import REVISION_HEADER, entity_tag, matches_any
from osbp.backend.wire import OrganizationList, OrganizationOut, ServiceList, ServiceOut

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["organizations"])

IfNoneMatch = Annotated[
    str | None,
    Header(alias="If-None-Match", description="an ETag from an earlier answer: 304 while it still matches"),
]


#: What every catalog read answers besides its problems: validators on the 200, and the 304.
_VALIDATED = answer_headers(200, "ETag", REVISION_HEADER) | not_modified()


def _conditional(body: bytes, version: str, if_none_match: str | None) -> Response:
    """The catalog answer with its validators, or ``304`` when the client's copy is still current."""
    tag = entity_tag(body)
    headers = {"ETag": tag, REVISION_HEADER: version}
    if if_none_match is not None and matches_any(if_none_match, tag, weak=True):
        return Response(status_code=304, headers=headers)
    return Response(body, media_type="application/json", headers=headers)


def _cached(
    runtime: Runtime,
    session: Session,
    key: tuple[str, ...],
    render: Callable[[], bytes],
    if_none_match: str | None,
) -> Response:
    body = runtime.catalog.get_or_render(catalog_revision(session), key, render)
    return _conditional(body, catalog_version(session), if_none_match)


@router.get("/organizations", response_model=OrganizationList, responses=_VALIDATED)
async def list_organizations(runtime: RuntimeDep, if_none_match: IfNoneMatch = None) -> Response:
    """Every organization on the platform."""
    with runtime.db.read() as session:

        def render() -> bytes:
            organizations = session.exec(select(Organization).order_by(col(Organization.id))).all()
            listed = OrganizationList(organizations=[organization_summary(item) for item in organizations])
            return model_json(listed)

        return _cached(runtime, session, ("organizations",), render, if_none_match)


@router.get(
    "/organizations/{organization_id}",
    response_model=OrganizationOut,
    responses=problem_responses("organization_not_found") | _VALIDATED,
)
async def read_organization(
    organization_id: str, runtime: RuntimeDep, if_none_match: IfNoneMatch = None
) -> Response:
    """One organization with its locations (address, coordinates, hours) and providers."""
    with runtime.db.read() as session:

        def render() -> bytes:
            organization = get_organization(session, organization_id)
            locations = locations_of(session, organization_id)
            providers = providers_of(session, organization_id)
            return model_json(organization_out(organization, locations, providers))

        key = ("organization", organization_id)
        return _cached(runtime, session, key, render, if_none_match)


@router.get(
    "/organizations/{organization_id}/services",
    response_model=ServiceList,
    responses=problem_responses("organization_not_found") | _VALIDATED,
)
async def list_services(
    organization_id: str, runtime: RuntimeDep, if_none_match: IfNoneMatch = None
) -> Response:
    """Every service of the organization, each with its policy."""
    with runtime.db.read() as session:

        def render() -> bytes:
            get_organization(session, organization_id)
            services = services_of(session, organization_id)
            return model_json(ServiceList(services=[service_out(service) for service in services]))

        key = ("services", organization_id)
        return _cached(runtime, session, key, render, if_none_match)


@router.get(
    "/organizations/{organization_id}/services/{service_id}",
    response_model=ServiceOut,
    responses=problem_responses("organization_not_found", "service_not_found") | _VALIDATED,
)
async def read_service(
    organization_id: str, service_id: str, runtime: RuntimeDep, if_none_match: IfNoneMatch = None
) -> Response:
    """One service with its policy."""
    with runtime.db.read() as session:

        def render() -> bytes:
            return model_json(service_out(get_service(session, organization_id, service_id)))

        key = ("service", organization_id, service_id)
        return _cached(runtime, session, key, render, if_none_match)
