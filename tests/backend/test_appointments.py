"""Appointment creates: atomic, idempotent, validated; reads, cancel and no-show."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlmodel import func, select

from osbp.backend import idempotency
from osbp.backend.models import Appointment, IdempotencyRecord
from osbp.backend.wire import AppointmentCreate
from tests.support.bookwell import DAY, NOW, booking, create

# The platform's rules hold on both engines (SQLite, PostgreSQL).
pytestmark = pytest.mark.both_engines


def test_create_returns_201_with_wall_clock_time_zone_and_location(client):
    """Platform choice (native dialect): the appointment is merchant-local wall-clock plus the IANA zone."""
    body = booking(metadata={"mandate_id": "mnd_1", "audit_ref": "aud_9"})
    response = create(client, "carolyns_dental", body)
    assert response.status_code == 201
    appointment = response.json()
    assert (
        response.headers["location"] == f"/api/organizations/carolyns_dental/appointments/{appointment['id']}"
    )
    assert appointment["status"] == "confirmed"
    assert (appointment["date"], appointment["time"], appointment["end_time"]) == (DAY, "10:00", "10:45")
    assert appointment["time_zone"] == "America/New_York"
    assert appointment["price"] == {"kind": "fixed", "amount": "120.00", "currency": "USD"}
    assert appointment["metadata"] == {"mandate_id": "mnd_1", "audit_ref": "aud_9"}
    assert appointment["customer"]["display_name"] == "Jane Customer"
    read = client.get(response.headers["location"])
    assert read.status_code == 200
    assert read.json() == appointment


def test_second_booking_of_same_provider_time_is_rejected_with_slot_taken(client):
    """Platform choice: the platform never double-sells a provider's time (409 slot-taken code)."""
    assert create(client, "carolyns_dental", booking(), key="a").status_code == 201
    overlapping = booking(service_id="carolyns_dental_checkup", time="10:15")
    response = create(client, "carolyns_dental", overlapping, key="b")
    assert response.status_code == 409
    assert response.json()["code"] == "slot_taken"


def test_the_other_provider_can_take_the_same_time(client):
    """Platform choice: the overlap rule is per provider."""
    assert create(client, "carolyns_dental", booking(), key="a").status_code == 201
    other = booking(provider_id="carolyns_dental_dr_okafor")
    assert create(client, "carolyns_dental", other, key="b").status_code == 201


def test_cancel_frees_the_providers_time_and_a_repeated_cancel_answers_it_unchanged(client):
    """Platform choice: the native cancel endpoint gives status reads a real cancelled case; cancelling it
    again answers 200 with the appointment unchanged (as the merchant's cancel does), so a retry after a
    lost answer is safe."""
    first = create(client, "carolyns_dental", booking(), key="a").json()
    cancelled = client.post(f"/api/organizations/carolyns_dental/appointments/{first['id']}/cancel")
    assert cancelled.status_code == 200
    assert cancelled.json()["status"] == "cancelled"
    again = client.post(f"/api/organizations/carolyns_dental/appointments/{first['id']}/cancel")
    assert (again.status_code, again.json()) == (200, cancelled.json())
    assert create(client, "carolyns_dental", booking(), key="b").status_code == 201


def test_status_becomes_completed_after_the_end_and_no_show_can_be_marked(client):
    """Platform choice: native statuses confirmed, completed, no_show follow the platform clock."""
    first = create(client, "carolyns_dental", booking(), key="a").json()
    second = create(client, "carolyns_dental", booking(time="13:00"), key="b").json()
    early = client.post(f"/api/organizations/carolyns_dental/appointments/{second['id']}/no-show")
    assert early.json()["code"] == "appointment_not_cancellable"
    client.post("/_testing/clock", json={"now": "2026-05-05T18:00:00Z"})  # 14:00 in New York
    assert client.get(f"/api/organizations/carolyns_dental/appointments/{first['id']}").json()["status"] == (
        "completed"
    )
    marked = client.post(f"/api/organizations/carolyns_dental/appointments/{second['id']}/no-show")
    assert marked.json()["status"] == "no_show"


def test_consultation_services_are_created_pending(client):
    """OSBP spec, service.describe (requires_consultation): the merchant confirms consultation requests."""
    body = booking(service_id="carolyns_dental_new_patient_exam")
    assert create(client, "carolyns_dental", body).json()["status"] == "pending"


def test_conformance_fixture_permits_parallel_bookings_of_one_slot(client):
    """Platform choice (seed data): conformance_co alone may book its fixture slot repeatedly."""
    body = booking(
        service_id="conformance_fixed_usd",
        location_id="conformance_main",
        provider_id="conformance_provider_ada",
        date="2030-05-02",
        time="10:30",
    )
    assert create(client, "conformance_co", body, key="a").status_code == 201
    assert create(client, "conformance_co", body, key="b").status_code == 201


