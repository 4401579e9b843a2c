"""The server process's composition root: from its one settings object to an adapter and an audit log.

:func:`compose` checks, before anything is served, that the state file and the audit log can be created
(a relative path is relative to the working directory, which an MCP host may well start the server in
``/``), then builds the adapter and opens the log. Every failure it expects is one line naming the
setting, what is wrong with it and what to do, never a traceback.

The reference adapter is a plain import here. Only a plug-in named by ``--adapter module:function``
(``OSBP_ADAPTER_FACTORY``) is loaded by name: a callable taking :class:`ServerSettings` and returning a
:class:`~osbp.protocol.port.PlatformAdapter`. Whatever the factory returns is wrapped in
:class:`~osbp.protocol.core.OsbpCore`, so every adapter gets mandate validation, the approval gate and
idempotency from the protocol core (approval tokens live ``approval_ttl_seconds``), on the process's one
clock (``--now`` reaches them too), and the server never runs an adapter's own create logic.

Several organizations (``--organization-id a,b`` or ``*``) are served by the reference adapter behind an
:class:`~osbp.server.orgs.OrganizationRouter`; a remote server puts its one organization behind the
router too, so a token that may not act for it is refused. stdio with one organization is as before.
"""

from __future__ import annotations

import importlib
import logging
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

import anyio

from osbp.adapter.bookwell import PLATFORM
from osbp.adapter.directory import BookwellDirectory
from osbp.adapter.reference import build_platform_adapter
from osbp.protocol.clock import Clock
from osbp.protocol.contract import BookingAdapter
from osbp.protocol.core import OsbpCore
from osbp.protocol.port import PlatformAdapter
from osbp.protocol.state import StateBackend, StateUnavailable, open_state_store, redacted
from osbp.server.audit import AuditLog
from osbp.server.orgs import OrganizationRouter, SingleDirectory, served_organizations
from osbp.server.settings import Leaf, ServerSettings, settings_of
from osbp.server.subject_key import deployment_salt

__all__ = [
    "AdapterFactory",
    "AdapterFactoryError",
    "Composition",
    "close_parts",
    "compose",
    "load_factory",
    "reference_adapter",
]

logger = logging.getLogger("osbp.server")

AdapterFactory: TypeAlias = Callable[[ServerSettings], PlatformAdapter]


class AdapterFactoryError(Exception):
    """Raised by a factory for settings it cannot serve: its message is the one line the operator sees."""


@dataclass(frozen=True, slots=True)
class Composition:
    """What the server runs on: the adapter inside the core, the open audit log, the one clock, and the
    OSBP state store the core keeps its records in (the server records confirmation rounds there too and
    purges its expired records; the adapter closes it)."""

    adapter: BookingAdapter
    audit: AuditLog
    clock: Clock
    state: StateBackend


def reference_adapter(settings: ServerSettings) -> PlatformAdapter:
    """The reference platform adapter for the synthetic platform."""
    return build_platform_adapter(settings.adapter)


def load_factory(spec: str) -> AdapterFactory | str:
    """The plug-in factory named ``module:function``, or why it cannot be loaded."""
    module_name, _, attribute = spec.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as error:
        return f"--adapter / OSBP_ADAPTER_FACTORY: cannot import module {module_name!r}: {error}"
    factory = getattr(module, attribute, None)
    if not callable(factory):
        return f"--adapter / OSBP_ADAPTER_FACTORY: {spec!r} is not a callable adapter factory"
    return factory  # type: ignore[no-any-return]  # checked callable; the signature is the plug-in's promise


def compose(settings: ServerSettings) -> Composition | str:
    """The adapter and the opened audit log for ``settings``, or the one line saying why not."""
    served = served_organizations(settings.adapter.organization_id)
    if served == ():
        return f"{_leaf(('adapter', 'organization_id')).who} must name an organization, several or *"
    if served is None or len(served) > 1:
        return _compose_many(settings, served)
    plugin = settings.adapter_factory
    factory = reference_adapter if plugin is None else load_factory(plugin)
    if isinstance(factory, str):
        return factory
    files = _open_files(settings)
    if isinstance(files, str):
        return files
    state, audit = files
    try:
        # Typed as object: a plug-in is foreign code, so what it returns is checked, not trusted.
        adapter: object = factory(settings)
    except AdapterFactoryError as error:
        # The plug-in's own word on the operator's settings: no traceback, just what to change.
        audit.close()
        return f"--adapter / OSBP_ADAPTER_FACTORY: {error}"
    except Exception as error:
        # A plug-in's bug, not the operator's mistake: the traceback goes to the log, one line to stderr.
        logger.exception("adapter_factory_failed")
        audit.close()
        return f"the adapter factory failed: {type(error).__name__}: {error}"
    if not isinstance(adapter, PlatformAdapter):
        audit.close()
        _close_refused(adapter)
        return (
            f"--adapter / OSBP_ADAPTER_FACTORY: {plugin!r} returned a {type(adapter).__name__}, not a "
            "PlatformAdapter (it needs organization_id, resolve_booking and place_booking; docs/adapter.md)"
        )
    clock = settings.clock()
    core = OsbpCore(adapter, state=state, clock=clock, approval_ttl=settings.approval_ttl())
    if settings.transport == "stdio":
        return Composition(adapter=core, audit=audit, clock=clock, state=state)
    # Remote: the one organization behind the router, which refuses it to a token that may not act for it.
    organization_id = adapter.organization_id
    router = OrganizationRouter(
        served=(organization_id,),
        directory=SingleDirectory(organization_id),
        core_for=lambda _: core,
        platform=core.platform,
        clock=clock,
    )
    router.core(organization_id)
    return Composition(adapter=router, audit=audit, clock=clock, state=state)


