"""The composition root: settings → start-up checks → the reference adapter or a plug-in → the audit log."""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from osbp.adapter import ReferenceAdapter
from osbp.protocol.core import OsbpCore
from osbp.protocol.port import PlatformAdapter
from osbp.server.compose import Composition, compose
from osbp.server.settings import ServerSettings
from tests.support.memory_adapter import MemoryAdapter, build_memory_adapter

pytestmark = pytest.mark.usefixtures("no_osbp_environment")

HERE = "tests.server.test_compose"
#: Whether the state file and the audit log existed when the recording factory was called.
SEEN: list[tuple[bool, bool]] = []


def settings_in(tmp_path: Path, **overrides: Any) -> ServerSettings:
    """Settings with the state file and the audit log in ``tmp_path``."""
    adapter = {
        "platform_base_url": "http://127.0.0.1:9",
        "organization_id": "org_test",
        "state_path": tmp_path / "state" / "osbp.sqlite3",
    }
    return ServerSettings(adapter=adapter, audit_log_path=tmp_path / "audit" / "events.jsonl", **overrides)


def recording_factory(settings: ServerSettings) -> PlatformAdapter:
    """A plug-in that notes whether both files were already created when it was called."""
    SEEN.append((Path(settings.adapter.state_path).is_file(), settings.audit_log_path.is_file()))
    return build_memory_adapter(settings)


def exploding_factory(settings: ServerSettings) -> PlatformAdapter:
    """A plug-in with a bug."""
    raise RuntimeError("boom")


@pytest.fixture
def closing() -> Iterator[list[Composition]]:
    """Compositions to close after the test."""
    made: list[Composition] = []
    yield made
    for parts in made:
        anyio.run(parts.adapter.aclose)
        parts.audit.close()


def test_the_reference_adapter_is_a_plain_import_on_the_process_clock(tmp_path, monkeypatch, closing):
    """Platform choice: the server reaches the reference adapter by import, never by name lookup."""

    def no_lookup(name: str, package: str | None = None) -> Any:
        raise AssertionError(f"looked up {name!r} by name")

    monkeypatch.setattr(importlib, "import_module", no_lookup)
    settings = settings_in(tmp_path)
    parts = compose(settings)
    assert isinstance(parts, Composition)
    closing.append(parts)
    assert isinstance(parts.adapter, OsbpCore)
    assert isinstance(parts.adapter.adapter, ReferenceAdapter)
    assert parts.clock is settings.clock()
    assert parts.audit.path == settings.audit_log_path


def test_a_plugin_is_loaded_by_name_after_both_files_are_created(tmp_path, closing):
    """Platform choice: --adapter module:function plugs in another adapter; the files are checked first."""
    SEEN.clear()
    parts = compose(settings_in(tmp_path, adapter_factory=f"{HERE}:recording_factory"))
    assert isinstance(parts, Composition)
    closing.append(parts)
    assert isinstance(parts.adapter, OsbpCore)
    assert isinstance(parts.adapter.adapter, MemoryAdapter)
    assert SEEN == [(True, True)]


def test_a_plugin_that_fails_is_one_line_and_leaves_nothing_open(tmp_path):
    """Platform choice: a plug-in's bug is reported on one line (its traceback goes to the log)."""
    outcome = compose(settings_in(tmp_path, adapter_factory=f"{HERE}:exploding_factory"))
    assert outcome == "the adapter factory failed: RuntimeError: boom"


def test_a_plugin_name_that_is_not_callable_is_one_line(tmp_path):
    """Platform choice: a wrong --adapter is a configuration error naming the flag and the variable."""
    outcome = compose(settings_in(tmp_path, adapter_factory=f"{HERE}:HERE"))
    assert outcome == f"--adapter / OSBP_ADAPTER_FACTORY: '{HERE}:HERE' is not a callable adapter factory"


def seven_method_factory(settings: ServerSettings) -> Any:
    """A plug-in written against the old contract: a complete adapter with its own create logic."""
    return OsbpCore(build_memory_adapter(settings), state=settings.adapter.state_path)


#: Whether the refused plug-in below was closed.
CLOSED: list[bool] = []


class _NotAPort:
    """Something a plug-in returns that is no platform adapter, but holds resources."""

    async def aclose(self) -> None:
        CLOSED.append(True)


def not_a_port_factory(settings: ServerSettings) -> Any:
    """A plug-in returning an object that is not a PlatformAdapter but has an aclose."""
    return _NotAPort()


def test_a_refused_plugin_is_closed_before_the_one_line_refusal(tmp_path):
    """Platform choice: what a refused plug-in opened (clients, files) is closed, not leaked."""
    CLOSED.clear()
    outcome = compose(settings_in(tmp_path, adapter_factory=f"{HERE}:not_a_port_factory"))
    assert isinstance(outcome, str)
    assert "returned a _NotAPort, not a PlatformAdapter" in outcome
    assert CLOSED == [True]


def test_a_plugin_that_is_not_a_platform_adapter_is_refused_in_one_line(tmp_path):
    """OSBP spec, Adapter Contract: the core enforces the mandate, so a plug-in must be a platform port."""
    outcome = compose(settings_in(tmp_path, adapter_factory=f"{HERE}:seven_method_factory"))
    assert outcome == (
        f"--adapter / OSBP_ADAPTER_FACTORY: '{HERE}:seven_method_factory' returned a OsbpCore, not a "
        "PlatformAdapter (it needs organization_id, resolve_booking and place_booking; docs/adapter.md)"
    )
