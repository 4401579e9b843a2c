"""The OpenAPI document states exactly what the platform does, and every documented answer happens.

`PROVOKE` is the table of every route-specific (operation, status, code) the document lists, each with a
way to make the platform answer it; the edge's answers (unsupported_version, rate_limited, not_found for
a refused path segment) are driven on every operation generically. Each answer is checked against the
document: status, `code`, body schema and required headers. A documented answer missing from the table,
or a table row the document does not list, fails `test_the_table_covers_exactly_the_documented_answers`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
import schemathesis
from fastapi.testclient import TestClient

from osbp.backend.app import create_app
from osbp.backend.openapi import EDGE_CODES, FAULT_CODES
from tests.support.bookwell import DAY, booking, create, make_settings

ORG = "carolyns_dental"
ORG_URL = f"/api/organizations/{ORG}"
GUS = "/api/organizations/gus_notary"
NOPE = "/api/organizations/nope"
# A path template's parameters filled with seed ids (the edge answers before any lookup).
_FILLED = {
    "organization_id": ORG,
    "service_id": "carolyns_dental_cleaning",
    "appointment_id": "apt_none",
    "endpoint_id": "whe_none",
}
_GENERIC = {*EDGE_CODES, *FAULT_CODES, "not_found"}


def _document(app: Any) -> dict[str, Any]:
    document: dict[str, Any] = app.openapi()
    return document


def _operations(document: dict[str, Any]) -> list[tuple[str, str]]:
    return [(method.upper(), path) for path, item in document["paths"].items() for method in item]


def _documented(document: dict[str, Any]) -> set[tuple[str, str, int, str | None]]:
    """Every (method, path, status, code) the document lists; `code` is None for a success."""
    found: set[tuple[str, str, int, str | None]] = set()
    for method, path in _operations(document):
        for status, response in document["paths"][path][method.lower()]["responses"].items():
            problem = response.get("content", {}).get("application/problem+json")
            if problem is None:
                found.add((method, path, int(status), None))
                continue
            for code in problem["schema"]["allOf"][1]["properties"]["code"]["enum"]:
                found.add((method, path, int(status), code))
    return found


def _key() -> dict[str, str]:
    _key.counter += 1  # type: ignore[attr-defined]
    return {"Idempotency-Key": f"provoke-{_key.counter}"}  # type: ignore[attr-defined]


_key.counter = 0  # type: ignore[attr-defined]


def _book(client: TestClient, time: str = "10:00") -> str:
    response = create(client, ORG, booking(time=time), key=_key()["Idempotency-Key"])
    assert response.status_code == 201, response.text
    appointment_id: str = response.json()["id"]
    return appointment_id


def _etag(client: TestClient, url: str) -> dict[str, str]:
    return {"If-None-Match": client.get(url).headers["ETag"]}


def _post_create(body: dict[str, Any], *, org: str = ORG_URL, **headers: str) -> Callable[[TestClient], Any]:
    return lambda client: client.post(f"{org}/appointments", json=body, headers=_key() | headers)


def _send(body: dict[str, Any], org: str = GUS) -> Callable[[TestClient], Any]:
    return lambda client: client.post(f"{org}/verifications", json=body)


def _reused(client: TestClient) -> Any:
    headers = _key()
    client.post(f"{ORG_URL}/appointments", json=booking(time="11:00"), headers=headers)
    return client.post(f"{ORG_URL}/appointments", json=booking(time="11:15"), headers=headers)


def _slot_taken(client: TestClient) -> Any:
    _book(client, "12:00")
    return client.post(f"{ORG_URL}/appointments", json=booking(time="12:00"), headers=_key())


def _send_limited(client: TestClient) -> Any:
    body = {"purpose": "booking:gus_notary", "phone": "+12125550142"}
    for _ in range(5):
        assert client.post(f"{GUS}/verifications", json=body).status_code == 202
    return client.post(f"{GUS}/verifications", json=body)


def _cancelled_after_its_end(client: TestClient) -> Any:
    appointment_id = _book(client, "13:00")
    client.post("/_testing/clock", json={"now": f"{DAY}T18:30:00Z"})  # 14:30 in New York: ended
    return client.post(f"{ORG_URL}/appointments/{appointment_id}/cancel")


def _no_show(client: TestClient) -> Any:
    appointment_id = _book(client, "14:00")
    client.post("/_testing/clock", json={"now": f"{DAY}T18:30:00Z"})  # 14:30 in New York: started
    return client.post(f"{ORG_URL}/appointments/{appointment_id}/no-show")


def _on_booked(verb: str, path: str, **body: Any) -> Callable[[TestClient], Any]:
    return lambda client: client.request(verb, path.format(id=_book(client, "15:00")), json=body or None)


_MERCHANT = ORG_URL + "/merchant/appointments/{id}/"


def _merchant_on_started(action: str) -> Callable[[TestClient], Any]:
    """The merchant `action` on a confirmed appointment whose start has passed."""

    def provoke(client: TestClient) -> Any:
        appointment_id = _book(client, "14:00")
        client.post("/_testing/clock", json={"now": f"{DAY}T18:30:00Z"})  # 14:30 in New York: started
        return client.post(_MERCHANT.format(id=appointment_id) + action)

    return provoke


def _merchant_on_cancelled(action: str, **body: Any) -> Callable[[TestClient], Any]:
    """The merchant `action` on an appointment the customer cancelled."""

    def provoke(client: TestClient) -> Any:
        appointment_id = _book(client, "13:00")
        client.post(f"{ORG_URL}/appointments/{appointment_id}/cancel")
        return client.post(_MERCHANT.format(id=appointment_id) + action, json=body or None)

    return provoke


def _merchant_on_completed(client: TestClient) -> Any:
    appointment_id = _book(client, "13:00")
    client.post(
        "/_testing/appointment-status",
        json=_STATUS_BODY | {"booking_id": appointment_id, "status": "completed"},
    )
    return client.post(_MERCHANT.format(id=appointment_id) + "cancel")


def _reschedule_onto_taken(client: TestClient) -> Any:
    _book(client, "12:00")
    moving = _book(client, "13:00")
    return client.post(_MERCHANT.format(id=moving) + "reschedule", json={"date": DAY, "time": "12:00"})


_CHANGE = ORG_URL + "/appointments/{id}/"


def _slot(time: str, provider_id: str = "carolyns_dental_dr_reyes", **fields: str) -> dict[str, str]:
    """A customer reschedule's body: the new slot."""
    return {
        "location_id": "carolyns_dental_midtown",
        "provider_id": provider_id,
        "date": DAY,
        "time": time,
    } | fields


