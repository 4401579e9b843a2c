"""The customer's changes: the change quote's fees on the platform clock, cancel and reschedule under
If-Match and Idempotency-Key, their atomicity (also on PostgreSQL) and their webhook events."""

from __future__ import annotations

import concurrent.futures
import json
import threading

import httpx2
import pytest
from sqlmodel import col, select

from osbp.backend.models import WebhookEvent
from osbp.backend.serving import PlatformServer
from osbp.backend.settings import BackendSettings
from tests.support.bookwell import DAY, booking, create, make_settings

ORG = "carolyns_dental"
API = f"/api/organizations/{ORG}"
CROWN = "carolyns_dental_crown"  # 1200.00, 90 minutes; 100.00 inside 48 hours of the start
LATER = "2026-05-08"  # a Friday: its 10:00 New York (14:00Z) crown is free to cancel until 2026-05-06 14:00Z


def _book(client, *, key="key-1", **fields):
    answer = create(client, ORG, booking(**fields), key=key)
    assert answer.status_code == 201, answer.text
    return answer.json()


def _quote(client, appointment_id):
    answer = client.get(f"{API}/appointments/{appointment_id}/change-quote")
    assert answer.status_code == 200, answer.text
    return answer


def _cancel(client, appointment_id, **headers):
    return client.post(f"{API}/appointments/{appointment_id}/cancel", headers=headers)


def _slot(time, provider_id="carolyns_dental_dr_reyes", date=DAY):
    return {"location_id": "carolyns_dental_midtown", "provider_id": provider_id, "date": date, "time": time}


def _reschedule(client, appointment_id, slot, key="move-1", **headers):
    return client.post(
        f"{API}/appointments/{appointment_id}/reschedule",
        json=slot,
        headers={"Idempotency-Key": key} | headers,
    )


def _read(client, appointment_id):
    return client.get(f"{API}/appointments/{appointment_id}").json()


def _clock(client, now):
    assert client.post("/_testing/clock", json={"now": now}).status_code == 200


def _change_service(client, **fields):
    body = {"organization_id": ORG, "service_id": "carolyns_dental_cleaning"} | fields
    assert client.post("/_testing/service", json=body).status_code == 200


def _events(runtime, event_type):
    """The payloads of the queued events of ``event_type``, oldest first."""
    with runtime.db.read() as session:
        rows = session.exec(
            select(WebhookEvent).where(WebhookEvent.type == event_type).order_by(col(WebhookEvent.seq))
        )
        return [json.loads(row.payload)["data"] for row in rows]


def _listen(client):
    """Register a webhook endpoint, so changes queue their events."""
    answer = client.post(f"{API}/webhook-endpoints", json={"url": "http://127.0.0.1:9/events"})
    assert answer.status_code == 201


def _usd(amount):
    return {"kind": "fixed", "amount": amount, "currency": "USD"}


def test_the_quote_names_the_free_cancel_the_fees_start_and_the_version_as_etag(client):
    """docs/lifecycle.md (the platform side): the quote gives the fee that applies now, when the fee starts,
    the reschedule fee and the version; the ETag is the appointment's own."""
    booked = _book(client, service_id=CROWN, date=LATER)
    answer = _quote(client, booked["id"])
    assert answer.json() == {
        "appointment_id": booked["id"],
        "organization_id": ORG,
        "status": "confirmed",
        "version": 1,
        "time_zone": "America/New_York",
        "cancel": {
            "allowed": True,
            "fee": _usd("0.00"),
            "fee_from": {"date": "2026-05-06", "time": "10:00"},
            "window_minutes": 2880,
        },
        "reschedule": {"allowed": True, "fee": _usd("0.00")},
    }
    assert answer.headers["etag"] == client.get(f"{API}/appointments/{booked['id']}").headers["etag"]
    assert answer.headers["etag"].startswith('"')


@pytest.mark.parametrize(
    ("now", "fee"), [("2026-05-06T13:59:59Z", "0.00"), ("2026-05-06T14:00:00Z", "100.00")]
)
def test_the_late_window_starts_charging_the_fee_at_its_first_second(client, now, fee):
    """docs/lifecycle.md: the fee is computed on the platform clock: free before the window, due inside."""
    booked = _book(client, service_id=CROWN, date=LATER)
    _clock(client, now)
    assert _quote(client, booked["id"]).json()["cancel"]["fee"] == _usd(fee)


