"""The platform's validators: catalog ETags and versions, availability offer tokens, If-Match creates."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient

from tests.support.bookwell import DAY, booking, create

# The platform's rules hold on both engines (SQLite, PostgreSQL).
pytestmark = pytest.mark.both_engines

ORG = "/api/organizations/carolyns_dental"
SERVICE = ORG + "/services/carolyns_dental_cleaning"
CATALOG_READS = (ORG, SERVICE, ORG + "/services", "/api/organizations")


def _slot(client: TestClient, time: str = "10:00") -> tuple[dict[str, Any], str]:
    """The cleaning with Dr. Reyes at ``time`` on DAY as offered, and the answer's catalog version."""
    response = client.get(
        ORG + "/availability",
        params={
            "service_id": "carolyns_dental_cleaning",
            "date": DAY,
            "provider_id": "carolyns_dental_dr_reyes",
        },
    )
    assert response.status_code == 200
    slot = next(slot for slot in response.json()["slots"] if slot["time"] == time)
    return slot, response.headers["bookwell-catalog-revision"]


def _change_price(client: TestClient, amount: str) -> None:
    response = client.post(
        "/_testing/service",
        json={
            "organization_id": "carolyns_dental",
            "service_id": "carolyns_dental_cleaning",
            "price_amount": amount,
        },
    )
    assert response.status_code == 200


def _create_if(client: TestClient, offer_token: str, key: str = "k1") -> Any:
    """The default create, conditional on ``offer_token``."""
    headers = {"Idempotency-Key": key, "If-Match": f'"{offer_token}"'}
    return client.post(ORG + "/appointments", json=booking(), headers=headers)


def test_catalog_reads_answer_304_to_their_own_etag(client):
    """RFC 9110 §13.1.2: If-None-Match with the current strong ETag answers 304 without a body."""
    for path in CATALOG_READS:
        first = client.get(path)
        assert first.status_code == 200
        tag = first.headers["etag"]
        assert tag.startswith('"')
        assert tag.endswith('"')
        again = client.get(path, headers={"If-None-Match": tag})
        assert again.status_code == 304, path
        assert again.content == b""
        assert again.headers["etag"] == tag
        assert again.headers["bookwell-catalog-revision"] == first.headers["bookwell-catalog-revision"]


def test_a_catalog_change_answers_the_new_body_to_the_old_etag(client):
    """RFC 9110 §13.1.2: a changed representation gets a new ETag, so the stale one is answered in full."""
    first = client.get(SERVICE)
    _change_price(client, "130.00")
    again = client.get(SERVICE, headers={"If-None-Match": first.headers["etag"]})
    assert again.status_code == 200
    assert again.json()["price"]["amount"] == "130.00"
    assert again.headers["etag"] != first.headers["etag"]
    assert again.headers["bookwell-catalog-revision"] != first.headers["bookwell-catalog-revision"]


def test_an_unchanged_resource_keeps_its_etag_across_unrelated_catalog_changes(client):
    """Platform choice: the ETag is a digest of the body, so only a change to the resource itself moves it."""
    first = client.get(ORG + "/services/carolyns_dental_checkup")
    _change_price(client, "130.00")
    again = client.get(
        ORG + "/services/carolyns_dental_checkup", headers={"If-None-Match": first.headers["etag"]}
    )
    assert again.status_code == 304
    assert again.headers["bookwell-catalog-revision"] != first.headers["bookwell-catalog-revision"]


def test_availability_carries_the_catalog_version_and_a_token_per_slot(client):
    """Platform choice: availability's catalog version equals the catalog reads' at the same catalog."""
    slot, version = _slot(client)
    assert version == client.get(ORG).headers["bookwell-catalog-revision"]
    assert slot["offer_token"].startswith("ofr_")
    other, _ = _slot(client, "11:00")
    assert other["offer_token"] != slot["offer_token"]


def test_a_create_with_the_current_offer_token_books(client):
    """RFC 9110 §13.1.1: If-Match with the current offer token lets the create through."""
    slot, _ = _slot(client)
    assert _create_if(client, slot["offer_token"]).status_code == 201


