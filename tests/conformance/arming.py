"""A loopback scenario endpoint for the toy server: the battery POSTs an outcome, a file carries it over.

It honors the scenario URL contract (`POST {"organization_id", "outcome"}`, 2xx when armed) and hands
the outcome to the toy server through the file the server reads with `--arm-file`, consumed once.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

OUTCOMES = {"slot_taken", "rate_limited"}


@dataclass(frozen=True)
class ScenarioEndpoint:
    url: str
    arm_file: Path
    requests: list[dict[str, object]]


@contextmanager
def scenario_endpoint(arm_file: Path, organization_id: str = "conformance_co") -> Iterator[ScenarioEndpoint]:
    """Serve the arm endpoint on 127.0.0.1 (an ephemeral port) for the duration."""
    seen: list[dict[str, object]] = []

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            try:
                body = json.loads(self.rfile.read(length))
            except ValueError:
                body = None
            ok = (
                isinstance(body, dict)
                and body.get("organization_id") == organization_id
                and body.get("outcome") in OUTCOMES
            )
            if ok:
                seen.append(body)
                arm_file.write_text(str(body["outcome"]), encoding="utf-8")
            self.send_response(200 if ok else 422)
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, format: str, *args: object) -> None:
            """Keep the test output quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield ScenarioEndpoint(f"http://127.0.0.1:{server.server_address[1]}/_testing/arm", arm_file, seen)
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