def _reschedule(time: str = "16:00", **fields: str) -> Callable[[TestClient], Any]:
    """The customer's reschedule of a fresh 15:00 appointment to ``time`` (or another slot's ``fields``)."""
    return lambda c: c.post(
        _CHANGE.format(id=_book(c, "15:00")) + "reschedule", json=_slot(time, **fields), headers=_key()
    )


def _change_reused(operation: str) -> Callable[[TestClient], Any]:
    """A create's Idempotency-Key sent again with a cancel or reschedule of that appointment."""

    def provoke(client: TestClient) -> Any:
        headers = _key()
        created = client.post(f"{ORG_URL}/appointments", json=booking(time="11:00"), headers=headers)
        body = _slot("16:00") if operation == "reschedule" else None
        return client.post(_CHANGE.format(id=created.json()["id"]) + operation, json=body, headers=headers)

    return provoke


def _stale(operation: str) -> Callable[[TestClient], Any]:
    """A cancel or reschedule whose If-Match is the ETag of the appointment before a merchant moved it."""

    def provoke(client: TestClient) -> Any:
        appointment_id = _book(client, "13:00")
        etag = client.get(_CHANGE.format(id=appointment_id) + "change-quote").headers["ETag"]
        client.post(_MERCHANT.format(id=appointment_id) + "reschedule", json={"date": DAY, "time": "13:30"})
        body = _slot("16:00") if operation == "reschedule" else None
        return client.post(
            _CHANGE.format(id=appointment_id) + operation, json=body, headers=_key() | {"If-Match": etag}
        )

    return provoke


def _reschedule_cancelled(client: TestClient) -> Any:
    appointment_id = _book(client, "13:00")
    client.post(_CHANGE.format(id=appointment_id) + "cancel")
    return client.post(_CHANGE.format(id=appointment_id) + "reschedule", json=_slot("16:00"), headers=_key())


def _customer_reschedule_onto_taken(client: TestClient) -> Any:
    _book(client, "12:00")
    moving = _book(client, "13:00")
    return client.post(_CHANGE.format(id=moving) + "reschedule", json=_slot("12:00"), headers=_key())


def _reschedule_to_ineligible(client: TestClient) -> Any:
    booked = create(client, ORG, booking(service_id="carolyns_dental_crown", time="13:00"), key="crown")
    return client.post(
        _CHANGE.format(id=booked.json()["id"]) + "reschedule",
        json=_slot("16:00", provider_id="carolyns_dental_dr_okafor"),
        headers=_key(),
    )


_LOOPBACK_HOOK = {"url": "http://127.0.0.1:9/bookwell-events"}


def _register(client: TestClient) -> str:
    response = client.post(f"{ORG_URL}/webhook-endpoints", json=_LOOPBACK_HOOK)
    assert response.status_code == 201, response.text
    endpoint_id: str = response.json()["id"]
    return endpoint_id


def _register_self(client: TestClient) -> Any:
    # A TestClient platform listens nowhere: record the address the URL names as its own, as serving does.
    client.app.state.runtime.own_addresses.add(("127.0.0.1", 8400))  # type: ignore[attr-defined]
    return client.post(f"{ORG_URL}/webhook-endpoints", json={"url": "http://localhost:8400/api/health"})


def _on_registered(verb: str) -> Callable[[TestClient], Any]:
    return lambda client: client.request(verb, f"{ORG_URL}/webhook-endpoints/{_register(client)}")


def _after_sunset(client: TestClient) -> Any:
    client.post("/_testing/clock", json={"now": "2032-10-01T00:00:00Z"})
    return client.get(_AVAILABILITY)


