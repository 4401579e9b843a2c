"""Bookwell's validators: the catalog version header, catalog ETags, and availability offer tokens.

* Every catalog read and every availability answer carries ``Bookwell-Catalog-Revision``: the catalog
  version (:func:`~osbp.backend.catalog_cache.catalog_version`) read in the same transaction as the rows
  the answer was computed from. Two answers with the same value were computed from the same catalog.
* Catalog reads carry a strong ``ETag`` (a digest of the exact body) and honour ``If-None-Match`` with
  ``304 Not Modified`` (RFC 9110 §13.1.2).
* Each availability slot carries an ``offer_token``: a validator over everything the offer depends on that
  is not checked again by the create anyway (the catalog version: price, policy, names, hours, grid, and
  the slot's identity). ``POST …/appointments`` with ``If-Match: "<offer_token>"`` is refused with ``412
  offer_changed`` when the token the platform computes for the requested slot, inside the create's write
  transaction, differs (RFC 9110 §13.1.1). Whether the slot is still free is the create's own ``409``.
* An appointment's answers carry a strong ``ETag`` of its ``version`` (:func:`appointment_tag`), which the
  customer's cancel and reschedule check as ``If-Match`` (``412 appointment_changed``).
"""

from __future__ import annotations

import hashlib

__all__ = ["REVISION_HEADER", "appointment_tag", "entity_tag", "matches_any", "offer_token"]

#: The response header carrying the catalog version an answer was computed at.
REVISION_HEADER = "Bookwell-Catalog-Revision"


def entity_tag(body: bytes) -> str:
    """The strong ETag of a catalog answer: a digest of its exact bytes, quoted."""
    return '"' + hashlib.sha256(body).hexdigest()[:32] + '"'


def offer_token(
    version: str, *, location_id: str, provider_id: str, service_id: str, date: str, time: str
) -> str:
    """The opaque validator of one offered slot at one catalog version."""
    material = "\x1f".join((version, location_id, provider_id, service_id, date, time))
    return "ofr_" + hashlib.sha256(material.encode()).hexdigest()[:32]


def appointment_tag(appointment_id: str, version: int) -> str:
    """The strong ETag of one version of an appointment, quoted (opaque: it changes with every change)."""
    material = f"{appointment_id}\x1f{version}"
    return '"' + hashlib.sha256(material.encode()).hexdigest()[:32] + '"'


def _tags(header: str) -> list[str]:
    # A list of entity-tags (RFC 9110 §8.8.3); the weak prefix is dropped for If-None-Match's weak
    # comparison, and a strong If-Match never matches a weak tag (the platform issues none).
    return [tag.strip() for tag in header.split(",") if tag.strip()]


def matches_any(header: str, tag: str, *, weak: bool) -> bool:
    """Whether an ``If-None-Match`` (``weak``) or ``If-Match`` header lists ``tag`` (or is ``*``)."""
    for listed in _tags(header):
        if listed == "*":
            return True
        if weak:
            listed = listed.removeprefix("W/")
        if listed == tag:
            return True
    return False
