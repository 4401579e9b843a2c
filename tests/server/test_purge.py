"""The serving processes purge expired per-attempt state in the background: stdio and Streamable HTTP.

Each test leaves an expired confirmation page (with a customer's name in its summary) in a state file,
starts the real server on it with its clock frozen a day later, and waits (with a deadline, polling the
file) until the page is gone, while the server still serves.
"""

from __future__ import annotations

import sqlite3
import time
from datetime import timedelta
from pathlib import Path

import anyio
import pytest

from osbp.protocol.clock import FixedClock
from osbp.protocol.confirmation_pages import ConfirmationPages
from osbp.protocol.state import open_state_store
from osbp.protocol.timeutil import format_instant
from tests.support.mcp import NOW
from tests.support.memory_adapter import SERVICE
from tests.support.remote import RemoteServer
from tests.support.state import stored_text
from tests.support.stdio import StdioServer

pytestmark = pytest.mark.integration

PLUGIN = "tests.support.memory_adapter:build_memory_adapter"
NAME = "Expired Person"


def expired_page(location: Path) -> None:
    """A page issued two days before NOW and never answered."""
    store = open_state_store(location)
    pages = ConfirmationPages(store, FixedClock(NOW - timedelta(days=2)), timedelta(minutes=10))
    anyio.run(pages.issue, "subj" * 16, "payl" * 16, "summ" * 16, f"Book a haircut for {NAME}.")
    store.close()


def pages_left(location: Path) -> int:
    """Confirmation pages in the state file (read by a connection of the test's own)."""
    with sqlite3.connect(location) as db:
        left: int = db.execute("SELECT count(*) FROM confirmation_pages").fetchone()[0]
    return left


def wait_until_purged(location: Path, timeout_s: float = 20.0) -> None:
    """Poll the state file until no page is left (a deadline, no fixed wait)."""
    deadline = time.monotonic() + timeout_s
    while pages_left(location) and time.monotonic() < deadline:
        time.sleep(0.05)


def server_env(tmp_path: Path) -> dict[str, str]:
    """The memory merchant on the test's state file, the clock frozen at NOW, INFO logs."""
    return {
        "OSBP_ADAPTER_FACTORY": PLUGIN,
        "OSBP_PLATFORM_BASE_URL": "http://127.0.0.1:9",
        "OSBP_ORGANIZATION_ID": "org_test",
        "OSBP_STATE_PATH": str(tmp_path / "state.sqlite3"),
        "OSBP_AUDIT_LOG_PATH": str(tmp_path / "audit.jsonl"),
        "OSBP_NOW": format_instant(NOW),
        "OSBP_LOG_LEVEL": "INFO",
    }


def test_a_stdio_server_purges_an_expired_page_while_it_serves(tmp_path: Path) -> None:
    """Platform choice (docs/server.md, what the state keeps): a page outlives its expiry by the retention."""
    location = tmp_path / "state.sqlite3"
    expired_page(location)
    assert NAME in stored_text(str(location))
    with (
        (tmp_path / "server.stderr").open("w", encoding="utf-8") as errlog,
        StdioServer(server_env(tmp_path), stderr=errlog) as server,
    ):
        wait_until_purged(location)
        listed = server.call("osbp_service_describe", {"service_id": SERVICE})
    assert pages_left(location) == 0
    assert NAME not in stored_text(str(location))
    assert listed is not None
    assert listed["ok"] is True  # still serving
    assert '"state_purged"' in (tmp_path / "server.stderr").read_text(encoding="utf-8")


def test_a_streamable_http_server_purges_an_expired_page_while_it_serves(tmp_path: Path) -> None:
    """Platform choice (docs/server.md, what the state keeps): every replica purges in its lifespan."""
    location = tmp_path / "state.sqlite3"
    expired_page(location)
    with RemoteServer(server_env(tmp_path), tmp_path):
        wait_until_purged(location)
        assert pages_left(location) == 0
    assert NAME not in stored_text(str(location))
