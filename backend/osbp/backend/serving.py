"""Run the real platform under uvicorn: `PlatformServer` for tests, demos and benchmarks.

`PlatformServer` binds 127.0.0.1 (port 0 = ephemeral) itself, so the port is known before uvicorn starts
(or serves a socket its caller bound already with `osbp.backend.listening.bind_socket`), runs uvicorn in
a background thread, waits on a startup event (never a sleep), exposes `.base_url`, and shuts down
cleanly. It is a context manager and an async context manager.
"""

from __future__ import annotations

import signal
import socket
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

import anyio.to_thread
import uvicorn
from fastapi import FastAPI

from osbp.backend.app import create_app
from osbp.backend.faults import abortable
from osbp.backend.http_protocol import problem_protocol
from osbp.backend.listening import bind_socket, http_url
from osbp.backend.runtime import Runtime
from osbp.backend.settings import BackendSettings
from osbp.backend.write_coalescing import coalescing

__all__ = ["PlatformServer", "ReadyServer", "bind_socket", "http_url", "uvicorn_config"]


class ReadyServer(uvicorn.Server):
    """A uvicorn server that calls `on_ready` once it is accepting connections."""

    def __init__(self, config: uvicorn.Config, on_ready: Callable[[], None]) -> None:
        super().__init__(config)
        self._on_ready = on_ready
        #: Whether a SIGINT asked the stop: uvicorn re-raises it after its graceful shutdown, but on some
        #: event loops (uvloop) that KeyboardInterrupt can be lost, so the caller reads this instead.
        self.interrupted = False

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """Record an interrupt, then stop as uvicorn does."""
        self.interrupted = self.interrupted or sig == signal.SIGINT
        super().handle_exit(sig, frame)

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        """Start serving, then announce readiness."""
        await super().startup(sockets=sockets)
        if self.started:
            self._on_ready()


def uvicorn_config(app: FastAPI, **overrides: Any) -> uvicorn.Config:
    """The uvicorn settings the platform runs with: our own Server header and JSON logs, no access log.

    Proxy headers are believed only from the app's `trusted_proxies` (none by default): uvicorn's own
    default trusts `X-Forwarded-For` from loopback, which would let any local client pick a fresh
    rate-limit key per request. The HTTP protocol is always h11 with problem+json parse errors
    (`http_protocol`), whatever else is installed, writing each response in one system call
    (`write_coalescing`), whose requests can abort their connection (the fault profile's `reset`,
    `timeout` and `lost_response`, `faults.abortable`), and there are no WebSockets.
    """
    runtime: Runtime = app.state.runtime
    trusted = list(runtime.settings.trusted_proxies)
    options: dict[str, Any] = {
        "log_config": None,
        "log_level": "warning",
        "access_log": False,
        "server_header": False,
        "lifespan": "on",  # the app's lifespan runs the webhook worker
        "timeout_graceful_shutdown": 5,
        "backlog": 2048,
        "proxy_headers": bool(trusted),
        "forwarded_allow_ips": trusted,
        "http": coalescing(abortable(problem_protocol(runtime.tokens.request_id))),
        "ws": "none",
        "loop": "auto",
    } | overrides
    return uvicorn.Config(app, **options)


class PlatformServer:
    """The real platform on 127.0.0.1 in a background thread."""

    def __init__(
        self,
        settings: BackendSettings | None = None,
        *,
        app: FastAPI | None = None,
        sock: socket.socket | None = None,
        startup_timeout: float = 15.0,
    ) -> None:
        self.settings = settings or BackendSettings(db=":memory:", port=0)
        self.app = app or create_app(self.settings)
        self.startup_timeout = startup_timeout
        self._ready = threading.Event()
        self._server: ReadyServer | None = None
        self._thread: threading.Thread | None = None
        self._socket: socket.socket | None = sock
        self.port = 0 if sock is None else sock.getsockname()[1]

    @property
    def base_url(self) -> str:
        """`http://127.0.0.1:<port>` once started."""
        if self._server is None:
            raise RuntimeError("PlatformServer is not running")
        return http_url(self.settings.host, self.port)

    @property
    def runtime(self) -> Runtime:
        """The running platform's state (database, clock, counters) for direct inspection in tests."""
        runtime: Runtime = self.app.state.runtime
        return runtime

    def start(self) -> PlatformServer:
        """Bind, start uvicorn in a thread, and wait until it serves."""
        if self._socket is None:
            self._socket = bind_socket(self.settings.host, self.settings.port)
            self.port = self._socket.getsockname()[1]
        # What the socket is really bound to (an ephemeral port included), before the first request.
        self.runtime.own_addresses.add(self._socket.getsockname())
        self._server = ReadyServer(uvicorn_config(self.app), on_ready=self._ready.set)
        self._thread = threading.Thread(
            target=self._serve,
            args=(self._server, self._socket),
            name=f"osbp-backend-{self.port}",
            daemon=True,
        )
        self._thread.start()
        if not self._ready.wait(self.startup_timeout):
            self.stop()
            raise RuntimeError(f"platform did not start within {self.startup_timeout} s")
        return self

    def _serve(self, server: ReadyServer, sock: socket.socket) -> None:
        try:
            server.run(sockets=[sock])
        finally:
            # Unblock a waiting start() if uvicorn failed before it was ready.
            self._ready.set()

    def stop(self) -> None:
        """Ask uvicorn to exit, wait for the thread, release the socket and database."""
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=30)
        if self._socket is not None:
            self._socket.close()
        self.runtime.db.dispose()
        self._thread = None

    def __enter__(self) -> PlatformServer:
        started = self.start()
        if not (self._server and self._server.started):
            self.stop()
            raise RuntimeError("platform failed to start")
        return started

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    async def __aenter__(self) -> PlatformServer:
        return await anyio.to_thread.run_sync(self.__enter__)

    async def __aexit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await anyio.to_thread.run_sync(self.stop)