def test_a_create_with_a_stale_offer_token_is_refused_412_and_books_nothing(client):
    """RFC 9110 §13.1.1: a price change after the offer was read fails the If-Match inside the create."""
    slot, _ = _slot(client)
    _change_price(client, "130.00")
    response = _create_if(client, slot["offer_token"])
    assert response.status_code == 412
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["code"] == "offer_changed"
    assert client.get("/_testing/stats").json()["appointments"] == 0
    fresh, _ = _slot(client)
    retried = _create_if(client, fresh["offer_token"])
    assert retried.status_code == 201
    assert retried.json()["price"]["amount"] == "130.00"


def test_a_replay_answers_before_the_if_match_check(client):
    """IETF Idempotency-Key draft: a key already bound to its 201 replays it, whatever changed since."""
    slot, _ = _slot(client)
    first = _create_if(client, slot["offer_token"])
    assert first.status_code == 201
    _change_price(client, "130.00")
    replay = _create_if(client, slot["offer_token"])
    assert replay.status_code == 201
    assert replay.headers["idempotent-replayed"] == "true"
    assert replay.json() == first.json()


def test_a_create_without_if_match_is_unconditional(client):
    """RFC 9110 §13.1.1: the precondition is the client's choice; without it the create books as before."""
    _change_price(client, "130.00")
    assert create(client, "carolyns_dental", booking()).status_code == 201


def test_renaming_a_provider_changes_every_offer_token(client):
    """Platform choice: the offer token covers the names an offer is shown with (here the provider's)."""
    slot, version = _slot(client)
    renamed = client.post(
        "/_testing/provider",
        json={
            "organization_id": "carolyns_dental",
            "provider_id": "carolyns_dental_dr_reyes",
            "name": "Dr. R",
        },
    )
    assert renamed.status_code == 200
    fresh, fresh_version = _slot(client)
    assert (fresh["provider_name"], fresh_version != version) == ("Dr. R", True)
    assert fresh["offer_token"] != slot["offer_token"]


def test_renaming_a_location_changes_every_offer_token(client):
    """Platform choice: the offer token covers the names an offer is shown with (here the location's)."""
    slot, version = _slot(client)
    renamed = client.post(
        "/_testing/location",
        json={
            "organization_id": "carolyns_dental",
            "location_id": "carolyns_dental_midtown",
            "name": "Uptown",
        },
    )
    assert renamed.json() == {"id": "carolyns_dental_midtown", "changed": ["name"]}
    fresh, fresh_version = _slot(client)
    assert (fresh["location_name"], fresh_version != version) == ("Uptown", True)
    assert fresh["offer_token"] != slot["offer_token"]


def test_changing_fees_and_the_cancellation_window_is_seen_by_the_next_read(client):
    """Platform choice: the service change surface edits each policy field the conformance battery binds."""
    change = {
        "organization_id": "carolyns_dental",
        "service_id": "carolyns_dental_cleaning",
        "cancellation_fee": "12.34",
        "no_show_fee": "56.78",
        "cancellation_window_minutes": 420,
    }
    answer = client.post("/_testing/service", json=change)
    assert answer.json()["changed"] == ["cancellation_fee", "cancellation_window_minutes", "no_show_fee"]
    policy = client.get(SERVICE).json()["policy"]
    cancellation = policy["cancellation"]
    assert (cancellation["fee"]["amount"], cancellation["window_minutes"]) == ("12.34", 420)
    assert policy["no_show_fee"]["amount"] == "56.78"


def test_the_service_change_surface_refuses_an_unknown_service(client):
    """Platform choice: the test surface answers an unknown id with the catalog's own 404."""
    response = client.post(
        "/_testing/service",
        json={"organization_id": "carolyns_dental", "service_id": "nope", "price_amount": "1.00"},
    )
    assert response.status_code == 404
    assert response.json()["code"] == "service_not_found"
