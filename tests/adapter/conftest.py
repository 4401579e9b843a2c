"""Fixtures for the adapter tests: the real platform on loopback and adapters wired to it.

One platform server runs per test session (uvicorn on an ephemeral 127.0.0.1 port, in-memory database,
frozen clock, test surface on) and is reset to its seeds before every test that uses it, so tests see
fresh data, empty counters and a full rate-limit quota. The adapter reaches it only over HTTP.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import httpx2
import pytest

from osbp.backend.serving import PlatformServer
from osbp.backend.settings import BackendSettings
from osbp.protocol.clock import FixedClock
from osbp.protocol.core import OsbpCore
from tests.support.reference import (
    NOW,
    Platform,
    make_adapter,
)


@pytest.fixture(scope="session")
def platform_server() -> Iterator[PlatformServer]:
    """The real platform under uvicorn on 127.0.0.1, shared by the session (reset per test)."""
    settings = BackendSettings(db=":memory:", port=0, now=NOW, enable_testing=True)
    with PlatformServer(settings) as server:
        yield server


@pytest.fixture
def platform(platform_server: PlatformServer) -> Iterator[Platform]:
    """The shared platform, reset to its seeds (data, outbox, arms, stats, rate limits, clock)."""
    with httpx2.Client(base_url=platform_server.base_url, trust_env=False) as client:
        assert client.post("/_testing/reset").status_code == 200
        yield Platform(platform_server.base_url, platform_server, client)


@pytest.fixture
def clock() -> FixedClock:
    """The adapter's frozen clock (the same instant as the platform's)."""
    return FixedClock(NOW)


@pytest.fixture
def state_path(tmp_path: Path) -> Path:
    """A fresh OSBP state file per test."""
    return tmp_path / "state" / "osbp.sqlite3"


@pytest.fixture
async def adapter(platform: Platform, state_path: Path, clock: FixedClock) -> AsyncIterator[OsbpCore]:
    """The reference adapter for Carolyn's Dental on the real platform."""
    built = make_adapter(platform.base_url, state_path, clock)
    yield built
    await built.aclose()
