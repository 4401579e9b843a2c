"""Shared fixtures for the MCP server tests: an in-memory adapter, a temporary audit log, a client."""

from __future__ import annotations

import itertools
import os
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx2
import pytest
from mcp import Client

from osbp.backend.serving import PlatformServer
from osbp.backend.settings import BackendSettings
from osbp.protocol.clock import FixedClock
from osbp.protocol.core import OsbpCore
from osbp.server.app import create_server
from osbp.server.audit import AuditLog
from tests.support.mcp import NOW
from tests.support.memory_adapter import MemoryAdapter
from tests.support.reference import NOW as REFERENCE_NOW


@pytest.fixture
def no_osbp_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No OSBP_* variable from the developer's shell leaks into a settings or CLI test."""
    for key in list(os.environ):
        if key.startswith("OSBP_"):
            monkeypatch.delenv(key)


@pytest.fixture
def clock() -> FixedClock:
    """A frozen clock at 2026-05-01T16:00Z (09:00 in the merchant's Los Angeles)."""
    return FixedClock(NOW)


@pytest.fixture
def adapter(clock: FixedClock) -> MemoryAdapter:
    """The in-memory platform adapter (tests read its counters)."""
    return MemoryAdapter(clock=clock)


@pytest.fixture
def core(adapter: MemoryAdapter, tmp_path: Path, clock: FixedClock) -> OsbpCore:
    """The in-memory adapter inside the protocol core, its state file in a temporary directory."""
    return OsbpCore(adapter, state=tmp_path / "state" / "osbp.sqlite3", clock=clock)


@pytest.fixture
def audit_path(tmp_path: Path) -> Path:
    """Where the audit log of this test goes."""
    return tmp_path / "audit" / "events.jsonl"


@pytest.fixture
def audit(audit_path: Path) -> Iterator[AuditLog]:
    """The test's audit log."""
    log = AuditLog(audit_path)
    yield log
    log.close()


@pytest.fixture
async def client(core: OsbpCore, audit: AuditLog, clock: FixedClock) -> AsyncIterator[Client]:
    """An in-memory MCP client connected to a server over the in-memory adapter."""
    counter = itertools.count(1)
    server = create_server(core, audit, clock=clock, new_event_id=lambda: f"aud_test_{next(counter):04d}")
    async with Client(server) as connected:
        yield connected


@pytest.fixture(scope="module")
def platform() -> Iterator[PlatformServer]:
    """The real platform on loopback, frozen at the reference instant, with its test surface."""
    with PlatformServer(
        BackendSettings(db=":memory:", port=0, now=REFERENCE_NOW, enable_testing=True)
    ) as server:
        yield server


@pytest.fixture
def testing(platform: PlatformServer) -> Iterator[httpx2.Client]:
    """The platform's test-only control surface, reset to the seeds."""
    with httpx2.Client(base_url=platform.base_url, trust_env=False) as client:
        assert client.post("/_testing/reset").status_code == 200
        yield client
