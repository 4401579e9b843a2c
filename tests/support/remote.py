"""Helpers for remote OSBP tests: a real `osbp mcp --transport streamable-http` subprocess, tokens, clients.

:class:`RemoteServer` starts the server on a free loopback port and waits (with a timeout, no fixed sleep)
until it accepts connections; :func:`remote_client` connects the SDK's Streamable HTTP client with a
bearer token; :class:`Issuer` is the development issuer (``osbp auth``) with its JWKS written to a file;
:class:`JwksEndpoint` serves that JWKS on loopback, counting its fetches, and can be made slow or failing.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

import httpx2
import jwt
from cryptography.hazmat.primitives import serialization
from mcp import Client
from mcp.client.session import ElicitationFnT
from mcp.client.streamable_http import streamable_http_client
from mcp.types import CallToolResult

from osbp.protocol.approval import APPROVAL_TOKEN_PATTERN
from osbp.server.issuer import KEY_FILE, DevIssuer
from tests.support.paths import REPO

__all__ = [
    "HEADERS",
    "INITIALIZE",
    "ISSUER",
    "Issuer",
    "JwksEndpoint",
    "RemoteServer",
    "approved",
    "envelope",
    "free_port",
    "remote_client",
]

ISSUER = "http://127.0.0.1:8600"
#: The headers of a JSON-RPC POST to the Streamable HTTP endpoint.
HEADERS = {"Accept": "application/json, text/event-stream", "Content-Type": "application/json"}
#: A raw initialize request (2025-11-25), for tests that post to the endpoint without the SDK's client.
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "t", "version": "0"},
    },
}
ALL_SCOPES = ("osbp:read", "osbp:verify", "osbp:book")


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


class Issuer:
    """The development issuer with its key in ``directory`` and its JWKS in ``directory/jwks.json``."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.dev = DevIssuer(directory, ISSUER)
        self.jwks_path = directory / "jwks.json"
        self.jwks_path.write_text(json.dumps(self.dev.jwks()), encoding="utf-8")

    def token(
        self,
        audience: str,
        *,
        organizations: tuple[str, ...] = ("*",),
        scopes: tuple[str, ...] = ALL_SCOPES,
        subject: str = "user-1",
        ttl_s: int = 600,
        now: float | None = None,
    ) -> str:
        """A signed token for ``audience``."""
        return self.dev.token(
            subject=subject,
            audience=audience,
            scopes=scopes,
            organizations=organizations,
            ttl_s=ttl_s,
            now=now,
        )

    def sign(self, claims: dict[str, Any]) -> str:
        """A token of exactly ``claims`` under this issuer's key and kid (for malformed-claim tests)."""
        key = serialization.load_pem_private_key((self.directory / KEY_FILE).read_bytes(), password=None)
        return jwt.encode(claims, key, algorithm="ES256", headers={"kid": self.dev.kid})  # type: ignore[arg-type]


Fault = Literal["none", "slow", "failing"]


class JwksEndpoint:
    """``with JwksEndpoint(jwks) as endpoint: endpoint.url`` — a JWKS URL on loopback that counts its fetches.

    ``fault`` ``"slow"`` holds every answer until :meth:`release` (or ``hold_s``); ``"failing"`` answers
    ``500``. ``fetches`` are the monotonic instants requests arrived at.
    """

    def __init__(self, jwks: dict[str, Any], *, hold_s: float = 30.0) -> None:
        self.fault: Fault = "none"
        self.fetches: list[float] = []
        self.first_fault_fetch = threading.Event()
        self._released = threading.Event()
        self._lock = threading.Lock()
        self._body = json.dumps(jwks).encode()
        endpoint = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                with endpoint._lock:
                    endpoint.fetches.append(time.monotonic())
                    fault, body = endpoint.fault, endpoint._body
                if fault != "none":
                    endpoint.first_fault_fetch.set()
                if fault == "slow":
                    endpoint._released.wait(hold_s)
                status, payload = (500, b"{}") if fault == "failing" else (200, body)
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload)
                except OSError:
                    pass  # the server gave up on this fetch (its timeout) and closed the connection

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/.well-known/jwks.json"
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    def serve(self, jwks: dict[str, Any]) -> None:
        """Answer ``jwks`` from now on (the issuer rotated its keys)."""
        with self._lock:
            self._body = json.dumps(jwks).encode()

    def count(self) -> int:
        """How many fetches arrived so far."""
        with self._lock:
            return len(self.fetches)

    def release(self) -> None:
        """Let held answers go."""
        self._released.set()

    def __enter__(self) -> JwksEndpoint:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)


