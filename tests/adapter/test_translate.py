"""Native → OSBP translation: money by exponent, durations, weekdays, instants, slots, policies, status."""

from __future__ import annotations

import re
from typing import Any

import iso4217
import pytest
from hypothesis import given
from hypothesis import strategies as st

from osbp.adapter import translate
from osbp.adapter.native import (
    NativeAppointment,
    NativeHours,
    NativeOrganization,
    NativePrice,
    NativeService,
    NativeSlot,
)
from osbp.adapter.translate import UntranslatableData
from osbp.protocol.models import Money, MoneyType, OperatingHours

MIDTOWN: dict[str, Any] = {
    "id": "midtown",
    "name": "Midtown",
    "kind": "in_person",
    "time_zone": "America/New_York",
    "address": {
        "line1": "100 Example Avenue",
        "line2": "Suite 5",
        "city": "New York",
        "region": "NY",
        "postal_code": "10001",
        "country": "US",
    },
    "coordinates": {"latitude": 40.7484, "longitude": -73.9857},
    "hours": [
        {"weekday": 0, "open": "10:00", "close": "14:00"},
        {"weekday": 1, "open": "09:00", "close": "17:00"},
    ],
}
ONLINE: dict[str, Any] = {
    "id": "online",
    "name": "Online",
    "kind": "online",
    "time_zone": "America/New_York",
    "address": None,
    "coordinates": None,
    "hours": [{"weekday": 6, "open": "20:00", "close": "02:00"}],
}
ORGANIZATION = NativeOrganization.model_validate(
    {
        "id": "org",
        "name": "Org",
        "time_zone": "America/New_York",
        "currency": "USD",
        "country": "US",
        "locations": [MIDTOWN, ONLINE],
        "providers": [{"id": "p1", "name": "Dr. One", "image_url": "https://img.example/p1.jpg"}],
    }
)


def native_slot(**overrides: Any) -> NativeSlot:
    """A native slot at Midtown (overridable)."""
    values: dict[str, Any] = {
        "location_id": "midtown",
        "location_name": "Midtown",
        "time_zone": "America/New_York",
        "provider_id": "p1",
        "provider_name": "Dr. One",
        "provider_image_url": "https://img.example/p1.jpg",
        "service_id": "s1",
        "date": "2026-05-05",
        "time": "13:00",
        "end_date": "2026-05-05",
        "end_time": "14:00",
        "duration_minutes": 60,
        "price": {"kind": "fixed", "amount": "95.00", "currency": "USD"},
    } | overrides
    return NativeSlot.model_validate(values)


def native_service(policy: dict[str, Any] | None = None, **overrides: Any) -> NativeService:
    """A native service with a permissive policy (overridable)."""
    rules: dict[str, Any] = {
        "cancellation": {
            "allowed": True,
            "window_minutes": 360,
            "fee": None,
            "note": "Cancel 6 hours ahead.",
        },
        "late_grace_minutes": 15,
        "no_show_fee": None,
        "payment": {"requirement": "none", "deposit": None},
        "verification": "none",
    } | (policy or {})
    values: dict[str, Any] = {
        "id": "s1",
        "organization_id": "org",
        "name": "Haircut",
        "duration_minutes": 60,
        "price": {"kind": "fixed", "amount": "95.00", "currency": "USD"},
        "requires_consultation": False,
        "policy": rules,
    } | overrides
    return NativeService.model_validate(values)


@pytest.mark.parametrize(
    ("amount", "currency", "minor", "display"),
    [
        ("95.00", "USD", 9500, "$95.00"),
        ("120.00", "USD", 12000, "$120.00"),
        ("12000", "JPY", 12000, "¥12,000"),
        ("12.500", "KWD", 12500, "KWD\u00a012.500"),
        ("80.00", "GBP", 8000, "£80.00"),
        ("0.00", "EUR", 0, "€0.00"),
    ],
)
def test_fixed_major_units_scale_by_the_currency_exponent(
    amount: str, currency: str, minor: int, display: str
) -> None:
    """OSBP spec, Money: scale major units by the ISO 4217 exponent, not a fixed factor of 100."""
    assert translate.money(NativePrice(kind="fixed", amount=amount, currency=currency)) == Money(
        amount_minor=minor, currency=currency, type="fixed", display=display
    )


