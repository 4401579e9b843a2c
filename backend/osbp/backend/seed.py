"""Seed data: the organizations of the shipped `seed.toml`, seeded deterministically and idempotently.

The file is loaded and validated once per process (`osbp.backend.seed_file`). Re-seeding merges by
primary key, so it never duplicates.
"""

from __future__ import annotations

import functools

from sqlmodel import Session, SQLModel, select

from osbp.backend.models import Location, Organization, Provider, Service
from osbp.backend.seed_file import LocationSeed, SeedFile, load_seed

__all__ = ["seed", "seed_organization_ids", "seed_rows"]


@functools.cache
def _shipped() -> SeedFile:
    return load_seed()


def seed_organization_ids() -> tuple[str, ...]:
    """The seed organizations' ids, in file order."""
    return tuple(organization.id for organization in _shipped().organizations)


def seed_rows() -> list[SQLModel]:
    """Every seed row, each organization before the rows that reference it."""
    rows: list[SQLModel] = []
    for organization in _shipped().organizations:
        rows.append(
            Organization(
                **organization.model_dump(exclude={"service_defaults", "locations", "providers", "services"})
            )
        )
        rows.extend(_location(organization.id, location) for location in organization.locations)
        rows.extend(
            Provider(organization_id=organization.id, **provider.model_dump())
            for provider in organization.providers
        )
        rows.extend(
            Service(organization_id=organization.id, **service.model_dump())
            for service in organization.services
        )
    return rows


def _location(organization_id: str, location: LocationSeed) -> Location:
    hours = [
        {"weekday": day, "open": entry.open, "close": entry.close}
        for entry in location.hours
        for day in entry.days
    ]
    address = None if location.address is None else location.address.model_dump()
    return Location(
        organization_id=organization_id,
        **location.model_dump(exclude={"address", "hours"}),
        address=address,
        hours=hours,
    )


def seed(session: Session) -> None:
    """Insert or refresh the seed rows (merge by primary key: re-seeding never duplicates).

    Into a database without organizations (a fresh one, or one just cleared) the rows are simply added:
    a merge would first look each one up, the bulk of a fresh platform's seeding.
    """
    rows = seed_rows()
    if session.exec(select(Organization.id).limit(1)).first() is None:
        # Table by table in the order rows first appear (each organization before what references it):
        # unrelated mappers have no insert order of their own.
        for kind in dict.fromkeys(type(row) for row in rows):
            session.add_all([row for row in rows if type(row) is kind])
            session.flush()
        return
    for row in rows:
        session.merge(row)