def _merchant_rows(
    action: str, body: dict[str, str] | None = None
) -> dict[tuple[str, str, int, str | None], Callable[[TestClient], Any]]:
    """The two 404s every merchant action answers."""
    return {
        ("POST", f"{_MERCHANT_T}/{action}", 404, "organization_not_found"): lambda c: c.post(
            f"{NOPE}/merchant/appointments/apt_none/{action}", json=body
        ),
        ("POST", f"{_MERCHANT_T}/{action}", 404, "appointment_not_found"): lambda c: c.post(
            f"{ORG_URL}/merchant/appointments/apt_none/{action}", json=body
        ),
    }


_REMOTE: dict[str, Any] = {
    "service_id": "gus_notary_remote_signing",
    "location_id": "gus_notary_online",
    "provider_id": "gus_notary_gus",
}
_STATUS_BODY = {"organization_id": ORG, "booking_id": "apt_none", "status": "cancelled"}
_TESTING_SERVICE = {"organization_id": ORG, "service_id": "carolyns_dental_cleaning", "name": "Cleaning"}
_TESTING_PROVIDER = {"organization_id": ORG, "provider_id": "carolyns_dental_dr_reyes", "name": "Dr. R."}
_TESTING_LOCATION = {"organization_id": ORG, "location_id": "carolyns_dental_midtown", "name": "Midtown"}
_AVAILABILITY = f"{ORG_URL}/availability?service_id=carolyns_dental_cleaning&date={DAY}"
_ORGS = "/api/organizations"
_ORG_T = "/api/organizations/{organization_id}"
_APT_T = _ORG_T + "/appointments/{appointment_id}"
_MERCHANT_T = _ORG_T + "/merchant/appointments/{appointment_id}"
_HOOKS_T = _ORG_T + "/webhook-endpoints"
_HOOK_T = _HOOKS_T + "/{endpoint_id}"
_ERROR_PROFILE = {"rules": [{"mode": "error", "status": 503}]}