def test_a_free_cancel_charges_nothing_and_reports_it(client):
    """docs/lifecycle.md: the cancel reports the fee charged; before the late window it is zero."""
    booked = _book(client, service_id=CROWN, date=LATER)
    cancelled = _cancel(client, booked["id"])
    assert cancelled.status_code == 200
    assert (cancelled.json()["status"], cancelled.json()["cancellation_fee"]) == ("cancelled", _usd("0.00"))
    assert cancelled.json()["version"] == 2


def test_a_late_cancel_charges_the_policy_fee_and_a_repeat_reports_the_same_fee(client, runtime):
    """docs/lifecycle.md: inside the late window the cancel charges the fee that applied at that moment; a
    repeat, even after the clock moved on, answers the fee it charged."""
    _listen(client)
    booked = _book(client, service_id=CROWN, date=LATER)
    _clock(client, "2026-05-07T12:00:00Z")  # 26 hours before the start
    cancelled = _cancel(client, booked["id"])
    assert (cancelled.status_code, cancelled.json()["cancellation_fee"]) == (200, _usd("100.00"))
    _clock(client, "2026-05-08T20:00:00Z")
    again = _cancel(client, booked["id"])
    assert (again.status_code, again.json()["cancellation_fee"], again.json()["version"]) == (
        200,
        _usd("100.00"),
        2,
    )
    [event] = _events(runtime, "appointment.cancelled")
    assert (event["actor"], event["cancellation_fee"]) == ("customer", _usd("100.00"))


def test_a_fee_without_a_free_window_applies_from_the_booking(client):
    """Platform choice (docs/backend-api.md): a policy with a fee and no window charges it at any time."""
    _change_service(client, cancellation_fee="20.00", cancellation_window_minutes=None)
    booked = _book(client)
    cancel = _quote(client, booked["id"]).json()["cancel"]
    assert (cancel["fee"], cancel["fee_from"], cancel["window_minutes"]) == (
        _usd("20.00"),
        {"date": "2026-05-04", "time": "08:00"},  # NOW in New York
        None,
    )
    assert _cancel(client, booked["id"]).json()["cancellation_fee"] == _usd("20.00")


def _completed(client, appointment_id):
    _clock(client, "2026-05-05T15:00:00Z")  # the 10:00-10:45 New York appointment has ended


def _no_show(client, appointment_id):
    _clock(client, "2026-05-05T14:10:00Z")
    assert client.post(f"{API}/merchant/appointments/{appointment_id}/no-show").status_code == 200


@pytest.mark.parametrize(("make", "status"), [(_completed, "completed"), (_no_show, "no_show")])
def test_a_completed_or_no_show_appointment_cannot_be_cancelled_and_is_quoted_so(client, make, status):
    """docs/lifecycle.md (booking_not_cancellable): a completed or no-show appointment is not cancelled."""
    booked = _book(client)
    make(client, booked["id"])
    quoted = _quote(client, booked["id"]).json()
    assert (quoted["status"], quoted["cancel"]["allowed"], quoted["reschedule"]["allowed"]) == (
        status,
        False,
        False,
    )
    refused = _cancel(client, booked["id"])
    assert (refused.status_code, refused.json()["code"]) == (409, "appointment_not_cancellable")
    assert _read(client, booked["id"])["status"] == status


def test_cancelling_a_cancelled_appointment_answers_it_unchanged_even_with_a_stale_if_match(client):
    """RFC 9110 §13.1.1: a change that already holds may answer 2xx; a retry without a key is safe."""
    booked = _book(client)
    etag = _quote(client, booked["id"]).headers["etag"]
    assert _cancel(client, booked["id"], **{"If-Match": etag}).status_code == 200
    again = _cancel(client, booked["id"], **{"If-Match": etag})
    assert (again.status_code, again.json()["status"], again.json()["version"]) == (200, "cancelled", 2)
    assert _quote(client, booked["id"]).json()["cancel"]["allowed"] is False


def test_a_service_that_forbids_cancelling_refuses_the_customer_but_not_the_merchant(client):
    """Platform choice (docs/backend-api.md): `cancellation.allowed: false` binds the customer's cancel."""
    _change_service(client, cancellation_allowed=False)
    booked = _book(client)
    assert _quote(client, booked["id"]).json()["cancel"]["allowed"] is False
    refused = _cancel(client, booked["id"])
    assert (refused.status_code, refused.json()["code"]) == (409, "appointment_not_cancellable")
    assert client.post(f"{API}/merchant/appointments/{booked['id']}/cancel").status_code == 200


