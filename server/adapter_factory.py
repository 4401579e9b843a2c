"""How the server gets its adapter: a factory from ServerSettings to any BookingAdapter.

The server depends on adapters only through :class:`~osbp.protocol.contract.BookingAdapter` and this
factory, so another platform's adapter plugs in with ``--adapter module:function`` (or
``OSBP_ADAPTER_FACTORY``). The reference factory imports the reference adapter lazily. A factory should
give its adapter ``settings.clock()``, the process's one clock, so ``--now`` reaches the adapter too.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, TypeAlias

from osbp.protocol.contract import BookingAdapter
from osbp.server.settings import ServerSettings

__all__ = ["AdapterFactory", "AdapterFactoryError", "load_factory", "reference_adapter"]

AdapterFactory: TypeAlias = Callable[[ServerSettings], BookingAdapter]


class AdapterFactoryError(Exception):
    """The configured adapter factory cannot be loaded."""


def load_factory(spec: str) -> AdapterFactory:
    """Resolve ``module:function`` to the factory callable."""
    module_name, _, attribute = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise AdapterFactoryError(f"cannot import adapter factory module {module_name!r}: {exc}") from exc
    factory = getattr(module, attribute, None)
    if not callable(factory):
        raise AdapterFactoryError(f"{spec!r} is not a callable adapter factory")
    return factory  # type: ignore[no-any-return]  # checked callable; the signature is the plugin's promise


def reference_adapter(settings: ServerSettings) -> BookingAdapter:
    """The reference adapter for the synthetic platform, configured from the server's settings."""
    adapter_module = importlib.import_module("osbp.adapter")
    overrides: dict[str, Any] = {
        "platform_base_url": settings.platform_base_url,
        "organization_id": settings.organization_id,
    }
    if settings.state_path is not None:
        overrides["state_path"] = settings.state_path
    # Explicit values win over the adapter's own OSBP_* environment reading.
    adapter_settings = adapter_module.AdapterSettings(**{k: v for k, v in overrides.items() if v is not None})
    # The process's one clock: the adapter's mandate, approval and lease checks run on the audit's time.
    adapter: BookingAdapter = adapter_module.build_adapter(adapter_settings, clock=settings.clock())
    return adapter