#: (method, path template, status, code) -> how to make the platform answer it.
PROVOKE: dict[tuple[str, str, int, str | None], Callable[[TestClient], Any]] = {
    ("GET", _ORGS, 200, None): lambda c: c.get(_ORGS),
    ("GET", _ORGS, 304, None): lambda c: c.get(_ORGS, headers=_etag(c, _ORGS)),
    ("GET", _ORG_T, 200, None): lambda c: c.get(ORG_URL),
    ("GET", _ORG_T, 304, None): lambda c: c.get(ORG_URL, headers=_etag(c, ORG_URL)),
    ("GET", _ORG_T, 404, "organization_not_found"): lambda c: c.get(NOPE),
    ("GET", _ORG_T + "/services", 200, None): lambda c: c.get(f"{ORG_URL}/services"),
    ("GET", _ORG_T + "/services", 304, None): lambda c: c.get(
        f"{ORG_URL}/services", headers=_etag(c, f"{ORG_URL}/services")
    ),
    ("GET", _ORG_T + "/services", 404, "organization_not_found"): lambda c: c.get(f"{NOPE}/services"),
    ("GET", _ORG_T + "/services/{service_id}", 200, None): lambda c: c.get(
        f"{ORG_URL}/services/carolyns_dental_cleaning"
    ),
    ("GET", _ORG_T + "/services/{service_id}", 304, None): lambda c: c.get(
        f"{ORG_URL}/services/carolyns_dental_cleaning",
        headers=_etag(c, f"{ORG_URL}/services/carolyns_dental_cleaning"),
    ),
    ("GET", _ORG_T + "/services/{service_id}", 404, "organization_not_found"): lambda c: c.get(
        f"{NOPE}/services/x"
    ),
    ("GET", _ORG_T + "/services/{service_id}", 404, "service_not_found"): lambda c: c.get(
        f"{ORG_URL}/services/nope"
    ),
    ("GET", _ORG_T + "/availability", 200, None): lambda c: c.get(_AVAILABILITY),
    ("GET", _ORG_T + "/availability", 400, "invalid_request"): lambda c: c.get(
        f"{ORG_URL}/availability?service_id=carolyns_dental_cleaning&date=2026-02-30"
    ),
    ("GET", _ORG_T + "/availability", 404, "organization_not_found"): lambda c: c.get(
        f"{NOPE}/availability?service_id=x&date={DAY}"
    ),
    ("GET", _ORG_T + "/availability", 404, "service_not_found"): lambda c: c.get(
        f"{ORG_URL}/availability?service_id=nope&date={DAY}"
    ),
    ("GET", _ORG_T + "/availability", 404, "location_not_found"): lambda c: c.get(
        f"{_AVAILABILITY}&location_id=nope"
    ),
    ("GET", _ORG_T + "/availability", 404, "provider_not_found"): lambda c: c.get(
        f"{_AVAILABILITY}&provider_id=nope"
    ),
    ("GET", _ORG_T + "/availability", 410, "endpoint_retired"): _after_sunset,
    ("POST", _ORG_T + "/verifications", 202, None): _send(
        {"purpose": "booking:gus_notary", "phone": "+12125550142"}
    ),
    ("POST", _ORG_T + "/verifications", 400, "invalid_request"): _send({}),
    ("POST", _ORG_T + "/verifications", 400, "invalid_contact"): _send(
        {"purpose": "booking:gus_notary", "phone": "555"}
    ),
    ("POST", _ORG_T + "/verifications", 400, "invalid_purpose"): _send(
        {"purpose": "booking:other", "phone": "+12125550142"}
    ),
    ("POST", _ORG_T + "/verifications", 404, "organization_not_found"): _send(
        {"purpose": "booking:nope", "phone": "+12125550142"}, NOPE
    ),
    ("POST", _ORG_T + "/verifications", 429, "verification_send_limited"): _send_limited,
    ("POST", _ORG_T + "/appointments", 201, None): _post_create(booking()),
    ("POST", _ORG_T + "/appointments", 400, "invalid_request"): _post_create({}),
    ("POST", _ORG_T + "/appointments", 400, "invalid_contact"): _post_create(
        booking(customer={"display_name": "Jane", "phone": "555"})
    ),
    ("POST", _ORG_T + "/appointments", 400, "idempotency_key_missing"): lambda c: create(
        c, ORG, booking(), key=None
    ),
    ("POST", _ORG_T + "/appointments", 400, "verification_failed"): _post_create(
        booking(**_REMOTE, verification_code="000000"), org=GUS
    ),
    ("POST", _ORG_T + "/appointments", 404, "organization_not_found"): _post_create(booking(), org=NOPE),
    ("POST", _ORG_T + "/appointments", 404, "service_not_found"): _post_create(booking(service_id="nope")),
    ("POST", _ORG_T + "/appointments", 404, "location_not_found"): _post_create(booking(location_id="nope")),
    ("POST", _ORG_T + "/appointments", 404, "provider_not_found"): _post_create(booking(provider_id="nope")),
    ("POST", _ORG_T + "/appointments", 409, "slot_taken"): _slot_taken,
    ("POST", _ORG_T + "/appointments", 409, "slot_unavailable"): _post_create(booking(time="03:00")),
    ("POST", _ORG_T + "/appointments", 412, "offer_changed"): _post_create(
        booking(), **{"If-Match": '"ofr_x"'}
    ),
    ("POST", _ORG_T + "/appointments", 422, "idempotency_key_reused"): _reused,
    ("POST", _ORG_T + "/appointments", 422, "provider_not_eligible"): _post_create(
        booking(
            service_id="gus_notary_apostille", location_id="gus_notary_office", provider_id="gus_notary_mina"
        ),
        org=GUS,
    ),
    ("POST", _ORG_T + "/appointments", 428, "requires_verification"): _post_create(
        booking(**_REMOTE), org=GUS
    ),
    ("GET", _APT_T, 200, None): _on_booked("GET", ORG_URL + "/appointments/{id}"),
    ("GET", _APT_T, 404, "organization_not_found"): lambda c: c.get(f"{NOPE}/appointments/apt_none"),
    ("GET", _APT_T, 404, "appointment_not_found"): lambda c: c.get(f"{ORG_URL}/appointments/apt_none"),
    ("POST", _APT_T + "/cancel", 200, None): _on_booked("POST", ORG_URL + "/appointments/{id}/cancel"),
    ("POST", _APT_T + "/cancel", 404, "organization_not_found"): lambda c: c.post(
        f"{NOPE}/appointments/apt_none/cancel"
    ),
    ("POST", _APT_T + "/cancel", 404, "appointment_not_found"): lambda c: c.post(
        f"{ORG_URL}/appointments/apt_none/cancel"
    ),
    ("POST", _APT_T + "/cancel", 409, "appointment_not_cancellable"): _cancelled_after_its_end,
    ("POST", _APT_T + "/cancel", 400, "idempotency_key_missing"): lambda c: c.post(
        _CHANGE.format(id=_book(c, "15:00")) + "cancel", headers={"Idempotency-Key": "not a key"}
    ),
    ("POST", _APT_T + "/cancel", 412, "appointment_changed"): _stale("cancel"),
    ("POST", _APT_T + "/cancel", 422, "idempotency_key_reused"): _change_reused("cancel"),
    ("GET", _APT_T + "/change-quote", 200, None): _on_booked("GET", _CHANGE + "change-quote"),
    ("GET", _APT_T + "/change-quote", 404, "organization_not_found"): lambda c: c.get(
        f"{NOPE}/appointments/apt_none/change-quote"
    ),
    ("GET", _APT_T + "/change-quote", 404, "appointment_not_found"): lambda c: c.get(
        f"{ORG_URL}/appointments/apt_none/change-quote"
    ),
    ("POST", _APT_T + "/reschedule", 200, None): _reschedule(),
    ("POST", _APT_T + "/reschedule", 400, "invalid_request"): lambda c: c.post(
        _CHANGE.format(id=_book(c, "15:00")) + "reschedule", json={"date": DAY}, headers=_key()
    ),
    ("POST", _APT_T + "/reschedule", 400, "idempotency_key_missing"): lambda c: c.post(
        _CHANGE.format(id=_book(c, "15:00")) + "reschedule", json=_slot("16:00")
    ),
    ("POST", _APT_T + "/reschedule", 404, "organization_not_found"): lambda c: c.post(
        f"{NOPE}/appointments/apt_none/reschedule", json=_slot("16:00"), headers=_key()
    ),
    ("POST", _APT_T + "/reschedule", 404, "appointment_not_found"): lambda c: c.post(
        f"{ORG_URL}/appointments/apt_none/reschedule", json=_slot("16:00"), headers=_key()
    ),
    ("POST", _APT_T + "/reschedule", 404, "location_not_found"): _reschedule(location_id="nope"),
    ("POST", _APT_T + "/reschedule", 404, "provider_not_found"): _reschedule(provider_id="nope"),
    ("POST", _APT_T + "/reschedule", 409, "slot_taken"): _customer_reschedule_onto_taken,
    ("POST", _APT_T + "/reschedule", 409, "slot_unavailable"): _reschedule("03:00"),
    ("POST", _APT_T + "/reschedule", 409, "appointment_not_reschedulable"): _reschedule_cancelled,
    ("POST", _APT_T + "/reschedule", 412, "appointment_changed"): _stale("reschedule"),
    ("POST", _APT_T + "/reschedule", 422, "idempotency_key_reused"): _change_reused("reschedule"),
    ("POST", _APT_T + "/reschedule", 422, "provider_not_eligible"): _reschedule_to_ineligible,
    ("POST", _APT_T + "/no-show", 200, None): _no_show,
    ("POST", _APT_T + "/no-show", 404, "organization_not_found"): lambda c: c.post(
        f"{NOPE}/appointments/apt_none/no-show"
    ),
    ("POST", _APT_T + "/no-show", 404, "appointment_not_found"): lambda c: c.post(
        f"{ORG_URL}/appointments/apt_none/no-show"
    ),
    ("POST", _APT_T + "/no-show", 409, "appointment_not_cancellable"): _on_booked(
        "POST", ORG_URL + "/appointments/{id}/no-show"
    ),
    ("POST", _MERCHANT_T + "/confirm", 200, None): _on_booked("POST", _MERCHANT + "confirm"),
    ("POST", _MERCHANT_T + "/confirm", 409, "appointment_transition_not_allowed"): _merchant_on_cancelled(
        "confirm"
    ),
    **_merchant_rows("confirm"),
    ("POST", _MERCHANT_T + "/cancel", 200, None): _on_booked("POST", _MERCHANT + "cancel"),
    ("POST", _MERCHANT_T + "/cancel", 409, "appointment_transition_not_allowed"): _merchant_on_completed,
    **_merchant_rows("cancel"),
    ("POST", _MERCHANT_T + "/complete", 200, None): _merchant_on_started("complete"),
    ("POST", _MERCHANT_T + "/complete", 409, "appointment_transition_not_allowed"): _on_booked(
        "POST", _MERCHANT + "complete"
    ),
    **_merchant_rows("complete"),
    ("POST", _MERCHANT_T + "/no-show", 200, None): _merchant_on_started("no-show"),
    ("POST", _MERCHANT_T + "/no-show", 409, "appointment_transition_not_allowed"): _on_booked(
        "POST", _MERCHANT + "no-show"
    ),
    **_merchant_rows("no-show"),
    ("POST", _MERCHANT_T + "/reschedule", 200, None): _on_booked(
        "POST", _MERCHANT + "reschedule", date=DAY, time="16:00"
    ),
    ("POST", _MERCHANT_T + "/reschedule", 400, "invalid_request"): _on_booked(
        "POST", _MERCHANT + "reschedule", date=DAY
    ),
    ("POST", _MERCHANT_T + "/reschedule", 409, "appointment_transition_not_allowed"): _merchant_on_cancelled(
        "reschedule", date=DAY, time="16:00"
    ),
    ("POST", _MERCHANT_T + "/reschedule", 409, "slot_taken"): _reschedule_onto_taken,
    ("POST", _MERCHANT_T + "/reschedule", 409, "slot_unavailable"): _on_booked(
        "POST", _MERCHANT + "reschedule", date=DAY, time="03:00"
    ),
    **_merchant_rows("reschedule", {"date": DAY, "time": "16:00"}),
    ("POST", _HOOKS_T, 201, None): lambda c: c.post(f"{ORG_URL}/webhook-endpoints", json=_LOOPBACK_HOOK),
    ("POST", _HOOKS_T, 400, "invalid_request"): lambda c: c.post(f"{ORG_URL}/webhook-endpoints", json={}),
    ("POST", _HOOKS_T, 400, "webhook_url_not_allowed"): lambda c: c.post(
        f"{ORG_URL}/webhook-endpoints", json={"url": "https://hooks.example.com/bookwell"}
    ),
    ("POST", _HOOKS_T, 400, "webhook_url_targets_platform"): _register_self,
    ("POST", _HOOKS_T, 404, "organization_not_found"): lambda c: c.post(
        f"{NOPE}/webhook-endpoints", json=_LOOPBACK_HOOK
    ),
    ("GET", _HOOKS_T, 200, None): lambda c: c.get(f"{ORG_URL}/webhook-endpoints"),
    ("GET", _HOOKS_T, 404, "organization_not_found"): lambda c: c.get(f"{NOPE}/webhook-endpoints"),
    ("GET", _HOOK_T, 200, None): _on_registered("GET"),
    ("GET", _HOOK_T, 404, "organization_not_found"): lambda c: c.get(f"{NOPE}/webhook-endpoints/whe_none"),
    ("GET", _HOOK_T, 404, "webhook_endpoint_not_found"): lambda c: c.get(
        f"{ORG_URL}/webhook-endpoints/whe_none"
    ),
    ("DELETE", _HOOK_T, 204, None): _on_registered("DELETE"),
    ("DELETE", _HOOK_T, 404, "organization_not_found"): lambda c: c.delete(
        f"{NOPE}/webhook-endpoints/whe_none"
    ),
    ("DELETE", _HOOK_T, 404, "webhook_endpoint_not_found"): lambda c: c.delete(
        f"{ORG_URL}/webhook-endpoints/whe_none"
    ),
    ("GET", "/_testing/faults", 200, None): lambda c: c.get("/_testing/faults"),
    ("PUT", "/_testing/faults", 200, None): lambda c: c.put("/_testing/faults", json=_ERROR_PROFILE),
    ("PUT", "/_testing/faults", 400, "invalid_request"): lambda c: c.put(
        "/_testing/faults", json={"rules": [{"mode": "error", "endpoint": "no_such_route"}]}
    ),
    ("DELETE", "/_testing/faults", 200, None): lambda c: c.delete("/_testing/faults"),
    ("GET", "/_testing/webhook-deliveries", 200, None): lambda c: c.get("/_testing/webhook-deliveries"),
    ("GET", "/_testing/webhook-deliveries", 400, "invalid_request"): lambda c: c.get(
        "/_testing/webhook-deliveries", params={"appointment_id": "x" * 101}
    ),
    ("POST", "/_testing/arm", 200, None): lambda c: c.post(
        "/_testing/arm", json={"organization_id": ORG, "outcome": "slot_taken"}
    ),
    ("POST", "/_testing/arm", 400, "invalid_request"): lambda c: c.post("/_testing/arm", json={}),
    ("POST", "/_testing/arm", 404, "organization_not_found"): lambda c: c.post(
        "/_testing/arm", json={"organization_id": "nope", "outcome": "slot_taken"}
    ),
    ("GET", "/_testing/outbox", 200, None): lambda c: c.get("/_testing/outbox"),
    ("GET", "/_testing/outbox", 400, "invalid_request"): lambda c: c.get(
        "/_testing/outbox", params={"organization_id": "x" * 101}
    ),
    ("GET", "/_testing/clock", 200, None): lambda c: c.get("/_testing/clock"),
    ("POST", "/_testing/clock", 200, None): lambda c: c.post("/_testing/clock", json={"advance_seconds": 1}),
    ("POST", "/_testing/clock", 400, "invalid_request"): lambda c: c.post("/_testing/clock", json={}),
    ("POST", "/_testing/reset", 200, None): lambda c: c.post("/_testing/reset"),
    ("GET", "/_testing/stats", 200, None): lambda c: c.get("/_testing/stats"),
    ("GET", "/_testing/stats", 400, "invalid_request"): lambda c: c.get(
        "/_testing/stats", params={"organization_id": "x" * 101}
    ),
    ("POST", "/_testing/service", 200, None): lambda c: c.post("/_testing/service", json=_TESTING_SERVICE),
    ("POST", "/_testing/service", 400, "invalid_request"): lambda c: c.post("/_testing/service", json={}),
    ("POST", "/_testing/service", 404, "organization_not_found"): lambda c: c.post(
        "/_testing/service", json=_TESTING_SERVICE | {"organization_id": "nope"}
    ),
    ("POST", "/_testing/service", 404, "service_not_found"): lambda c: c.post(
        "/_testing/service", json=_TESTING_SERVICE | {"service_id": "nope"}
    ),
    ("POST", "/_testing/provider", 200, None): lambda c: c.post("/_testing/provider", json=_TESTING_PROVIDER),
    ("POST", "/_testing/provider", 400, "invalid_request"): lambda c: c.post("/_testing/provider", json={}),
    ("POST", "/_testing/provider", 404, "organization_not_found"): lambda c: c.post(
        "/_testing/provider", json=_TESTING_PROVIDER | {"organization_id": "nope"}
    ),
    ("POST", "/_testing/provider", 404, "provider_not_found"): lambda c: c.post(
        "/_testing/provider", json=_TESTING_PROVIDER | {"provider_id": "nope"}
    ),
    ("POST", "/_testing/location", 200, None): lambda c: c.post("/_testing/location", json=_TESTING_LOCATION),
    ("POST", "/_testing/location", 400, "invalid_request"): lambda c: c.post("/_testing/location", json={}),
    ("POST", "/_testing/location", 404, "organization_not_found"): lambda c: c.post(
        "/_testing/location", json=_TESTING_LOCATION | {"organization_id": "nope"}
    ),
    ("POST", "/_testing/location", 404, "location_not_found"): lambda c: c.post(
        "/_testing/location", json=_TESTING_LOCATION | {"location_id": "nope"}
    ),
    ("POST", "/_testing/appointment-status", 200, None): lambda c: c.post(
        "/_testing/appointment-status", json=_STATUS_BODY | {"booking_id": _book(c, "16:00")}
    ),
    ("POST", "/_testing/appointment-status", 400, "invalid_request"): lambda c: c.post(
        "/_testing/appointment-status", json={}
    ),
    ("POST", "/_testing/appointment-status", 404, "organization_not_found"): lambda c: c.post(
        "/_testing/appointment-status", json=_STATUS_BODY | {"organization_id": "nope"}
    ),
    ("POST", "/_testing/appointment-status", 404, "appointment_not_found"): lambda c: c.post(
        "/_testing/appointment-status", json=_STATUS_BODY
    ),
    ("GET", "/health", 200, None): lambda c: c.get("/health"),
}