def test_unknown_ids_are_404_with_specific_codes(client):
    """Platform choice (errors): unknown organization/service/appointment → 404 with a code."""
    assert create(client, "nobody", booking()).json()["code"] == "organization_not_found"
    assert create(client, "carolyns_dental", booking(service_id="gus_notary_notarization")).json()[
        "code"
    ] == ("service_not_found")
    assert create(client, "carolyns_dental", booking(location_id="x")).json()["code"] == "location_not_found"
    assert create(client, "carolyns_dental", booking(provider_id="x")).json()["code"] == "provider_not_found"
    missing = client.get("/api/organizations/carolyns_dental/appointments/apt_missing")
    assert (missing.status_code, missing.json()["code"]) == (404, "appointment_not_found")


def test_provider_who_does_not_offer_the_service_is_not_eligible(client):
    """Platform choice (availability): only providers who offer the service (Dr. Okafor does no crowns)."""
    body = booking(service_id="carolyns_dental_crown", provider_id="carolyns_dental_dr_okafor")
    response = create(client, "carolyns_dental", body)
    assert (response.status_code, response.json()["code"]) == (422, "provider_not_eligible")


@pytest.mark.parametrize(
    ("date", "time", "why"),
    [
        ("2026-05-10", "10:00", "closed Sunday"),
        (DAY, "08:00", "before opening"),
        (DAY, "16:30", "does not fit before closing"),
        (DAY, "10:05", "off the slot grid"),
        ("2026-05-04", "07:00", "in the past"),
    ],
)
def test_times_that_are_not_offered_slots_are_refused(client, date, time, why):
    """Platform choice: the create re-checks the slot is bookable (not just free)."""
    response = create(client, "carolyns_dental", booking(date=date, time=time))
    assert (response.status_code, response.json()["code"]) == (409, "slot_unavailable"), why


@pytest.mark.parametrize(
    ("customer", "field"),
    [
        ({"display_name": "Jane", "phone": "2125550199"}, "customer.phone"),
        ({"display_name": "Jane", "phone": "+1 212 555 0199"}, "customer.phone"),
        ({"display_name": "Jane", "phone": "+1999"}, "customer.phone"),
        ({"display_name": "Jane", "email": "jane@"}, "customer.email"),
        ({"display_name": "Jane", "phone": "+12125550199", "email": "not an email"}, "customer.email"),
        ({"display_name": "Jane"}, "customer.phone"),
    ],
)
def test_malformed_contact_data_is_400_naming_the_field(client, customer, field):
    """Platform choice: malformed contact data → 400 naming the field."""
    response = create(client, "carolyns_dental", booking(customer=customer))
    assert response.status_code == 400
    assert response.json()["code"] == "invalid_contact"
    assert response.json()["field"] == field


def test_missing_idempotency_key_is_400(client):
    """IETF idempotency-key draft: a create without the key is refused with 400."""
    response = create(client, "carolyns_dental", booking(), key=None)
    assert (response.status_code, response.json()["code"]) == (400, "idempotency_key_missing")


def test_same_key_same_body_replays_the_stored_response(client, runtime):
    """IETF idempotency-key draft: same key and body → stored status and body, Idempotent-Replayed: true."""
    first = create(client, "carolyns_dental", booking(), key='"abc-1"')
    second = create(client, "carolyns_dental", booking(), key="abc-1")
    assert second.status_code == 201
    assert second.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    assert second.json() == first.json()
    with runtime.db.read() as session:
        assert session.exec(select(func.count()).select_from(Appointment)).one() == 1


def test_same_key_different_body_is_422(client):
    """IETF idempotency-key draft: key reuse with a different payload → 422."""
    assert create(client, "carolyns_dental", booking(), key="k").status_code == 201
    response = create(client, "carolyns_dental", booking(time="11:00"), key="k")
    assert (response.status_code, response.json()["code"]) == (422, "idempotency_key_reused")


def test_a_key_left_in_flight_by_a_crash_is_free_at_once(client, runtime):
    """Platform choice (crash safety): a claim whose create never committed does not block its key."""
    body = booking()
    digest = idempotency.fingerprint(AppointmentCreate.model_validate(body).model_dump(mode="json"))
    with runtime.db.write() as session:
        # What a platform that claimed keys in a separate transaction left behind when it was killed.
        session.add(
            IdempotencyRecord(
                organization_id="carolyns_dental",
                key="k",
                fingerprint=digest,
                state="in_flight",
                created_utc=int(NOW.timestamp()),
            )
        )
    created = create(client, "carolyns_dental", body, key="k")
    assert created.status_code == 201
    replayed = create(client, "carolyns_dental", body, key="k")
    assert (replayed.status_code, replayed.json()["id"]) == (201, created.json()["id"])
    assert replayed.headers["idempotent-replayed"] == "true"


