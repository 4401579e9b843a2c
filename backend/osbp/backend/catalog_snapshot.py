"""The catalog's rows, read once per catalog revision and looked up in memory by read transactions.

A read request looks up the same few catalog rows (organization, service, location, provider) every
time, one ORM query each, though the catalog changes only when it is seeded, reset or edited. The
revision counter of :mod:`osbp.backend.catalog_cache` says exactly when it changed: a read transaction
takes the revision once, and the snapshot of every catalog row loaded at that revision (in a read
transaction, so from committed rows only) answers every lookup of that transaction from memory. A
different revision loads afresh. Write transactions keep querying: they may be looking at their own
uncommitted catalog change. The one exception is a write transaction marked :data:`CATALOG_READER` (an
appointment create, which reads the catalog and never writes it): it uses the snapshot already loaded for
exactly the revision it sees, and never loads or stores one. Holding the write lock from its BEGIN, it
sees the committed revision, so an equal snapshot is the catalog it would have queried.

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

__all__ = ["CATALOG_READER", "READ_ONLY", "CatalogSnapshot", "snapshot"]

#: The ``Session.info`` flag :meth:`osbp.backend.db.Database.read` sets on its read transactions.
READ_ONLY = "osbp_read_only"
#: The ``Session.info`` flag of a write transaction that never writes a catalog row.
CATALOG_READER = "osbp_catalog_reader"
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
    """The catalog as ``session``'s transaction sees it; ``None`` in a write transaction that must query."""
    reader = session.info.get(CATALOG_READER)
    if not session.info.get(READ_ONLY) and not reader:
        return None
    memo: CatalogSnapshot | None = session.info.get(_MEMO)
    if memo is not None:
        return memo
    connection = session.connection()
    revision = catalog_revision(session)
    database = connection.engine.pool
    with _lock:
        found = _snapshots.get(database)
    if reader:
        if found is None or found.revision != revision:
            return None
        session.info[_MEMO] = found
        return found
    if found is None or found.revision != revision:
        found = _load(session, revision)
        with _lock:
            current = _snapshots.get(database)
            if current is None or current.revision < revision:
                _snapshots[database] = found
    session.info[_MEMO] = found
    return found
