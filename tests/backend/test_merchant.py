"""Merchant actions: the state machine, idempotent repeats, reschedule's slot rules and its races."""

from __future__ import annotations

import concurrent.futures
import threading

import httpx2
import pytest

from osbp.backend.serving import PlatformServer
from tests.support.bookwell import DAY, booking, create, make_settings

ORG = "carolyns_dental"
API = f"/api/organizations/{ORG}"


def _act(client, appointment_id, action, **body):
    return client.post(f"{API}/merchant/appointments/{appointment_id}/{action}", json=body or None)


def _book(client, key="key-1", **fields):
    answer = create(client, ORG, booking(**fields), key=key)
    assert answer.status_code == 201, answer.text
    return answer.json()


def _set_status(client, appointment_id, status):
    answer = client.post(
        "/_testing/appointment-status",
        json={"organization_id": ORG, "booking_id": appointment_id, "status": status},
    )
    assert answer.status_code == 200


def _advance_past_start(client):
    # NOW is 2026-05-04 12:00Z; the 10:00 New York appointment of DAY starts 2026-05-05 14:00Z.
    client.post("/_testing/clock", json={"now": "2026-05-05T14:10:00Z"})


def _advance_past_end(client):
    client.post("/_testing/clock", json={"now": "2026-05-05T15:00:00Z"})


# (stored status, moment, action) -> resulting status, or None for 409.
CASES = [
    ("pending", "before", "confirm", "confirmed"),
    ("pending", "started", "confirm", None),
    ("confirmed", "before", "confirm", "confirmed"),
    ("pending", "before", "cancel", "cancelled"),
    ("pending", "ended", "cancel", "cancelled"),
    ("confirmed", "started", "cancel", "cancelled"),
    ("confirmed", "ended", "cancel", None),
    ("no_show", "started", "cancel", None),
    ("confirmed", "before", "complete", None),
    ("confirmed", "started", "complete", "completed"),
    ("confirmed", "ended", "complete", "completed"),
    ("pending", "started", "complete", None),
    ("cancelled", "ended", "complete", None),
    ("confirmed", "before", "no-show", None),
    ("confirmed", "started", "no-show", "no_show"),
    ("completed", "ended", "no-show", None),
    ("cancelled", "started", "no-show", None),
]


@pytest.mark.parametrize(("stored", "moment", "action", "outcome"), CASES)
def test_each_merchant_action_is_allowed_from_exactly_its_statuses(client, stored, moment, action, outcome):
    """Platform choice (merchant state machine): others are 409 appointment_transition_not_allowed."""
    appointment = _book(client)
    _set_status(client, appointment["id"], stored)
    {"before": lambda _c: None, "started": _advance_past_start, "ended": _advance_past_end}[moment](client)
    answer = _act(client, appointment["id"], action)
    if outcome is None:
        assert answer.status_code == 409
        problem = answer.json()
        assert (problem["code"], problem["action"]) == ("appointment_transition_not_allowed", action)
        # RFC 9457 §3.1.2: `status` stays the HTTP status; the appointment's is a member of its own.
        read = client.get(f"{API}/appointments/{appointment['id']}").json()
        assert (problem["status"], problem["appointment_status"]) == (409, read["status"])
        assert answer.headers["content-type"] == "application/problem+json"
    else:
        assert (answer.status_code, answer.json()["status"]) == (200, outcome)
        read = client.get(f"{API}/appointments/{appointment['id']}").json()
        assert read["status"] == outcome


def test_repeating_an_action_that_already_holds_answers_200_without_a_second_change(client):
    """Platform choice: a merchant retry after a lost answer is safe (200, unchanged)."""
    appointment = _book(client)
    first = _act(client, appointment["id"], "cancel")
    again = _act(client, appointment["id"], "cancel")
    assert (first.status_code, again.status_code) == (200, 200)
    assert again.json() == first.json()


def test_a_merchant_cancel_frees_the_providers_time(client):
    """Platform choice: a cancelled appointment holds no time (same as the customer cancel)."""
    appointment = _book(client)
    _act(client, appointment["id"], "cancel")
    assert create(client, ORG, booking(), key="again").status_code == 201


def test_merchant_actions_are_404_for_unknown_ids(client):
    """RFC 9457 problems: the unknown id is named by its code."""
    assert _act(client, "apt_missing", "complete").json()["code"] == "appointment_not_found"
    gone = client.post("/api/organizations/nope/merchant/appointments/apt_x/cancel")
    assert gone.json()["code"] == "organization_not_found"


def test_a_reschedule_moves_the_appointment_and_frees_its_old_time(client):
    """Platform choice: the same provider, service and location at another offered start."""
    appointment = _book(client, time="10:00")
    moved = _act(client, appointment["id"], "reschedule", date=DAY, time="13:30")
    assert moved.status_code == 200
    assert (moved.json()["time"], moved.json()["end_time"], moved.json()["status"]) == (
        "13:30",
        "14:15",
        "confirmed",
    )
    assert client.get(f"{API}/appointments/{appointment['id']}").json()["time"] == "13:30"
    assert create(client, ORG, booking(time="10:00"), key="old-time").status_code == 201
    assert create(client, ORG, booking(time="13:30"), key="new-time").json()["code"] == "slot_taken"


