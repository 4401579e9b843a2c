"""A throwaway PostgreSQL server for a test session or a benchmark run: the machine's own ``initdb`` and
``pg_ctl``.

The cluster lives in a temporary directory, listens on one loopback port (and a Unix socket in the same
directory), trusts local connections and is stopped and removed when the session ends. PostgreSQL refuses
to run as root, and sessions and CI run as root here: then the cluster runs as the unprivileged
``postgres`` system user (``runuser -u postgres --``), in a directory that user owns.

Where no PostgreSQL is installed, or no unprivileged user can run it, ``unavailable_reason`` says so in
one line: the PostgreSQL tests skip with it, except under CI (``CI`` set), where the run fails instead, so
PostgreSQL can never silently stop being tested.
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg

__all__ = [
    "PostgresServer",
    "bench_server",
    "database",
    "fresh_database",
    "pg_binaries",
    "start_server",
    "unavailable_reason",
]

#: The unprivileged system user a root session runs the cluster as.
SERVICE_USER = "postgres"
_START_TIMEOUT_S = 60


@dataclass(frozen=True)
class PostgresServer:
    """A running throwaway cluster: its port, socket directory and an admin URL."""

    port: int
    socket_dir: Path

    def url(self, dbname: str = "postgres") -> str:
        """A libpq URL for ``dbname`` over loopback TCP (what a platform or a replica is given)."""
        return f"postgresql://{SERVICE_USER}@127.0.0.1:{self.port}/{dbname}"


def pg_binaries() -> Path | None:
    """The folder holding ``initdb`` and ``pg_ctl``: on PATH first, then Debian's versioned folders."""
    on_path = shutil.which("pg_ctl")
    if on_path and shutil.which("initdb"):
        return Path(on_path).resolve().parent
    for folder in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if (Path(folder) / "pg_ctl").exists() and (Path(folder) / "initdb").exists():
            return Path(folder)
    return None


def _run_as() -> list[str]:
    """The command prefix that runs a PostgreSQL binary as a user it accepts."""
    if os.geteuid() != 0:
        return []
    return ["runuser", "-u", SERVICE_USER, "--"]


def unavailable_reason() -> str | None:
    """One line saying why no throwaway PostgreSQL can be started here, or None when one can."""
    if pg_binaries() is None:
        return "PostgreSQL tests need the server binaries initdb and pg_ctl (PostgreSQL 15+): none found"
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SERVICE_USER)
        except KeyError:
            return (
                f"PostgreSQL refuses to run as root and there is no {SERVICE_USER!r} system user to run "
                "the test cluster as: create one (useradd --system postgres) or test as a normal user"
            )
        if shutil.which("runuser") is None:
            return "PostgreSQL tests running as root need runuser (util-linux) to start the cluster"
    return None


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@contextmanager
def start_server() -> Iterator[PostgresServer]:
    """Initialise, start and finally stop and remove a throwaway cluster."""
    binaries = pg_binaries()
    assert binaries is not None, unavailable_reason()
    prefix = _run_as()
    root = Path(tempfile.mkdtemp(prefix="osbp-pg-"))
    data = root / "data"
    if prefix:
        record = pwd.getpwnam(SERVICE_USER)
        os.chown(root, record.pw_uid, record.pw_gid)
    try:
        subprocess.run(  # noqa: S603  # the machine's own PostgreSQL binaries, fixed arguments
            [*prefix, str(binaries / "initdb"), "-D", str(data), "-A", "trust", "-U", SERVICE_USER,
             "--no-sync", "-E", "UTF8", "--locale", "C"],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        port = _free_port()
        options = (
            f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off "
            "-c full_page_writes=off -c max_connections=200"
        )
        subprocess.run(  # noqa: S603  # the machine's own PostgreSQL binaries, fixed arguments
            [*prefix, str(binaries / "pg_ctl"), "-D", str(data), "-l", str(root / "server.log"),
             "-o", options, "-w", "-t", str(_START_TIMEOUT_S), "start"],
            check=True, capture_output=True, text=True,
        )  # fmt: skip
        try:
            yield PostgresServer(port=port, socket_dir=root)
        finally:
            subprocess.run(  # noqa: S603  # the machine's own PostgreSQL binaries, fixed arguments
                [*prefix, str(binaries / "pg_ctl"), "-D", str(data), "-m", "immediate", "-w", "stop"],
                capture_output=True, text=True,
            )  # fmt: skip
    finally:
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def database(server: PostgresServer) -> Iterator[str]:
    """A fresh, empty database on ``server`` for one test, dropped afterwards: its URL."""
    with fresh_database(server.url()) as url:
        yield url


@contextmanager
def fresh_database(url: str) -> Iterator[str]:
    """A fresh, empty database on the server ``url`` reaches (any of its databases), dropped afterwards."""
    name = f"t_{uuid.uuid4().hex[:16]}"  # a generated name, never input
    with psycopg.connect(url, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = url.partition("?")[0].rpartition("/")
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextmanager
def bench_server(url: str | None) -> Iterator[tuple[str | None, str | None]]:
    """``(server URL, None)`` for the benchmarks' PostgreSQL rows: ``url`` when given, else a throwaway
    cluster started here; ``(None, why)`` when neither is possible."""
    if url is not None:
        yield url, None
        return
    reason = unavailable_reason()
    if reason is not None:
        yield None, reason
        return
    with start_server() as server:
        yield server.url(), None
