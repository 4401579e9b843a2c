"""The reference OSBP adapter for the synthetic Bookwell platform (osbp.backend), reached only over HTTP.

Public surface: :class:`ReferenceAdapter` implements the platform port
(:class:`osbp.protocol.port.PlatformAdapter`); :func:`build_platform_adapter` builds it from
:class:`AdapterSettings` (the adapter's configuration), and :func:`build_adapter` wraps it in the protocol
core (:class:`osbp.protocol.core.OsbpCore`), the complete seven-method adapter.

Modules: ``settings`` (configuration), ``upstream`` (the one HTTP helper and UpstreamMeta capture),
``native`` (Bookwell's wire shapes), ``bookwell`` (its endpoints as typed calls), ``translate`` (native →
OSBP), ``availability`` (availability.find's pages),
``problems`` (status mapping), ``booking`` (booking.create's port methods), ``reference`` (the
adapter). Its benchmark (`osbp bench adapter`) lives outside the package, in :mod:`osbp.bench.adapter`.
"""

from osbp.adapter.reference import ReferenceAdapter, build_adapter, build_platform_adapter
from osbp.adapter.settings import AdapterSettings

__all__ = ["AdapterSettings", "ReferenceAdapter", "build_adapter", "build_platform_adapter"]
