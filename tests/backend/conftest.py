"""Fixtures for the platform's tests: the app in process, and a real uvicorn server on loopback."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from osbp.backend.app import create_app
from osbp.backend.runtime import Runtime
from osbp.backend.serving import PlatformServer
from osbp.backend.settings import BackendSettings
from tests.support.bookwell import make_settings


@pytest.fixture
def settings() -> BackendSettings:
    """The default test settings."""
    return make_settings()


@pytest.fixture
def client(settings: BackendSettings) -> Iterator[TestClient]:
    """The platform app in process."""
    app = create_app(settings)
    with TestClient(app) as test_client:
        yield test_client
    app.state.runtime.db.dispose()


@pytest.fixture
def runtime(client: TestClient) -> Runtime:
    """The in-process platform's runtime (database, clock, counters)."""
    found: Runtime = client.app.state.runtime  # type: ignore[attr-defined]
    return found


@pytest.fixture
def platform_server() -> Iterator[PlatformServer]:
    """The real platform under uvicorn on an ephemeral 127.0.0.1 port, in memory, test surface on."""
    with PlatformServer(make_settings()) as server:
        yield server