_APP = create_app(make_settings())
DOCUMENT = _document(_APP)
SCHEMA = schemathesis.openapi.from_dict(DOCUMENT)
OPERATIONS = _operations(DOCUMENT)


def _assert_conforms(method: str, path: str, response: Any, status: int, code: str | None) -> None:
    """The answer is the expected one, and exactly as the document describes it."""
    assert response.status_code == status, response.text
    if code is not None:
        assert response.headers["content-type"] == "application/problem+json"
        assert response.json()["code"] == code
    SCHEMA[path][method].validate_response(response)
    documented = DOCUMENT["paths"][path][method.lower()]["responses"][str(status)]
    for name, header in documented["headers"].items():
        resolved = (
            DOCUMENT["components"]["headers"][header["$ref"].rsplit("/", 1)[1]]
            if "$ref" in header
            else header
        )
        if resolved["required"]:
            assert name in response.headers, f"{method} {path} {status} lacks {name}"


def _fill(path: str) -> str:
    return re.sub(r"\{(\w+)\}", lambda match: _FILLED[match[1]], path)


def test_the_table_covers_exactly_the_documented_answers():
    """OpenAPI 3.1: every documented route-specific answer has a way to provoke it, and nothing else does."""
    documented = {row for row in _documented(DOCUMENT) if row[3] not in _GENERIC}
    assert set(PROVOKE) == documented


