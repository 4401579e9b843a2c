"""`PlatformProcess`: the platform as its own process, for benchmarks."""

from __future__ import annotations

import os
from datetime import UTC, datetime

import httpx2
import pytest

from osbp.backend.process import PlatformProcess

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
