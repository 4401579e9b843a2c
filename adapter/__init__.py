"""The reference OSBP adapter for the synthetic Bookwell platform (osbp.backend), reached only over HTTP.

Public surface: :func:`build_adapter` (from :class:`AdapterSettings`, the adapter's configuration) returns
a :class:`ReferenceAdapter` implementing :class:`osbp.protocol.contract.BookingAdapter`.

Modules: ``settings`` (configuration), ``upstream`` (the one HTTP helper and UpstreamMeta capture),
``native`` (Bookwell's wire shapes), ``bookwell`` (its endpoints as typed calls), ``translate`` (native →
OSBP), ``problems`` (status mapping), ``booking`` (booking.create), ``reference`` (the adapter),
``bench`` (`osbp bench adapter`).
"""

from osbp.adapter.reference import ReferenceAdapter, build_adapter
from osbp.adapter.settings import AdapterSettings

__all__ = ["AdapterSettings", "ReferenceAdapter", "build_adapter"]
