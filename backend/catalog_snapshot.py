"""The catalog's rows, read once per catalog revision and looked up in memory by read transactions.

A read request looks up the same few catalog rows (organization, service, location, provider) every
time, one ORM query each, though the catalog changes only when it is seeded, reset or edited. The
revision counter of :mod:`osbp.backend.catalog_cache` says exactly when it changed: a read transaction
takes the revision once, and the snapshot of every catalog row loaded at that revision (in a read
transaction, so from committed rows only) answers every lookup of that transaction from memory. A
different revision loads afresh. Write transactions never use it: they may be looking at their own
uncommitted catalog change, so they keep querying.

Snapshots are per database (keyed by its connection pool); their rows are detached ORM instances that
nothing writes to.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any
from weakref import WeakKeyDictionary

from sqlmodel import Session, col, select

from osbp.backend.catalog_cache import catalog_revision
from osbp.backend.models import Location, Organization, Provider, Service

__all__ = ["READ_ONLY", "CatalogSnapshot", "snapshot"]

#: The ``Session.info`` flag :meth:`osbp.backend.db.Database.read` sets on its read transactions.
READ_ONLY = "osbp_read_only"
_MEMO = "osbp_catalog_snapshot"


@dataclass(frozen=True)
class CatalogSnapshot:
    """Every catalog row at one revision, by id, and each organization's locations and providers by id."""

    revision: int
    organizations: dict[str, Organization]
    services: dict[str, Service]
    locations: dict[str, Location]
    providers: dict[str, Provider]
    locations_of: dict[str, list[Location]] = field(default_factory=dict)
    providers_of: dict[str, list[Provider]] = field(default_factory=dict)


def _load(session: Session, revision: int) -> CatalogSnapshot:
    locations = list(session.exec(select(Location).order_by(col(Location.id))))
    providers = list(session.exec(select(Provider).order_by(col(Provider.id))))
    locations_of: defaultdict[str, list[Location]] = defaultdict(list)
    providers_of: defaultdict[str, list[Provider]] = defaultdict(list)
    for location in locations:
        locations_of[location.organization_id].append(location)
    for provider in providers:
        providers_of[provider.organization_id].append(provider)
    return CatalogSnapshot(
        revision=revision,
        organizations={row.id: row for row in session.exec(select(Organization))},
        services={row.id: row for row in session.exec(select(Service))},
        locations={row.id: row for row in locations},
        providers={row.id: row for row in providers},
        locations_of=dict(locations_of),
        providers_of=dict(providers_of),
    )


_lock = threading.Lock()
_snapshots: WeakKeyDictionary[Any, CatalogSnapshot] = WeakKeyDictionary()


def snapshot(session: Session) -> CatalogSnapshot | None:
    """The catalog as ``session``'s read transaction sees it; ``None`` in a write transaction."""
    if not session.info.get(READ_ONLY):
        return None
    memo: CatalogSnapshot | None = session.info.get(_MEMO)
    if memo is not None:
        return memo
    connection = session.connection()
    revision = catalog_revision(session)
    database = connection.engine.pool
    with _lock:
        found = _snapshots.get(database)
    if found is None or found.revision != revision:
        found = _load(session, revision)
        with _lock:
            current = _snapshots.get(database)
            if current is None or current.revision < revision:
                _snapshots[database] = found
    session.info[_MEMO] = found
    return found
