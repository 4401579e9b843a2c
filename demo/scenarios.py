"""The four demo verticals: who asks for what, at which synthetic merchant, inside which mandate.

Everything here is synthetic: the organizations are the platform's seed data, the customers are invented
names with 555 numbers and ``example`` addresses. The agent turns a :class:`Vertical` into a
:class:`~osbp.protocol.models.BookingMandate` with :func:`build_mandate`, anchored to the platform's clock
so a fixed ``--now`` gives the same mandate, the same dates and the same transcript every time.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import date, datetime, timedelta

from osbp.protocol.models import BookingMandate, Customer, Money
from osbp.protocol.timeutil import format_instant, instant_to_wall_clock, parse_wall_clock

__all__ = [
    "MANDATE_HORIZON_DAYS",
    "MANDATE_LIFETIME",
    "VERTICALS",
    "Region",
    "Vertical",
    "build_mandate",
    "local_today",
]

#: How far ahead the user lets the agent book (merchant-local days after today).
MANDATE_HORIZON_DAYS = 14
#: How long the user's authorization holds after it was given.
MANDATE_LIFETIME = timedelta(days=14)


@dataclass(frozen=True, slots=True)
class Region:
    """Where the merchant is: ISO 3166-1 country, ISO 4217 currency, IANA timezone."""

    country: str
    currency: str
    timezone: str


@dataclass(frozen=True, slots=True)
class Vertical:
    """One demo vertical: the merchant, the user's request and the scope the user grants."""

    key: str
    title: str
    organization_id: str
    organization_name: str
    business_type: str
    modality: str
    region: Region
    intent: str
    user_request: str
    service_id: str
    schedule_id: str
    customer: Customer
    #: The services the user allows (the mandate's service_ids).
    allowed_service_ids: tuple[str, ...]
    #: The price cap in the currency's minor unit.
    max_price_minor: int
    #: The slot the user prefers: the first one at or after this merchant-local "HH:MM".
    preferred_time: str = "10:00"
    #: A service inside the mandate's service list that costs more than the cap (the fail-closed coda).
    over_cap_service_id: str | None = None
    #: What the user asks for in the coda.
    over_cap_request: str | None = None
    extra_notes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def mandate_id(self) -> str:
        """A readable, deterministic mandate id."""
        return f"mnd_demo_{self.key}"