def test_concurrent_duplicates_of_one_key_make_one_appointment_and_replay_it(client):
    """IETF idempotency-key draft: duplicates wait for the first create and replay its 201."""
    import concurrent.futures

    body = booking()
    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        answers = list(pool.map(lambda _: create(client, "carolyns_dental", body, key="dup"), range(6)))
    assert [answer.status_code for answer in answers] == [201] * 6
    assert len({answer.json()["id"] for answer in answers}) == 1


def test_a_refused_create_releases_its_key_for_a_corrected_retry(client):
    """Platform choice: only 201 is stored, so the same key can be retried after a refusal."""
    refused = create(client, "carolyns_dental", booking(time="10:05"), key="k")
    assert refused.status_code == 409
    assert create(client, "carolyns_dental", booking(), key="k").status_code == 201


def test_keys_are_scoped_per_organization(client):
    """Platform choice: the same key in two organizations is two requests."""
    assert create(client, "carolyns_dental", booking(), key="shared").status_code == 201
    conformance = booking(
        service_id="conformance_fixed_usd",
        location_id="conformance_main",
        provider_id="conformance_provider_ada",
    )
    response = create(client, "conformance_co", conformance, key="shared")
    assert response.status_code == 201
    assert "idempotent-replayed" not in response.headers


def test_unknown_fields_and_bad_shapes_are_400_not_500(client):
    """Platform choice (errors): no 500 for malformed input."""
    assert create(client, "carolyns_dental", booking(surprise=1)).json()["code"] == "invalid_request"
    assert create(client, "carolyns_dental", booking(time="25:00")).status_code == 400
    assert create(client, "carolyns_dental", booking(date="2026-13-01")).status_code == 400
    response = client.post(
        "/api/organizations/carolyns_dental/appointments",
        content=b"[1,2",
        headers={"Idempotency-Key": "x", "Content-Type": "application/json"},
    )
    assert (response.status_code, response.json()["code"]) == (400, "invalid_request")


def test_the_unique_index_backstop_answers_slot_taken_and_frees_the_key(client, runtime, backend_engine):
    """Platform choice: if the index fires past the overlap check, the answer is still 409 slot_taken."""
    if backend_engine == "postgresql":
        pytest.skip("PostgreSQL refuses the range that ends before it starts this test plants")
    reference = create(client, "carolyns_dental", booking(), key="reference").json()
    # A row the overlap query cannot see (it ends before it starts) that holds 11:00 in the unique index.
    with runtime.db.write() as session:
        session.execute(
            text(
                "UPDATE appointment SET ends_utc = starts_utc, starts_utc = starts_utc + 3600 WHERE id = :id"
            ),
            {"id": reference["id"]},
        )
    racing = create(client, "carolyns_dental", booking(time="11:00"), key="racing")
    assert (racing.status_code, racing.json()["code"]) == (409, "slot_taken")
    assert racing.json()["detail"] == "The provider's time was booked by a concurrent request."
    with runtime.db.read() as session:
        assert session.get(IdempotencyRecord, ("carolyns_dental", "racing")) is None
        assert session.exec(select(func.count()).select_from(Appointment)).one() == 1


def test_the_exclusion_constraint_answers_slot_taken_for_an_overlap_the_check_cannot_see(
    client, runtime, backend_engine
):
    """Platform choice: on PostgreSQL the exclusion constraint refuses an overlap past the re-check: 409."""
    if backend_engine != "postgresql":
        pytest.skip("the exclusion constraint is PostgreSQL's backstop")
    reference = create(client, "carolyns_dental", booking(), key="reference").json()
    # Starting two days earlier, the row is outside the overlap query's window, yet it still holds 11:00.
    with runtime.db.write() as session:
        session.execute(
            text(
                "UPDATE appointment SET starts_utc = starts_utc - 2 * 86400, ends_utc = ends_utc + 3600 "
                "WHERE id = :id"
            ),
            {"id": reference["id"]},
        )
    racing = create(client, "carolyns_dental", booking(time="11:00"), key="racing")
    assert (racing.status_code, racing.json()["code"]) == (409, "slot_taken")
    with runtime.db.read() as session:
        assert session.get(IdempotencyRecord, ("carolyns_dental", "racing")) is None
        assert session.exec(select(func.count()).select_from(Appointment)).one() == 1
    # Cancelled, the row holds nothing: the same create now succeeds.
    with runtime.db.write() as session:
        session.execute(
            text("UPDATE appointment SET status = 'cancelled' WHERE id = :id"), {"id": reference["id"]}
        )
    assert create(client, "carolyns_dental", booking(time="11:00"), key="after").status_code == 201