class RemoteServer:
    """``with RemoteServer(env, tmp) as server: server.url`` — a real Streamable HTTP server process."""

    def __init__(
        self, env: dict[str, str], workdir: Path, *, port: int | None = None, name: str = "server"
    ) -> None:
        self.port = port or free_port()
        self.url = f"http://127.0.0.1:{self.port}/mcp"
        base = {key: os.environ[key] for key in ("PATH", "HOME", "LANG") if key in os.environ}
        self._env = base | {"PYTHONPATH": str(REPO)} | env
        self._workdir = workdir
        self.stderr_path = workdir / f"{name}.stderr"
        self.process: subprocess.Popen[bytes] | None = None

    def start(self, *args: str, timeout_s: float = 30.0) -> RemoteServer:
        """Spawn the server and wait until its port accepts connections."""
        with self.stderr_path.open("wb") as errlog:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "osbp",
                    "mcp",
                    "--transport",
                    "streamable-http",
                    "--port",
                    str(self.port),
                    *args,
                ],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=errlog,
                env=self._env,
                cwd=self._workdir,
            )
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"the server exited: {self.stderr_path.read_text(errors='replace')}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return self
            except OSError:
                time.sleep(0.02)  # polling a port with a deadline, not waiting a fixed time
        raise RuntimeError("the server did not listen in time")

    def kill(self) -> None:
        """SIGKILL: the process gets no chance to clean up (a crashed replica)."""
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
            self.process.wait(10)

    def stop(self) -> int | None:
        """SIGTERM and wait; the exit status."""
        if self.process is None:
            return None
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(15)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        return self.process.returncode

    def __enter__(self) -> RemoteServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


@asynccontextmanager
async def remote_client(
    url: str, token: str | None = None, *, elicitation: ElicitationFnT | None = None, **headers: str
) -> AsyncIterator[Client]:
    """The SDK's client over Streamable HTTP to ``url``, with ``Authorization: Bearer token``.

    With ``elicitation`` (the host's UI) the client declares form and URL-mode elicitation.
    """
    sent = dict(headers) | ({"Authorization": f"Bearer {token}"} if token else {})
    timeout = httpx2.Timeout(30.0, read=60.0)
    async with (
        httpx2.AsyncClient(headers=sent, timeout=timeout, trust_env=False) as http,
        Client(streamable_http_client(url, http_client=http), elicitation_callback=elicitation) as client,
    ):
        yield client


def envelope(result: CallToolResult) -> dict[str, Any]:
    """A tool result's OSBP envelope (its structured content, equal to its text)."""
    [content] = result.content
    structured = result.structured_content
    assert isinstance(structured, dict)
    assert json.loads(content.text) == structured  # type: ignore[union-attr]
    return structured


def approved(arguments: dict[str, Any], challenge: dict[str, Any]) -> dict[str, Any]:
    """The approved retry of a final-confirmation challenge."""
    assert challenge["problem"]["code"] == "requires_user_confirmation", challenge
    match = APPROVAL_TOKEN_PATTERN.search(challenge["problem"]["message"])
    assert match is not None
    return arguments | {"approval": {"confirmed": True, "token": match.group(1)}}