def test_a_stale_if_match_on_cancel_is_412_and_cancels_nothing(client):
    """RFC 9110 §13.1.1 (docs/lifecycle.md, booking_changed): the version changed since the quote: 412."""
    booked = _book(client)
    stale = _quote(client, booked["id"]).headers["etag"]
    moved = client.post(
        f"{API}/merchant/appointments/{booked['id']}/reschedule", json={"date": DAY, "time": "11:00"}
    )
    assert moved.json()["version"] == 2
    refused = _cancel(client, booked["id"], **{"If-Match": stale, "Idempotency-Key": "c-1"})
    assert (refused.status_code, refused.json()["code"]) == (412, "appointment_changed")
    assert (_read(client, booked["id"])["status"], _read(client, booked["id"])["version"]) == ("confirmed", 2)
    fresh = _quote(client, booked["id"]).headers["etag"]
    assert _cancel(client, booked["id"], **{"If-Match": fresh, "Idempotency-Key": "c-1"}).status_code == 200


def test_a_stale_if_match_on_reschedule_is_412_and_moves_nothing(client):
    """RFC 9110 §13.1.1: the appointment changed (here its status) since its ETag was read: 412, unchanged."""
    booked = _book(client, service_id="carolyns_dental_new_patient_exam")  # created pending
    stale = _quote(client, booked["id"]).headers["etag"]
    assert client.post(f"{API}/merchant/appointments/{booked['id']}/confirm").status_code == 200
    refused = _reschedule(client, booked["id"], _slot("13:00"), **{"If-Match": stale})
    assert (refused.status_code, refused.json()["code"]) == (412, "appointment_changed")
    after = _read(client, booked["id"])
    assert (after["time"], after["status"], after["version"]) == ("10:00", "confirmed", 2)


@pytest.mark.both_engines
def test_a_reschedule_moves_the_same_appointment_and_frees_its_old_time_for_someone_else(client, runtime):
    """docs/lifecycle.md: one transaction takes the new time and releases the old one; the same appointment
    (same id, a new version) is moved, and there are never two."""
    _listen(client)
    booked = _book(client)
    etag = _quote(client, booked["id"]).headers["etag"]
    moved = _reschedule(
        client, booked["id"], _slot("13:00", "carolyns_dental_dr_okafor"), **{"If-Match": etag}
    )
    assert moved.status_code == 200, moved.text
    body = moved.json()
    assert (body["id"], body["time"], body["end_time"], body["provider_id"], body["version"]) == (
        booked["id"],
        "13:00",
        "13:45",
        "carolyns_dental_dr_okafor",
        2,
    )
    assert body["previous"] == {
        "location_id": "carolyns_dental_midtown",
        "provider_id": "carolyns_dental_dr_reyes",
        "date": DAY,
        "time": "10:00",
        "end_date": DAY,
        "end_time": "10:45",
        "time_zone": "America/New_York",
    }
    assert body["reschedule_fee"] == _usd("0.00")
    assert moved.headers["etag"] == _quote(client, booked["id"]).headers["etag"] != etag
    assert _read(client, booked["id"])["time"] == "13:00"
    other = create(
        client,
        ORG,
        booking(time="10:00", customer={"display_name": "Sam", "phone": "+12125550142"}),
        key="k-2",
    )
    assert other.status_code == 201
    stats = client.get("/_testing/stats", params={"organization_id": ORG}).json()
    assert (stats["appointments"], stats["active_appointments"]) == (2, 2)
    [event] = _events(runtime, "appointment.rescheduled")
    assert (event["actor"], event["appointment"]["time"], event["previous"]["time"]) == (
        "customer",
        "13:00",
        "10:00",
    )


@pytest.mark.both_engines
def test_a_reschedule_into_a_taken_slot_is_slot_taken_and_leaves_the_original_booked(client, runtime):
    """docs/lifecycle.md (slot_taken): the new slot is gone; the original appointment is unchanged."""
    _listen(client)
    _book(client, key="holder", time="13:00")
    booked = _book(client, key="mover")
    refused = _reschedule(client, booked["id"], _slot("13:00"))
    assert (refused.status_code, refused.json()["code"]) == (409, "slot_taken")
    after = _read(client, booked["id"])
    assert (after["time"], after["status"], after["version"]) == ("10:00", "confirmed", 1)
    assert _events(runtime, "appointment.rescheduled") == []
    # The refusal stored nothing: the same key with a free slot moves it.
    assert _reschedule(client, booked["id"], _slot("14:00")).status_code == 200


