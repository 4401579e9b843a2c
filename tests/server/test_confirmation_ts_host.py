"""Final confirmation through a host built on the TypeScript SDK, against `osbp mcp` and the real platform.

tests/host/ts/host.mjs is a small MCP host on the TypeScript SDK: it starts `python -m osbp mcp` over
stdio, declares form elicitation (or not), plays the user who answers the form, describes the service,
finds the day's slots and books the first one, then prints one JSON line. Two SDK lines, pinned in its
package-lock.json: ``v1`` (@modelcontextprotocol/sdk, newest revision 2025-11-25: the server asks with an
in-request ``elicitation/create``) and ``v2`` (@modelcontextprotocol/client pinned to 2026-07-28: the server
answers ``input_required`` and the SDK's driver retries with the user's answer). The platform runs on
loopback, frozen at the reference instant.

Without Node.js 20+ or the host's packages (``make install`` runs ``npm ci`` where npm exists) these tests
skip with one line; under CI (the ``CI`` environment variable) that fails the run instead.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx2
import pytest

from osbp.backend.serving import PlatformServer
from osbp.protocol.timeutil import format_instant
from osbp.server.confirmation import confirmation_message
from tests.support.mcp import read_events
from tests.support.paths import REPO
from tests.support.reference import CLEANING, DAY, JANE, MIDTOWN, NOW, ORG, mandate

pytestmark = pytest.mark.integration

HOST = REPO / "tests" / "host" / "ts"
#: Each SDK line: its package, and the revision it must have negotiated with our server.
SDKS = {
    "v1": ("@modelcontextprotocol/sdk", "2025-11-25"),
    "v2": ("@modelcontextprotocol/client", "2026-07-28"),
}
#: What the audit records of booking.create's confirmation, per revision: the classic request asks and
#: gets the answer inside one call; the 2026-07-28 round trip is two calls (asked, then the answer).
ROUNDS = {"v1": ["accept"], "v2": ["asked", "accept"]}


def _unavailable(node: str | None) -> str | None:
    """Why the host cannot run here, or ``None``."""
    if node is None:
        return "node is not on PATH: the TypeScript SDK host tests need Node.js 20+"
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    if int(version.lstrip("v").split(".")[0] or 0) < 20:
        return f"node {version} is too old: the TypeScript SDK host tests need Node.js 20+"
    installed = HOST / "node_modules"
    missing = [name for name, _ in SDKS.values() if not (installed / name / "package.json").exists()]
    if missing:
        return f"{', '.join(missing)} not installed in tests/host/ts: run `make install` with npm on PATH"
    return None


NODE = shutil.which("node")
UNAVAILABLE = _unavailable(NODE)
if UNAVAILABLE is not None and not os.environ.get("CI"):
    pytest.skip(UNAVAILABLE, allow_module_level=True)


@pytest.fixture(scope="module")
def node() -> str:
    """The Node.js that runs the host (under CI, a missing one or missing packages fail every test here)."""
    if UNAVAILABLE is not None:
        pytest.fail(f"CI requires the TypeScript SDK host: {UNAVAILABLE}", pytrace=False)
    assert NODE is not None
    return NODE


def pinned(name: str) -> str:
    """The exact version of ``name`` the host's package.json pins."""
    version: str = json.loads((HOST / "package.json").read_text(encoding="utf-8"))["dependencies"][name]
    return version