@given(
    st.sampled_from([("JPY", 0), ("USD", 2), ("EUR", 2), ("KWD", 3), ("TND", 3)]),
    st.integers(min_value=0, max_value=10**12),
)
def test_money_round_trips_across_exponents(currency_exponent: tuple[str, int], minor: int) -> None:
    """OSBP spec, Money: a major-unit string with the exponent's digits gives back the same amount_minor."""
    currency, exponent = currency_exponent
    whole, fraction = divmod(minor, 10**exponent)
    major = f"{whole}.{fraction:0{exponent}d}" if exponent else str(whole)
    assert translate.money(NativePrice(kind="fixed", amount=major, currency=currency)).amount_minor == minor


@pytest.mark.parametrize("kind", ["insurance_dependent", "quote_required", "unknown"])
def test_non_fixed_prices_carry_their_type_and_no_amount(kind: MoneyType) -> None:
    """OSBP spec, Money: non-fixed values mark a price with no fixed amount_minor."""
    expected = Money(currency="USD", type=kind)
    assert translate.money(NativePrice(kind=kind, amount=None, currency="USD")) == expected


def test_an_unrecognized_price_kind_becomes_unknown() -> None:
    """OSBP spec, Fail closed: a kind OSBP does not know is never read as fixed."""
    assert translate.money(NativePrice(kind="sliding_scale", currency="USD")) == Money(
        currency="USD", type="unknown"
    )


@pytest.mark.parametrize(
    "price",
    [
        NativePrice(kind="fixed", amount="10.00", currency="XXX"),
        NativePrice(kind="fixed", amount="10.00", currency="XAU"),
        NativePrice(kind="quote_required", currency="ZZZ"),
        NativePrice(kind="fixed", amount="12.345", currency="USD"),
        NativePrice(kind="fixed", amount="1.5", currency="JPY"),
        NativePrice(kind="fixed", amount=None, currency="USD"),
        NativePrice(kind="fixed", amount="-1.00", currency="USD"),
    ],
)
def test_unsafe_money_fails_closed(price: NativePrice) -> None:
    """OSBP spec, Money: an unknown exponent is not safe to onboard; digits are never rounded away."""
    with pytest.raises(UntranslatableData):
        translate.money(price)


@pytest.mark.parametrize(
    ("amount", "currency"),
    [
        ("99999999999999999999", "USD"),  # 2**53 - 1 is 90071992547409.91 USD
        ("90071992547409.92", "USD"),  # one minor unit past the bound
        ("9007199254740992", "JPY"),
        ("1" * 5000, "USD"),
        ("１２０.００", "USD"),  # full-width digits: Decimal() and int() take them
        ("١٢٠", "JPY"),  # Arabic-Indic digits
        ("1_200.00", "USD"),
        ("+12.50", "USD"),
        ("-0.00", "USD"),
        ("1E2", "USD"),
        ("1e2", "JPY"),
        ("NaN", "USD"),
        ("Infinity", "USD"),
        (" 12.00", "USD"),
        ("12.00 ", "USD"),
        ("12.00\n", "USD"),
        ("12.", "USD"),
        (".50", "USD"),
        ("12,00", "EUR"),
        ("", "USD"),
        ("12.000", "USD"),  # more fractional digits than the exponent, even zeros: not the native form
        ("12.0000000000000000000000000000001", "USD"),  # would round to 12.00 in a 28-digit context
        ("12000.0", "JPY"),
    ],
)
def test_a_native_amount_that_is_not_strictly_a_plain_decimal_is_untranslatable(
    amount: str, currency: str
) -> None:
    """OSBP spec, Money; docs/backend-api.md: only a plain decimal with at most the currency's minor
    digits, within 2**53 - 1 minor units, becomes Money; anything else fails closed, never rounded."""
    with pytest.raises(UntranslatableData):
        translate.money(NativePrice(kind="fixed", amount=amount, currency=currency))


@pytest.mark.parametrize(
    ("amount", "currency", "minor"),
    [
        ("90071992547409.91", "USD", 2**53 - 1),
        ("9007199254740991", "JPY", 2**53 - 1),
        ("0.00", "USD", 0),
        ("95", "USD", 9500),  # fewer fractional digits than the exponent are exact
        ("007.50", "USD", 750),
    ],
)
def test_plain_decimals_up_to_the_bound_translate_exactly(amount: str, currency: str, minor: int) -> None:
    """OSBP spec, Money: amount_minor is exact up to 2**53 - 1, the largest JSON-safe integer."""
    assert translate.money(NativePrice(kind="fixed", amount=amount, currency=currency)).amount_minor == minor


