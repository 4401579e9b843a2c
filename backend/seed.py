"""Seed data: five synthetic organizations, deterministic and idempotent.

Re-seeding merges by primary key, so it never duplicates. Contact data is synthetic (example domains,
555 numbers). `conformance_co` is the fixture for automated batteries: sandbox verification code `123456`
and parallel bookings of one slot (a flagged test affordance).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlmodel import Session, SQLModel

from osbp.backend.models import Location, Organization, Provider, Service

__all__ = ["SEED_ORGANIZATION_IDS", "seed", "seed_rows"]

SEED_ORGANIZATION_IDS = ("carolyns_dental", "gus_notary", "andys_auto", "phils_spa", "conformance_co")
_IMAGES = "https://images.bookwell.example/providers"

WEEKDAYS = (1, 2, 3, 4, 5)


def _hours(open_: str, close: str, days: Iterable[int] = WEEKDAYS) -> list[dict[str, Any]]:
    return [{"weekday": day, "open": open_, "close": close} for day in days]


def _option(option_id: str, name: str, minutes: int, amount: str) -> dict[str, Any]:
    return {"id": option_id, "name": name, "duration_minutes": minutes, "amount": amount}


def _service(org: str, currency: str, locations: Sequence[str], **fields: Any) -> Service:
    defaults: dict[str, Any] = {
        "organization_id": org,
        "currency": currency,
        "location_ids": list(locations),
        "price_kind": "fixed",
        "cancellation_window_minutes": 1440,
        "cancellation_note": "Cancel at least 24 hours before your appointment.",
        "late_grace_minutes": 10,
    }
    return Service(**(defaults | fields))


def _carolyns_dental() -> list[SQLModel]:
    org, loc = "carolyns_dental", "carolyns_dental_midtown"
    services = [
        _service(
            org,
            "USD",
            [loc],
            id="carolyns_dental_cleaning",
            name="Regular cleaning",
            description="Scaling, polishing and a quick check.",
            duration_minutes=45,
            price_amount="120.00",
            no_show_fee="50.00",
            options=[_option("carolyns_dental_cleaning_fluoride", "Fluoride treatment", 15, "35.00")],
        ),
        _service(
            org,
            "USD",
            [loc],
            id="carolyns_dental_checkup",
            name="Checkup and exam",
            description="Examination with the dentist, x-rays if due.",
            duration_minutes=30,
            price_amount="150.00",
            no_show_fee="50.00",
        ),
        _service(
            org,
            "USD",
            [loc],
            id="carolyns_dental_whitening",
            name="Teeth whitening",
            description="In-chair whitening session.",
            duration_minutes=60,
            price_amount="250.00",
            no_show_fee="50.00",
        ),
        _service(
            org,
            "USD",
            [loc],
            id="carolyns_dental_filling",
            name="Filling",
            description="Composite filling; the price depends on your insurance.",
            duration_minutes=60,
            price_kind="insurance_dependent",
            no_show_fee="50.00",
        ),
        _service(
            org,
            "USD",
            [loc],
            id="carolyns_dental_crown",
            name="Crown",
            description="Porcelain crown, first fitting.",
            duration_minutes=90,
            price_amount="1200.00",
            payment_requirement="deposit",
            deposit_amount="250.00",
            cancellation_window_minutes=2880,
            cancellation_fee="100.00",
            no_show_fee="50.00",
            cancellation_note="Cancel at least 48 hours before; later cancellations cost $100.00.",
        ),
        _service(
            org,
            "USD",
            [loc],
            id="carolyns_dental_new_patient_exam",
            name="Comprehensive new-patient exam",
            description="Full exam and history; the practice confirms every request.",
            duration_minutes=60,
            price_amount="200.00",
            requires_consultation=True,
        ),
        _service(
            org,
            "USD",
            [loc],
            id="carolyns_dental_treatment_plan",
            name="Custom treatment plan",
            description="A planning session; payment terms are agreed case by case.",
            duration_minutes=60,
            price_kind="quote_required",
            payment_requirement="unknown",
            no_show_fee="50.00",
        ),
    ]
    all_ids = [service.id for service in services]
    hours = [
        *_hours("09:00", "17:00", (1, 2, 4, 5)),
        *_hours("08:00", "12:00", (3,)),
        *_hours("13:00", "18:00", (3,)),
        *_hours("09:00", "13:00", (6,)),
    ]
    return [
        Organization(
            id=org,
            name="Carolyn's Dental",
            slug="carolyns-dental",
            domain="carolynsdental.example",
            phone="+12125550100",
            support_email="help@carolynsdental.example",
            time_zone="America/New_York",
            currency="USD",
            country="US",
            slot_interval_minutes=15,
        ),
        Location(
            id=loc,
            organization_id=org,
            name="Carolyn's Dental Midtown",
            kind="in_person",
            time_zone="America/New_York",
            address={
                "line1": "100 Example Avenue",
                "line2": "Suite 5",
                "city": "New York",
                "region": "NY",
                "postal_code": "10001",
                "country": "US",
            },
            latitude=40.7484,
            longitude=-73.9857,
            hours=hours,
        ),
        Provider(
            id="carolyns_dental_dr_reyes",
            organization_id=org,
            name="Dr. Carolyn Reyes",
            title="DDS",
            image_url=f"{_IMAGES}/carolyns_dental_dr_reyes.jpg",
            location_ids=[loc],
            service_ids=all_ids,
        ),
        Provider(
            id="carolyns_dental_dr_okafor",
            organization_id=org,
            name="Dr. Sam Okafor",
            title="DMD",
            image_url=None,
            location_ids=[loc],
            service_ids=[i for i in all_ids if i != "carolyns_dental_crown"],
        ),
        *services,
    ]


def _gus_notary() -> list[SQLModel]:
    org, office, online = "gus_notary", "gus_notary_office", "gus_notary_online"
    no_fees: dict[str, Any] = {
        "cancellation_window_minutes": 60,
        "cancellation_note": "Cancel up to one hour before, free of charge.",
    }
    services = [
        _service(
            org,
            "USD",
            [office, online],
            id="gus_notary_notarization",
            name="Document notarization",
            description="Notarization of up to three signatures.",
            duration_minutes=20,
            price_amount="15.00",
            **no_fees,
        ),
        _service(
            org,
            "USD",
            [office],
            id="gus_notary_apostille",
            name="Apostille",
            description="Apostille preparation; quoted per document.",
            duration_minutes=40,
            price_kind="quote_required",
            **no_fees,
        ),
        _service(
            org,
            "USD",
            [online],
            id="gus_notary_remote_signing",
            name="Remote signing session",
            description="Remote online notarization over video; we text you a code to confirm.",
            duration_minutes=40,
            price_amount="35.00",
            verification="sms",
            **no_fees,
        ),
    ]
    online_hours = [
        *_hours("08:00", "20:00", (1, 2, 3, 4)),
        *_hours("18:00", "02:00", (5,)),
        *_hours("10:00", "14:00", (6,)),
    ]
    return [
        Organization(
            id=org,
            name="Gus' Notary",
            slug="gus-notary",
            domain="gusnotary.example",
            phone="+12125550110",
            support_email="desk@gusnotary.example",
            time_zone="America/New_York",
            currency="USD",
            country="US",
            slot_interval_minutes=20,
        ),
        Location(
            id=office,
            organization_id=org,
            name="Gus' Notary Office",
            kind="in_person",
            time_zone="America/New_York",
            address={
                "line1": "200 Sample Street",
                "line2": None,
                "city": "New York",
                "region": "NY",
                "postal_code": "10013",
                "country": "US",
            },
            latitude=40.7196,
            longitude=-74.0027,
            hours=_hours("09:00", "17:00"),
        ),
        Location(
            id=online,
            organization_id=org,
            name="Gus' Notary Online",
            kind="online",
            time_zone="America/New_York",
            address=None,
            hours=online_hours,
        ),
        Provider(
            id="gus_notary_gus",
            organization_id=org,
            name="Gus Alvarez",
            title="Notary Public",
            image_url=f"{_IMAGES}/gus_notary_gus.jpg",
            location_ids=[office, online],
            service_ids=[service.id for service in services],
        ),
        Provider(
            id="gus_notary_mina",
            organization_id=org,
            name="Mina Park",
            title="Notary Public",
            image_url=f"{_IMAGES}/gus_notary_mina.jpg",
            location_ids=[online],
            service_ids=["gus_notary_notarization", "gus_notary_remote_signing"],
        ),
        *services,
    ]


def _andys_auto() -> list[SQLModel]:
    org, loc = "andys_auto", "andys_auto_kreuzberg"
    services = [
        _service(
            org,
            "EUR",
            [loc],
            id="andys_auto_oil_change",
            name="Oil change",
            description="Engine oil and filter change.",
            duration_minutes=45,
            price_amount="89.00",
            cancellation_fee="30.00",
            cancellation_note="Cancel at least 24 hours before; later cancellations cost €30.00.",
        ),
        _service(
            org,
            "EUR",
            [loc],
            id="andys_auto_brakes",
            name="Brake pad replacement",
            description="Front brake pads; we order parts on booking.",
            duration_minutes=120,
            price_amount="280.00",
            payment_requirement="deposit",
            deposit_amount="50.00",
        ),
        _service(
            org,
            "EUR",
            [loc],
            id="andys_auto_repair_consultation",
            name="Repair consultation",
            description="We look at the car and quote the repair; the workshop confirms each request.",
            duration_minutes=30,
            price_amount="0.00",
            requires_consultation=True,
        ),
    ]
    hours = [*_hours("08:00", "18:00"), *_hours("08:00", "12:00", (6,)), *_hours("13:00", "16:00", (6,))]
    return [
        Organization(
            id=org,
            name="Andy's Auto",
            slug="andys-auto",
            domain="andysauto.example",
            phone="+493055501234",
            support_email="werkstatt@andysauto.example",
            time_zone="Europe/Berlin",
            currency="EUR",
            country="DE",
            slot_interval_minutes=15,
        ),
        Location(
            id=loc,
            organization_id=org,
            name="Andy's Auto Kreuzberg",
            kind="in_person",
            time_zone="Europe/Berlin",
            address={
                "line1": "Beispielstraße 12",
                "line2": None,
                "city": "Berlin",
                "region": "BE",
                "postal_code": "10999",
                "country": "DE",
            },
            latitude=52.4986,
            longitude=13.4030,
            hours=hours,
        ),
        Provider(
            id="andys_auto_andy",
            organization_id=org,
            name="Andy Becker",
            title="Master mechanic",
            image_url=f"{_IMAGES}/andys_auto_andy.jpg",
            location_ids=[loc],
            service_ids=[service.id for service in services],
        ),
        Provider(
            id="andys_auto_lena",
            organization_id=org,
            name="Lena Wolf",
            title="Mechanic",
            image_url=None,
            location_ids=[loc],
            service_ids=["andys_auto_oil_change", "andys_auto_brakes"],
        ),
        *services,
    ]


def _phils_spa() -> list[SQLModel]:
    org, loc = "phils_spa", "phils_spa_soho"
    services = [
        _service(
            org,
            "GBP",
            [loc],
            id="phils_spa_swedish_massage",
            name="Swedish massage",
            description="A full-body relaxing massage.",
            duration_minutes=60,
            price_amount="95.00",
            no_show_fee="40.00",
        ),
        _service(
            org,
            "GBP",
            [loc],
            id="phils_spa_day_package",
            name="Spa day package",
            description="Massage, facial and pool access; paid in full when booking.",
            duration_minutes=240,
            price_amount="320.00",
            payment_requirement="full_prepay",
            cancellation_window_minutes=4320,
            cancellation_note="Cancel at least 72 hours before for a full refund.",
        ),
        _service(
            org,
            "JPY",
            [loc],
            id="phils_spa_onsen_gift",
            name="Tokyo onsen gift experience",
            description="A gift voucher session priced in yen for our Tokyo partner spa.",
            duration_minutes=90,
            price_amount="12000",
        ),
    ]
    hours = [*_hours("10:00", "20:00", (1, 2, 3, 4, 5, 6)), *_hours("11:00", "17:00", (0,))]
    return [
        Organization(
            id=org,
            name="Phil's Spa",
            slug="phils-spa",
            domain="philsspa.example",
            phone="+442079460000",
            support_email="hello@philsspa.example",
            time_zone="Europe/London",
            currency="GBP",
            country="GB",
            slot_interval_minutes=30,
        ),
        Location(
            id=loc,
            organization_id=org,
            name="Phil's Spa Soho",
            kind="in_person",
            time_zone="Europe/London",
            address={
                "line1": "1 Example Lane",
                "line2": None,
                "city": "London",
                "region": "LND",
                "postal_code": "W1D 3AA",
                "country": "GB",
            },
            latitude=51.5136,
            longitude=-0.1365,
            hours=hours,
        ),
        Provider(
            id="phils_spa_phil",
            organization_id=org,
            name="Phil Morgan",
            title="Therapist",
            image_url=f"{_IMAGES}/phils_spa_phil.jpg",
            location_ids=[loc],
            service_ids=[service.id for service in services],
        ),
        Provider(
            id="phils_spa_nora",
            organization_id=org,
            name="Nora Quinn",
            title="Therapist",
            image_url=f"{_IMAGES}/phils_spa_nora.jpg",
            location_ids=[loc],
            service_ids=["phils_spa_swedish_massage", "phils_spa_day_package"],
        ),
        *services,
    ]


def _conformance_co() -> list[SQLModel]:
    org, loc = "conformance_co", "conformance_main"
    common: dict[str, Any] = {
        "duration_minutes": 45,
        "cancellation_window_minutes": 360,
        "cancellation_note": "Cancel at least 6 hours before the appointment.",
    }
    specs: list[dict[str, Any]] = [
        {
            "id": "conformance_fixed_usd",
            "name": "Fixed price (USD)",
            "price_amount": "95.00",
            "options": [_option("conformance_fixed_usd_addon", "Add-on (15 minutes)", 15, "25.00")],
        },
        {
            "id": "conformance_fixed_eur",
            "name": "Fixed price (EUR)",
            "price_amount": "90.00",
            "currency": "EUR",
        },
        {
            "id": "conformance_fixed_gbp",
            "name": "Fixed price (GBP)",
            "price_amount": "80.00",
            "currency": "GBP",
        },
        {
            "id": "conformance_fixed_jpy",
            "name": "Fixed price (JPY)",
            "price_amount": "12000",
            "currency": "JPY",
        },
        {
            "id": "conformance_fixed_kwd",
            "name": "Fixed price (KWD)",
            "price_amount": "12.500",
            "currency": "KWD",
        },
        {
            "id": "conformance_insurance_dependent",
            "name": "Insurance-dependent price",
            "price_kind": "insurance_dependent",
        },
        {"id": "conformance_quote_required", "name": "Quote-required price", "price_kind": "quote_required"},
        {
            "id": "conformance_consultation",
            "name": "Consultation",
            "price_amount": "0.00",
            "requires_consultation": True,
        },
        {
            "id": "conformance_deposit",
            "name": "Deposit required",
            "price_amount": "95.00",
            "payment_requirement": "deposit",
            "deposit_amount": "25.00",
        },
        {
            "id": "conformance_full_prepay",
            "name": "Full prepayment",
            "price_amount": "95.00",
            "payment_requirement": "full_prepay",
        },
        {
            "id": "conformance_unknown_payment",
            "name": "Unknown payment requirement",
            "price_amount": "95.00",
            "payment_requirement": "unknown",
        },
        {
            "id": "conformance_verification",
            "name": "SMS verification (sandbox code 123456)",
            "price_amount": "95.00",
            "verification": "sms",
        },
    ]
    services = [
        _service(
            org,
            spec.pop("currency", "USD"),
            [loc],
            description="Conformance fixture service.",
            **(common | spec),
        )
        for spec in specs
    ]
    ids = [service.id for service in services]
    return [
        Organization(
            id=org,
            name="Conformance Co",
            slug="conformance-co",
            domain="conformance.example",
            phone="+12125550190",
            support_email="fixtures@conformance.example",
            time_zone="America/New_York",
            currency="USD",
            country="US",
            slot_interval_minutes=15,
            verification_sandbox=True,
            parallel_bookings=True,
        ),
        Location(
            id=loc,
            organization_id=org,
            name="Conformance Main",
            kind="in_person",
            time_zone="America/New_York",
            address={
                "line1": "1 Fixture Plaza",
                "line2": None,
                "city": "New York",
                "region": "NY",
                "postal_code": "10004",
                "country": "US",
            },
            latitude=40.7033,
            longitude=-74.0170,
            hours=_hours("09:00", "17:00"),
        ),
        Provider(
            id="conformance_provider_ada",
            organization_id=org,
            name="Ada Fixture",
            title=None,
            image_url=f"{_IMAGES}/conformance_provider_ada.jpg",
            location_ids=[loc],
            service_ids=ids,
        ),
        Provider(
            id="conformance_provider_grace",
            organization_id=org,
            name="Grace Fixture",
            title=None,
            image_url=f"{_IMAGES}/conformance_provider_grace.jpg",
            location_ids=[loc],
            service_ids=ids,
        ),
        *services,
    ]


def seed_rows() -> list[SQLModel]:
    """Every seed row, organizations before the rows that reference them."""
    return [*_carolyns_dental(), *_gus_notary(), *_andys_auto(), *_phils_spa(), *_conformance_co()]


def seed(session: Session) -> None:
    """Insert or refresh the seed rows (merge by primary key: re-seeding never duplicates)."""
    for row in seed_rows():
        session.merge(row)