def _compose_many(settings: ServerSettings, served: tuple[str, ...] | None) -> Composition | str:
    """Several organizations (or every one) of the reference platform behind one router."""
    if settings.adapter_factory is not None:
        return (
            "--adapter / OSBP_ADAPTER_FACTORY: a plug-in adapter serves one organization; set "
            "--organization-id / OSBP_ORGANIZATION_ID to one id"
        )
    files = _open_files(settings)
    if isinstance(files, str):
        return files
    state, audit = files
    clock = settings.clock()
    directory = BookwellDirectory(settings.adapter)

    def core_for(organization_id: str) -> OsbpCore:
        adapter = directory.adapter(organization_id)
        return OsbpCore(adapter, state=state, clock=clock, approval_ttl=settings.approval_ttl())

    router = OrganizationRouter(
        served=served,
        directory=directory,
        core_for=core_for,
        platform=PLATFORM,
        clock=clock,
        default_service_id=settings.adapter.default_service_id,
    )
    return Composition(adapter=router, audit=audit, clock=clock, state=state)


def _open_files(settings: ServerSettings) -> tuple[StateBackend, AuditLog] | str:
    """The state store and the opened audit log, or the one line saying which cannot be created."""
    state_path = settings.adapter.state_path
    try:
        # The state file the adapter will open, opened here first so a bad path fails before serving.
        # The store creates it by hand, private (0600 in a 0700 directory, like the audit log), so a
        # failure carries the operating system's reason rather than SQLite's "unable to open database".
        # The same store then serves the core: the file is opened (schema, migrations) once per start.
        # A postgresql:// location is connected to and its schema made here the same way.
        state = open_state_store(state_path)
    except StateUnavailable as error:
        return _cannot_reach(str(state_path), error, _leaf(("adapter", "state_path")))
    except (OSError, sqlite3.Error) as error:
        assert isinstance(state_path, Path)  # a URL location raises StateUnavailable only
        return _cannot_create("the state file", state_path, error, _leaf(("adapter", "state_path")))
    key = settings.audit_key_bytes()
    subject = None
    if settings.transport != "stdio":  # only a remote call has a subject
        try:
            subject = deployment_salt(state)
            state.close()  # no connection is held open until serving (it reopens on first use)
        except Exception as error:  # the state just opened: a database that went away, a full disk
            state.close()
            return f"cannot keep the deployment's subject salt in the state {state.location}: {error}"
    audit = AuditLog(settings.audit_log_path, key=key, subject_key=subject)
    try:
        audit.open()
    except OSError as error:
        return _cannot_create("the audit log", settings.audit_log_path, error, _leaf(("audit_log_path",)))
    return state, audit


async def close_parts(adapter: BookingAdapter, audit: AuditLog) -> None:
    """Close the adapter (a failure is logged, never raised) and then the audit log, shielded."""
    with anyio.CancelScope(shield=True):
        try:
            await adapter.aclose()
        except Exception:
            logger.exception("adapter_close_failed")
        audit.close()


def _close_refused(adapter: object) -> None:
    """Close what a refused plug-in opened (its HTTP client, files), if it can be closed."""
    aclose = getattr(adapter, "aclose", None)
    if not callable(aclose):
        return
    try:
        anyio.run(aclose)
    except Exception:
        # Foreign code failing to close: logged, and the start-up still fails with its own one line.
        logger.exception("refused_adapter_close_failed")


def _leaf(path: tuple[str, ...]) -> Leaf:
    return next(leaf for leaf in settings_of(ServerSettings) if leaf.path == path)


def _cannot_create(what: str, path: Path, error: OSError | sqlite3.Error, leaf: Leaf) -> str:
    """One line: which file cannot be created, why, and which setting to change to what."""
    where = str(path) if path.is_absolute() else f"{path} in the working directory {Path.cwd()}"
    return (
        f"cannot create {what} {where}: {_reason(path.absolute(), error)}; "
        f"set {leaf.who} to an absolute path in a directory this user can write"
    )


def _cannot_reach(url: str, error: StateUnavailable, leaf: Leaf) -> str:
    """One line: which state database cannot be used, why, and which setting names it."""
    return (
        f"cannot open the state database {redacted(url)}: {error}; "
        f"check that it is running and reachable, or set {leaf.who} to another location"
    )


def _reason(path: Path, error: OSError | sqlite3.Error) -> str:
    if isinstance(error, sqlite3.Error):
        return f"SQLite says {error}"
    if path.is_dir():
        return "it is a directory"
    # The nearest existing ancestor explains most failures: a file where a directory should be.
    ancestor = next((parent for parent in path.parents if parent.exists()), None)
    if ancestor is not None and not ancestor.is_dir():
        return f"{ancestor} is not a directory"
    return (error.strerror or str(error)).lower()
