"""Fixtures for the conformance battery's tests: the toy server command and its scenario endpoint."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from osbp.conformance import Fixtures, load_fixtures, reference_fixtures_path
from tests.conformance.arming import ScenarioEndpoint, scenario_endpoint


@pytest.fixture(scope="session")
def fixtures() -> Fixtures:
    return load_fixtures(reference_fixtures_path())


@pytest.fixture
def scenario(tmp_path: Path) -> Iterator[ScenarioEndpoint]:
    with scenario_endpoint(tmp_path / "armed") as endpoint:
        yield endpoint