def run_host(node: str, platform: PlatformServer, workdir: Path, sdk: str, answer: str, key: str) -> Any:
    """One run of the host: its JSON line (the test fails with the host's stderr if it has none)."""
    workdir.mkdir()
    plan = {
        "mandate": mandate().model_dump(mode="json", exclude_none=True),
        "service_id": CLEANING,
        "schedule_id": MIDTOWN,
        "date": DAY,
        "customer": JANE.model_dump(mode="json", exclude_none=True),
        "idempotency_key": key,
    }
    (workdir / "plan.json").write_text(json.dumps(plan), encoding="utf-8")
    base = {name: os.environ[name] for name in ("PATH", "HOME", "LANG") if name in os.environ}
    env = base | {
        "OSBP_ORGANIZATION_ID": ORG,
        "OSBP_STATE_PATH": str(workdir / "state.sqlite3"),
        "OSBP_AUDIT_LOG_PATH": str(workdir / "audit.jsonl"),
        "OSBP_NOW": format_instant(NOW),
    }
    command = [node, str(HOST / "host.mjs"), "--sdk", sdk, "--answer", answer]
    command += ["--platform-url", platform.base_url, "--plan", str(workdir / "plan.json")]
    command += ["--", sys.executable, "-m", "osbp", "mcp"]
    done = subprocess.run(command, env=env, cwd=workdir, capture_output=True, text=True, timeout=180)
    assert done.returncode == 0, done.stderr
    [line] = done.stdout.splitlines()
    output = json.loads(line)
    name, revision = SDKS[sdk]
    assert (output["sdk"], output["sdk_version"]) == (name, pinned(name))
    assert output["protocol_version"] == revision
    return output


def confirmations(workdir: Path) -> list[str]:
    """The confirmation answers booking.create's call records hold, in order (not their intents')."""
    events = read_events(workdir / "audit.jsonl")
    calls = [e for e in events if e["tool_name"] == "booking.create" and e.get("phase") != "intent"]
    return [e["confirmation"]["answer"] for e in calls]


def stats(testing: httpx2.Client) -> dict[str, int]:
    """The platform's counters for the organization."""
    body: dict[str, int] = testing.get("/_testing/stats", params={"organization_id": ORG}).json()
    return body


@pytest.mark.parametrize("sdk", list(SDKS))
def test_a_typescript_sdk_host_shows_the_token_paths_summary_and_an_accept_books_once(
    node: str, platform: PlatformServer, testing: httpx2.Client, tmp_path: Path, sdk: str
) -> None:
    """Platform choice (host-enforced final confirmation): a TypeScript SDK host shows the user the same
    approval summary the token path returns, and its accept books exactly one appointment."""
    token = run_host(node, platform, tmp_path / "token", sdk, "none", "idem-ts-token")
    message = token["envelope"]["problem"]["message"]
    assert token["envelope"]["problem"]["code"] == "requires_user_confirmation"
    assert token["shown"] == []
    summary = message.split("\n\nAgent instruction")[0].split("\n\n", 1)[1]

    booked = run_host(node, platform, tmp_path / "accept", sdk, "accept", "idem-ts-accept")

    assert booked["slot"] == token["slot"]
    assert booked["shown"] == [confirmation_message(summary)]
    assert booked["envelope"]["ok"] is True, booked["envelope"]
    assert booked["envelope"]["value"]["booking_id"].startswith("apt_")
    assert confirmations(tmp_path / "accept") == ROUNDS[sdk]
    counts = stats(testing)
    assert (counts["appointments"], counts["create_requests"]) == (1, 1)


@pytest.mark.parametrize("sdk", list(SDKS))
def test_a_decline_in_a_typescript_sdk_host_books_nothing(
    node: str, platform: PlatformServer, testing: httpx2.Client, tmp_path: Path, sdk: str
) -> None:
    """OSBP spec, requires_user_confirmation (terminal form): the user's no in a TypeScript SDK host books
    nothing, and the agent gets a non-retryable Problem."""
    declined = run_host(node, platform, tmp_path / "decline", sdk, "decline", "idem-ts-decline")

    [shown] = declined["shown"]
    assert shown.startswith(confirmation_message(""))
    problem = declined["envelope"]["problem"]
    assert (problem["code"], problem["retryable"]) == ("requires_user_confirmation", False)
    assert "declined" in problem["message"]
    assert confirmations(tmp_path / "decline")[-1] == "decline"
    counts = stats(testing)
    assert (counts["appointments"], counts["create_requests"]) == (0, 0)