@pytest.mark.parametrize("row", list(PROVOKE), ids=lambda row: " ".join(str(part) for part in row))
def test_every_documented_answer_is_provoked_and_conforms(client, row):
    """OpenAPI 3.1 (platform choice: the contract is exact): each documented answer happens as documented."""
    method, path, status, code = row
    _assert_conforms(method, path, PROVOKE[row](client), status, code)


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_every_operation_answers_an_unknown_version_pin_as_documented(client, method, path):
    """Platform choice (versioning): an unknown Bookwell-Version is 400 unsupported_version on every route."""
    response = client.request(method, _fill(path), headers={"Bookwell-Version": "1999-01-01"})
    _assert_conforms(method, path, response, 400, "unsupported_version")
    assert response.json()["supported_versions"] == ["2025-10-01", "2026-04-01"]


@pytest.mark.parametrize(("method", "path"), OPERATIONS, ids=[f"{m} {p}" for m, p in OPERATIONS])
def test_every_operation_answers_a_spent_quota_as_documented(method, path):
    """draft-ietf-httpapi-ratelimit-headers: a spent quota is 429 rate_limited with Retry-After everywhere."""
    app = create_app(make_settings(rate_limit_quota=1))
    with TestClient(app) as client:
        client.get("/health")
        response = client.request(method, _fill(path))
    app.state.runtime.db.dispose()
    _assert_conforms(method, path, response, 429, "rate_limited")
    assert int(response.headers["Retry-After"]) >= 1