_CURRENCIES = sorted(c.code for c in iso4217.Currency if isinstance(c.exponent, int))
_NUMBERISH = st.from_regex(
    r"[-+ ]?[0-9０-９١_]{0,20}([.,][0-9]{0,6})?([eE][-+]?[0-9]{1,3})?\s?", fullmatch=True
)


def _expected_minor(text: str, exponent: int) -> int | None:
    """The amount_minor of ``text`` by plain integer arithmetic, or None when it must be refused."""
    if not re.fullmatch(r"[0-9]+(\.[0-9]+)?", text):
        return None
    whole, _, fraction = text.partition(".")
    if len(fraction) > exponent:
        return None
    minor = int(whole + fraction.ljust(exponent, "0"))
    return minor if minor <= 2**53 - 1 else None


@given(
    amount=st.one_of(
        _NUMBERISH,
        st.text(max_size=12),
        st.integers(min_value=0, max_value=2**60).map(str),
        st.decimals(min_value=0, max_value=10**14, allow_nan=False, places=3).map(str),
    ),
    currency=st.sampled_from(_CURRENCIES),
)
def test_a_native_amount_is_either_exact_money_or_untranslatable(amount: str, currency: str) -> None:
    """OSBP spec, Money: a fixed native price becomes exactly the Money plain arithmetic gives, with a
    display hint, or fails closed as untranslatable data; it never raises anything else (property)."""
    exponent = iso4217.Currency(currency).exponent
    assert isinstance(exponent, int)
    expected = _expected_minor(amount, exponent)
    price = NativePrice(kind="fixed", amount=amount, currency=currency)
    if expected is None:
        with pytest.raises(UntranslatableData):
            translate.money(price)
        return
    money = translate.money(price)
    assert (money.amount_minor, money.currency, money.type) == (expected, currency, "fixed")
    assert isinstance(money.display, str)
    assert money.display


@pytest.mark.parametrize(
    ("minutes", "iso"), [(45, "PT45M"), (60, "PT1H"), (90, "PT1H30M"), (1440, "PT24H"), (0, "PT0M")]
)
def test_minutes_become_iso_8601_durations(minutes: int, iso: str) -> None:
    """OSBP spec, Time Discipline: durations are ISO 8601 strings, not bare integers."""
    assert translate.duration(minutes) == iso


@pytest.mark.parametrize(("native", "iso"), [(0, 7), (1, 1), (2, 2), (3, 3), (4, 4), (5, 5), (6, 6)])
def test_native_weekdays_become_iso_weekdays(native: int, iso: int) -> None:
    """OSBP spec, Time Discipline: day is ISO 1 = Monday … 7 = Sunday, not 0 = Sunday."""
    assert translate.iso_weekday(native) == iso


@pytest.mark.parametrize("native", [-1, 7])
def test_out_of_range_weekdays_fail_closed(native: int) -> None:
    """Platform choice: a weekday outside the documented range is never guessed."""
    with pytest.raises(UntranslatableData):
        translate.iso_weekday(native)


def test_hours_are_ordered_by_iso_weekday_and_keep_overnight_periods() -> None:
    """OSBP spec, Time Discipline: close earlier than open continues into the next day (kept verbatim)."""
    hours = [
        NativeHours(weekday=0, open="10:00", close="14:00"),
        NativeHours(weekday=6, open="20:00", close="02:00"),
        NativeHours(weekday=1, open="13:00", close="17:00"),
        NativeHours(weekday=1, open="08:00", close="12:00"),
    ]
    assert translate.operating_hours(hours) == [
        OperatingHours(day=1, open="08:00", close="12:00"),
        OperatingHours(day=1, open="13:00", close="17:00"),
        OperatingHours(day=6, open="20:00", close="02:00"),
        OperatingHours(day=7, open="10:00", close="14:00"),
    ]


