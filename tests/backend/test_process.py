"""`PlatformProcess`: the platform as its own process, for benchmarks."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from datetime import UTC, datetime

import httpx2
import pytest

from osbp.backend.process import PlatformProcess
from tests.support.processes import alive

NOW = datetime(2030, 5, 1, 12, tzinfo=UTC)


@pytest.mark.integration
def test_platform_process_serves_on_loopback_with_its_settings_and_is_reaped_on_exit():
    """Platform choice: benchmarks run the platform in its own interpreter, configured like `osbp backend`."""
    with PlatformProcess(db=":memory:", now=NOW, enable_testing=True) as platform:
        assert platform.base_url.startswith("http://127.0.0.1:")
        pid = platform.pid
        assert pid != os.getpid()
        with httpx2.Client(base_url=platform.base_url) as client:
            assert client.get("/health").json() == {"status": "ok"}
            assert client.get("/_testing/clock").json() == {"now": "2030-05-01T12:00:00Z"}
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


@pytest.mark.integration
def test_platform_process_runs_with_exactly_the_given_settings(monkeypatch):
    """Platform choice: a list setting crosses as a comma list; the caller's OSBP_BACKEND_* do not leak in."""
    monkeypatch.setenv("OSBP_BACKEND_ENABLE_TESTING", "1")
    with (
        PlatformProcess(db=":memory:", rate_limit_quota=1, trusted_proxies=("127.0.0.1", "::1")) as platform,
        httpx2.Client(base_url=platform.base_url) as client,
    ):
        first = client.get("/health", headers={"X-Forwarded-For": "203.0.113.7"})
        second = client.get("/health", headers={"X-Forwarded-For": "198.51.100.9"})
        testing = client.get("/_testing/clock", headers={"X-Forwarded-For": "192.0.2.1"})
    assert (first.status_code, second.status_code) == (200, 200)
    assert testing.status_code == 404


_PARENT = """
import sys, time
from datetime import UTC, datetime
from osbp.backend.process import PlatformProcess
from tests.support.processes import alive
platform = PlatformProcess(db=":memory:", now=datetime(2030, 5, 1, 12, tzinfo=UTC)).start()
print(platform.pid, flush=True)
time.sleep(600)
"""


@pytest.mark.integration
def test_the_platform_process_stops_when_its_parent_is_killed_outright():
    """Platform choice: a benchmark killed with SIGKILL leaves no platform behind holding its port."""
    parent = subprocess.Popen([sys.executable, "-c", _PARENT], stdout=subprocess.PIPE, text=True)
    try:
        assert parent.stdout is not None
        platform_pid = int(parent.stdout.readline())
        os.kill(platform_pid, 0)  # running
    finally:
        parent.kill()
        parent.wait(timeout=30)
        if parent.stdout is not None:
            parent.stdout.close()
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        if not alive(platform_pid):
            break
        time.sleep(0.05)
    assert not alive(platform_pid)