@pytest.mark.both_engines
def test_the_same_key_replays_a_reschedule_and_refuses_another_change_under_it(client, runtime):
    """IETF httpapi idempotency-key draft (as the create): same key and body replays; another is 422."""
    _listen(client)
    booked = _book(client)
    first = _reschedule(client, booked["id"], _slot("13:00"))
    replay = _reschedule(client, booked["id"], _slot("13:00"))
    assert (replay.status_code, replay.headers["idempotent-replayed"]) == (200, "true")
    assert (replay.json(), replay.headers["etag"]) == (first.json(), first.headers["etag"])
    assert "idempotent-replayed" not in first.headers
    other = _reschedule(client, booked["id"], _slot("14:00"))
    assert (other.status_code, other.json()["code"]) == (422, "idempotency_key_reused")
    under_cancel = _cancel(client, booked["id"], **{"Idempotency-Key": "move-1"})
    assert (under_cancel.status_code, under_cancel.json()["code"]) == (422, "idempotency_key_reused")
    assert (_read(client, booked["id"])["time"], _read(client, booked["id"])["version"]) == ("13:00", 2)
    assert len(_events(runtime, "appointment.rescheduled")) == 1


def test_the_same_key_replays_a_cancel_with_the_fee_it_charged(client, runtime):
    """IETF httpapi idempotency-key draft: a cancel's retry under its key replays the stored 200."""
    _listen(client)
    booked = _book(client, service_id=CROWN, date=LATER)
    _clock(client, "2026-05-07T12:00:00Z")
    first = _cancel(client, booked["id"], **{"Idempotency-Key": "cancel-1"})
    replay = _cancel(client, booked["id"], **{"Idempotency-Key": "cancel-1"})
    assert (replay.status_code, replay.headers["idempotent-replayed"], replay.json()) == (
        200,
        "true",
        first.json(),
    )
    assert replay.json()["cancellation_fee"] == _usd("100.00")
    other = _book(client, key="key-2", date=LATER, time="13:00")
    reused = _cancel(client, other["id"], **{"Idempotency-Key": "cancel-1"})
    assert (reused.status_code, reused.json()["code"]) == (422, "idempotency_key_reused")
    assert _read(client, other["id"])["status"] == "confirmed"
    assert len(_events(runtime, "appointment.cancelled")) == 1


def test_a_reschedule_needs_an_idempotency_key(client):
    """docs/lifecycle.md (the platform side): the reschedule takes an Idempotency-Key, required."""
    booked = _book(client)
    answer = client.post(f"{API}/appointments/{booked['id']}/reschedule", json=_slot("13:00"))
    assert (answer.status_code, answer.json()["code"]) == (400, "idempotency_key_missing")
    assert _read(client, booked["id"])["time"] == "10:00"


def test_a_reschedule_charges_the_reschedule_fee_and_the_new_slots_current_price(client):
    """Platform choice (docs/backend-api.md): the move costs the service's reschedule fee, and the new slot
    is charged at the service's current price, as its offer states it."""
    _change_service(client, reschedule_fee="7.50", price_amount="130.00")
    booked = _book(client)
    _change_service(client, price_amount="140.00")
    assert _quote(client, booked["id"]).json()["reschedule"]["fee"] == _usd("7.50")
    moved = _reschedule(client, booked["id"], _slot("13:00"))
    assert (moved.json()["reschedule_fee"], moved.json()["price"]) == (_usd("7.50"), _usd("140.00"))


def test_a_reschedule_to_its_own_slot_changes_nothing_and_charges_nothing(client):
    """Platform choice (as the merchant's): a move to where it already is answers it unchanged."""
    _change_service(client, reschedule_fee="7.50")
    booked = _book(client)
    same = _reschedule(client, booked["id"], _slot("10:00"))
    assert (same.status_code, same.json()["version"], same.json()["reschedule_fee"]) == (200, 1, _usd("0.00"))


