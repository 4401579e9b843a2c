"""Loopback platform hooks for the toy server: the battery calls them over HTTP, files carry them over.

It honors the documented hook contracts: `POST .../arm` `{"organization_id", "outcome"}` (2xx when armed)
writes the outcome to the file the toy reads with `--arm-file`, consumed once (`unreachable` creates the
file `<arm file>.unreachable` instead, `reachable` removes it); `GET .../stats` answers
`{"create_requests": n}` from the count the toy keeps in its `--stats-file`; `POST .../appointment-status`
`{"organization_id", "booking_id", "status"}` records the native status in the JSON the toy reads with
`--status-file`; `POST .../service` `{"organization_id", "service_id"}` plus any of `price_amount`,
`cancellation_fee`, `no_show_fee` (USD decimals) and `cancellation_window_minutes`, and `POST .../provider`
or `.../location` `{"organization_id", "provider_id" | "location_id", "name"}` record the change in the
JSON the toy reads with `--catalog-file` (`{"services": {id: {field: minor units or minutes}},
"providers": {id: name}, "locations": {id: name}}`).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from decimal import Decimal
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

OUTCOMES = {"slot_taken", "rate_limited"}
REACHABILITY = {"unreachable", "reachable"}
NATIVE_STATUSES = {"confirmed", "pending", "cancelled", "no_show", "completed", "archived"}


@dataclass(frozen=True)
class ScenarioEndpoint:
    url: str
    arm_file: Path
    requests: list[dict[str, object]]
    stats_url: str = ""
    stats_file: Path | None = None
    status_url: str = ""
    status_file: Path | None = None
    catalog_url: str = ""
    catalog_file: Path | None = None
    provider_url: str = ""
    location_url: str = ""


#: The catalog hook's fields: money in USD decimals (stored in cents), the window in minutes.
_MONEY_FIELDS = {
    "price_amount": "amount",
    "cancellation_fee": "cancellation_fee",
    "no_show_fee": "no_show_fee",
}


def _catalog_change(body: dict[str, object]) -> tuple[str, str, object] | None:
    """(section, id, change) for a well-formed catalog, provider or location change, else None."""
    for key, section in (("provider_id", "providers"), ("location_id", "locations")):
        if isinstance(body.get(key), str) and isinstance(body.get("name"), str):
            return section, str(body[key]), body["name"]
    if not isinstance(body.get("service_id"), str):
        return None
    change: dict[str, int] = {}
    for field, stored in _MONEY_FIELDS.items():
        if isinstance(body.get(field), str):
            change[stored] = int(Decimal(str(body[field])) * 100)
    window = body.get("cancellation_window_minutes")
    if isinstance(window, int):
        change["window_minutes"] = window
    return ("services", str(body["service_id"]), change) if change else None


def _read_json(path: Path, default: object) -> object:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return default


@contextmanager
def scenario_endpoint(arm_file: Path, organization_id: str = "conformance_co") -> Iterator[ScenarioEndpoint]:
    """Serve the hooks on 127.0.0.1 (an ephemeral port) for the duration; files sit beside `arm_file`."""
    seen: list[dict[str, object]] = []
    stats_file = arm_file.with_name(arm_file.name + ".creates")
    status_file = arm_file.with_name(arm_file.name + ".statuses.json")
    catalog_file = arm_file.with_name(arm_file.name + ".catalog.json")

    class Handler(BaseHTTPRequestHandler):
        def _answer(self, status: int, body: object = None) -> None:
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path.startswith("/_testing/stats"):
                self._answer(200, {"create_requests": int(_read_json(stats_file, 0) or 0)})  # type: ignore[call-overload]
            else:
                self._answer(404)

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            try:
                body = json.loads(self.rfile.read(length))
            except ValueError:
                body = None
            ours = isinstance(body, dict) and body.get("organization_id") == organization_id
            if self.path.startswith(("/_testing/service", "/_testing/provider", "/_testing/location")):
                change = _catalog_change(body) if ours else None
                if change is None:
                    self._answer(422)
                    return
                section, key, value = change
                catalog = _read_json(catalog_file, {})
                assert isinstance(catalog, dict)
                entries = catalog.setdefault(section, {})
                entries[key] = {**entries.get(key, {}), **value} if isinstance(value, dict) else value
                catalog_file.write_text(json.dumps(catalog), encoding="utf-8")
                self._answer(200, body)
                return
            if self.path.startswith("/_testing/appointment-status"):
                if not (ours and body.get("status") in NATIVE_STATUSES and body.get("booking_id")):
                    self._answer(422)
                    return
                statuses = _read_json(status_file, {})
                assert isinstance(statuses, dict)
                statuses[str(body["booking_id"])] = body["status"]
                status_file.write_text(json.dumps(statuses), encoding="utf-8")
                self._answer(200, body)
                return
            if ours and body.get("outcome") in REACHABILITY:
                seen.append(body)
                flag = arm_file.with_name(arm_file.name + ".unreachable")
                if body["outcome"] == "unreachable":
                    flag.write_text("", encoding="utf-8")
                else:
                    flag.unlink(missing_ok=True)
                self._answer(200)
            elif ours and body.get("outcome") in OUTCOMES:
                seen.append(body)
                arm_file.write_text(str(body["outcome"]), encoding="utf-8")
                self._answer(200)
            else:
                self._answer(422)

        def log_message(self, format: str, *args: object) -> None:
            """Keep the test output quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    base = f"http://127.0.0.1:{server.server_address[1]}/_testing"
    try:
        yield ScenarioEndpoint(
            f"{base}/arm",
            arm_file,
            seen,
            stats_url=f"{base}/stats",
            stats_file=stats_file,
            status_url=f"{base}/appointment-status",
            status_file=status_file,
            catalog_url=f"{base}/service",
            catalog_file=catalog_file,
            provider_url=f"{base}/provider",
            location_url=f"{base}/location",
        )
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)
