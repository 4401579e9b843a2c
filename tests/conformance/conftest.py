"""Fixtures for the conformance battery's tests: the toy server command and its scenario endpoint."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from osbp.conformance import Fixtures, ServerTarget, load_fixtures, reference_fixtures_path, server_env
from tests.conformance.arming import ScenarioEndpoint, scenario_endpoint

TOY_SERVER = Path(__file__).with_name("toy_server.py")


@pytest.fixture(scope="session")
def fixtures() -> Fixtures:
    return load_fixtures(reference_fixtures_path())


@pytest.fixture
def scenario(tmp_path: Path) -> Iterator[ScenarioEndpoint]:
    with scenario_endpoint(tmp_path / "armed") as endpoint:
        yield endpoint


def toy_target(arm_file: Path | None = None, *breaks: str) -> ServerTarget:
    """How to start the toy server, optionally broken."""
    command = [sys.executable, str(TOY_SERVER)]
    for name in breaks:
        command += ["--break", name]
    if arm_file is not None:
        command += ["--arm-file", str(arm_file)]
    return ServerTarget(command=command, env=server_env())
