"""A narrated walk over the platform's native API (`python -m osbp.backend.tour`).

Starts the platform on an ephemeral loopback port with a fresh temporary database, the test surface on and
the clock frozen, then walks the native flow over HTTP: Carolyn's Dental services → a day's availability →
a create with an Idempotency-Key → its replay → a refused double booking → Gus' Notary's SMS-verified
service (428 → send code → read it from the outbox → create with it) → read the appointment back. Exit
status 1 if any outcome differs from the expected one.
"""

from __future__ import annotations

import argparse
import tempfile
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx2
from rich.console import Console

from osbp.backend.serving import PlatformServer
from osbp.backend.settings import BackendSettings

__all__ = ["main"]

DAY = "2026-05-05"


class _Walk:
    def __init__(self, client: httpx2.Client, console: Console) -> None:
        self.client, self.console, self.failures = client, console, 0

    def step(self, title: str, response: httpx2.Response, expected: int, note: str = "") -> Any:
        ok = response.status_code == expected
        self.failures += not ok
        mark = "[green]✓[/]" if ok else f"[red]✗ expected {expected}[/]"
        body = response.json()
        code = f" {body['code']}" if isinstance(body, dict) and "code" in body else ""
        self.console.print(f"{mark} {title}: HTTP {response.status_code}{code} {note}")
        return body


def _walk(client: httpx2.Client, console: Console) -> int:
    walk = _Walk(client, console)
    dental = "/api/organizations/carolyns_dental"
    services = walk.step("Carolyn's Dental services", client.get(f"{dental}/services"), 200)["services"]
    for service in services:
        price = service["price"]
        console.print(
            f"    {service['name']}: {price['amount'] or price['kind']} {price['currency']}, "
            f"{service['duration_minutes']} min"
        )
    params = {
        "service_id": "carolyns_dental_cleaning",
        "date": DAY,
        "provider_id": "carolyns_dental_dr_reyes",
    }
    slots_response = client.get(f"{dental}/availability", params=params)
    slots = walk.step(
        f"cleaning availability on {DAY}",
        slots_response,
        200,
        f"(Deprecation: {slots_response.headers.get('deprecation')})",
    )["slots"]
    slot = slots[0]
    console.print(f"    {len(slots)} slots, first {slot['time']}–{slot['end_time']} {slot['time_zone']}")
    body = {
        "service_id": "carolyns_dental_cleaning",
        "location_id": slot["location_id"],
        "provider_id": slot["provider_id"],
        "date": slot["date"],
        "time": slot["time"],
        "customer": {"display_name": "Jane Customer", "phone": "+12125550199"},
    }
    first = client.post(f"{dental}/appointments", json=body, headers={"Idempotency-Key": "tour-1"})
    booked = walk.step("create with Idempotency-Key tour-1", first, 201)
    replay = client.post(f"{dental}/appointments", json=body, headers={"Idempotency-Key": "tour-1"})
    walk.step(
        "replay tour-1", replay, 201, f"(Idempotent-Replayed: {replay.headers.get('idempotent-replayed')})"
    )
    walk.failures += replay.headers.get("idempotent-replayed") != "true"
    double = client.post(f"{dental}/appointments", json=body, headers={"Idempotency-Key": "tour-2"})
    walk.step("same provider and time, new key", double, 409)
    gus = "/api/organizations/gus_notary"
    signing = {
        "service_id": "gus_notary_remote_signing",
        "location_id": "gus_notary_online",
        "provider_id": "gus_notary_gus",
        "date": DAY,
        "time": "10:00",
        "customer": {"display_name": "Sam Signer", "phone": "+12125550142"},
    }
    walk.step(
        "Gus' Notary remote signing without a code",
        client.post(f"{gus}/appointments", json=signing, headers={"Idempotency-Key": "tour-3"}),
        428,
    )
    walk.step(
        "send an SMS code",
        client.post(f"{gus}/verifications", json={"purpose": "booking:gus_notary", "phone": "+12125550142"}),
        202,
    )
    outbox = client.get("/_testing/outbox", params={"organization_id": "gus_notary"}).json()["messages"]
    console.print(f"    outbox → {outbox[-1]['to']}: {outbox[-1]['body']!r}")
    signing["verification_code"] = outbox[-1]["code"]
    verified = walk.step(
        "create with the code",
        client.post(f"{gus}/appointments", json=signing, headers={"Idempotency-Key": "tour-3"}),
        201,
    )
    read = walk.step("read the appointment", client.get(f"{gus}/appointments/{verified['id']}"), 200)
    console.print(
        f"    {read['id']}: {read['status']}, {read['date']} {read['time']} {read['time_zone']}, "
        f"verified by {read['verified_by']}; first booking {booked['id']} {booked['status']}"
    )
    console.print(
        "[bold green]all outcomes as expected[/]"
        if walk.failures == 0
        else f"[bold red]{walk.failures} unexpected outcome(s)[/]"
    )
    return 0 if walk.failures == 0 else 1


def main(argv: Sequence[str]) -> int:
    """Run the tour against a fresh platform; 0 when every outcome matched."""
    parser = argparse.ArgumentParser(prog="python -m osbp.backend.tour", description=__doc__.splitlines()[0])
    parser.add_argument("--now", default="2026-05-04T12:00:00Z", help="the frozen platform clock")
    args = parser.parse_args(list(argv))
    console = Console()
    with tempfile.TemporaryDirectory(prefix="osbp-tour-") as folder:
        settings = BackendSettings(
            db=str(Path(folder) / "tour.db"),
            port=0,
            enable_testing=True,
            now=datetime.fromisoformat(args.now),
            log_level="WARNING",
        )
        with PlatformServer(settings) as server, httpx2.Client(base_url=server.base_url) as client:
            console.print(f"[bold]Bookwell[/] on {server.base_url} (clock frozen at {args.now})")
            return _walk(client, console)


if __name__ == "__main__":
    import sys

    raise SystemExit(main(sys.argv[1:]))
