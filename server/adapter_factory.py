"""The server's composition root: a platform adapter from a factory, wrapped in the protocol core.

A factory maps :class:`~osbp.server.settings.ServerSettings` to a
:class:`~osbp.protocol.port.PlatformAdapter`; :func:`compose` wraps whatever it returns in
:class:`~osbp.protocol.core.OsbpCore`, so every adapter (the reference one, or another platform's plugged
in with ``--adapter module:function`` / ``OSBP_ADAPTER_FACTORY``) gets mandate validation, the approval
gate and idempotency from the core, and the server never runs an adapter's own create logic. The core
runs on ``settings.clock()``, the process's one clock, so ``--now`` reaches the mandate and approval
checks too.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import Any, TypeAlias

from osbp.protocol.contract import BookingAdapter
from osbp.protocol.core import OsbpCore
from osbp.protocol.port import PlatformAdapter
from osbp.protocol.store import DEFAULT_STATE_PATH
from osbp.server.settings import ServerSettings

__all__ = ["AdapterFactory", "AdapterFactoryError", "compose", "load_factory", "reference_adapter"]

AdapterFactory: TypeAlias = Callable[[ServerSettings], PlatformAdapter]


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


def reference_adapter(settings: ServerSettings) -> PlatformAdapter:
    """The reference platform adapter for the synthetic platform, configured from the server's settings."""
    from osbp.adapter import AdapterSettings, build_platform_adapter

    overrides: dict[str, Any] = {
        "platform_base_url": settings.platform_base_url,
        "organization_id": settings.organization_id,
    }
    # Explicit values win over the adapter's own OSBP_* environment reading.
    adapter_settings = AdapterSettings(**{k: v for k, v in overrides.items() if v is not None})
    return build_platform_adapter(adapter_settings)


def compose(settings: ServerSettings) -> BookingAdapter:
    """The configured platform adapter inside the protocol core: what the server serves."""
    factory = load_factory(settings.adapter_factory)
    adapter = factory(settings)
    if not isinstance(adapter, PlatformAdapter):
        raise AdapterFactoryError(
            f"{settings.adapter_factory!r} returned a {type(adapter).__name__}, not a PlatformAdapter "
            "(it needs organization_id, resolve_booking and place_booking; see docs/adapter.md)"
        )
    return OsbpCore(adapter, state=settings.state_path or DEFAULT_STATE_PATH, clock=settings.clock())
