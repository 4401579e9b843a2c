"""`osbp auth`, the development issuer, as real subprocesses; and a server that fetches its JWKS by URL."""

from __future__ import annotations

import json
import os
import socket
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import jwt
import pytest

from osbp.backend.serving import PlatformServer
from osbp.backend.settings import BackendSettings
from osbp.protocol.timeutil import format_instant
from tests.support.paths import REPO
from tests.support.reference import CLEANING, NOW, ORG
from tests.support.remote import RemoteServer, envelope, free_port, remote_client

pytestmark = pytest.mark.integration


def osbp(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Run `python -m osbp ...` to completion."""
    env = {key: os.environ[key] for key in ("PATH", "HOME", "LANG") if key in os.environ} | {
        "PYTHONPATH": str(REPO)
    }
    return subprocess.run(
        [sys.executable, "-m", "osbp", *args], capture_output=True, text=True, env=env, cwd=cwd, timeout=60
    )


def test_a_minted_token_verifies_against_the_printed_jwks_and_the_key_is_private(tmp_path: Path) -> None:
    """Platform choice (development issuer): ES256 token with the asked scopes and organizations; key 0600."""
    minted = osbp(
        "auth",
        "token",
        "--scope",
        "osbp:read osbp:book",
        "--org",
        ORG,
        "--subject",
        "dev",
        "--ttl",
        "60",
        cwd=tmp_path,
    )
    assert minted.returncode == 0, minted.stderr
    printed = osbp("auth", "jwks", cwd=tmp_path)
    keys = jwt.PyJWKSet.from_dict(json.loads(printed.stdout))
    token = minted.stdout.strip()
    claims = jwt.decode(token, keys.keys[0], algorithms=["ES256"], audience="http://127.0.0.1:8500/mcp")
    assert claims["scope"] == "osbp:read osbp:book"
    assert claims["osbp_organizations"] == [ORG]
    assert claims["sub"] == "dev"
    assert claims["exp"] - claims["iat"] == 60
    key_file = tmp_path / ".osbp" / "state" / "dev-issuer-key.pem"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("mode", "command"),
    [(0o644, ("token", "--scope", "osbp:read", "--org", ORG)), (0o640, ("jwks",))],
    ids=["0644-token", "0640-jwks"],
)
def test_a_signing_key_file_open_to_other_users_is_refused_in_one_line(
    tmp_path: Path, mode: int, command: tuple[str, ...]
) -> None:
    """Platform choice (as ssh refuses a readable private key): no token is minted from a shared key."""
    assert osbp("auth", "jwks", cwd=tmp_path).returncode == 0  # creates the key, 0600
    key_file = tmp_path / ".osbp" / "state" / "dev-issuer-key.pem"
    key_file.chmod(mode)
    refused = osbp("auth", *command, cwd=tmp_path)
    assert refused.returncode == 2
    assert refused.stdout == ""
    assert refused.stderr.count("\n") == 1, refused.stderr
    assert refused.stderr.startswith("osbp auth: cannot use the signing key in .osbp/state: ")
    assert f"(mode {mode:04o}): chmod 600 it" in refused.stderr
    key_file.chmod(0o600)
    assert osbp("auth", *command, cwd=tmp_path).returncode == 0


@pytest.mark.parametrize("subject", ["", "  "])
def test_a_token_with_an_empty_subject_is_not_minted(tmp_path: Path, subject: str) -> None:
    """RFC 7519 sub, as the resource server enforces it: a blank subject is one line and status 2."""
    refused = osbp("auth", "token", "--scope", "osbp:read", "--org", ORG, "--subject", subject, cwd=tmp_path)
    assert refused.returncode == 2
    assert refused.stdout == ""
    assert (
        refused.stderr
        == "osbp auth: --subject must not be empty (a resource server refuses a token without one)\n"
    )


def test_the_development_issuer_serves_loopback_only(tmp_path: Path) -> None:
    """Platform choice (development issuer): a non-loopback address is refused with one line, status 2."""
    refused = osbp("auth", "serve", "--host", "0.0.0.0", cwd=tmp_path)  # noqa: S104  # the refusal under test
    assert refused.returncode == 2
    assert refused.stderr.count("\n") == 1
    assert "loopback only" in refused.stderr


def test_a_new_signing_key_is_announced_once_and_a_busy_port_is_one_line(tmp_path: Path) -> None:
    """Platform choice (development issuer): making a key is said on stderr (run from another folder it
    is a second key, whose tokens a server reading the first JWKS refuses); reusing it is silent; `serve`
    on a port another process holds is one line and status 2, with no "serving" said first."""
    first = osbp("auth", "jwks", cwd=tmp_path)
    assert first.stderr == (
        "osbp auth: created a new signing key .osbp/state/dev-issuer-key.pem (a server must read this "
        "key's JWKS: `osbp auth jwks` or `osbp auth serve` from this folder, or --state-dir)\n"
    )
    again = osbp("auth", "jwks", cwd=tmp_path)
    assert (again.returncode, again.stderr, again.stdout) == (0, "", first.stdout)
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen(1)
        port = holder.getsockname()[1]
        busy = osbp("auth", "serve", "--port", str(port), cwd=tmp_path)
    assert busy.returncode == 2
    assert busy.stderr == (
        f"osbp auth: --port {port}: cannot listen on 127.0.0.1:{port}: the address is already in use\n"
    )


@pytest.fixture
def issuer_process(tmp_path: Path) -> Iterator[str]:
    """`osbp auth serve` on a free loopback port; its issuer URL once it answers."""
    port = free_port()
    issuer = f"http://127.0.0.1:{port}"
    env = {key: os.environ[key] for key in ("PATH", "HOME", "LANG") if key in os.environ} | {
        "PYTHONPATH": str(REPO)
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "osbp", "auth", "--issuer", issuer, "serve", "--port", str(port)],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        with httpx2.Client(trust_env=False) as client:
            while True:  # polling the port until a deadline, not a fixed sleep
                assert process.poll() is None, "osbp auth serve exited"
                assert time.monotonic() < deadline, "osbp auth serve did not answer in time"
                try:
                    if client.get(f"{issuer}/.well-known/jwks.json", timeout=0.5).status_code == 200:
                        break
                except httpx2.TransportError:
                    time.sleep(0.02)
        yield issuer
    finally:
        process.terminate()
        process.wait(10)


@pytest.mark.anyio
async def test_a_server_reads_the_issuers_jwks_from_its_url(issuer_process: str, tmp_path: Path) -> None:
    """MCP authorization: the issuer's keys fetched from <issuer>/.well-known/jwks.json by default."""
    settings = BackendSettings(db=":memory:", port=0, now=NOW, enable_testing=True)
    with PlatformServer(settings) as platform:
        env = {
            "OSBP_PLATFORM_BASE_URL": platform.base_url,
            "OSBP_ORGANIZATION_ID": ORG,
            "OSBP_STATE_PATH": str(tmp_path / "state.sqlite3"),
            "OSBP_AUDIT_LOG_PATH": str(tmp_path / "audit.jsonl"),
            "OSBP_NOW": format_instant(NOW),
            "OSBP_AUTH_ISSUER": issuer_process,
        }
        with RemoteServer(env, tmp_path) as server:
            minted = osbp(
                "auth",
                "--issuer",
                issuer_process,
                "token",
                "--scope",
                "osbp:read",
                "--org",
                ORG,
                "--audience",
                server.url,
                cwd=tmp_path,
            )
            async with remote_client(server.url, minted.stdout.strip()) as client:
                described = envelope(
                    await client.call_tool("osbp_service_describe", {"service_id": CLEANING})
                )
            assert described["ok"] is True