_PARAMETRIZED = [(m, p) for m, p in OPERATIONS if "{" in p]


@pytest.mark.parametrize(("method", "path"), _PARAMETRIZED, ids=[f"{m} {p}" for m, p in _PARAMETRIZED])
def test_every_operation_with_a_path_parameter_answers_a_refused_segment_as_documented(client, method, path):
    """RFC 3986 §3.3: a path parameter holding an encoded slash is 404 not_found, as documented."""
    response = client.request(method, _fill(path).replace(ORG, "carolyns%2Fdental", 1))
    _assert_conforms(method, path, response, 404, "not_found")


_FAULTABLE = [(m, p) for m, p in OPERATIONS if not p.startswith("/_testing/")]
_INJECTED = [(500, "internal_error"), (502, "bad_gateway"), (503, "service_unavailable")]


@pytest.mark.parametrize(("status", "code"), _INJECTED, ids=[code for _status, code in _INJECTED])
@pytest.mark.parametrize(("method", "path"), _FAULTABLE, ids=[f"{m} {p}" for m, p in _FAULTABLE])
def test_every_native_operation_answers_an_injected_failure_as_documented(client, method, path, status, code):
    """RFC 9110 §15.6 (platform choice: a fault profile's error answer is part of the contract)."""
    profile = {"rules": [{"mode": "error", "status": status, "retry_after": 7}]}
    assert client.put("/_testing/faults", json=profile).status_code == 200
    response = client.request(method, _fill(path))
    _assert_conforms(method, path, response, status, code)
    assert response.headers["Retry-After"] == "7"
    documented = DOCUMENT["paths"][path][method.lower()]["responses"][str(status)]["headers"]
    assert documented["Retry-After"]["required"] is False


