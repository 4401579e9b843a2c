"""docker-compose.yml and Dockerfile: the platform as a container, checked structurally.

No Docker engine runs here, so the file is parsed (PyYAML, already installed as a schemathesis
dependency, so no dependency is added just for this) and, where the compose tool exists,
`docker compose config -q` validates it too.
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

yaml = pytest.importorskip("yaml")

ROOT = Path(__file__).resolve().parent.parent


def _compose() -> dict[str, Any]:
    loaded: dict[str, Any] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


def test_platform_service_publishes_8400_on_loopback_only():
    """Issue 2, foundation: the platform's port is bound to 127.0.0.1 on the host."""
    platform = _compose()["services"]["platform"]
    assert platform["ports"] == ["127.0.0.1:8400:8400"]
    assert platform["environment"]["OSBP_BACKEND_PORT"] == "8400"


def test_platform_service_keeps_its_sqlite_file_in_a_named_volume():
    """Issue 2, foundation: a named volume holds the SQLite file."""
    compose = _compose()
    platform = compose["services"]["platform"]
    volume, _, mount = platform["volumes"][0].partition(":")
    assert volume in compose["volumes"]
    assert platform["environment"]["OSBP_BACKEND_DB"].startswith(mount + "/")


def test_platform_service_has_a_healthcheck_on_the_health_endpoint():
    """Issue 2, foundation: a healthcheck."""
    health = _compose()["services"]["platform"]["healthcheck"]
    assert health["test"][0] == "CMD"
    assert "http://127.0.0.1:8400/health" in " ".join(health["test"])
    assert health["retries"] >= 1


def test_dockerfile_builds_the_platform_command_it_runs():
    """Issue 2, foundation: the Dockerfile beside the compose file runs `osbp backend` on 8400."""
    build = _compose()["services"]["platform"]["build"]
    dockerfile = (ROOT / build["context"] / build["dockerfile"]).read_text()
    assert "\nFROM python:3.11" in dockerfile
    assert "EXPOSE 8400" in dockerfile
    assert 'CMD ["osbp", "backend"' in dockerfile
    for folder in ("osbp", "protocol", "backend", "adapter", "server", "demo", "conformance"):
        assert f"COPY {folder} ./{folder}" in dockerfile


def _compose_tool() -> list[str] | None:
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        return [docker, "compose"]
    legacy = shutil.which("docker-compose")
    return [legacy] if legacy else None


def test_compose_tool_accepts_the_file():
    """Issue 2, foundation: `docker compose config -q` passes where the tool is installed."""
    tool = _compose_tool()
    if tool is None:
        pytest.skip("no docker compose tool on this machine")
    command = [*tool, "-f", str(ROOT / "docker-compose.yml"), "config", "-q"]
    result = subprocess.run(command, capture_output=True)
    assert result.returncode == 0, result.stderr
