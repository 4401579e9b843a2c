"""Run the real platform as its own process: `PlatformProcess`, for benchmarks, crash tests and the demo.

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
import selectors
import socket
import subprocess
import sys
from contextlib import ExitStack
from datetime import datetime
from pathlib import Path
from types import TracebackType
from typing import Any

from osbp.backend.listening import http_url

__all__ = ["START_TIMEOUT_S", "STOP_TIMEOUT_S", "PlatformProcess", "PlatformStartError"]

#: How long a start may take (a busy machine's imports can take seconds).
START_TIMEOUT_S = 60.0
#: How long the platform has to stop once asked (stdin closed, then SIGTERM) before the next step.
STOP_TIMEOUT_S = 10.0


def _env_value(value: Any) -> str:
    if isinstance(value, bool):
        return "1" if value else "0"
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, (list, tuple)):
        return ",".join(str(item) for item in value)  # trusted_proxies: comma-separated, as on the CLI
    return str(value)


class PlatformStartError(RuntimeError):
    """The platform process ended, or stayed silent, before it served (the reason is its last log line)."""


class PlatformProcess:
    """``with PlatformProcess(db=":memory:", now=...) as platform: platform.base_url``.

    :meth:`on_socket` hands down a listening socket the caller bound (``--listen-fd``): its address is the
    base URL at once, before the platform has imported anything, so a caller can :meth:`spawn` it, do its
    own start-up meanwhile, and :meth:`wait_ready` later (the demo); its ``errlog`` keeps the platform's
    stderr in a file whose last line explains a failed start (otherwise stderr is discarded).
    """

    def __init__(self, **settings: Any) -> None:
        # Field names of BackendSettings; the port is ephemeral unless a socket is handed down, the log
        # quiet unless asked, and the platform ends with this process (its stdin pipe).
        self.settings = {"log_level": "WARNING", "exit_with_stdin": True} | settings | {"port": 0}
        self._listen: socket.socket | None = None
        self._inherit = False
        self.errlog: Path | None = None
        self._process: subprocess.Popen[str] | None = None
        self.base_url = ""

    @classmethod
    def on_socket(
        cls, listen: socket.socket, *, errlog: Path | None = None, inherit: bool = False, **settings: Any
    ) -> PlatformProcess:
        """A platform that will serve ``listen``, a listening socket bound here (its URL known at once);
        ``inherit``: the caller's ``OSBP_BACKEND_*`` variables apply too, under the given settings."""
        platform = cls(**settings)
        platform._inherit = inherit
        platform._listen = listen
        platform.errlog = errlog
        platform.base_url = http_url(*listen.getsockname()[:2])
        return platform

    @property
    def pid(self) -> int:
        """The platform's process id (for CPU accounting)."""
        if self._process is None:
            raise RuntimeError("PlatformProcess is not running")
        return self._process.pid

    def spawn(self) -> PlatformProcess:
        """Start the platform process without waiting for it to serve."""
        # Exactly the given settings: an OSBP_BACKEND_* variable of the calling shell (a trusted proxy, a
        # quota) must not leak into the platform unseen.
        env = {
            name: value
            for name, value in os.environ.items()
            if self._inherit or not name.startswith("OSBP_BACKEND_")
        }
        settings = dict(self.settings)
        if self._listen is not None:
            settings["listen_fd"] = self._listen.fileno()
        for name, value in settings.items():
            if value is not None:
                env[f"OSBP_BACKEND_{name.upper()}"] = _env_value(value)
        command = [sys.executable, "-m", "osbp", "backend"]
        with ExitStack() as stack:
            stderr: Any = subprocess.DEVNULL
            if self.errlog is not None:
                stderr = stack.enter_context(self.errlog.open("wb"))
            self._process = subprocess.Popen(  # noqa: S603  our own interpreter running our own `osbp backend`
                command,
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=stderr,
                text=True,
                env=env,
                pass_fds=() if self._listen is None else (self._listen.fileno(),),
            )
        if self._listen is not None:
            # The child holds the socket now: should it die, connections are refused instead of waiting
            # in a backlog nobody reads.
            self._listen.close()
        return self

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> None:
        """Block until the platform serves (its ``ready`` line); :class:`PlatformStartError` says why not."""
        process = self._process
        if process is None or process.stdout is None:
            raise RuntimeError("PlatformProcess was not spawned")
        with selectors.DefaultSelector() as selector:
            selector.register(process.stdout, selectors.EVENT_READ)
            if not selector.select(timeout):
                self.stop()
                raise PlatformStartError(f"the platform did not serve within {timeout:.0f} s")
        line = process.stdout.readline()
        try:
            ready = json.loads(line or "{}")
        except ValueError:
            ready = {}
        if not isinstance(ready, dict) or ready.get("event") != "ready":
            status = process.wait(timeout=STOP_TIMEOUT_S) if not line else None
            said = self._last_error_line()
            ended = f" (exit status {status})" if status is not None else ""
            self.stop()
            raise PlatformStartError(f"the platform did not start{ended}: {said or 'it said nothing'}")
        self.base_url = str(ready["base_url"])

    def start(self) -> PlatformProcess:
        """Spawn the platform and wait for its ready line."""
        self.spawn().wait_ready()
        return self

    def _last_error_line(self) -> str:
        if self.errlog is None:
            return ""
        try:
            lines = self.errlog.read_text(encoding="utf-8", errors="replace").strip().splitlines()
        except OSError:
            return ""
        if not lines:
            return ""
        try:  # the platform logs JSON lines; a crash before logging is configured is plain text
            record = json.loads(lines[-1])
        except ValueError:
            return lines[-1]
        return str(record.get("message", lines[-1])) if isinstance(record, dict) else lines[-1]

    def terminate(self) -> None:
        """Ask the platform to stop (its stdin closed: uvicorn's graceful shutdown), without waiting."""
        process = self._process
        if process is not None and process.stdin is not None and not process.stdin.closed:
            process.stdin.close()

    def stop(self) -> None:
        """Ask the platform to stop unless asked already and reap it: SIGTERM, then SIGKILL, should it not
        stop in time."""
        process = self._process
        if process is None:
            return
        self.terminate()
        for ask in (process.terminate, process.kill):
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
                break
            except subprocess.TimeoutExpired:
                ask()
        else:
            process.wait()
        self._process = None
        if process.stdout is not None:
            process.stdout.close()

    def __enter__(self) -> PlatformProcess:
        return self.start()

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()