def test_a_started_or_cancelled_appointment_cannot_be_rescheduled(client):
    """docs/lifecycle.md (booking_not_reschedulable): only an active appointment before its start moves."""
    started, cancelled = _book(client), _book(client, key="key-2", time="13:00")
    _cancel(client, cancelled["id"])
    _clock(client, "2026-05-05T14:10:00Z")  # the 10:00 New York appointment is under way
    for key, appointment in (("a", cancelled), ("b", started)):
        refused = _reschedule(client, appointment["id"], _slot("15:00", date="2026-05-06"), key=key)
        assert (refused.status_code, refused.json()["code"]) == (409, "appointment_not_reschedulable")
        assert _read(client, appointment["id"])["date"] == DAY


@pytest.mark.parametrize(
    ("slot", "status", "code"),
    [
        (_slot("13:00", "carolyns_dental_dr_okafor"), 422, "provider_not_eligible"),
        (_slot("03:00"), 409, "slot_unavailable"),
        (_slot("13:00", "nobody"), 404, "provider_not_found"),
        (_slot("13:00") | {"location_id": "nowhere"}, 404, "location_not_found"),
        (_slot("13:00") | {"service_id": CROWN}, 400, "invalid_request"),
    ],
)
def test_the_new_slot_obeys_the_creates_rules(client, slot, status, code):
    """docs/lifecycle.md: the new slot is checked by the create's rules; a refusal moves nothing."""
    booked = _book(client, service_id=CROWN)  # Dr. Okafor does no crowns
    refused = _reschedule(client, booked["id"], slot)
    assert (refused.status_code, refused.json()["code"]) == (status, code)
    assert (_read(client, booked["id"])["time"], _read(client, booked["id"])["version"]) == ("10:00", 1)


def test_an_armed_slot_taken_refuses_the_next_reschedule_once(client):
    """Platform choice (test surface): the scenario hook arms a reschedule's failure, consumed once."""
    booked = _book(client)
    armed = client.post(
        "/_testing/arm", json={"organization_id": ORG, "outcome": "slot_taken", "operation": "reschedule"}
    )
    assert armed.status_code == 200
    refused = _reschedule(client, booked["id"], _slot("13:00"))
    assert (refused.status_code, refused.json()["code"]) == (409, "slot_taken")
    assert _read(client, booked["id"])["time"] == "10:00"
    assert _reschedule(client, booked["id"], _slot("13:00")).status_code == 200


@pytest.fixture
def live_settings(backend_engine: str, tmp_path, request: pytest.FixtureRequest) -> BackendSettings:
    """A database several threads really write at once: a SQLite file, or a fresh PostgreSQL database."""
    if backend_engine == "postgresql":
        return make_settings(db=request.getfixturevalue("postgres_url"), migrate=True)
    return make_settings(db=str(tmp_path / "changes.db"))


@pytest.mark.integration
@pytest.mark.both_engines
def test_concurrent_reschedules_into_one_slot_leave_exactly_one_holder(live_settings):
    """docs/lifecycle.md: never two appointments on one time, never none: SQLite's BEGIN IMMEDIATE and
    PostgreSQL's advisory lock (the exclusion constraint behind it) let exactly one move win."""
    with PlatformServer(live_settings) as server, httpx2.Client(base_url=server.base_url, timeout=60) as http:
        times = ("09:00", "10:00", "11:00", "12:00")
        ids = [_book(http, key=f"book-{time}", time=time)["id"] for time in times]
        start = threading.Barrier(len(ids))

        def move(index):
            start.wait(timeout=30)
            return _reschedule(http, ids[index], _slot("15:00"), key=f"move-{index}")

        with concurrent.futures.ThreadPoolExecutor(len(ids)) as pool:
            answers = list(pool.map(move, range(len(ids))))
        reads = [_read(http, appointment_id) for appointment_id in ids]
        stats = http.get("/_testing/stats", params={"organization_id": ORG}).json()
    statuses = sorted(answer.status_code for answer in answers)
    assert statuses == [200, 409, 409, 409]
    assert {answer.json()["code"] for answer in answers if answer.status_code == 409} == {"slot_taken"}
    assert [read["time"] for read in reads].count("15:00") == 1
    # Every loser kept its own time: four appointments, all active, none lost.
    assert sorted(read["time"] for read in reads if read["time"] != "15:00") == sorted(
        time for time, answer in zip(times, answers, strict=True) if answer.status_code == 409
    )
    assert (stats["appointments"], stats["active_appointments"]) == (4, 4)
