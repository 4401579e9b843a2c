"""Several `osbp backend` processes on one PostgreSQL database serve one platform: races and a kill -9."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest
from sqlmodel import col, func, select

from osbp.backend.db import Database
from osbp.backend.models import Appointment
from osbp.backend.process import PlatformProcess
from osbp.backend.schema import upgrade
from osbp.bench.backend import distinct_slots
from tests.support.bookwell import CREATE_PATH, NOW, booking, race
from tests.support.postgres import PostgresServer
from tests.support.postgres import database as postgres_database

pytestmark = pytest.mark.integration

ORG = "carolyns_dental"
#: An organization whose remote signing needs an SMS code.
VERIFYING = "gus_notary"
VERIFIED_BOOKING = booking(
    service_id="gus_notary_remote_signing", location_id="gus_notary_online", provider_id="gus_notary_gus"
)


@pytest.fixture
def database(postgres_url: str) -> Iterator[Database]:
    """A fresh PostgreSQL database, migrated, as the platform processes' shared store."""
    db = Database(postgres_url)
    upgrade(db)
    yield db
    db.dispose()


def _platforms(stack: ExitStack, url: str, count: int, **settings: Any) -> list[PlatformProcess]:
    """``count`` platform processes on ``url``, started side by side (each takes seconds to import)."""
    values = {"db": url, "now": NOW, "rate_limit_quota": 100_000, "enable_testing": True} | settings
    platforms = [PlatformProcess(**values) for _ in range(count)]
    with ThreadPoolExecutor(count) as pool:
        started = list(pool.map(PlatformProcess.start, platforms))
    for platform in started:
        stack.callback(platform.stop)
    return started


@dataclass
class Shared:
    """Four platform processes on one migrated PostgreSQL database, reset to seeds before each test."""

    db: Database
    base_urls: list[str]


@pytest.fixture(scope="module")
def four_processes(postgres_server: PostgresServer) -> Iterator[Shared]:
    """One database and four processes for the module (starting processes is the slow part)."""
    with postgres_database(postgres_server) as url, ExitStack() as stack:
        db = Database(url)
        stack.callback(db.dispose)
        upgrade(db)
        platforms = _platforms(stack, url, 4)
        yield Shared(db, [platform.base_url for platform in platforms])


@pytest.fixture
def shared(four_processes: Shared) -> Shared:
    """The module's four processes, their database back to seeds (the reset reaches the shared rows)."""
    with httpx2.Client(base_url=four_processes.base_urls[0]) as client:
        assert client.post("/_testing/reset").status_code == 200
    return four_processes


def _active(db: Database) -> list[Appointment]:
    with db.read() as session:
        query = select(Appointment).where(col(Appointment.status).in_(("pending", "confirmed")))
        return list(session.exec(query))


def test_fifty_clients_across_four_processes_booking_one_providers_overlapping_times_make_one_booking(shared):
    """Platform choice: no double-selling across processes: exactly one 201, 49 × 409, one active row."""
    times = ["10:00", "10:15", "10:30"]  # 45-minute cleanings: every pair overlaps
    bodies = [
        booking(
            time=times[index % 3],
            customer={"display_name": f"Racer {index}", "phone": f"+121255501{index:02d}"},
        )
        for index in range(50)
    ]
    statuses = race(shared.base_urls, bodies, [f"race-{index}" for index in range(50)])
    assert sorted(statuses) == [201] + [409] * 49
    assert len(_active(shared.db)) == 1


def test_one_idempotency_key_sent_to_four_processes_at_once_books_once(shared):
    """IETF idempotency-key draft: concurrent duplicates on different processes all answer the one 201."""
    statuses = race(shared.base_urls, [booking()] * 12, ["same-key"] * 12)
    assert statuses == [201] * 12
    assert len(_active(shared.db)) == 1


