"""Read transactions look catalog rows up in the revision's snapshot: one load per change, never stale."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from osbp.backend.app import create_app
from osbp.backend.catalog import get_service
from osbp.backend.runtime import Runtime
from osbp.backend.settings import BackendSettings
from tests.support.bookwell import DAY, booking, create, make_settings
from tests.support.statements import statements

ORG = "carolyns_dental"
SERVICE = "carolyns_dental_cleaning"
AVAILABILITY = (
    f"/api/organizations/{ORG}/availability?service_id={SERVICE}&date={DAY}"
    "&location_id=carolyns_dental_midtown&provider_id=carolyns_dental_dr_reyes"
)
CATALOG_FROM = ("FROM organization", "FROM service", "FROM location", "FROM provider")


@pytest.fixture
def settings() -> BackendSettings:
    """The default test settings without the webhook worker: the queries of its start-up round would be
    counted among a request's own statements."""
    return make_settings(pause_webhooks=True)


def catalog_queries(sent: list[str]) -> list[str]:
    return [statement for statement in sent if any(table in statement for table in CATALOG_FROM)]


def slot_price(client: TestClient) -> str:
    response = client.get(AVAILABILITY)
    assert response.status_code == 200
    amount: str = response.json()["slots"][0]["price"]["amount"]
    return amount


def set_price(runtime: Runtime, amount: str) -> None:
    """The merchant edits its own database (the platform has no admin API)."""
    with runtime.db.write() as session:
        session.execute(
            text("UPDATE service SET price_amount = :amount WHERE id = :id"),
            {"amount": amount, "id": SERVICE},
        )


def test_repeated_availability_reads_query_no_catalog_row_until_it_changes(
    client: TestClient, runtime: Runtime
) -> None:
    """Platform choice: organization, service, location and provider come from the revision's snapshot."""
    slot_price(client)  # loads the snapshot
    with statements(runtime.db.engine) as sent:
        slot_price(client)
        slot_price(client)
    assert catalog_queries(sent) == []
    set_price(runtime, "98.00")
    with statements(runtime.db.engine) as sent:
        assert slot_price(client) == "98.00"
    assert catalog_queries(sent)  # a new revision: loaded afresh


def test_a_write_transaction_sees_its_own_uncommitted_catalog_change(runtime: Runtime) -> None:
    """Platform choice: writes query the rows (they may hold their own change); a rollback leaves no trace."""
    with runtime.db.read() as session:
        seeded = get_service(session, ORG, SERVICE).price_amount

    class Undo(Exception):
        pass

    try:
        with runtime.db.write() as session:
            session.execute(text("UPDATE service SET price_amount = '1.00' WHERE id = :id"), {"id": SERVICE})
            assert get_service(session, ORG, SERVICE).price_amount == "1.00"
            raise Undo
    except Undo:
        pass
    with runtime.db.read() as session:
        assert get_service(session, ORG, SERVICE).price_amount == seeded != "1.00"


def test_two_databases_at_the_same_revision_keep_their_own_catalogs(
    client: TestClient, runtime: Runtime
) -> None:
    """Platform choice: a snapshot belongs to one database, whatever its revision number."""
    other_app = create_app(make_settings())
    with TestClient(other_app) as other:
        other_runtime: Runtime = other_app.state.runtime
        set_price(runtime, "11.00")
        set_price(other_runtime, "22.00")
        assert (slot_price(client), slot_price(other)) == ("11.00", "22.00")
        assert (slot_price(client), slot_price(other)) == ("11.00", "22.00")
    other_runtime.db.dispose()


def test_a_repeated_catalog_read_runs_its_begin_and_revision_on_the_driver_cursor(
    client: TestClient, runtime: Runtime
) -> None:
    """Platform choice: a cached answer costs a BEGIN and one revision row, off SQLAlchemy statements."""
    service = f"/api/organizations/{ORG}/services/{SERVICE}"
    first = client.get(service)
    with statements(runtime.db.engine) as sent:
        again = client.get(service)
    assert again.status_code == first.status_code == 200
    assert again.content == first.content
    assert sent == []


def test_a_create_looks_the_catalog_up_in_its_revisions_snapshot_and_books_at_a_changed_price(
    client: TestClient, runtime: Runtime
) -> None:
    """Platform choice: a create (which never writes the catalog) reuses the loaded snapshot of the revision
    it sees, and after a catalog change it sees the new rows, never the old snapshot's."""
    assert client.get(AVAILABILITY).status_code == 200  # loads the snapshot of the current revision
    with statements(runtime.db.engine) as sent:
        first = create(client, ORG, booking(time="10:00"), key="snapshot-1")
    assert first.status_code == 201
    assert catalog_queries(sent) == []
    set_price(runtime, "99.00")
    with statements(runtime.db.engine) as sent:
        second = create(client, ORG, booking(time="11:00"), key="snapshot-2")
    assert second.status_code == 201
    assert second.json()["price"]["amount"] == "99.00"
    assert catalog_queries(sent) != []  # no snapshot of the new revision yet: the create queried