def test_a_reschedule_may_overlap_its_own_old_time(client):
    """Platform choice: the appointment being moved does not collide with itself."""
    appointment = _book(client, time="10:00")
    moved = _act(client, appointment["id"], "reschedule", date=DAY, time="10:15")
    assert (moved.status_code, moved.json()["time"]) == (200, "10:15")


def test_a_reschedule_to_its_own_time_is_a_200_no_op(client):
    """Platform choice: a retried reschedule that already happened answers 200 unchanged."""
    appointment = _book(client, time="10:00")
    assert _act(client, appointment["id"], "reschedule", date=DAY, time="10:00").json()["time"] == "10:00"


@pytest.mark.parametrize(
    ("time", "code"),
    [("12:00", "slot_taken"), ("10:05", "slot_unavailable"), ("17:00", "slot_unavailable")],
)
def test_a_reschedule_obeys_the_creates_slot_rules(client, time, code):
    """Platform choice: the create's rules (offered start, no overlap) hold for a move, nothing is written."""
    appointment = _book(client, time="10:00")
    _book(client, key="blocker", time="12:00")
    refused = _act(client, appointment["id"], "reschedule", date=DAY, time=time)
    assert (refused.status_code, refused.json()["code"]) == (409, code)
    assert client.get(f"{API}/appointments/{appointment['id']}").json()["time"] == "10:00"


def test_a_started_or_cancelled_appointment_cannot_be_rescheduled(client):
    """Platform choice (merchant state machine): only an upcoming active appointment moves."""
    appointment = _book(client, time="10:00")
    _advance_past_start(client)
    refused = _act(client, appointment["id"], "reschedule", date=DAY, time="16:00")
    assert (refused.status_code, refused.json()["code"]) == (409, "appointment_transition_not_allowed")
    cancelled = _book(client, key="other", time="16:00")
    _act(client, cancelled["id"], "cancel")
    refused = _act(client, cancelled["id"], "reschedule", date=DAY, time="16:15")
    assert refused.json()["action"] == "reschedule"


@pytest.mark.parametrize(
    "body", [{}, {"date": "2026-02-30", "time": "10:00"}, {"date": DAY, "time": "25:00"}]
)
def test_a_malformed_reschedule_is_400_invalid_request(client, body):
    """Platform choice: bad input is problem+json 400, never a 500."""
    appointment = _book(client)
    refused = client.post(f"{API}/merchant/appointments/{appointment['id']}/reschedule", json=body)
    assert (refused.status_code, refused.json()["code"]) == (400, "invalid_request")


def test_merchant_routes_are_version_pinned(client):
    """Platform choice: every native route echoes Bookwell-Version and refuses an unknown pin."""
    appointment = _book(client)
    answer = client.post(
        f"{API}/merchant/appointments/{appointment['id']}/cancel", headers={"Bookwell-Version": "1999-01-01"}
    )
    assert (answer.status_code, answer.json()["code"]) == (400, "unsupported_version")


@pytest.mark.integration
def test_concurrent_reschedules_and_a_create_to_one_free_time_leave_exactly_one_holder(tmp_path):
    """Platform choice (no double booking): BEGIN IMMEDIATE serialises moves and creates of one slot."""
    with PlatformServer(make_settings(db=str(tmp_path / "race.db"))) as server:
        http = httpx2.Client(base_url=server.base_url, timeout=60)
        ids = [
            http.post(
                f"{API}/appointments", json=booking(time=time), headers={"Idempotency-Key": time}
            ).json()["id"]
            for time in ("09:00", "10:00", "11:00", "12:00", "13:00")
        ]
        start = threading.Barrier(len(ids) + 1)

        def move(appointment_id):
            start.wait()
            return _act(http, appointment_id, "reschedule", date=DAY, time="15:00").status_code

        def book():
            start.wait()
            answer = http.post(
                f"{API}/appointments", json=booking(time="15:00"), headers={"Idempotency-Key": "r"}
            )
            return answer.status_code

        with concurrent.futures.ThreadPoolExecutor(len(ids) + 1) as pool:
            futures = [pool.submit(move, appointment_id) for appointment_id in ids] + [pool.submit(book)]
            codes = sorted(future.result() for future in futures)
        holders = [
            appointment_id
            for appointment_id in ids
            if http.get(f"{API}/appointments/{appointment_id}").json()["time"] == "15:00"
        ]
        stats = http.get("/_testing/stats", params={"organization_id": ORG}).json()
        http.close()
    assert codes.count(409) == len(ids)
    assert codes.count(200) + codes.count(201) == 1
    assert len(holders) == codes.count(200)
    assert stats["active_appointments"] == len(ids) + codes.count(201)


def test_the_archived_status_is_held_read_back_and_frees_the_time(client):
    """Platform choice (docs/backend-api.md): `archived`, set only through the status hook, is read back as
    is (a status OSBP does not know) and no longer holds its time, and no merchant action applies to it."""
    appointment = _book(client)
    _set_status(client, appointment["id"], "archived")
    read = client.get(f"{API}/appointments/{appointment['id']}")
    assert read.json()["status"] == "archived"
    assert _act(client, appointment["id"], "confirm").status_code == 409
    again = create(client, ORG, booking(), key="key-2")
    assert again.status_code == 201, again.text
