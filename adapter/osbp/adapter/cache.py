"""The adapter's catalog cache: exact, validated only by the platform's own validators, never by time.

Bookwell's catalog reads (the organization with its locations and providers, the services with their
policies) answer a strong ``ETag`` and the catalog version they were computed at
(``Bookwell-Catalog-Revision``, read in the same platform transaction as the rows); availability answers
carry the version too (docs/backend-api.md). An entry here is a parsed catalog answer with its ETag and
the version at which the platform last vouched for it. It is used:

* **without a request** only when another answer from the platform states exactly that version: the
  platform computed that answer from the very catalog the entry was read from, so the entry is current
  as of that answer;
* otherwise **with a conditional request** (``If-None-Match`` with its ETag): ``304`` vouches for it at
  the version the 304 states; a ``200`` replaces it.

There is no expiry: an entry is never served on the strength of its age. The entries are the one
organization's catalog resources, so the cache holds at most one entry per service plus two.
"""

from __future__ import annotations

from dataclasses import dataclass

from osbp.adapter.native import NativeModel

__all__ = ["CatalogCache", "CatalogEntry"]


@dataclass
class CatalogEntry:
    """One catalog answer: its strong ETag, the version the platform last vouched for it at, its value."""

    etag: str
    revision: str | None
    value: NativeModel


class CatalogCache:
    """Catalog answers by request path (one organization's resources)."""

    def __init__(self) -> None:
        self._entries: dict[str, CatalogEntry] = {}

    def get(self, path: str) -> CatalogEntry | None:
        """The entry for ``path``, whatever version it was vouched for at."""
        return self._entries.get(path)

    def current_at(self, path: str, revision: str | None) -> NativeModel | None:
        """The value for ``path`` if the platform vouched for it at exactly ``revision``, else ``None``."""
        entry = self._entries.get(path)
        if entry is None or revision is None or entry.revision != revision:
            return None
        return entry.value

    def keep(self, path: str, etag: str, revision: str | None, value: NativeModel) -> None:
        """Store a full answer (replacing any older one)."""
        self._entries[path] = CatalogEntry(etag, revision, value)

    def revalidated(self, path: str, revision: str | None) -> CatalogEntry | None:
        """After a ``304``: the entry, now vouched for at ``revision``."""
        entry = self._entries.get(path)
        if entry is not None:
            entry.revision = revision
        return entry

    def drop(self, path: str) -> None:
        """Forget ``path`` (the platform no longer has it)."""
        self._entries.pop(path, None)
