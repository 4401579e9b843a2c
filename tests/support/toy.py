"""Helpers for the conformance battery's tests: how to start the toy server (optionally broken)."""

from __future__ import annotations

import sys
from pathlib import Path

from osbp.conformance import ServerTarget, server_env

TOY_SERVER = Path(__file__).resolve().parents[1] / "conformance" / "toy_server.py"


def toy_target(
    arm_file: Path | None = None,
    *breaks: str,
    stats_file: Path | None = None,
    status_file: Path | None = None,
    catalog_file: Path | None = None,
    approval_ttl: float | None = None,
) -> ServerTarget:
    """How to start the toy server, optionally broken, reading or writing the hook files given, its
    approval tokens living `approval_ttl` seconds (default: forever)."""
    command = [sys.executable, str(TOY_SERVER)]
    for name in breaks:
        command += ["--break", name]
    for flag, path in (
        ("--arm-file", arm_file),
        ("--stats-file", stats_file),
        ("--status-file", status_file),
        ("--catalog-file", catalog_file),
    ):
        if path is not None:
            command += [flag, str(path)]
    if approval_ttl is not None:
        command += ["--approval-ttl", str(approval_ttl)]
    return ServerTarget(command=command, env=server_env())