def test_in_person_slot_is_fully_denormalized() -> None:
    """OSBP spec, availability.find: each slot carries create-ready ids and schedule/provider context."""
    slot = translate.slot(native_slot(), ORGANIZATION)
    assert slot.to_wire() == {
        "id": "midtown:p1:s1:2026-05-05T13:00:00",
        "organization_id": "org",
        "organization_name": "Org",
        "schedule_id": "midtown",
        "schedule_name": "Midtown",
        "schedule_address": "100 Example Avenue, Suite 5, New York, NY 10001, US",
        "schedule_latitude": 40.7484,
        "schedule_longitude": -73.9857,
        "schedule_hours": [
            {"day": 1, "open": "09:00", "close": "17:00"},
            {"day": 7, "open": "10:00", "close": "14:00"},
        ],
        "schedule_timezone": "America/New_York",
        "provider_id": "p1",
        "provider_name": "Dr. One",
        "provider_image_url": "https://img.example/p1.jpg",
        "service_id": "s1",
        "starts_at": "2026-05-05T17:00:00Z",
        "ends_at": "2026-05-05T18:00:00Z",
        "starts_at_local": "2026-05-05T13:00:00",
        "ends_at_local": "2026-05-05T14:00:00",
        "price": {"amount_minor": 9500, "currency": "USD", "type": "fixed", "display": "$95.00"},
    }


def test_a_day_of_slots_translates_each_slot_exactly_as_alone() -> None:
    """Platform choice: shared locations and prices are translated once per answer, with the same result."""
    natives = [
        native_slot(),
        native_slot(time="14:00", end_time="15:00", provider_id="p2"),
        native_slot(location_id="online", location_name="Online", time="15:00", end_time="16:00"),
        native_slot(
            time="16:00", end_time="17:00", price={"kind": "fixed", "amount": "80.00", "currency": "USD"}
        ),
        native_slot(time="17:00", end_time="18:00", price={"kind": "quote_required", "currency": "USD"}),
        native_slot(location_id="nowhere", time="18:00", end_time="19:00"),
    ]
    assert translate.slots(natives, ORGANIZATION) == [translate.slot(n, ORGANIZATION) for n in natives]
    displays = [slot.price.display for slot in translate.slots(natives, ORGANIZATION) if slot.price]
    assert displays == ["$95.00", "$95.00", "$95.00", "$80.00", None, "$95.00"]


def test_online_slot_omits_address_and_coordinates() -> None:
    """OSBP spec, availability.find: address and coordinates are omitted for online locations."""
    wire = translate.slot(native_slot(location_id="online", location_name="Online"), ORGANIZATION).to_wire()
    assert "schedule_address" not in wire
    assert "schedule_latitude" not in wire
    assert "schedule_longitude" not in wire
    assert wire["schedule_hours"] == [{"day": 6, "open": "20:00", "close": "02:00"}]
    assert wire["schedule_timezone"] == "America/New_York"


def test_unknown_timezone_leaves_instants_and_zone_absent() -> None:
    """OSBP spec, Time Discipline: leave starts_at absent rather than guess when the zone is unknown."""
    wire = translate.slot(native_slot(time_zone="Mars/Olympus_Mons"), ORGANIZATION).to_wire()
    assert "starts_at" not in wire
    assert "ends_at" not in wire
    assert "schedule_timezone" not in wire
    assert wire["starts_at_local"] == "2026-05-05T13:00:00"


def test_instants_follow_the_merchant_zone_not_the_host() -> None:
    """OSBP spec, Time Discipline: the instant is merchant wall-clock plus the IANA zone (DST-correct)."""
    london_summer = translate.slot(native_slot(time_zone="Europe/London", date="2026-07-01"), ORGANIZATION)
    tokyo = translate.slot(native_slot(time_zone="Asia/Tokyo"), ORGANIZATION)
    assert london_summer.starts_at == "2026-07-01T12:00:00Z"
    assert tokyo.starts_at == "2026-05-05T04:00:00Z"


def test_end_instant_is_start_plus_elapsed_duration_across_a_dst_change() -> None:
    """OSBP spec, Time Discipline: 01:30 + 60 min on the fall-back night ends one elapsed hour later."""
    slot = translate.slot(
        native_slot(
            date="2026-11-01", time="01:00", end_date="2026-11-01", end_time="01:00", duration_minutes=60
        ),
        ORGANIZATION,
    )
    # 01:00 occurs twice; the platform means the first (EDT, -04:00), so the end is 01:00 EST (-05:00).
    assert (slot.starts_at, slot.ends_at) == ("2026-11-01T05:00:00Z", "2026-11-01T06:00:00Z")
    assert (slot.starts_at_local, slot.ends_at_local) == ("2026-11-01T01:00:00", "2026-11-01T01:00:00")


