"""docker-compose.yml and Dockerfile: the platform as a container, checked structurally.

No Docker engine runs here, so the file is parsed (PyYAML, already installed as a schemathesis
dependency, so no dependency is added just for this) and every compose tool found on the machine
(`docker compose`, `docker-compose`) validates it with `config -q`, which needs no engine.
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
    """Platform choice (deployment): the platform's port is bound to 127.0.0.1 on the host."""
    platform = _compose()["services"]["platform"]
    assert platform["ports"] == ["127.0.0.1:8400:8400"]
    assert platform["environment"]["OSBP_BACKEND_PORT"] == "8400"


def test_platform_service_keeps_its_sqlite_file_in_a_named_volume():
    """Platform choice (deployment): a named volume holds the SQLite file."""
    compose = _compose()
    platform = compose["services"]["platform"]
    volume, _, mount = platform["volumes"][0].partition(":")
    assert volume in compose["volumes"]
    assert platform["environment"]["OSBP_BACKEND_DB"].startswith(mount + "/")


def test_platform_service_has_a_healthcheck_on_the_health_endpoint():
    """Platform choice (deployment): a healthcheck."""
    health = _compose()["services"]["platform"]["healthcheck"]
    assert health["test"][0] == "CMD"
    assert "http://127.0.0.1:8400/health" in " ".join(health["test"])
    assert health["retries"] >= 1


def test_dockerfile_builds_the_platform_command_it_runs():
    """Platform choice (deployment): the Dockerfile beside the compose file runs `osbp backend` on 8400."""
    build = _compose()["services"]["platform"]["build"]
    dockerfile = (ROOT / build["context"] / build["dockerfile"]).read_text()
    assert "\nFROM python:3.11" in dockerfile
    assert "EXPOSE 8400" in dockerfile
    assert 'CMD ["osbp", "backend"' in dockerfile
    for part in (
        "osbp",
        *(f"{c}/osbp" for c in ("protocol", "backend", "adapter", "server", "demo", "conformance")),
    ):
        assert f"COPY {part} ./{part}" in dockerfile


def test_the_file_keeps_to_keys_every_compose_tool_reads():
    """Platform choice: Debian's docker-compose (v1) rejects a top-level `name:`; v2 calls `version:`
    obsolete: neither is in the file, so both tools accept it."""
    assert set(_compose()) == {"services", "volumes"}


POSTGRES_REPLICAS = ("platform-pg-1", "platform-pg-2")


def test_the_postgres_profile_runs_postgresql_with_a_healthcheck_and_a_named_volume():
    """Platform choice (deployment): `--profile postgres` adds PostgreSQL, its data in a named volume."""
    compose = _compose()
    postgres = compose["services"]["postgres"]
    assert postgres["profiles"] == ["postgres", "remote"]
    assert postgres["image"].startswith("postgres:")
    assert postgres["healthcheck"]["test"][:2] == ["CMD", "pg_isready"]
    volume, _, mount = postgres["volumes"][0].partition(":")
    assert volume in compose["volumes"]
    assert mount == "/var/lib/postgresql/data"
    assert all(port.startswith("127.0.0.1:") for port in postgres["ports"])


def test_the_postgres_profile_serves_one_platform_from_two_replicas_on_loopback():
    """Platform choice (deployment): two platform replicas on the one PostgreSQL database, loopback only,
    started once it is healthy, migrating it on start."""
    services = _compose()["services"]
    published = set()
    for name in POSTGRES_REPLICAS:
        replica = services[name]
        assert replica["profiles"] == ["postgres"]
        assert replica["depends_on"] == {"postgres": {"condition": "service_healthy"}}
        environment = replica["environment"]
        assert environment["OSBP_BACKEND_DB"].startswith("postgresql://bookwell:")
        assert environment["OSBP_BACKEND_DB"].endswith("@postgres:5432/bookwell")
        assert environment["OSBP_BACKEND_MIGRATE"] == "true"
        assert replica["command"] == ["osbp", "backend"]  # not the image's SQLite default
        (port,) = replica["ports"]
        assert port.startswith("127.0.0.1:")
        published.add(port)
    assert published == {"127.0.0.1:8401:8400", "127.0.0.1:8402:8400"}
    assert "profiles" not in services["platform"]  # plain `up` still runs the SQLite platform alone


def test_the_image_carries_the_postgresql_driver():
    """Platform choice (deployment): the image installs the platform and the replicas' `postgres` extra."""
    assert "pip install --no-cache-dir '.[platform,postgres]'" in (ROOT / "Dockerfile").read_text()


def _compose_tools() -> list[list[str]]:
    tools = []
    docker = shutil.which("docker")
    if docker and subprocess.run([docker, "compose", "version"], capture_output=True).returncode == 0:
        tools.append([docker, "compose"])
    legacy = shutil.which("docker-compose")
    if legacy:
        tools.append([legacy])
    return tools


_NO_TOOL = pytest.param(None, marks=pytest.mark.skip(reason="no compose tool on this machine"), id="none")


@pytest.mark.parametrize(
    "tool",
    [pytest.param(tool, id=" ".join(Path(part).name for part in tool)) for tool in _compose_tools()]
    or [_NO_TOOL],
)
def test_every_installed_compose_tool_accepts_the_file(tool):
    """Platform choice: `config -q` passes with each compose tool installed (`docker compose` v2 and
    Debian's `docker-compose` v1), without an engine."""
    command = [*tool, "-f", str(ROOT / "docker-compose.yml"), "config", "-q"]
    result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stderr


def test_the_remote_profile_runs_two_authorized_replicas_on_one_state_store_behind_a_loopback_balancer():
    """Platform choice (deployment): replicas share the state store, keep their own audit logs, never serve
    beyond the balancer without authorization, and only the balancer is published, on 127.0.0.1."""
    services = _compose()["services"]
    remote = {name for name, service in services.items() if "remote" in service.get("profiles", [])}
    assert remote == {"postgres", "issuer", "mcp-a", "mcp-b", "balancer"}
    replicas = [services["mcp-a"], services["mcp-b"]]
    states = {replica["environment"]["OSBP_STATE_PATH"] for replica in replicas}
    assert len(states) == 1
    assert states.pop().startswith("postgresql://")
    assert len({replica["environment"]["OSBP_AUDIT_LOG_PATH"] for replica in replicas}) == 2
    for replica in replicas:
        assert "--allow-remote" in replica["command"]
        assert replica["environment"]["OSBP_AUTH_ISSUER"]
        assert "ports" not in replica
    published = [port for service in services.values() for port in service.get("ports", [])]
    assert all(port.startswith("127.0.0.1:") for port in published)
    assert services["balancer"]["ports"] == ["127.0.0.1:8500:8500"]
