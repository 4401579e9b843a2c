"""Run the real platform as its own process: `PlatformProcess` for benchmarks.

`PlatformServer` runs uvicorn in a thread of the calling interpreter, which is what tests want. A
benchmark wants the opposite: a platform sharing the measuring process's interpreter also shares its GIL,
so the client's own work and the platform's queue behind each other and both look slower than they are.
`PlatformProcess` starts `python -m osbp backend` with the given settings (passed as `OSBP_BACKEND_*`
environment variables, always on an ephemeral loopback port), reads its one `ready` line for the base
URL, and terminates it on exit. Inherited `OSBP_BACKEND_*` variables are dropped: the process runs with
exactly the settings given. The platform's standard input is a pipe from this process and it runs with
`exit_with_stdin`, so it never outlives its parent: a benchmark killed outright (SIGKILL, or a SIGTERM
that skips the `with` block's exit) closes the pipe, and the platform stops by itself instead of holding
its port and memory. Nothing here imports the platform itself.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from datetime import datetime
from types import TracebackType
from typing import Any

__all__ = ["PlatformProcess"]


def _env_value(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in value)  # trusted_proxies: comma-separated, as on the CLI
    return str(value)


class PlatformProcess:
    """``with PlatformProcess(db=":memory:", now=...) as platform: platform.base_url``."""

    def __init__(self, **settings: Any) -> None:
        # Field names of BackendSettings; the port is always ephemeral, the log quiet unless asked.
        self.settings = {"log_level": "WARNING", "exit_with_stdin": True} | settings | {"port": 0}
        self._process: subprocess.Popen[str] | None = None
        self.base_url = ""

    @property
    def pid(self) -> int:
        """The platform's process id (for CPU accounting)."""
        if self._process is None:
            raise RuntimeError("PlatformProcess is not running")
        return self._process.pid

    def start(self) -> PlatformProcess:
        """Spawn the platform and wait for its ready line."""
        # Exactly the given settings: an OSBP_BACKEND_* variable of the calling shell (a trusted proxy, a
        # quota) must not leak into the measured platform unseen.
        env = {name: value for name, value in os.environ.items() if not name.startswith("OSBP_BACKEND_")}
        for name, value in self.settings.items():
            if value is not None:
                env[f"OSBP_BACKEND_{name.upper()}"] = _env_value(value)
        command = [sys.executable, "-m", "osbp", "backend"]
        self._process = subprocess.Popen(  # noqa: S603  our own interpreter running our own `osbp backend`
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
            env=env,
        )
        assert self._process.stdout is not None
        try:
            ready = json.loads(self._process.stdout.readline() or "{}")  # the one "ready" line
        except ValueError:
            ready = {}
        if ready.get("event") != "ready":
            self.stop()
            raise RuntimeError("the platform process did not start")
        self.base_url = str(ready["base_url"])
        return self

    def stop(self) -> None:
        """Terminate the platform (SIGTERM, then SIGKILL after 30 s) and reap it."""
        process, self._process = self._process, None
        if process is None:
            return
        if process.stdin is not None:
            process.stdin.close()
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        if process.stdout is not None:
            process.stdout.close()

    def __enter__(self) -> PlatformProcess:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