def test_service_translates_duration_price_and_display_only_options() -> None:
    """OSBP spec, Core Objects: Service with ISO duration, Money price and options for display."""
    service = translate.service(
        native_service(
            options=[
                {
                    "id": "o1",
                    "name": "Add-on",
                    "duration_minutes": 15,
                    "price": {"kind": "fixed", "amount": "25.00", "currency": "USD"},
                }
            ]
        )
    )
    assert service.to_wire() == {
        "id": "s1",
        "name": "Haircut",
        "duration": "PT1H",
        "price": {"amount_minor": 9500, "currency": "USD", "type": "fixed", "display": "$95.00"},
        "requires_consultation": False,
        "options": [
            {
                "id": "o1",
                "name": "Add-on",
                "duration": "PT15M",
                "price": {"amount_minor": 2500, "currency": "USD", "type": "fixed", "display": "$25.00"},
            }
        ],
    }


def test_policy_carries_fees_windows_payment_verification_and_organization() -> None:
    """OSBP spec, policy.explain: cancellation and no-show fees surfaced, organization block included."""
    fee = {"kind": "fixed", "amount": "25.00", "currency": "USD"}
    policy = translate.policy(
        native_service(
            {
                "cancellation": {
                    "allowed": True,
                    "window_minutes": 360,
                    "fee": fee,
                    "note": "Cancel 6 hours ahead.",
                },
                "no_show_fee": {"kind": "fixed", "amount": "50.00", "currency": "USD"},
                "verification": "sms",
            }
        ),
        ORGANIZATION,
    )
    assert policy.to_wire() == {
        "service_id": "s1",
        "cancellation_enabled": True,
        "cancellation_window": "PT6H",
        "cancellation_note": "Cancel 6 hours ahead.",
        "late_grace": "PT15M",
        "cancellation_fee": {"amount_minor": 2500, "currency": "USD", "type": "fixed", "display": "$25.00"},
        "no_show_fee": {"amount_minor": 5000, "currency": "USD", "type": "fixed", "display": "$50.00"},
        "payment_requirement": "none",
        "deposit": {"amount_minor": 0, "currency": "USD", "type": "fixed", "display": "$0.00"},
        "verification_method": "sms",
        "organization": {
            "id": "org",
            "name": "Org",
            "timezone": "America/New_York",
            "currency": "USD",
            "country": "US",
        },
    }


def test_policy_without_fees_omits_them() -> None:
    """OSBP spec, policy.explain: fees appear only when the platform reports an amount."""
    wire = translate.policy(native_service(), ORGANIZATION).to_wire()
    assert "cancellation_fee" not in wire
    assert "no_show_fee" not in wire


def test_fees_without_an_amount_are_omitted_too() -> None:
    """OSBP spec, policy.explain: a fee the platform reports with no amount is not surfaced."""
    unknown = {"kind": "unknown", "currency": "USD"}
    wire = translate.policy(
        native_service(
            {
                "cancellation": {"allowed": True, "window_minutes": 60, "fee": unknown, "note": ""},
                "no_show_fee": unknown,
            }
        ),
        ORGANIZATION,
    ).to_wire()
    assert "cancellation_fee" not in wire
    assert "no_show_fee" not in wire
    service = native_service(
        {
            "cancellation": {"allowed": True, "window_minutes": 60, "fee": unknown, "note": ""},
            "no_show_fee": unknown,
        }
    )
    assert translate.unknown_fees(service) == ["cancellation fee", "no-show fee"]
    assert translate.unknown_fees(native_service()) == []


