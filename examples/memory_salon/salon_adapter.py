"""A worked example: an OSBP platform adapter for an in-memory appointment book. Copy it to start yours.

The module has two halves:

* **The platform** (:class:`SalonBook` and the data above it) stands in for your booking system's API: one
  salon with its catalog, location, hours, stylists and appointments, as plain Python data. It speaks its
  own dialect on purpose (prices in major units, durations in minutes, weekday names, a local date plus
  ``HH:MM``, its own error names), because translating a platform's dialect is an adapter's whole job.
  Replace it with your platform's client.
* **The adapter** (:class:`SalonAdapter`) implements :class:`osbp.protocol.PlatformAdapter`: six read
  and verification methods, plus ``resolve_booking`` and ``place_booking`` for booking.create, each
  returning its value or a Problem. It only translates: availability.find returns the day's openings and
  the protocol core (:class:`osbp.protocol.OsbpCore`, which the server wraps around every adapter) checks
  the date, orders, filters by ``earliest_start`` and pages; for booking.create it validates the mandate,
  runs the final-confirmation gate, keeps the idempotency records and writes the receipt.

Serve it (the server requires a platform URL; this platform lives in memory and ignores it)::

    PYTHONPATH=examples/memory_salon osbp mcp --adapter salon_adapter:build \\
        --organization-id memory_salon --platform-url http://127.0.0.1:9

docs/adapter.md ("Write an adapter for your platform") walks through it; ``fixtures.json`` beside it is its
conformance fixture file.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass
from typing import Any

from osbp.protocol import BookingRequest, Offer
from osbp.protocol.models import (
    AvailabilityFindInput,
    Booking,
    BookingStatus,
    BookingStatusInput,
    Customer,
    Money,
    MoneyType,
    OperatingHours,
    PaymentRequirement,
    PlatformIdentity,
    Policy,
    PolicyExplainInput,
    PolicyOrganization,
    Problem,
    Service,
    ServiceDescribeInput,
    Slot,
    UpstreamMeta,
    VerificationChallenge,
    VerificationSendInput,
    VerificationVerifyInput,
)
from osbp.protocol.money import MoneyError, money_from_major
from osbp.protocol.problems import ExtensionCode, ProblemCode, problem
from osbp.protocol.timeutil import (
    format_wall_clock,
    minutes_to_duration,
    parse_wall_clock,
    wall_clock_to_instant,
)
from osbp.protocol.upstream import record_upstream
from osbp.server.compose import AdapterFactoryError
from osbp.server.settings import ServerSettings

__all__ = ["ORGANIZATION_ID", "SANDBOX_CODE", "SalonAdapter", "SalonBook", "build"]

# --- The platform: an in-memory appointment book ------------------------------------------------------

ORGANIZATION_ID = "memory_salon"
API_VERSION = "2030-01"  # the platform's API version: the adapter declares it as its native pin
SANDBOX_CODE = "123456"  # a sandbox's fixed verification code (a real platform sends a fresh one)

SALON: dict[str, Any] = {
    "id": ORGANIZATION_ID,
    "name": "Memory Salon",
    "timezone": "America/Chicago",
    "currency": "USD",
    "country": "US",
    "cancel_hours": 24,
    "location": {
        "id": "memory_salon_loop",
        "name": "Memory Salon Loop",
        "address": "100 W Randolph St, Chicago, IL 60601",
        "lat": 41.8847,
        "lng": -87.6324,
        "hours": {day: ["09:00", "17:00"] for day in ("mon", "tue", "wed", "thu", "fri")}
        | {"sat": ["10:00", "14:00"]},
    },
    "stylists": {
        "memory_salon_rosa": {"name": "Rosa Diaz", "photo": "https://images.memory-salon.example/rosa.jpg"},
        "memory_salon_sam": {"name": "Sam Okafor", "photo": "https://images.memory-salon.example/sam.jpg"},
    },
}


@dataclass(frozen=True)
class CatalogRow:
    """One service as the platform stores it."""

    name: str
    minutes: int
    price: str | None  # major units ("95.00"); None when the price is not fixed
    currency: str = "USD"
    price_kind: str = "fixed"  # "fixed", "insurance" or "quote"
    payment: str = "none"  # "none", "deposit", "prepaid", or whatever else the salon typed in
    deposit: str = "0"
    consultation: bool = False
    verify_by: str | None = None  # "sms": the customer confirms a texted code before the booking


CATALOG: dict[str, CatalogRow] = {
    "salon_cut": CatalogRow("Haircut", 45, "95.00"),
    "salon_cut_eur": CatalogRow("Haircut (euro price list)", 45, "90.00", "EUR"),
    "salon_cut_gbp": CatalogRow("Haircut (sterling price list)", 45, "80.00", "GBP"),
    "salon_cut_jpy": CatalogRow("Haircut (yen price list)", 45, "12000", "JPY"),
    "salon_cut_kwd": CatalogRow("Haircut (dinar price list)", 45, "12.500", "KWD"),
    "salon_scalp_treatment": CatalogRow("Scalp treatment", 30, None, price_kind="insurance"),
    "salon_bridal": CatalogRow("Bridal styling", 90, None, price_kind="quote"),
    "salon_colour_consultation": CatalogRow("Colour consultation", 45, "0.00", consultation=True),
    "salon_colour": CatalogRow("Colour", 60, "95.00", payment="deposit", deposit="25.00"),
    "salon_keratin": CatalogRow("Keratin treatment", 60, "95.00", payment="prepaid"),
    "salon_extensions": CatalogRow("Extensions", 60, "95.00", payment="ask at the desk"),
    "salon_new_client_cut": CatalogRow("New-client haircut", 45, "95.00", verify_by="sms"),
}
_WEEKDAYS = ("mon", "tue", "wed", "thu", "fri", "sat", "sun")  # date.weekday() order


@dataclass(frozen=True, slots=True)
class Reply:
    """One platform answer, shaped like an HTTP response: a status and a JSON-like body."""

    status: int
    body: dict[str, Any]


_DOWN = Reply(503, {"error": "unavailable"})  # every endpoint's answer during an outage


def _minutes(clock: str) -> int:
    hours, minutes = clock.split(":")
    return int(hours) * 60 + int(minutes)


class SalonBook:
    """The platform's API: catalog and hours, openings, verification codes and appointments, in memory."""

    def __init__(self, *, parallel_bookings: bool = False) -> None:
        self.reachable = True  # False simulates an outage: every call answers 503
        #: A sandbox affordance: a stylist may be booked twice at one time (the battery rebooks one slot).
        self.parallel_bookings = parallel_bookings
        #: Appointments by the caller's idempotency key, so a repeated create returns the first one.
        self.appointments: dict[str, dict[str, Any]] = {}
        self.outbox: list[str] = []  # the phones a code was texted to

    def salon(self) -> Reply:
        """GET /salon: the salon, its location and its stylists."""
        return Reply(200, SALON) if self.reachable else _DOWN

    def service(self, service_id: str) -> Reply:
        """GET /services/{id}."""
        if not self.reachable:
            return _DOWN
        if service_id not in CATALOG:
            return Reply(404, {"error": "no_such_service"})
        return Reply(200, {"id": service_id, **asdict(CATALOG[service_id])})

    def openings(self, service_id: str, location_id: str, date: str, stylist_id: str | None) -> Reply:
        """GET /services/{id}/openings: the free start times on one local date, hourly from opening."""
        if not self.reachable:
            return _DOWN
        if unknown := self._unknown(service_id, location_id, stylist_id):
            return unknown
        minutes = CATALOG[service_id].minutes
        hours = SALON["location"]["hours"].get(_WEEKDAYS[dt.date.fromisoformat(date).weekday()])
        starts = range(_minutes(hours[0]), _minutes(hours[1]) - minutes + 1, 60) if hours else range(0)
        stylists = [stylist_id] if stylist_id else list(SALON["stylists"])
        free = [
            {"stylist": stylist, "time": f"{start // 60:02d}:{start % 60:02d}"}
            for stylist in stylists
            for start in starts
            if self.parallel_bookings or self._free(stylist, date, start, start + minutes)
        ]
        return Reply(200, {"openings": free})

    def book(self, body: dict[str, Any], *, idempotency_key: str) -> Reply:
        """POST /appointments with an Idempotency-Key: a repeated key replays the first appointment."""
        if not self.reachable:
            return _DOWN
        if idempotency_key in self.appointments:
            return Reply(200, self.appointments[idempotency_key])
        wanted = {"stylist": body["stylist"], "time": body["time"]}
        opened = self.openings(body["service"], body["location"], body["date"], body["stylist"])
        if opened.status != 200:
            return opened
        if wanted not in opened.body["openings"]:
            return Reply(409, {"error": "stylist_busy"})
        row = CATALOG[body["service"]]
        if row.verify_by and "code" not in body:
            return Reply(428, {"error": "code_required"})
        if row.verify_by and body["code"] != SANDBOX_CODE:
            return Reply(400, {"error": "code_rejected"})
        appointment = {key: body[key] for key in ("service", "location", "stylist", "date", "time")} | {
            "id": f"appt_{len(self.appointments) + 1:04d}",
            "status": "confirmed",
            "minutes": row.minutes,
            "timezone": SALON["timezone"],
        }  # the code is checked, never stored
        self.appointments[idempotency_key] = appointment
        return Reply(201, appointment)

    def appointment(self, appointment_id: str) -> Reply:
        """GET /appointments/{id}."""
        if not self.reachable:
            return _DOWN
        found = [item for item in self.appointments.values() if item["id"] == appointment_id]
        return Reply(200, found[0]) if found else Reply(404, {"error": "no_such_appointment"})

    def send_code(self, phone: str) -> Reply:
        """POST /verifications: text the sandbox code to a phone."""
        if not self.reachable:
            return _DOWN
        self.outbox.append(phone)
        return Reply(201, {"channel": "sms"})

    def _unknown(self, service_id: str, location_id: str, stylist_id: str | None) -> Reply | None:
        if service_id not in CATALOG:
            return Reply(404, {"error": "no_such_service"})
        if location_id != SALON["location"]["id"]:
            return Reply(404, {"error": "no_such_location"})
        if stylist_id and stylist_id not in SALON["stylists"]:
            return Reply(404, {"error": "no_such_stylist"})
        return None

    def _free(self, stylist: str, date: str, start: int, end: int) -> bool:
        return not any(
            (item["stylist"], item["date"]) == (stylist, date)
            and _minutes(item["time"]) < end
            and start < _minutes(item["time"]) + item["minutes"]
            for item in self.appointments.values()
        )


