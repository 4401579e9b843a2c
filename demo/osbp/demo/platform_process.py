"""The demo's platform as a process of its own, spawned before the demo has imported anything heavy.

``make demo`` runs three Python processes: itself (the agent, through the MCP SDK's client), the OSBP MCP
server and the platform. Each start-up is mostly imports (the SDK's models, FastAPI, SQLAlchemy), and in
one process they would run one after another under one interpreter lock; as processes they run on the
machine's cores at once. :func:`spawn_platform` binds the platform's loopback port here (the ``socket``
module only, so its address is known at once and handed to the MCP server), spawns ``osbp backend
--listen-fd N`` on that socket with a fresh SQLite file, the test surface on and, when asked, a frozen
clock (the platform's own :class:`~osbp.backend.process.PlatformProcess`), and only then lets the caller
import the rest. The platform says it serves with its one JSON line
on stdout; its stderr (the operator's JSON logs) goes to a file whose last line explains a failed start.
Its stdin is a pipe nothing is written to (``--exit-with-stdin``): closing it stops the platform, and so
does this process's end however it comes (a ``kill -9`` included), so the platform never outlives it.

POSIX only (a socket handed down by descriptor); elsewhere the demo starts the platform in a thread
(:func:`osbp.demo.stack.starting_platform`).
"""

from __future__ import annotations

import os
from datetime import datetime
from pathlib import Path

from osbp.backend.listening import bind_socket
from osbp.backend.process import PlatformProcess, PlatformStartError

__all__ = ["PlatformProcess", "PlatformStartError", "spawn_platform", "supported"]

#: Where the demo's platform listens.
HOST = "127.0.0.1"


def supported() -> bool:
    """Whether a listening socket can be handed to a child process by descriptor here."""
    return os.name == "posix"


def spawn_platform(workdir: Path, now: datetime | None) -> PlatformProcess:
    """The demo's platform, spawned on a socket bound here; it serves once :meth:`wait_ready` returns."""
    return PlatformProcess.on_socket(
        bind_socket(HOST, 0),
        errlog=workdir / "platform-stderr.log",
        # The operator's OSBP_BACKEND_* variables (a fault profile) shape the demo's platform too.
        inherit=True,
        db=str(workdir / "platform.db"),
        enable_testing=True,
        now=now,
    ).spawn()
