"""The demo's platform as a process of its own, spawned before the demo has imported anything heavy.

``make demo`` runs three Python processes: itself (the agent, through the MCP SDK's client), the OSBP MCP
server and the platform. Each start-up is mostly imports (the SDK's models, FastAPI, SQLAlchemy), and in
one process they would run one after another under one interpreter lock; as processes they run on the
machine's cores at once. :class:`PlatformProcess` binds the platform's loopback port here (the ``socket``
module only, so its address is known at once and handed to the MCP server), spawns ``osbp backend
--listen-fd N`` on that socket with a fresh SQLite file, the test surface on and, when asked, a frozen
clock, and only then lets the caller import the rest. The platform says it serves with its one JSON line
on stdout; its stderr (the operator's JSON logs) goes to a file whose last line explains a failed start.
Its stdin is a pipe nothing is written to (``--exit-with-stdin``): closing it stops the platform, and so
does this process's end however it comes (a ``kill -9`` included), so the platform never outlives it.

POSIX only (a socket handed down by descriptor); elsewhere the demo starts the platform in a thread
(:func:`osbp.demo.stack.starting_platform`).
"""

from __future__ import annotations

import json
import os
import selectors
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

from osbp.backend.listening import bind_socket, http_url

__all__ = ["PlatformProcess", "PlatformStartError", "supported"]

#: Where the demo's platform listens.
HOST = "127.0.0.1"
#: How long a start may take before the demo gives up (a busy machine's imports can take seconds).
START_TIMEOUT_S = 60.0
#: How long the platform has to stop once asked (its stdin closed, then SIGTERM) before the next step.
STOP_TIMEOUT_S = 10.0


class PlatformStartError(RuntimeError):
    """The platform process ended, or stayed silent, before it served."""


def supported() -> bool:
    """Whether a listening socket can be handed to a child process by descriptor here."""
    return os.name == "posix"


class PlatformProcess:
    """``osbp backend`` serving a socket bound here; spawned by the constructor, stopped by :meth:`stop`."""

    def __init__(self, workdir: Path, now: datetime | None) -> None:
        sock = bind_socket(HOST, 0)
        self.base_url = http_url(HOST, sock.getsockname()[1])
        self.errlog = workdir / "platform-stderr.log"
        argv = [
            sys.executable,
            "-m",
            "osbp",
            "backend",
            "--listen-fd",
            str(sock.fileno()),
            "--db",
            str(workdir / "platform.db"),
            "--enable-testing",
            "--log-level",
            "WARNING",
            # Its stdin is a pipe only this process writes to: closed, by stop() or by this process's
            # death however it comes, it stops the platform, which never outlives the demo.
            "--exit-with-stdin",
        ]
        if now is not None:
            argv += ["--now", now.isoformat()]
        try:
            with self.errlog.open("wb") as errlog:
                self._process = subprocess.Popen(  # noqa: S603  # our own interpreter and command
                    argv,
                    pass_fds=(sock.fileno(),),
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=errlog,
                )
        finally:
            # The child holds the socket now: should it die, connections are refused instead of waiting
            # in a backlog nobody reads.
            sock.close()

    @property
    def pid(self) -> int:
        """The platform process's id."""
        return self._process.pid

    def wait_ready(self, timeout: float = START_TIMEOUT_S) -> None:
        """Block until the platform serves; :class:`PlatformStartError` says why it did not."""
        stdout = self._process.stdout
        assert stdout is not None  # spawned with stdout=PIPE
        deadline = time.monotonic() + timeout
        with selectors.DefaultSelector() as selector:
            selector.register(stdout, selectors.EVENT_READ)
            while not selector.select(max(0.0, deadline - time.monotonic())):
                if time.monotonic() >= deadline:
                    self.stop()
                    raise PlatformStartError(f"the platform did not serve within {timeout:.0f} s")
        line = stdout.readline()
        try:
            ready = json.loads(line).get("event") == "ready"
        except (ValueError, AttributeError):
            ready = False
        if not ready:
            status = self._process.wait(timeout=STOP_TIMEOUT_S) if not line else None
            said = self._last_error_line()
            ended = f" (exit status {status})" if status is not None else ""
            raise PlatformStartError(f"the platform did not start{ended}: {said or 'it said nothing'}")

    def _last_error_line(self) -> str:
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
        if self._process.stdin is not None and not self._process.stdin.closed:
            self._process.stdin.close()

    def stop(self) -> None:
        """Ask the platform to stop unless asked already and wait for it; SIGTERM, then SIGKILL, should it
        not stop in time."""
        process = self._process
        self.terminate()
        for ask in (process.terminate, process.kill):
            try:
                process.wait(timeout=STOP_TIMEOUT_S)
                break
            except subprocess.TimeoutExpired:
                ask()
        else:
            process.wait()
        if process.stdout is not None:
            process.stdout.close()