# --- The adapter: OSBP's platform port over SalonBook -------------------------------------------------

DEFAULT_SERVICE_ID = "salon_cut"  # the read tools may default the service and schedule; booking.create never
DEFAULT_SCHEDULE_ID = "memory_salon_loop"

#: The platform's error names as OSBP Problems (one table; any other failure is internal_adapter_error).
_ERRORS: dict[str, Problem] = {
    "unavailable": problem(
        ExtensionCode.UPSTREAM_UNAVAILABLE, "The salon's booking system is unavailable.", retryable=True
    ),
    "no_such_service": problem(ExtensionCode.SERVICE_NOT_FOUND, "The salon offers no service with this id."),
    "no_such_location": problem(ExtensionCode.SCHEDULE_NOT_FOUND, "The salon has no schedule with this id."),
    "no_such_stylist": problem(ExtensionCode.PROVIDER_NOT_FOUND, "The salon has no provider with this id."),
    "no_such_appointment": problem(ProblemCode.BOOKING_NOT_FOUND),
    "stylist_busy": problem(ProblemCode.SLOT_TAKEN),
    "code_required": problem(ProblemCode.REQUIRES_VERIFICATION),
    "code_rejected": problem(ProblemCode.VERIFICATION_FAILED),
}
_NOT_FOUND = {"service_not_found", "schedule_not_found", "provider_not_found"}
_PRICE_TYPES: dict[str, MoneyType] = {"insurance": "insurance_dependent", "quote": "quote_required"}
_PAYMENTS: dict[str, PaymentRequirement] = {"none": "none", "deposit": "deposit", "prepaid": "full_prepay"}
_STATUSES: dict[str, BookingStatus] = {"confirmed": "booked", "cancelled": "cancelled", "no_show": "no_show"}
_ISO_WEEKDAY = {"mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6, "sun": 7}


def _answer(call: str, reply: Reply) -> dict[str, Any] | Problem:
    """Record one platform request for the audit trail; its body, or the Problem its failure means."""
    record_upstream(UpstreamMeta(call=call, status=reply.status))
    if reply.status < 400:
        return reply.body
    return _ERRORS.get(reply.body.get("error", ""), problem(ProblemCode.INTERNAL_ADAPTER_ERROR)).model_copy()


def _money(amount: str, currency: str) -> Money:
    money = money_from_major(amount, currency)  # scaled by the currency's ISO 4217 exponent, not by 100
    if isinstance(money, MoneyError):
        # A currency without a known minor unit is not safe to onboard (OSBP spec, Money): a catalog bug.
        raise ValueError(f"the catalog price {amount} {currency} cannot be represented: {money.reason}")
    return money


def _price(row: dict[str, Any]) -> Money:
    if row["price"] is None:  # no amount known at read time: say which kind of price it is
        return Money(currency=row["currency"], type=_PRICE_TYPES.get(row["price_kind"], "unknown"))
    return _money(row["price"], row["currency"])


def _wall_clock(date: str, time: str, plus_minutes: int = 0) -> str:
    """The platform's local date and ``HH:MM`` as an OSBP merchant wall-clock string."""
    start = parse_wall_clock(f"{date}T{time}")
    if start is None:
        raise ValueError(f"the platform sent an unreadable local time {date!r} {time!r}")
    return format_wall_clock(start + dt.timedelta(minutes=plus_minutes))


def _service(row: dict[str, Any]) -> Service:
    return Service(
        id=row["id"],
        name=row["name"],
        duration=minutes_to_duration(row["minutes"]),
        price=_price(row),
        requires_consultation=row["consultation"],
    )


def _policy(salon: dict[str, Any], row: dict[str, Any]) -> Policy:
    return Policy(
        service_id=row["id"],
        cancellation_enabled=True,
        cancellation_window=minutes_to_duration(salon["cancel_hours"] * 60),
        cancellation_note=f"Cancel at least {salon['cancel_hours']} hours before the appointment.",
        payment_requirement=_PAYMENTS.get(row["payment"], "unknown"),  # anything unrecognised fails closed
        deposit=_money(row["deposit"], row["currency"]),
        verification_method="sms" if row["verify_by"] == "sms" else "none",
        organization=PolicyOrganization(
            id=salon["id"],
            name=salon["name"],
            timezone=salon["timezone"],
            currency=salon["currency"],
            country=salon["country"],
        ),
    )


def _slot(
    salon: dict[str, Any], row: dict[str, Any], schedule_id: str, stylist_id: str, date: str, time: str
) -> Slot:
    """One slot with its denormalized context; instants derived from the wall-clock and the IANA zone."""
    location = salon["location"] if salon["location"]["id"] == schedule_id else {}
    stylist = salon["stylists"].get(stylist_id, {})
    start, end = _wall_clock(date, time), _wall_clock(date, time, row["minutes"])
    zone = salon["timezone"]
    hours = location.get("hours", {})
    return Slot(
        id=f"{schedule_id}:{stylist_id}:{row['id']}:{start}",
        organization_id=salon["id"],
        organization_name=salon["name"],
        schedule_id=schedule_id,
        schedule_name=location.get("name"),
        schedule_address=location.get("address"),
        schedule_latitude=location.get("lat"),
        schedule_longitude=location.get("lng"),
        schedule_hours=[
            OperatingHours(day=_ISO_WEEKDAY[day], open=o, close=c) for day, (o, c) in hours.items()
        ]
        or None,
        schedule_timezone=zone,
        provider_id=stylist_id or None,
        provider_name=stylist.get("name"),
        provider_image_url=stylist.get("photo"),
        service_id=row["id"],
        starts_at=wall_clock_to_instant(start, zone),
        ends_at=wall_clock_to_instant(end, zone),
        starts_at_local=start,
        ends_at_local=end,
        price=_price(row),
    )


def _booking(appointment: dict[str, Any]) -> Booking:
    date, time, zone = appointment["date"], appointment["time"], appointment["timezone"]
    start, end = _wall_clock(date, time), _wall_clock(date, time, appointment["minutes"])
    return Booking(
        id=appointment["id"],
        status=_STATUSES.get(appointment["status"], "unknown"),
        organization_id=ORGANIZATION_ID,
        service_id=appointment["service"],
        schedule_id=appointment["location"],
        provider_id=appointment["stylist"],
        starts_at=wall_clock_to_instant(start, zone),
        ends_at=wall_clock_to_instant(end, zone),
        starts_at_local=start,
        ends_at_local=end,
        schedule_timezone=zone,
    )


class SalonAdapter:
    """The platform port for the one salon in a :class:`SalonBook`."""

    def __init__(self, book: SalonBook) -> None:
        self.book = book

    @property
    def platform(self) -> PlatformIdentity:
        """The static platform identity: vendor and the exact API version this adapter speaks."""
        return PlatformIdentity(vendor="memory-salon", api_version=API_VERSION)

    @property
    def organization_id(self) -> str:
        """The one organization served (the mandate's organization scope)."""
        return ORGANIZATION_ID

    async def describe_service(self, inp: ServiceDescribeInput) -> Service | Problem:
        """service.describe: one catalog read."""
        service_id = inp.service_id or DEFAULT_SERVICE_ID
        row = _answer(f"GET /services/{service_id}", self.book.service(service_id))
        return row if isinstance(row, Problem) else _service(row)

    async def find_availability(self, inp: AvailabilityFindInput) -> list[Slot] | Problem:
        """availability.find: the salon's context, the service and its openings on the date."""
        service_id, schedule_id = inp.service_id or DEFAULT_SERVICE_ID, inp.schedule_id or DEFAULT_SCHEDULE_ID
        read = self._read(service_id)
        if isinstance(read, Problem):
            return read
        openings = self._openings(service_id, schedule_id, inp.date, inp.provider_id)
        if isinstance(openings, Problem):
            return openings
        salon, row = read
        return [_slot(salon, row, schedule_id, o["stylist"], inp.date, o["time"]) for o in openings]

    async def explain_policy(self, inp: PolicyExplainInput) -> Policy | Problem:
        """policy.explain: the service's payment and verification facts plus the organization block."""
        read = self._read(inp.service_id or DEFAULT_SERVICE_ID)
        return read if isinstance(read, Problem) else _policy(*read)

    async def send_verification(self, inp: VerificationSendInput) -> VerificationChallenge | Problem:
        """verification.send: the salon texts its code to the customer's phone."""
        purpose = inp.purpose or f"booking:{ORGANIZATION_ID}"
        if purpose != f"booking:{ORGANIZATION_ID}":
            message = f"The verification purpose must be booking:{ORGANIZATION_ID}."
            return problem(ExtensionCode.INVALID_VERIFICATION_PURPOSE, message)
        phone = (inp.customer or Customer()).phone
        if not phone:
            return problem(
                ExtensionCode.INVALID_CUSTOMER, "The salon verifies by SMS; give the customer's phone."
            )
        sent = _answer("POST /verifications", self.book.send_code(phone))
        if isinstance(sent, Problem):
            return sent
        return VerificationChallenge(sent=True, method="sms", purpose=purpose)

    async def verify_code(self, inp: VerificationVerifyInput) -> VerificationChallenge | Problem:
        """verification.verify: refused, because the salon checks the code only inside the create."""
        message = (
            "The salon has no separate verification step: it checks the code while creating the "
            "appointment. Pass the customer's code to booking.create as verification_code instead. "
            "No platform call was made."
        )
        return problem(ExtensionCode.PRE_VERIFICATION_NOT_SUPPORTED, message)

    async def resolve_booking(self, request: BookingRequest) -> Offer | Problem:
        """booking.create's facts as the salon reports them now (reads only)."""
        inp = request.input
        read = self._read(inp.service_id)
        if isinstance(read, Problem):
            return (
                Offer(None, None, None, not_offered=read)
                if read.code == ExtensionCode.SERVICE_NOT_FOUND
                else read
            )
        openings = self._openings(inp.service_id, inp.schedule_id, request.date, inp.provider_id or None)
        if isinstance(openings, Problem) and openings.code not in _NOT_FOUND:
            return openings  # the platform failed: no verdict about the slot
        if isinstance(openings, Problem):
            not_offered: Problem | None = openings  # an unknown schedule or stylist: not offered
        elif {"stylist": inp.provider_id, "time": request.time} in openings:
            not_offered = None
        else:
            not_offered = problem(ProblemCode.SLOT_TAKEN)
        salon, row = read
        return Offer(
            service=_service(row),
            slot=_slot(salon, row, inp.schedule_id, inp.provider_id, request.date, request.time),
            policy=_policy(salon, row),
            not_offered=not_offered,
        )

    async def place_booking(self, request: BookingRequest, customer_name: str) -> Booking | Problem:
        """The appointment create, idempotent per the OSBP key (sent as the platform's Idempotency-Key)."""
        inp = request.input
        customer = inp.customer or Customer()
        body: dict[str, Any] = {
            "service": inp.service_id,
            "location": inp.schedule_id,
            "stylist": inp.provider_id,
            "date": request.date,
            "time": request.time,
            "customer": {"name": customer_name, "phone": customer.phone, "email": customer.email},
            "note": f"OSBP receipt {request.receipt_id}, mandate {inp.mandate.id}",
        }
        if inp.verification_code is not None:
            body["code"] = inp.verification_code  # passed through untouched: never stored, never logged
        made = _answer("POST /appointments", self.book.book(body, idempotency_key=request.idempotency_key))
        return made if isinstance(made, Problem) else _booking(made)

    async def get_booking(self, inp: BookingStatusInput) -> Booking | Problem:
        """booking.status: the appointment as the salon reports it now."""
        if not inp.booking_id:
            message = "booking.status needs the booking_id from the booking.create receipt."
            return problem(ProblemCode.BOOKING_NOT_FOUND, message)
        found = _answer(f"GET /appointments/{inp.booking_id}", self.book.appointment(inp.booking_id))
        return found if isinstance(found, Problem) else _booking(found)

    async def aclose(self) -> None:
        """Nothing to release (a real adapter closes its HTTP client here)."""

    def _read(self, service_id: str) -> tuple[dict[str, Any], dict[str, Any]] | Problem:
        """The salon (location, stylists, zone) and one catalog row: what answers about a service need."""
        salon = _answer("GET /salon", self.book.salon())
        if isinstance(salon, Problem):
            return salon
        row = _answer(f"GET /services/{service_id}", self.book.service(service_id))
        return row if isinstance(row, Problem) else (salon, row)

    def _openings(
        self, service_id: str, schedule_id: str, date: str, stylist_id: str | None
    ) -> list[dict[str, Any]] | Problem:
        opened = _answer(
            f"GET /services/{service_id}/openings",
            self.book.openings(service_id, schedule_id, date, stylist_id),
        )
        return opened if isinstance(opened, Problem) else list(opened["openings"])


def build(settings: ServerSettings) -> SalonAdapter:
    """The adapter factory for ``osbp mcp --adapter salon_adapter:build`` (this folder on PYTHONPATH)."""
    if settings.adapter.organization_id != ORGANIZATION_ID:
        raise AdapterFactoryError(
            f"this appointment book holds one organization: pass --organization-id {ORGANIZATION_ID}"
        )
    # A sandbox book: the battery books one slot several times and types in the fixed SANDBOX_CODE.
    return SalonAdapter(SalonBook(parallel_bookings=True))