def test_a_catalog_change_made_through_one_process_is_served_by_the_other(shared):
    """Platform choice: the catalog revision lives in the database, so every process's cache follows it."""
    path = f"/api/organizations/{ORG}/services/carolyns_dental_cleaning"
    change = {"organization_id": ORG, "service_id": "carolyns_dental_cleaning", "price_amount": "999.00"}
    first, second = shared.base_urls[:2]
    with httpx2.Client(base_url=first) as one, httpx2.Client(base_url=second) as other:
        before = other.get(path).json()["price"]["amount"]
        assert one.post("/_testing/service", json=change).status_code == 200
        after = other.get(path).json()["price"]["amount"]
    assert (before, after) == ("120.00", "999.00")


def test_a_code_sent_through_one_process_is_accepted_by_a_create_on_another(shared):
    """Platform choice: verification challenges and the outbox are rows, shared by every process."""
    phone = "+12125550177"
    first, second = shared.base_urls[:2]
    with httpx2.Client(base_url=first) as one, httpx2.Client(base_url=second) as other:
        sent = one.post(
            f"/api/organizations/{VERIFYING}/verifications",
            json={"purpose": f"booking:{VERIFYING}", "phone": phone},
        )
        assert sent.status_code == 202
        outbox = other.get("/_testing/outbox", params={"organization_id": VERIFYING}).json()
        code = outbox["messages"][-1]["code"]
        customer = {"display_name": "Vera", "phone": phone}
        body = {**VERIFIED_BOOKING, "customer": customer, "verification_code": code}
        created = other.post(
            f"/api/organizations/{VERIFYING}/appointments", json=body, headers={"Idempotency-Key": "verified"}
        )
    assert created.status_code == 201, created.text
    assert created.json()["verified_by"] == "sms"


def test_a_platform_process_killed_mid_create_loses_no_acknowledged_booking_and_makes_none_twice(
    database, postgres_url
):
    """Platform choice: kill -9 during 50 creates; retried with the same keys on a new process, every
    acknowledged booking is there exactly once and every key holds exactly one appointment."""
    with ExitStack() as stack:
        (victim,) = _platforms(stack, postgres_url, 1)
        with httpx2.Client(base_url=victim.base_url, timeout=60) as client:
            slots = distinct_slots(client, 50)
        bodies = [
            booking(
                location_id=slot["location_id"],
                provider_id=slot["provider_id"],
                date=slot["date"],
                time=slot["time"],
                customer={"display_name": f"Kill {index}", "phone": f"+121255502{index:02d}"},
            )
            for index, slot in enumerate(slots)
        ]
        acknowledged: dict[int, str] = {}
        lock = threading.Lock()
        some_done = threading.Event()
        barrier = threading.Barrier(len(bodies))

        def book(index: int) -> None:
            with httpx2.Client(base_url=victim.base_url, timeout=60) as client:
                barrier.wait(timeout=30)
                try:
                    response = client.post(
                        CREATE_PATH, json=bodies[index], headers={"Idempotency-Key": f"k-{index}"}
                    )
                except httpx2.TransportError:
                    return  # killed before it answered: the client never learnt the outcome
            if response.status_code == 201:
                with lock:
                    acknowledged[index] = response.json()["id"]
                    if len(acknowledged) >= 5:
                        some_done.set()

        threads = [threading.Thread(target=book, args=(index,)) for index in range(len(bodies))]
        for thread in threads:
            thread.start()
        assert some_done.wait(timeout=120)
        os.kill(victim.pid, signal.SIGKILL)
        for thread in threads:
            thread.join(timeout=120)
        (restarted,) = _platforms(stack, postgres_url, 1)
        with httpx2.Client(base_url=restarted.base_url, timeout=60) as client:
            retried = [
                client.post(CREATE_PATH, json=body, headers={"Idempotency-Key": f"k-{index}"})
                for index, body in enumerate(bodies)
            ]
    assert 5 <= len(acknowledged) < len(bodies), "the kill landed after every create had finished"
    assert [response.status_code for response in retried] == [201] * len(bodies)
    for index, appointment_id in acknowledged.items():
        assert retried[index].json()["id"] == appointment_id
        assert retried[index].headers["idempotent-replayed"] == "true"
    active = _active(database)
    assert len(active) == len(bodies)
    assert len({appointment.id for appointment in active}) == len(bodies)
    with database.read() as session:
        total = session.exec(select(func.count()).select_from(Appointment)).one()
    assert total == len(bodies)
