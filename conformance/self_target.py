"""`osbp conformance --self`: grade this project's own MCP server against this project's platform.

`self_target()` starts the platform on a loopback port with its test-only surface (through
`osbp.backend.serving.PlatformServer`, a context manager with `.base_url`) and yields how to start this
project's MCP server against it, the shipped fixture file, and the platform's hooks: the arm endpoint as the
scenario URL, the organization's stats as the stats URL, the native-status endpoint as the status URL, and
the service-change endpoint as the catalog URL.

The server runs with a short approval-token lifetime (:data:`SELF_APPROVAL_TTL_SECONDS`), and the fixture
file handed to the battery is the shipped one plus that `approval_ttl_seconds`, so the expiry check runs
without the battery waiting out the reference ten minutes.

The conformance battery never imports the server: it launches it as a subprocess like any other.
"""

from __future__ import annotations

import sys
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
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
#: The approval-token lifetime of the graded server: longer than any other check's challenge-to-retry
#: (a few calls, some of which may wait on the platform), shorter than what the battery waits (~a run).
SELF_APPROVAL_TTL_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class SelfTarget:
    """Everything `run_battery` needs to grade this project's server."""

    target: ServerTarget
    fixtures_path: Path
    scenario_url: str
    stats_url: str
    status_url: str
    catalog_url: str


@contextmanager
def self_target(settings: BackendSettings | None = None) -> Iterator[SelfTarget]:
    """Run this project's platform for the duration and describe this project's server against it.

    `settings` overrides the platform's (default: an in-memory database on an ephemeral port); the testing
    surface is always on, for the hooks.
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
        # The server reads `OSBP_*` variables (platform base URL, organization, state file, audit log);
        # the state lives in a throwaway directory so a battery run never touches the developer's `.osbp/`.
        env = server_env(
            {
                "OSBP_PLATFORM_BASE_URL": base_url,
                "OSBP_ORGANIZATION_ID": organization_id,
                "OSBP_STATE_PATH": str(Path(state) / "state.db"),
                "OSBP_AUDIT_LOG_PATH": str(Path(state) / "audit" / "events.jsonl"),
                "OSBP_APPROVAL_TTL_SECONDS": str(SELF_APPROVAL_TTL_SECONDS),
            }
        )
        yield SelfTarget(
            target=ServerTarget(command=(sys.executable, "-m", "osbp", "mcp"), env=env),
            fixtures_path=fixtures_path,
            scenario_url=base_url + ARM_PATH,
            stats_url=f"{base_url}{STATS_PATH}?organization_id={organization_id}",
            status_url=base_url + STATUS_PATH,
            catalog_url=base_url + CATALOG_PATH,
        )
