"""`make help`: the self-documenting Makefile's default goal, readable in a terminal and in a pipe."""

from __future__ import annotations

import os
import pty
import shutil
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make is not installed")


def test_help_piped_is_plain_text_listing_every_target():
    """Platform choice: colour only on a terminal, so piped or captured output has no escape codes."""
    result = subprocess.run(
        ["make", "--no-print-directory", "help"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    assert "\x1b" not in result.stdout
    lines = result.stdout.splitlines()
    assert any(line.split()[:1] == ["bench"] for line in lines)
    assert any(line.split()[:1] == ["help"] for line in lines)


def test_help_on_a_terminal_keeps_its_bold_target_names():
    """Platform choice: a person at a terminal still gets the highlighted target names."""
    leader, follower = pty.openpty()
    try:
        completed = subprocess.run(
            ["make", "--no-print-directory", "help"], cwd=REPO, stdout=follower, timeout=60, check=True
        )
        os.close(follower)
        follower = -1
        output = b""
        while True:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # EIO: the terminal's other end is closed and everything was read
                break
            if not chunk:
                break
            output += chunk
    finally:
        if follower != -1:
            os.close(follower)
        os.close(leader)
    assert completed.returncode == 0
    assert b"\x1b[1mbench" in output


def test_install_without_npm_skips_the_typescript_host_quietly_and_succeeds():
    """Platform choice: `make install` works without Node.js (the TS test host's step is a no-op)."""
    stamp = REPO / "tests" / "host" / "ts" / "node_modules" / ".osbp-installed"
    before = stamp.stat().st_mtime_ns if stamp.exists() else None
    result = subprocess.run(
        # -W: as if the host's lock file had just changed, so its install step runs (and finds no npm).
        ["make", "--no-print-directory", "-W", "tests/host/ts/package-lock.json", "install", "NPM=no-npm"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    assert (stamp.stat().st_mtime_ns if stamp.exists() else None) == before
