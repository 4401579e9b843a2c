"""`osbp backend`: run the platform under uvicorn.

Flags mirror `BackendSettings` (environment `OSBP_BACKEND_*` fills what the flags leave out). Once
serving, one JSON line goes to stdout, `{"event": "ready", "base_url": "http://127.0.0.1:<port>"}`, so a
parent that asked for `--port 0` learns the port; logs are JSON lines on stderr.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from typing import Any

from pydantic import ValidationError

from osbp.backend.app import create_app
from osbp.backend.logs import configure_logging, logger
from osbp.backend.serving import ReadyServer, bind_socket, uvicorn_config
from osbp.backend.settings import BackendSettings

__all__ = ["build_parser", "main", "settings_from_args"]


def build_parser() -> argparse.ArgumentParser:
    """The command line, one flag per setting."""
    parser = argparse.ArgumentParser(prog="osbp backend", description="Run the Bookwell synthetic platform.")
    parser.add_argument("--db", help="SQLite file path or :memory: (default .osbp/backend.db)")
    parser.add_argument("--host", help="bind address (default 127.0.0.1; loopback only unless allowed)")
    parser.add_argument("--port", type=int, help="TCP port (default 8400; 0 = ephemeral)")
    parser.add_argument("--now", help="freeze the platform clock at this RFC 3339 instant")
    parser.add_argument("--enable-testing", action="store_true", default=None, help="mount /_testing")
    parser.add_argument(
        "--allow-non-loopback", action="store_true", default=None, help="permit a public bind"
    )
    parser.add_argument("--rate-limit-quota", type=int, help="requests per client per window (default 1000)")
    parser.add_argument(
        "--rate-limit-window",
        type=int,
        dest="rate_limit_window_seconds",
        help="rate-limit window in seconds (default 60)",
    )
    parser.add_argument("--log-level", help="stderr log level (default INFO)")
    return parser


def settings_from_args(args: argparse.Namespace) -> BackendSettings:
    """Settings from the given flags over the environment and defaults."""
    overrides: dict[str, Any] = {key: value for key, value in vars(args).items() if value is not None}
    return BackendSettings(**overrides)


def main(argv: Sequence[str]) -> int:
    """Run the platform until interrupted."""
    args = build_parser().parse_args(list(argv))
    try:
        settings = settings_from_args(args)
    except ValidationError as error:
        messages = "; ".join(str(item["msg"]) for item in error.errors())
        sys.stderr.write(f"osbp backend: {messages}\n")
        return 2
    configure_logging(settings.log_level)
    app = create_app(settings)
    sock = bind_socket(settings.host, settings.port)
    base_url = f"http://{settings.host}:{sock.getsockname()[1]}"

    def announce() -> None:
        sys.stdout.write(json.dumps({"event": "ready", "base_url": base_url}) + "\n")
        sys.stdout.flush()
        logger.info("ready", extra={"base_url": base_url, "testing": settings.enable_testing})

    server = ReadyServer(uvicorn_config(app), on_ready=announce)
    try:
        server.run(sockets=[sock])
    except KeyboardInterrupt:
        # uvicorn shuts down gracefully on Ctrl-C, then re-raises the signal: the stop was asked for, so
        # end with the conventional status for SIGINT instead of a traceback.
        return 130
    finally:
        sock.close()
        app.state.runtime.db.dispose()
    return 0
