"""Fixtures for the platform's tests: the app in process, and a real uvicorn server on loopback.

The in-process app runs on SQLite in memory; a module marked ``both_engines`` runs every test that builds
the app twice, on SQLite and on a fresh PostgreSQL database (the session's throwaway cluster).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from osbp.backend.app import create_app
from osbp.backend.runtime import Runtime
from osbp.backend.serving import PlatformServer
from osbp.backend.settings import BackendSettings
from tests.support.bookwell import make_settings

ENGINES = ("sqlite", "postgresql")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """A ``both_engines`` module's app-building tests run once per engine."""
    if metafunc.definition.get_closest_marker("both_engines") and "backend_engine" in metafunc.fixturenames:
        metafunc.parametrize("backend_engine", ENGINES, indirect=True)


@pytest.fixture
def backend_engine(request: pytest.FixtureRequest) -> str:
    """The database engine the app runs on: SQLite unless the module asks for both."""
    return str(getattr(request, "param", "sqlite"))


@pytest.fixture
def settings(backend_engine: str, request: pytest.FixtureRequest) -> BackendSettings:
    """The default test settings, on the engine under test (PostgreSQL: a fresh, migrated database)."""
    if backend_engine == "postgresql":
        return make_settings(db=request.getfixturevalue("postgres_url"), migrate=True)
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
