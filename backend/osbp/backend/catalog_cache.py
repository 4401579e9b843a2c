"""Rendered catalog answers, reused until the catalog changes.

The catalog (organizations, locations, providers, services) changes only when the platform seeds or
resets it, or when the merchant edits the database directly; reading it is most of the platform's
traffic. A trigger on each catalog table bumps one revision counter on every insert, update and delete,
whichever connection makes it (the API, a reset, an operator's own SQL). A catalog read takes the counter
in the same read transaction as the rows it would render: an answer rendered at that revision is served
again as is, anything else is rendered afresh. A cached answer is therefore never older than the data
the same transaction sees, and no code path has to remember to invalidate anything. The counter, a
random per-database epoch and the triggers are made by the schema migrations (one per engine), so every
process on one database sees the same revision.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from sqlmodel import Session

__all__ = [
    "CATALOG_TABLES",
    "CatalogCache",
    "catalog_revision",
    "catalog_version",
]

#: The tables whose rows make up catalog answers (each has the revision-bumping triggers).
CATALOG_TABLES = ("organization", "location", "provider", "service")


def _one_value(session: Session, query: str) -> object:
    """The one value ``query`` reads, on the driver's own connection inside the session's transaction."""
    # Nearly every request asks for the revision or version, and for one row SQLAlchemy's statement
    # machinery costs several times the query.
    cursor = session.connection().connection.cursor()
    try:
        cursor.execute(query)
        row = cursor.fetchone()
    finally:
        cursor.close()
    if row is None:  # the rows are created with the tables and never deleted
        raise RuntimeError("the catalog revision row is missing")
    return row[0]


def catalog_revision(session: Session) -> int:
    """The catalog's current revision, as seen by ``session``'s transaction."""
    return int(str(_one_value(session, "SELECT revision FROM catalog_revision")))


def catalog_version(session: Session) -> str:
    """The catalog's published version ``<epoch>-<revision>``, as seen by ``session``'s transaction.

    Opaque to clients: equal versions mean the same catalog (organizations, locations, providers,
    services and their policies); any change to it yields a new version.
    """
    query = "SELECT e.epoch || '-' || r.revision FROM catalog_epoch e, catalog_revision r"
    return str(_one_value(session, query))


class CatalogCache:
    """Response bodies of catalog reads, each valid for the revision it was rendered at.

    Only answers about existing catalog objects are kept, so the cache never holds more entries than
    the catalog has organizations and services; a new revision drops them all.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._revision: int | None = None
        self._bodies: dict[tuple[str, ...], bytes] = {}

    def get_or_render(self, revision: int, key: tuple[str, ...], render: Callable[[], bytes]) -> bytes:
        """The body for ``key`` at ``revision``: reused when rendered at it, else ``render()``ed and kept.

        A refusal raised by ``render`` (an unknown id) propagates, and nothing is kept.
        """
        with self._lock:
            if self._revision != revision:
                self._revision = revision
                self._bodies.clear()
            found = self._bodies.get(key)
        if found is not None:
            return found
        body = render()
        with self._lock:
            # A reader on an older snapshot must not plant its answer in a newer revision's cache.
            if self._revision == revision:
                self._bodies[key] = body
        return body