VERTICALS: dict[str, Vertical] = {
    "dental": Vertical(
        key="dental",
        title="Dental cleaning in New York",
        organization_id="carolyns_dental",
        organization_name="Carolyn's Dental",
        business_type="dental_clinic",
        modality="in_person",
        region=Region(country="US", currency="USD", timezone="America/New_York"),
        intent="book a routine dental cleaning",
        user_request=(
            "Book me a teeth cleaning at Carolyn's Dental in the next two weeks, ideally mid-morning. "
            "A cleaning, a checkup or whitening is fine, but don't spend more than $150."
        ),
        service_id="carolyns_dental_cleaning",
        schedule_id="carolyns_dental_midtown",
        customer=Customer(
            display_name="Jordan Quill",
            given_name="Jordan",
            family_name="Quill",
            phone="+12125550199",
            email="jordan.quill@example.com",
        ),
        allowed_service_ids=(
            "carolyns_dental_cleaning",
            "carolyns_dental_checkup",
            "carolyns_dental_whitening",
        ),
        max_price_minor=15000,
        over_cap_service_id="carolyns_dental_whitening",
        over_cap_request="Actually, make it teeth whitening instead.",
    ),
    "notary": Vertical(
        key="notary",
        title="Remote notary signing (online, SMS verification)",
        organization_id="gus_notary",
        organization_name="Gus' Notary",
        business_type="notary",
        modality="remote",
        region=Region(country="US", currency="USD", timezone="America/New_York"),
        intent="book a remote online notarization session",
        user_request=(
            "I need a document notarized remotely over video with Gus' Notary, any time in the next two "
            "weeks, late morning if possible. Keep it under $50."
        ),
        service_id="gus_notary_remote_signing",
        schedule_id="gus_notary_online",
        customer=Customer(
            display_name="Casey Fernwood",
            given_name="Casey",
            family_name="Fernwood",
            phone="+12125550142",
        ),
        allowed_service_ids=("gus_notary_remote_signing", "gus_notary_notarization"),
        max_price_minor=5000,
        preferred_time="11:00",
    ),
    "auto": Vertical(
        key="auto",
        title="Oil change in Berlin (EUR)",
        organization_id="andys_auto",
        organization_name="Andy's Auto",
        business_type="auto_service",
        modality="in_person",
        region=Region(country="DE", currency="EUR", timezone="Europe/Berlin"),
        intent="book an oil change",
        user_request=(
            "Get my car an oil change at Andy's Auto in Kreuzberg within the next two weeks, in the "
            "morning. Up to 100 euros."
        ),
        service_id="andys_auto_oil_change",
        schedule_id="andys_auto_kreuzberg",
        customer=Customer(
            display_name="Mika Brandt",
            given_name="Mika",
            family_name="Brandt",
            phone="+4930555012345",
            email="mika.brandt@example.com",
        ),
        allowed_service_ids=("andys_auto_oil_change",),
        max_price_minor=10000,
        preferred_time="09:00",
    ),
    "spa": Vertical(
        key="spa",
        title="Swedish massage in London (GBP)",
        organization_id="phils_spa",
        organization_name="Phil's Spa",
        business_type="spa",
        modality="in_person",
        region=Region(country="GB", currency="GBP", timezone="Europe/London"),
        intent="book a massage",
        user_request=(
            "Book me a Swedish massage at Phil's Spa in Soho sometime in the next two weeks, in the "
            "afternoon. My budget is 100 pounds."
        ),
        service_id="phils_spa_swedish_massage",
        schedule_id="phils_spa_soho",
        customer=Customer(
            display_name="Robin Ashdown",
            given_name="Robin",
            family_name="Ashdown",
            email="robin.ashdown@example.com",
        ),
        allowed_service_ids=("phils_spa_swedish_massage",),
        max_price_minor=10000,
        preferred_time="14:00",
    ),
}


def local_today(now: datetime, timezone: str) -> date:
    """The merchant-local calendar date at instant ``now``."""
    wall = instant_to_wall_clock(now, timezone)
    parsed = parse_wall_clock(wall) if wall else None
    if parsed is None:
        raise ValueError(f"unknown timezone {timezone!r}")
    return parsed.date()


def build_mandate(
    vertical: Vertical,
    now: datetime,
    *,
    mandate_id: str | None = None,
    service_ids: tuple[str, ...] | None = None,
    max_price_minor: int | None = None,
    currency: str | None = None,
    earliest_start: str | None = None,
    latest_end: str | None = None,
    allow_policy_fee: bool = False,
) -> BookingMandate:
    """The BookingMandate the agent builds from the user's request (defaults: the vertical's scope)."""
    today = local_today(now, vertical.region.timezone)
    first, last = today + timedelta(days=1), today + timedelta(days=MANDATE_HORIZON_DAYS)
    cap_currency = currency or vertical.region.currency
    return BookingMandate(
        id=mandate_id or vertical.mandate_id,
        expires_at=format_instant(now + MANDATE_LIFETIME),
        allowed_actions=["booking.create"],
        organization_id=vertical.organization_id,
        service_ids=list(service_ids if service_ids is not None else vertical.allowed_service_ids),
        schedule_ids=[vertical.schedule_id],
        earliest_start=earliest_start or f"{first.isoformat()}T00:00:00",
        latest_end=latest_end or f"{last.isoformat()}T23:59:59",
        max_price=Money(
            amount_minor=vertical.max_price_minor if max_price_minor is None else max_price_minor,
            currency=cap_currency,
        ),
        allow_policy_fee=allow_policy_fee,
        max_extra_fee=Money(amount_minor=0, currency=cap_currency),
    )
