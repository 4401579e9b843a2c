"""A small in-memory platform adapter for tool-level tests, honest to the platform port.

It keeps one merchant's catalog in memory and implements :class:`~osbp.protocol.port.PlatformAdapter`
like a real adapter: it records an UpstreamMeta for every simulated platform request, answers every
expected failure as a Problem value, asks for verification when told to, and can be "down"
(``upstream_unavailable``). Every booking rule (mandate, approval gate, idempotency) is the protocol
core's: tests wrap it in :class:`~osbp.protocol.core.OsbpCore` exactly as the server does.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta

from osbp.protocol.clock import Clock, SystemClock
from osbp.protocol.models import (
    AvailabilityFindInput,
    Booking,
    BookingStatusInput,
    Money,
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
from osbp.protocol.port import BookingRequest, Offer
from osbp.protocol.problems import ExtensionCode, ProblemCode, problem
from osbp.protocol.timeutil import format_wall_clock, parse_wall_clock, wall_clock_to_instant
from osbp.protocol.upstream import record_upstream
from osbp.server.settings import ServerSettings

ORG = "org_test"
SERVICE = "svc_cut"
CONSULTATION = "svc_consult"
DEPOSIT = "svc_colour"
SCHEDULE = "sch_main"
PROVIDER = "prv_jordan"
TIMEZONE = "America/Los_Angeles"
IMAGE_URL = "https://images.example.test/jordan-lee.jpg"
PRICE = Money(amount_minor=9500, currency="USD", type="fixed", display="$95.00")
_NAMES = {SERVICE: "Haircut", CONSULTATION: "Colour consultation", DEPOSIT: "Colour"}


@dataclass
class MemoryAdapter:
    """One merchant (``org_test``): 60-minute services, one provider, slots 09:00-16:00 every day.

    ``svc_cut`` is a plain haircut, ``svc_consult`` needs a consultation, ``svc_colour`` takes a $25 deposit.
    """

    clock: Clock
    requires_verification: bool = False
    down: bool = False
    raise_on: set[str] = field(default_factory=set)
    closed: bool = False
    sent_codes: list[str] = field(default_factory=list)
    bookings: dict[str, Booking] = field(default_factory=dict)
    creates: int = 0
    calls: list[str] = field(default_factory=list)
    #: The service's price now (a test changes it to change the approval summary mid-way).
    price: Money = field(default_factory=lambda: PRICE)

    @property
    def platform(self) -> PlatformIdentity:
        """The static platform identity."""
        return PlatformIdentity(vendor="memory-test-platform", api_version="t1")

    @property
    def organization_id(self) -> str:
        """The one organization served."""
        return ORG

    def _upstream(self, call: str, status: int = 200) -> Problem | None:
        status = 503 if self.down else status
        record_upstream(UpstreamMeta(call=call, status=status, server="memory/1", request_id=f"req-{call}"))
        if self.down:
            return problem(ExtensionCode.UPSTREAM_UNAVAILABLE, "The memory platform is down.", retryable=True)
        return None

    def _enter(self, name: str) -> None:
        self.calls.append(name)
        if name in self.raise_on:
            raise RuntimeError(f"simulated adapter bug in {name} (secret detail)")

    def _service(self, service_id: str = SERVICE) -> Service | None:
        if service_id not in _NAMES:
            return None
        return Service(
            id=service_id,
            name=_NAMES[service_id],
            duration="PT60M",
            price=self.price,
            requires_consultation=service_id == CONSULTATION,
        )

    def _policy(self, service_id: str = SERVICE) -> Policy:
        deposit = 2500 if service_id == DEPOSIT else 0
        return Policy(
            service_id=service_id,
            cancellation_enabled=True,
            cancellation_window="PT6H",
            cancellation_note="Cancel at least 6 hours before the appointment.",
            payment_requirement="deposit" if deposit else "none",
            deposit=Money(amount_minor=deposit, currency="USD"),
            verification_method="sms" if self.requires_verification else "none",
            organization=PolicyOrganization(
                id=ORG, name="Bayview Hair Studio", timezone=TIMEZONE, currency="USD", country="US"
            ),
        )

    def _slot(self, local_start: str, service_id: str = SERVICE) -> Slot:
        start = parse_wall_clock(local_start)
        assert start is not None
        end = format_wall_clock(start + timedelta(hours=1))
        return Slot(
            id=f"{SCHEDULE}:{PROVIDER}:{service_id}:{local_start}",
            organization_id=ORG,
            schedule_id=SCHEDULE,
            schedule_name="Main Studio",
            schedule_timezone=TIMEZONE,
            provider_id=PROVIDER,
            provider_name="Jordan Lee",
            provider_image_url=IMAGE_URL,
            service_id=service_id,
            starts_at=wall_clock_to_instant(local_start, TIMEZONE),
            ends_at=wall_clock_to_instant(end, TIMEZONE),
            starts_at_local=local_start,
            ends_at_local=end,
            price=self.price,
        )

    @staticmethod
    def _offered(local_start: str) -> bool:
        start = parse_wall_clock(local_start)
        return start is not None and 9 <= start.hour <= 16 and start.minute == 0

    async def describe_service(self, inp: ServiceDescribeInput) -> Service | Problem:
        """service.describe."""
        self._enter("service.describe")
        if down := self._upstream(f"GET /api/services/{inp.service_id or SERVICE}"):
            return down
        service = self._service(inp.service_id or SERVICE)
        return service if service else problem("service_not_found", "No such service.")

    async def find_availability(self, inp: AvailabilityFindInput) -> list[Slot] | Problem:
        """availability.find."""
        self._enter("availability.find")
        if down := self._upstream("GET /api/availability"):
            return down
        return [self._slot(f"{inp.date}T{hour:02d}:00:00") for hour in range(9, 17)]

    async def explain_policy(self, inp: PolicyExplainInput) -> Policy | Problem:
        """policy.explain."""
        self._enter("policy.explain")
        if down := self._upstream(f"GET /api/services/{inp.service_id or SERVICE}"):
            return down
        return self._policy(inp.service_id or SERVICE)

    async def send_verification(self, inp: VerificationSendInput) -> VerificationChallenge | Problem:
        """verification.send: 'sends' a fresh code (kept in ``sent_codes`` as the test's outbox)."""
        self._enter("verification.send")
        if down := self._upstream("POST /api/verifications", 201):
            return down
        self.sent_codes.append(f"{481516 + len(self.sent_codes)}")
        purpose = inp.purpose or f"booking:{ORG}"
        return VerificationChallenge(sent=True, method="sms", purpose=purpose)

    async def verify_code(self, inp: VerificationVerifyInput) -> VerificationChallenge | Problem:
        """verification.verify: no independent verify primitive here, so an adapter-specific Problem."""
        self._enter("verification.verify")
        return problem("verification_verify_unsupported", "Pass the code to booking.create instead.")

    async def resolve_booking(self, request: BookingRequest) -> Offer | Problem:
        """The requested slot as this merchant offers it (or not)."""
        self._enter("booking.create")
        inp = request.input
        if down := self._upstream(f"GET /api/services/{inp.service_id}"):
            return down
        service = self._service(inp.service_id)
        if service is None:
            return Offer(None, None, None, not_offered=problem("service_not_found", "No such service."))
        offered = self._offered(request.starts_at_local) and (inp.schedule_id, inp.provider_id) == (
            SCHEDULE,
            PROVIDER,
        )
        slot = self._slot(request.starts_at_local, inp.service_id).model_copy(
            update={"schedule_id": inp.schedule_id, "provider_id": inp.provider_id or None}
        )
        taken = None if offered else problem(ProblemCode.SLOT_TAKEN, "That slot is not offered.")
        return Offer(service, slot, self._policy(inp.service_id), not_offered=taken)

    async def place_booking(self, request: BookingRequest, customer_name: str) -> Booking | Problem:
        """Create the appointment; one per idempotency key, as the port requires."""
        inp = request.input
        if self.requires_verification and inp.verification_code not in self.sent_codes:
            self._upstream("POST /api/appointments", 428)
            return problem(ProblemCode.REQUIRES_VERIFICATION)
        if down := self._upstream("POST /api/appointments", 201):
            return down
        existing = self.bookings.get(f"appt_{request.idempotency_key}")
        if existing is not None:
            return existing
        self.creates += 1
        slot = self._slot(request.starts_at_local, inp.service_id)
        booking = Booking(
            id=f"appt_{request.idempotency_key}",
            status="booked",
            service_id=inp.service_id,
            schedule_id=SCHEDULE,
            provider_id=PROVIDER,
            starts_at=slot.starts_at,
            starts_at_local=slot.starts_at_local,
            schedule_timezone=TIMEZONE,
        )
        self.bookings[booking.id] = booking
        return booking

    async def get_booking(self, inp: BookingStatusInput) -> Booking | Problem:
        """booking.status."""
        self._enter("booking.status")
        if down := self._upstream("GET /api/appointments/{id}"):
            return down
        booking = self.bookings.get(inp.booking_id or "")
        return booking if booking else problem(ProblemCode.BOOKING_NOT_FOUND)

    async def aclose(self) -> None:
        """Nothing to release but the flag tests check."""
        self.closed = True


def build_memory_adapter(settings: ServerSettings) -> MemoryAdapter:
    """An adapter factory (``--adapter tests.support.memory_adapter:build_memory_adapter``) for CLI tests."""
    return MemoryAdapter(clock=settings.clock() if settings.now is not None else SystemClock())
