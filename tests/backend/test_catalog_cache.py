"""Catalog answers are reused per catalog revision and never outlive a change, whoever makes it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from osbp.backend.app import create_app
from osbp.backend.catalog_cache import CATALOG_TABLES, CatalogCache, catalog_revision
from osbp.backend.problems import ProblemError
from osbp.backend.runtime import Runtime
from tests.support.bookwell import booking, make_settings

SERVICE = "/api/organizations/carolyns_dental/services/carolyns_dental_cleaning"
ORGANIZATION = "/api/organizations/carolyns_dental"
SERVICES = "/api/organizations/carolyns_dental/services"


def revision(runtime: Runtime) -> int:
    with runtime.db.read() as session:
        return catalog_revision(session)


def set_price(runtime: Runtime, amount: str) -> None:
    """The merchant edits its own database (the platform has no admin API)."""
    with runtime.db.write() as session:
        session.execute(
            text("UPDATE service SET price_amount = :amount WHERE id = 'carolyns_dental_cleaning'"),
            {"amount": amount},
        )


def price(client: TestClient) -> str:
    response = client.get(SERVICE)
    assert response.status_code == 200
    amount: str = response.json()["price"]["amount"]
    return amount


def test_a_repeated_read_is_byte_identical(client: TestClient) -> None:
    first, second = client.get(SERVICE), client.get(SERVICE)
    assert first.status_code == second.status_code == 200
    assert first.content == second.content
    # Only the body is shared: each response still gets its own request id.
    assert first.headers["x-request-id"] != second.headers["x-request-id"]


def test_a_direct_database_edit_shows_on_the_next_read(client: TestClient, runtime: Runtime) -> None:
    """The cached answer must never hide the merchant's own edit."""
    seeded = price(client)
    set_price(runtime, "99.00")
    assert price(client) == "99.00" != seeded
    listed = {item["id"]: item for item in client.get(SERVICES).json()["services"]}
    assert listed["carolyns_dental_cleaning"]["price"]["amount"] == "99.00"


def test_reset_brings_the_seeded_catalog_back(client: TestClient, runtime: Runtime) -> None:
    seeded = price(client)
    set_price(runtime, "1.00")
    assert price(client) == "1.00"
    assert client.post("/_testing/reset").status_code == 200
    assert price(client) == seeded


def test_an_edit_by_another_process_on_the_file_shows_too(tmp_path: Path) -> None:
    """The counter is bumped by a trigger in the database, so any connection's change counts."""
    path = tmp_path / "platform.db"
    app = create_app(make_settings(db=str(path)))
    with TestClient(app) as client:
        assert client.get(ORGANIZATION).json()["name"] == "Carolyn's Dental"
        with sqlite3.connect(path) as other:
            other.execute("UPDATE organization SET name = ? WHERE id = ?", ("Dental Care", "carolyns_dental"))
        assert client.get(ORGANIZATION).json()["name"] == "Dental Care"
    app.state.runtime.db.dispose()


@pytest.mark.parametrize("table", CATALOG_TABLES)
def test_every_insert_update_and_delete_of_a_catalog_table_bumps_the_revision(
    runtime: Runtime, table: str
) -> None:
    with runtime.db.read() as session:
        row = dict(session.connection().execute(text(f"SELECT * FROM {table} LIMIT 1")).mappings().one())  # noqa: S608
    columns = ", ".join(row)
    placeholders = ", ".join(f":{name}" for name in row)
    statements = [
        (f"UPDATE {table} SET id = id WHERE id = :id", {"id": row["id"]}),  # noqa: S608
        (f"INSERT INTO {table} ({columns}) VALUES ({placeholders})", row | {"id": "copy_" + row["id"]}),  # noqa: S608
        (f"DELETE FROM {table} WHERE id = :id", {"id": "copy_" + row["id"]}),  # noqa: S608
    ]
    for statement, parameters in statements:
        before = revision(runtime)
        with runtime.db.write() as session:
            session.execute(text("PRAGMA foreign_keys = OFF"))
            session.execute(text(statement), parameters)
        assert revision(runtime) == before + 1, statement


def test_appointments_do_not_touch_the_catalog_revision(client: TestClient, runtime: Runtime) -> None:
    before = revision(runtime)
    headers = {"Idempotency-Key": "rev-1"}
    response = client.post("/api/organizations/carolyns_dental/appointments", json=booking(), headers=headers)
    assert response.status_code == 201
    assert revision(runtime) == before


def test_the_cache_renders_once_per_revision_and_never_keeps_a_problem() -> None:
    """Platform choice: a refusal raised while rendering (an unknown id) passes through and is not kept."""
    cache = CatalogCache()
    renders: list[str] = []

    def render(body: bytes) -> bytes:
        renders.append("render")
        return body

    def missing() -> bytes:
        renders.append("render")
        raise ProblemError("service_not_found", "No such service.")

    assert cache.get_or_render(1, ("service", "a"), lambda: render(b"one")) == b"one"
    assert cache.get_or_render(1, ("service", "a"), lambda: render(b"other")) == b"one"
    assert len(renders) == 1
    assert cache.get_or_render(2, ("service", "a"), lambda: render(b"two")) == b"two"
    assert len(renders) == 2
    for _ in range(2):
        with pytest.raises(ProblemError) as refused:
            cache.get_or_render(2, ("service", "b"), missing)
        assert refused.value.code == "service_not_found"
    assert len(renders) == 4
    assert cache.get_or_render(2, ("service", "b"), lambda: render(b"found")) == b"found"


def test_an_answer_from_an_older_snapshot_is_not_kept_for_the_newer_revision() -> None:
    """A reader still on revision 1 finishes after a reader on revision 2 cleared the cache."""
    cache = CatalogCache()

    def late_render() -> bytes:
        # While this (revision 1) reader renders, a revision 2 reader arrives.
        assert cache.get_or_render(2, ("other",), lambda: b"new") == b"new"
        return b"old"

    assert cache.get_or_render(1, ("service", "a"), late_render) == b"old"
    assert cache.get_or_render(2, ("service", "a"), lambda: b"fresh") == b"fresh"
