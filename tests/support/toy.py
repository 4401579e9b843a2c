"""Helpers for the conformance battery's tests: how to start the toy server (optionally broken)."""

from __future__ import annotations

import sys
from pathlib import Path

from osbp.conformance import ServerTarget, server_env

TOY_SERVER = Path(__file__).resolve().parents[1] / "conformance" / "toy_server.py"


def toy_target(arm_file: Path | None = None, *breaks: str) -> ServerTarget:
    """How to start the toy server, optionally broken."""
    command = [sys.executable, str(TOY_SERVER)]
    for name in breaks:
        command += ["--break", name]
    if arm_file is not None:
        command += ["--arm-file", str(arm_file)]
    return ServerTarget(command=command, env=server_env())
