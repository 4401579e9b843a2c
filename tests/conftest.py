"""Suite-wide test settings and the fixtures every package of tests shares.

Under CI (the `CI` environment variable) hypothesis runs derandomized, so a landing is judged on the same
examples every time; locally it keeps exploring new ones, which is where a rare counterexample shows up.
"""

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from osbp.protocol.state import StateBackend, open_state_store
from tests.support.postgres import PostgresServer, database, start_server, unavailable_reason

#: The longest modules, started first: under `-n 2 --dist loadfile` one worker runs each while the other
#: works through the rest, instead of one of them running alone at the end.
LONGEST_FIRST = (
    "tests/conformance/mutants/test_kill_matrix.py",
    "tests/conformance/test_self_target.py",
)

settings.register_profile("ci", derandomize=True, deadline=None)
settings.register_profile("dev", deadline=None)
settings.load_profile("ci" if os.environ.get("CI") else "dev")


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio, the event loop the MCP SDK and the servers run on."""
    return "asyncio"


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One throwaway PostgreSQL cluster for the session, started on first use and stopped at the end.

    Where none can run, the tests that use it skip with one line, except under CI, where that fails
    the run: PostgreSQL must never silently stop being tested.
    """
    reason = unavailable_reason()
    if reason is not None:
        if os.environ.get("CI"):
            pytest.fail(f"CI requires PostgreSQL: {reason}", pytrace=False)
        pytest.skip(reason)
    with start_server() as server:
        yield server


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """The URL of a fresh, empty PostgreSQL database for one test, dropped afterwards."""
    with database(postgres_server) as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def state_location(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Where a test's OSBP state lives, once per engine: a fresh SQLite file, then a fresh PostgreSQL
    database (the same suite must hold on both; the PostgreSQL case skips or fails like postgres_url)."""
    if request.param == "sqlite":
        return str(tmp_path / "state" / "osbp.sqlite3")
    url: str = request.getfixturevalue("postgres_url")
    return url


@pytest.fixture
def state(state_location: str) -> Iterator[StateBackend]:
    """An OSBP state store at ``state_location`` (once per engine), closed after the test."""
    store = open_state_store(state_location)
    yield store
    store.close()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Run the modules of `LONGEST_FIRST` first, in that order; the rest keep their collection order."""

    def rank(item: pytest.Item) -> int:
        path = item.path.relative_to(Path(__file__).resolve().parents[1]).as_posix()
        return LONGEST_FIRST.index(path) if path in LONGEST_FIRST else len(LONGEST_FIRST)

    items.sort(key=rank)
