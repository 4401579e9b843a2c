"""The catalog: organizations, locations, providers and services, looked up by id and rendered natively.

A lookup of an id that does not exist, or belongs to another organization, raises a 404 `ProblemError`
(`organization_not_found` when the organization itself is unknown). In a read transaction the lookups
answer from the revision's :mod:`~osbp.backend.catalog_snapshot` instead of one query each.
"""

from __future__ import annotations

from sqlmodel import Session, col, select

from osbp.backend.catalog_snapshot import snapshot
from osbp.backend.models import Location, Organization, Provider, Service
from osbp.backend.problems import ProblemError
from osbp.backend.wire import (
    Address,
    CancellationOut,
    Coordinates,
    HoursEntry,
    LocationOut,
    OptionOut,
    OrganizationOut,
    OrganizationSummary,
    PaymentOut,
    PolicyOut,
    Price,
    ProviderOut,
    ServiceOut,
)

__all__ = [
    "fixed_price",
    "get_location",
    "get_organization",
    "get_provider",
    "get_service",
    "locations_of",
    "not_found",
    "organization_out",
    "organization_summary",
    "providers_of",
    "service_out",
    "service_price",
    "services_of",
]


def get_organization(session: Session, organization_id: str) -> Organization:
    """The organization, or 404 `organization_not_found`."""
    catalog = snapshot(session)
    found = (
        session.get(Organization, organization_id)
        if catalog is None
        else catalog.organizations.get(organization_id)
    )
    if found is None:
        raise ProblemError("organization_not_found", f"No organization {organization_id!r}.")
    return found


def not_found(session: Session, organization_id: str, code: str, detail: str) -> ProblemError:
    """The 404 for an id missing under an organization: `organization_not_found` if that is unknown too.

    Lets a lookup go straight to the record and pay for the organization lookup only on a miss: a record
    found under the organization proves the organization exists (foreign key).
    """
    get_organization(session, organization_id)
    return ProblemError(code, detail)


def get_service(session: Session, organization_id: str, service_id: str) -> Service:
    """The organization's service, or 404 `service_not_found`."""
    catalog = snapshot(session)
    found = session.get(Service, service_id) if catalog is None else catalog.services.get(service_id)
    if found is None or found.organization_id != organization_id:
        detail = f"No service {service_id!r} at {organization_id!r}."
        raise not_found(session, organization_id, "service_not_found", detail)
    return found


def get_location(session: Session, organization_id: str, location_id: str) -> Location:
    """The organization's location, or 404 `location_not_found`."""
    catalog = snapshot(session)
    found = session.get(Location, location_id) if catalog is None else catalog.locations.get(location_id)
    if found is None or found.organization_id != organization_id:
        detail = f"No location {location_id!r} at {organization_id!r}."
        raise not_found(session, organization_id, "location_not_found", detail)
    return found


def get_provider(session: Session, organization_id: str, provider_id: str) -> Provider:
    """The organization's provider, or 404 `provider_not_found`."""
    catalog = snapshot(session)
    found = session.get(Provider, provider_id) if catalog is None else catalog.providers.get(provider_id)
    if found is None or found.organization_id != organization_id:
        detail = f"No provider {provider_id!r} at {organization_id!r}."
        raise not_found(session, organization_id, "provider_not_found", detail)
    return found


def locations_of(session: Session, organization_id: str) -> list[Location]:
    """The organization's locations, by id."""
    catalog = snapshot(session)
    if catalog is not None:
        return list(catalog.locations_of.get(organization_id, []))
    query = select(Location).where(Location.organization_id == organization_id).order_by(col(Location.id))
    return list(session.exec(query))


def providers_of(session: Session, organization_id: str) -> list[Provider]:
    """The organization's providers, by id."""
    catalog = snapshot(session)
    if catalog is not None:
        return list(catalog.providers_of.get(organization_id, []))
    query = select(Provider).where(Provider.organization_id == organization_id).order_by(col(Provider.id))
    return list(session.exec(query))


def services_of(session: Session, organization_id: str) -> list[Service]:
    """The organization's services, by id."""
    query = select(Service).where(Service.organization_id == organization_id).order_by(col(Service.id))
    return list(session.exec(query))


def fixed_price(amount: str | None, currency: str) -> Price | None:
    """A fixed price, or None when there is no amount (no fee)."""
    return None if amount is None else Price(kind="fixed", amount=amount, currency=currency)


def service_price(service: Service) -> Price:
    """The service's price in the native shape."""
    amount = service.price_amount if service.price_kind == "fixed" else None
    return Price.model_validate({"kind": service.price_kind, "amount": amount, "currency": service.currency})


def service_out(service: Service) -> ServiceOut:
    """A service with its policy, natively."""
    return ServiceOut(
        id=service.id,
        organization_id=service.organization_id,
        name=service.name,
        description=service.description,
        duration_minutes=service.duration_minutes,
        price=service_price(service),
        requires_consultation=service.requires_consultation,
        location_ids=list(service.location_ids),
        options=[
            OptionOut(
                id=option["id"],
                name=option["name"],
                duration_minutes=option["duration_minutes"],
                price=Price(kind="fixed", amount=option["amount"], currency=service.currency),
            )
            for option in service.options
        ],
        policy=PolicyOut.model_validate(
            {
                "cancellation": CancellationOut(
                    allowed=service.cancellation_allowed,
                    window_minutes=service.cancellation_window_minutes,
                    fee=fixed_price(service.cancellation_fee, service.currency),
                    note=service.cancellation_note,
                ),
                "late_grace_minutes": service.late_grace_minutes,
                "no_show_fee": fixed_price(service.no_show_fee, service.currency),
                "reschedule_fee": fixed_price(service.reschedule_fee, service.currency),
                "payment": PaymentOut.model_validate(
                    {
                        "requirement": service.payment_requirement,
                        "deposit": fixed_price(service.deposit_amount, service.currency),
                    }
                ),
                "verification": service.verification,
            }
        ),
    )


def organization_summary(organization: Organization) -> OrganizationSummary:
    """An organization's directory entry."""
    return OrganizationSummary(
        id=organization.id,
        name=organization.name,
        slug=organization.slug,
        time_zone=organization.time_zone,
        currency=organization.currency,
        country=organization.country,
    )


def organization_out(
    organization: Organization, locations: list[Location], providers: list[Provider]
) -> OrganizationOut:
    """An organization with its locations and providers, natively."""
    return OrganizationOut(
        **organization_summary(organization).model_dump(),
        domain=organization.domain,
        phone=organization.phone,
        support_email=organization.support_email,
        slot_interval_minutes=organization.slot_interval_minutes,
        verification_sandbox=organization.verification_sandbox,
        parallel_bookings=organization.parallel_bookings,
        locations=[
            LocationOut.model_validate(
                {
                    "id": location.id,
                    "name": location.name,
                    "kind": location.kind,
                    "time_zone": location.time_zone,
                    "address": None if location.address is None else Address.model_validate(location.address),
                    "coordinates": None
                    if location.latitude is None or location.longitude is None
                    else Coordinates(latitude=location.latitude, longitude=location.longitude),
                    "hours": [HoursEntry.model_validate(entry) for entry in location.hours],
                }
            )
            for location in locations
        ],
        providers=[
            ProviderOut(
                id=provider.id,
                name=provider.name,
                title=provider.title,
                image_url=provider.image_url,
                location_ids=list(provider.location_ids),
                service_ids=list(provider.service_ids),
            )
            for provider in providers
        ],
    )
