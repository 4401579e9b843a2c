"""A bare JSON-RPC client for `osbp mcp` over stdio, for tests that kill the server mid-call.

The SDK's client treats a server that dies as a broken session; a crash test wants the opposite: send a
call, learn whether an answer came back before the process died, start the server again and retry. So
this client writes and reads JSON-RPC lines itself, one request at a time.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable
from typing import IO, Any

from mcp.types import LATEST_PROTOCOL_VERSION

from tests.support.paths import REPO

__all__ = ["StdioServer"]


class StdioServer:
    """``with StdioServer(env) as server: server.call(tool, arguments)``; ``None`` if the process died."""

    def __init__(
        self,
        env: dict[str, str],
        *,
        stderr: IO[str] | None = None,
        capabilities: dict[str, Any] | None = None,
        preexec_fn: Callable[[], None] | None = None,
    ) -> None:
        base = {key: os.environ[key] for key in ("PATH", "HOME", "LANG") if key in os.environ}
        self._env = base | {"PYTHONPATH": str(REPO)} | env
        self._stderr = stderr
        #: What the client declares at initialize (none by default).
        self._capabilities = capabilities or {}
        #: Run in the child before it execs the server (a resource limit, for instance).
        self._preexec_fn = preexec_fn
        self._process: subprocess.Popen[str] | None = None
        self._next_id = 0

    def start(self) -> StdioServer:
        """Spawn `python -m osbp mcp` and complete the initialize handshake."""
        self._process = subprocess.Popen(
            [sys.executable, "-m", "osbp", "mcp"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=self._stderr or subprocess.DEVNULL,
            text=True,
            env=self._env,
            cwd=REPO,
            preexec_fn=self._preexec_fn,
        )
        answer = self._request(
            "initialize",
            {
                "protocolVersion": LATEST_PROTOCOL_VERSION,
                "capabilities": self._capabilities,
                "clientInfo": {"name": "osbp-crash-tests", "version": "0"},
            },
        )
        if answer is None or "result" not in answer:
            raise RuntimeError(f"the server did not initialize: {answer!r}")
        self._send({"jsonrpc": "2.0", "method": "notifications/initialized"})
        return self

    def _send(self, message: dict[str, Any]) -> None:
        assert self._process is not None
        assert self._process.stdin is not None
        self._process.stdin.write(json.dumps(message) + "\n")
        self._process.stdin.flush()

    def _request(self, method: str, params: dict[str, Any]) -> dict[str, Any] | None:
        assert self._process is not None
        assert self._process.stdout is not None
        self._next_id += 1
        try:
            self._send({"jsonrpc": "2.0", "id": self._next_id, "method": method, "params": params})
        except BrokenPipeError:
            return None
        while line := self._process.stdout.readline():
            message: dict[str, Any] = json.loads(line)
            if message.get("id") == self._next_id:
                return message
        return None  # end of output: the process died before it answered

    def exchange(self, line: str) -> list[dict[str, Any]]:
        """Everything the server writes in answer to one raw ``line``: what it wrote before it answered a
        ``ping`` sent right after (lines are answered in order), so a missing answer is seen, not awaited."""
        assert self._process is not None
        assert self._process.stdin is not None
        assert self._process.stdout is not None
        self._process.stdin.write(line + "\n")
        self._process.stdin.flush()
        self._next_id += 1
        self._send({"jsonrpc": "2.0", "id": self._next_id, "method": "ping"})
        written: list[dict[str, Any]] = []
        while answer := self._process.stdout.readline():
            message: dict[str, Any] = json.loads(answer)
            if message.get("id") == self._next_id and "result" in message:
                return written
            written.append(message)
        raise RuntimeError(f"the server stopped before it answered the ping: {written!r}")

    def call(self, tool: str, arguments: dict[str, Any]) -> dict[str, Any] | None:
        """The tool's OSBP envelope, or ``None`` when the server died before answering."""
        answer = self._request("tools/call", {"name": tool, "arguments": arguments})
        if answer is None:
            return None
        envelope: dict[str, Any] = answer["result"]["structuredContent"]
        return envelope

    def died(self) -> bool:
        """Whether the process ended by SIGKILL (waits for it to end)."""
        assert self._process is not None
        return self._process.wait(timeout=30) == -signal.SIGKILL

    def stop(self) -> None:
        """End the process (closing its input, then SIGKILL if it lingers) and reap it."""
        process, self._process = self._process, None
        if process is None:
            return
        for stream in (process.stdin, process.stdout):
            if stream is not None:
                with contextlib.suppress(BrokenPipeError):
                    stream.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def __enter__(self) -> StdioServer:
        return self.start()

    def __exit__(self, *_exc: object) -> None:
        self.stop()