def test_the_test_surface_documents_no_injected_failure():
    """Platform choice: `/_testing/` is never faulted, so its operations list no 502 or 503."""
    for path, item in DOCUMENT["paths"].items():
        for operation in item.values():
            faultable = not path.startswith("/_testing/")
            assert ({"502", "503"} <= set(operation["responses"])) is faultable, path


def test_validation_errors_are_documented_as_400_problems_not_422():
    """RFC 9457 (platform choice): FastAPI's default 422 HTTPValidationError is never sent: not documented."""
    assert "HTTPValidationError" not in str(DOCUMENT)
    assert "ValidationError" not in DOCUMENT["components"]["schemas"]
    create_422 = DOCUMENT["paths"]["/api/organizations/{organization_id}/appointments"]["post"]["responses"][
        "422"
    ]
    assert create_422["description"] == "idempotency_key_reused, provider_not_eligible"


def test_the_problem_schema_lists_every_code_and_extension_member():
    """RFC 9457 §3: the problem+json component has the standard members, Bookwell's code and extensions."""
    problem = DOCUMENT["components"]["schemas"]["Problem"]
    assert problem["required"] == ["type", "title", "status", "detail", "code"]
    assert {
        "errors",
        "supported_versions",
        "field",
        "reason",
        "channel",
        "request_id",
        "action",
        "appointment_status",
        "sunset",
        "successor",
    } <= set(problem["properties"])
    assert problem["properties"]["status"] == {"type": "integer", "minimum": 400, "maximum": 599}
    assert "slot_taken" in problem["properties"]["code"]["enum"]
    assert problem["additionalProperties"] is False


def test_every_operation_documents_the_edge_request_headers_once_after_its_own():
    """Platform choice (versioning): the edge's Bookwell-Version and X-Request-Id are on every operation,
    stated by the contract itself, so no route needs a dependency to document them."""
    for method, path in _operations(DOCUMENT):
        names = [(p["in"], p["name"]) for p in DOCUMENT["paths"][path][method.lower()].get("parameters", [])]
        assert names[-2:] == [("header", "Bookwell-Version"), ("header", "X-Request-Id")], (method, path)
        assert len(set(names)) == len(names), (method, path)


def test_the_create_documents_its_idempotency_key_as_required():
    """IETF httpapi idempotency-key draft: the create's Idempotency-Key header is required."""
    operation = DOCUMENT["paths"]["/api/organizations/{organization_id}/appointments"]["post"]
    headers = {p["name"]: p for p in operation["parameters"] if p["in"] == "header"}
    assert headers["Idempotency-Key"]["required"] is True
    assert headers["If-Match"]["required"] is False
    assert set(operation["responses"]["201"]["headers"]) >= {
        "Location",
        "Idempotent-Replayed",
        "X-Request-Id",
    }
    assert DOCUMENT["components"]["headers"]["Idempotent-Replayed"]["required"] is False


@pytest.mark.parametrize(("change", "key_required"), [("cancel", False), ("reschedule", True)])
def test_the_customer_changes_document_their_key_if_match_and_etag(change, key_required):
    """docs/lifecycle.md (the platform side): both take Idempotency-Key and If-Match and answer the ETag."""
    operation = DOCUMENT["paths"][f"{_APT_T}/{change}"]["post"]
    headers = {p["name"]: p for p in operation["parameters"] if p["in"] == "header"}
    assert (headers["Idempotency-Key"]["required"], headers["If-Match"]["required"]) == (key_required, False)
    assert {"ETag", "Idempotent-Replayed"} <= set(operation["responses"]["200"]["headers"])
    assert "appointment_changed" in operation["responses"]["412"]["description"]
    quote = DOCUMENT["paths"][f"{_APT_T}/change-quote"]["get"]
    assert "ETag" in quote["responses"]["200"]["headers"]


def test_the_deprecated_endpoint_documents_its_lifecycle_headers():
    """RFC 9745 and RFC 8594: every answer of the deprecated endpoint lists Deprecation, Sunset and Link."""
    operation = DOCUMENT["paths"]["/api/organizations/{organization_id}/availability"]["get"]
    assert operation["deprecated"] is True
    for response in operation["responses"].values():
        assert {"Deprecation", "Sunset", "Link"} <= set(response["headers"])


def test_an_unexpected_failure_is_answered_as_the_documented_500(client, runtime, monkeypatch):
    """RFC 9457 (platform choice): a bug is a 500 internal_error problem, as every operation documents."""

    def broken() -> None:
        raise RuntimeError("the database went away")

    monkeypatch.setattr(runtime.db, "read", broken)
    response = client.get("/api/organizations")
    _assert_conforms("GET", "/api/organizations", response, 500, "internal_error")