@pytest.mark.parametrize(
    ("payment", "requirement", "deposit"),
    [
        (
            {"requirement": "deposit", "deposit": {"kind": "fixed", "amount": "250.00", "currency": "USD"}},
            "deposit",
            Money(amount_minor=25000, currency="USD", type="fixed", display="$250.00"),
        ),
        ({"requirement": "full_prepay", "deposit": None}, "full_prepay", None),
        ({"requirement": "unknown", "deposit": None}, "unknown", None),
        ({"requirement": "installments", "deposit": None}, "unknown", None),
    ],
)
def test_payment_requirements_map_and_unknown_ones_fail_closed(
    payment: dict[str, Any], requirement: str, deposit: Money | None
) -> None:
    """OSBP spec, policy.explain: none | deposit | full_prepay | unknown; anything else is unknown."""
    policy = translate.policy(native_service({"payment": payment}), ORGANIZATION)
    assert (policy.payment_requirement, policy.deposit) == (requirement, deposit)


@pytest.mark.parametrize(
    ("native", "method"), [("sms", "sms"), ("email", "email"), ("none", "none"), ("voice", "unknown")]
)
def test_verification_methods_map_and_unknown_ones_say_unknown(native: str, method: str) -> None:
    """OSBP spec, policy.explain: sms, email, none, or unknown; never promise a channel OSBP cannot name."""
    assert (
        translate.policy(native_service({"verification": native}), ORGANIZATION).verification_method == method
    )


@pytest.mark.parametrize(
    ("native", "status"),
    [
        ("confirmed", "booked"),
        ("pending", "pending"),
        ("cancelled", "cancelled"),
        ("completed", "completed"),
        ("no_show", "no_show"),
        ("rescheduled", "unknown"),
    ],
)
def test_booking_status_mapping(native: str, status: str) -> None:
    """OSBP spec, booking.status: Booking.status maps to booked / cancelled / completed / no_show / pending /
    unknown."""
    assert translate.booking_status(native) == status


def test_booking_carries_wall_clock_instants_and_zone() -> None:
    """OSBP spec, booking.status: merchant-local times, instants and the IANA zone."""
    appointment = NativeAppointment.model_validate(
        {
            "id": "apt_1",
            "organization_id": "org",
            "status": "confirmed",
            "service_id": "s1",
            "location_id": "midtown",
            "provider_id": "p1",
            "date": "2026-05-05",
            "time": "13:00",
            "end_date": "2026-05-05",
            "end_time": "14:00",
            "time_zone": "America/Los_Angeles",
            "duration_minutes": 60,
        }
    )
    assert translate.booking(appointment).to_wire() == {
        "id": "apt_1",
        "status": "booked",
        "organization_id": "org",
        "service_id": "s1",
        "schedule_id": "midtown",
        "provider_id": "p1",
        "starts_at": "2026-05-05T20:00:00Z",
        "ends_at": "2026-05-05T21:00:00Z",
        "starts_at_local": "2026-05-05T13:00:00",
        "ends_at_local": "2026-05-05T14:00:00",
        "schedule_timezone": "America/Los_Angeles",
    }


def test_requested_slot_is_built_from_the_catalog_when_not_offered() -> None:
    """OSBP spec, Mandate Enforcement: scope and window checks need the slot even if it is gone."""
    slot = translate.slot_from_request(
        ORGANIZATION,
        native_service(),
        schedule_id="midtown",
        provider_id="p1",
        starts_at_local="2026-05-05T13:00:00",
    )
    assert (slot.id, slot.organization_id, slot.schedule_id, slot.provider_id, slot.service_id) == (
        "midtown:p1:s1:2026-05-05T13:00:00",
        ORGANIZATION.id,
        "midtown",
        "p1",
        "s1",
    )
    # Never shown nor booked: no display context.
    assert (slot.provider_name, slot.schedule_name, slot.schedule_address) == (None, None, None)
    assert (slot.starts_at, slot.ends_at, slot.ends_at_local) == (
        "2026-05-05T17:00:00Z",
        "2026-05-05T18:00:00Z",
        "2026-05-05T14:00:00",
    )
    assert slot.price == Money(amount_minor=9500, currency="USD", type="fixed", display="$95.00")


def test_requested_slot_with_unknown_schedule_has_no_zone_guess() -> None:
    """OSBP spec, Time Discipline: an unknown schedule gives no location facts, the org zone is used."""
    slot = translate.slot_from_request(
        ORGANIZATION,
        native_service(),
        schedule_id="nowhere",
        provider_id="",
        starts_at_local="2026-05-05T13:00:00",
    )
    assert not slot.provider_id
    assert slot.schedule_name is None
    assert slot.schedule_timezone == "America/New_York"
