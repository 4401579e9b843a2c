"""Availability: computed slots for one service on one merchant-local date (a deprecated endpoint).

Read routes are `async def` and query SQLite on the event loop: a read is a few indexed rows and a
millisecond or two of Python, WAL readers never wait for a writer, and under the GIL a worker thread
adds no parallelism, only a thread round trip per request. Routes that write (`BEGIN IMMEDIATE`, which
may wait out the busy timeout) stay `def`, in the thread pool.
"""

from __future__ import annotations

from datetime import date
from typing import Annotated, Any

from fastapi import APIRouter, Query
from starlette.responses import Response

from osbp.backend.api.deps import RuntimeDep, model_response, problem_responses
from osbp.backend.availability import Slot, find_slots
from osbp.backend.catalog import (
    get_location,
    get_organization,
    get_provider,
    get_service,
    locations_of,
    providers_of,
    service_price,
)
from osbp.backend.catalog_cache import catalog_version
from osbp.backend.models import Service
from osbp.backend.openapi import answer_headers
from osbp.backend.problems import ProblemError
from osbp.backend.validators import REVISION_HEADER, offer_token
from osbp.backend.wire import DATE_PATTERN, AvailabilityOut, SlotOut

__all__ = ["router"]

router = APIRouter(prefix="/api", tags=["availability"])


@router.get(
    "/organizations/{organization_id}/availability",
    response_model=AvailabilityOut,
    deprecated=True,
    responses=problem_responses(
        "invalid_request",
        "organization_not_found",
        "service_not_found",
        "location_not_found",
        "provider_not_found",
        "endpoint_retired",
    )
    | answer_headers(200, REVISION_HEADER),
)
async def read_availability(
    organization_id: str,
    runtime: RuntimeDep,
    service_id: Annotated[str, Query(min_length=1, max_length=100)],
    date_: Annotated[str, Query(alias="date", pattern=DATE_PATTERN, description="merchant-local YYYY-MM-DD")],
    location_id: Annotated[str | None, Query(max_length=100)] = None,
    provider_id: Annotated[str | None, Query(max_length=100)] = None,
) -> Response:
    """Bookable slots (deprecated: carries Deprecation, Sunset and Link headers).

    Each slot carries its ``offer_token``, and the answer the catalog version it was computed at.
    """
    try:
        day = date.fromisoformat(date_)
    except ValueError:
        raise ProblemError(
            "invalid_request",
            f"date {date_!r} is not a calendar date.",
            {"errors": [{"field": "query.date", "message": "not a calendar date"}]},
        ) from None
    with runtime.db.read() as session:
        version = catalog_version(session)
        organization = get_organization(session, organization_id)
        service = get_service(session, organization_id, service_id)
        # The whole list only when the query does not name one (a filtered query is the common case).
        if location_id is not None:
            locations = [get_location(session, organization_id, location_id)]
        else:
            locations = locations_of(session, organization_id)
        if provider_id is not None:
            providers = [get_provider(session, organization_id, provider_id)]
        else:
            providers = providers_of(session, organization_id)
        slots = find_slots(
            session,
            organization=organization,
            service=service,
            locations=locations,
            providers=providers,
            day=day,
            now=runtime.clock.now(),
        )
    found = AvailabilityOut(
        organization_id=organization_id,
        service_id=service_id,
        date=day.isoformat(),
        slots=_slots_out(slots, service, version),
    )
    response = model_response(found)
    response.headers[REVISION_HEADER] = version
    return response


def _slots_out(slots: list[Slot], service: Service, version: str) -> list[SlotOut]:
    """The answer's slots: what every slot of one location and provider shares is read from them once."""
    price, service_id = service_price(service), service.id
    shared: dict[tuple[str, str], dict[str, Any]] = {}
    out = []
    for slot in slots:
        location, provider, opening = slot.location, slot.provider, slot.opening
        key = (location.id, provider.id)
        fields = shared.get(key)
        if fields is None:
            fields = shared[key] = {
                "location_id": location.id,
                "location_name": location.name,
                "time_zone": location.time_zone,
                "provider_id": provider.id,
                "provider_name": provider.name,
                "provider_image_url": provider.image_url,
                "service_id": service_id,
                "duration_minutes": service.duration_minutes,
                "price": price,
            }
        token = offer_token(
            version,
            location_id=key[0],
            provider_id=key[1],
            service_id=service_id,
            date=opening.date,
            time=opening.time,
        )
        out.append(
            SlotOut(
                **fields,
                date=opening.date,
                time=opening.time,
                end_date=opening.end_date,
                end_time=opening.end_time,
                offer_token=token,
            )
        )
    return out