CLEANING, NEW_PATIENT = "carolyns_dental_cleaning", "carolyns_dental_new_patient_exam"
#: (service, stored status or None for as created, platform clock, cancel answer, no-show answer) for a
#: 10:00-10:45 New York appointment on DAY; 409 is `appointment_not_cancellable`. The rules are the
#: merchant surface's (one table): an outcome that already holds answers 200 unchanged.
TRANSITIONS = [
    (CLEANING, None, "2026-05-05T13:00:00Z", "cancelled", 409),  # confirmed, upcoming
    (CLEANING, None, "2026-05-05T14:10:00Z", "cancelled", "no_show"),  # confirmed, under way
    (CLEANING, None, "2026-05-05T15:00:00Z", 409, "no_show"),  # completed (derived: ended)
    (NEW_PATIENT, None, "2026-05-05T16:00:00Z", "cancelled", 409),  # pending, past its time
    (CLEANING, "cancelled", "2026-05-05T13:00:00Z", "cancelled", 409),
    (CLEANING, "no_show", "2026-05-05T15:00:00Z", 409, "no_show"),
    (CLEANING, "completed", "2026-05-05T15:00:00Z", 409, 409),  # completed by the merchant
]
REFUSALS = {
    "cancel": "The appointment is {status}; it cannot be cancelled.",
    "no-show": "Only a confirmed appointment that has started can be marked a no-show.",
}


#: Every (service, stored status, clock, action, expected answer) case of TRANSITIONS.
CASES = [
    (service_id, stored, now, action, expected)
    for service_id, stored, now, cancel, no_show in TRANSITIONS
    for action, expected in (("cancel", cancel), ("no-show", no_show))
]


def _booked_as(client, runtime, service_id: str, stored: str | None, now: str) -> str:
    """A new appointment of ``service_id`` with ``stored`` status (None: as created), the clock at ``now``."""
    apt = create(client, "carolyns_dental", booking(service_id=service_id)).json()["id"]
    if stored is not None:
        with runtime.db.write() as session:
            session.execute(text("UPDATE appointment SET status = :status"), {"status": stored})
    client.post("/_testing/clock", json={"now": now})
    return str(apt)


@pytest.mark.parametrize(("service_id", "stored", "now", "action", "expected"), CASES)
def test_cancel_and_no_show_are_allowed_from_exactly_their_statuses(
    client, runtime, service_id, stored, now, action, expected
):
    """Platform choice: cancel from pending or a confirmed not yet ended; no-show once a confirmed started."""
    apt = _booked_as(client, runtime, service_id, stored, now)
    path = f"/api/organizations/carolyns_dental/appointments/{apt}"
    status = client.get(path).json()["status"]
    response = client.post(f"{path}/{action}")
    if expected == 409:
        assert (response.status_code, response.json()["code"]) == (409, "appointment_not_cancellable")
        assert response.json()["detail"] == REFUSALS[action].format(status=status)
    else:
        assert (response.status_code, response.json()["status"]) == (200, expected)
        assert client.get(path).json()["status"] == expected


@pytest.mark.parametrize(("service_id", "stored", "now", "action", "expected"), CASES)
def test_the_merchant_surface_answers_every_case_as_the_customer_surface_does(
    client, runtime, service_id, stored, now, action, expected
):
    """Platform choice: one status-transition table for every surface; only the refusal's code differs."""
    apt = _booked_as(client, runtime, service_id, stored, now)
    response = client.post(f"/api/organizations/carolyns_dental/merchant/appointments/{apt}/{action}")
    if expected == 409:
        assert (response.status_code, response.json()["code"]) == (409, "appointment_transition_not_allowed")
    else:
        assert (response.status_code, response.json()["status"]) == (200, expected)


def test_the_customer_surfaces_no_show_is_deprecated_for_the_merchants(client):
    """Platform choice: the no-show on the customer surface announces its replacement with the platform's
    lifecycle headers (RFC 9745 Deprecation, RFC 8594 Sunset, a deprecation Link); the merchant's does not."""
    apt = create(client, "carolyns_dental", booking()).json()["id"]
    legacy = client.post(f"/api/organizations/carolyns_dental/appointments/{apt}/no-show")
    assert legacy.status_code == 409
    assert legacy.headers["deprecation"] == "@1796083200"
    assert legacy.headers["sunset"] == "Sat, 01 Jan 2033 00:00:00 GMT"
    assert legacy.headers["link"] == (
        '<https://developer.bookwell.example/deprecations/appointment-no-show>; rel="deprecation"; '
        'type="text/html"'
    )
    merchant = client.post(f"/api/organizations/carolyns_dental/merchant/appointments/{apt}/no-show")
    assert merchant.status_code == 409
    assert "deprecation" not in merchant.headers
