"""`osbp conformance --self`: grade this project's own MCP server against this project's platform.

`self_target()` starts the platform on a loopback port with its test-only surface (through
`osbp.backend.serving.PlatformServer`, a context manager with `.base_url`) and yields how to start this
project's MCP server against it, the shipped fixture file, and the platform's hooks: the arm endpoint as the
scenario URL, the organization's stats as the stats URL, the native-status endpoint as the status URL, and
the service-change endpoint as the catalog URL, the provider- and location-rename endpoints as the
provider and location URLs, and the audit log the server writes.

The server runs with a short approval-token lifetime (:data:`SELF_APPROVAL_TTL_SECONDS`), and the fixture
file handed to the battery is the shipped one plus that `approval_ttl_seconds`, so the expiry check runs
without the battery waiting out the reference ten minutes.

The conformance battery never imports the server: it launches it as a subprocess like any other.
"""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from osbp.backend.serving import PlatformServer
from osbp.backend.settings import BackendSettings
from osbp.conformance.fixtures import load_fixtures, reference_fixtures_path
from osbp.conformance.wire import ServerTarget, server_env

__all__ = ["SelfTarget", "self_target"]

#: The platform's test-only hooks, relative to its base URL (docs/backend-api.md).
ARM_PATH = "/_testing/arm"
STATS_PATH = "/_testing/stats"
STATUS_PATH = "/_testing/appointment-status"
CATALOG_PATH = "/_testing/service"
PROVIDER_PATH = "/_testing/provider"
LOCATION_PATH = "/_testing/location"
#: The approval-token lifetime of the graded server: longer than any other check's challenge-to-retry
#: (a few calls, some of which may wait on the platform), shorter than what the battery waits (~a run).
SELF_APPROVAL_TTL_SECONDS = 5.0
#: How long the Streamable HTTP server may take to listen.
START_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class SelfTarget:
    """Everything `run_battery` needs to grade this project's server."""

    target: ServerTarget
    fixtures_path: Path
    scenario_url: str
    stats_url: str
    status_url: str
    catalog_url: str
    provider_url: str
    location_url: str
    #: The audit log the server writes (`OSBP_AUDIT_LOG_PATH`), for the battery to read after the run.
    audit_log: Path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _osbp(*args: str, env: dict[str, str], cwd: str) -> str:
    """Run `python -m osbp ...` to completion; its stdout."""
    done = subprocess.run(  # noqa: S603 - this interpreter running this project's own command
        [sys.executable, "-m", "osbp", *args], capture_output=True, text=True, env=env, cwd=cwd, check=True
    )
    return done.stdout.strip()


@contextmanager
def _http_server(env: dict[str, str], state: str, organization_id: str) -> Iterator[ServerTarget]:
    """This project's server over Streamable HTTP with the development issuer's tokens (subprocesses)."""
    port = _free_port()
    url = f"http://127.0.0.1:{port}/mcp"
    issuer = "http://127.0.0.1:8600"
    jwks = Path(state) / "jwks.json"
    jwks.write_text(_osbp("auth", "--state-dir", state, "jwks", env=env, cwd=state), encoding="utf-8")
    scopes = "osbp:read osbp:verify osbp:book"
    token = _osbp(
        "auth", "--state-dir", state, "token", "--scope", scopes, "--org", organization_id, "--audience", url,
        env=env, cwd=state,
    )  # fmt: skip
    http_env = env | {
        "OSBP_TRANSPORT": "streamable-http",
        "OSBP_HTTP_PORT": str(port),
        "OSBP_AUTH_ISSUER": issuer,
        "OSBP_AUTH_JWKS": str(jwks),
    }
    with open(Path(state) / "server.stderr", "wb") as errlog:
        process = subprocess.Popen(
            [sys.executable, "-m", "osbp", "mcp"], env=http_env, cwd=state, stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL, stderr=errlog,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:  # poll the port until the deadline
            if process.poll() is not None or time.monotonic() > deadline:
                log = (Path(state) / "server.stderr").read_text(encoding="utf-8", errors="replace")
                raise RuntimeError(f"the Streamable HTTP server did not start: {log[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                    break
            except OSError:
                time.sleep(0.02)
        yield ServerTarget(command=(), url=url, token=token)
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


@contextmanager
def self_target(settings: BackendSettings | None = None, *, transport: str = "stdio") -> Iterator[SelfTarget]:
    """Run this project's platform for the duration and describe this project's server against it.

    `settings` overrides the platform's (default: an in-memory database on an ephemeral port); the testing
    surface is always on, for the hooks. With ``transport="streamable-http"`` the server runs as a
    Streamable HTTP subprocess with authorization (the development issuer, ``osbp auth``) for the run.
    """
    base = settings or BackendSettings(db=":memory:", port=0)
    platform = PlatformServer(base.model_copy(update={"enable_testing": True}))
    fixtures = load_fixtures(reference_fixtures_path()).model_copy(
        update={"approval_ttl_seconds": SELF_APPROVAL_TTL_SECONDS}
    )
    organization_id = fixtures.organization_id
    with tempfile.TemporaryDirectory(prefix="osbp-conformance-") as state, platform:
        fixtures_path = Path(state) / "fixtures.json"
        fixtures_path.write_text(fixtures.model_dump_json(indent=2), encoding="utf-8")
        base_url = str(platform.base_url).rstrip("/")
        audit_log = Path(state) / "audit" / "events.jsonl"
        # The server reads `OSBP_*` variables (platform base URL, organization, state file, audit log);
        # the state lives in a throwaway directory so a battery run never touches the developer's `.osbp/`.
        env = server_env(
            {
                "OSBP_PLATFORM_BASE_URL": base_url,
                "OSBP_ORGANIZATION_ID": organization_id,
                "OSBP_STATE_PATH": str(Path(state) / "state.db"),
                "OSBP_AUDIT_LOG_PATH": str(audit_log),
                "OSBP_APPROVAL_TTL_SECONDS": str(SELF_APPROVAL_TTL_SECONDS),
            }
        )
        with ExitStack() as stack:
            target = ServerTarget(command=(sys.executable, "-m", "osbp", "mcp"), env=env)
            if transport == "streamable-http":
                target = stack.enter_context(_http_server(env, state, organization_id))
            yield SelfTarget(
                target=target,
                fixtures_path=fixtures_path,
                scenario_url=base_url + ARM_PATH,
                stats_url=f"{base_url}{STATS_PATH}?organization_id={organization_id}",
                status_url=base_url + STATUS_PATH,
                catalog_url=base_url + CATALOG_PATH,
                provider_url=base_url + PROVIDER_PATH,
                location_url=base_url + LOCATION_PATH,
                audit_log=audit_log,
            )
