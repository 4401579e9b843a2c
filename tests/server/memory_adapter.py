"""A small in-memory BookingAdapter for tool-level tests, honest to the contract.

It keeps one merchant's catalog in memory but otherwise behaves like a real adapter: it records an
UpstreamMeta for every simulated platform request, validates the mandate with the protocol core before
any create, gates creates behind the real approval gate, deduplicates through the real idempotency store,
asks for verification when told to, and answers every expected failure as a Problem value.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path

from osbp.protocol.approval import ApprovalGate, Approved, build_approval_summary
from osbp.protocol.clock import Clock, SystemClock
from osbp.protocol.contract import AdapterResult, Failure, Success
from osbp.protocol.idempotency import (
    LOCAL_CACHE_REPLAY,
    Claimed,
    Conflict,
    IdempotencyStore,
    InProgress,
    Replay,
    booking_payload_hash,
)
from osbp.protocol.mandate import check_requested_wall_clock, validate_mandate
from osbp.protocol.models import (
    AvailabilityFindInput,
    Booking,
    BookingCreateInput,
    BookingStatusInput,
    Money,
    PlatformIdentity,
    Policy,
    PolicyExplainInput,
    PolicyOrganization,
    Problem,
    Receipt,
    Service,
    ServiceDescribeInput,
    Slot,
    UpstreamMeta,
    VerificationChallenge,
    VerificationSendInput,
    VerificationVerifyInput,
)
from osbp.protocol.problems import ProblemCode, problem
from osbp.protocol.store import StateStore
from osbp.protocol.timeutil import format_wall_clock, parse_wall_clock, wall_clock_to_instant
from osbp.protocol.upstream import record_upstream
from osbp.server.settings import ServerSettings

ORG = "org_test"
SERVICE = "svc_cut"
SCHEDULE = "sch_main"
PROVIDER = "prv_jordan"
TIMEZONE = "America/Los_Angeles"
IMAGE_URL = "https://images.example.test/jordan-lee.jpg"
PRICE = Money(amount_minor=9500, currency="USD", type="fixed", display="$95.00")


@dataclass
class MemoryAdapter:
    """One merchant (``org_test``): a 60-minute haircut, one provider, slots 09:00-16:00 every day."""

    state_path: Path
    clock: Clock
    requires_verification: bool = False
    raise_on: set[str] = field(default_factory=set)
    closed: bool = False
    sent_codes: list[str] = field(default_factory=list)
    bookings: dict[str, Booking] = field(default_factory=dict)
    creates: int = 0
    calls: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        state = StateStore(self.state_path)
        self._gate = ApprovalGate(state, clock=self.clock)
        self._idempotency = IdempotencyStore(state, clock=self.clock, wait_timeout_s=2.0)

    @property
    def platform(self) -> PlatformIdentity:
        """The static platform identity."""
        return PlatformIdentity(vendor="memory-test-platform", api_version="t1")

    def _upstream(self, call: str, status: int = 200) -> None:
        record_upstream(UpstreamMeta(call=call, status=status, server="memory/1", request_id=f"req-{call}"))

    def _enter(self, name: str) -> None:
        self.calls.append(name)
        if name in self.raise_on:
            raise RuntimeError(f"simulated adapter bug in {name} (secret detail)")

    def _service(self) -> Service:
        return Service(id=SERVICE, name="Haircut", duration="PT60M", price=PRICE, requires_consultation=False)

    def _policy(self) -> Policy:
        return Policy(
            service_id=SERVICE,
            cancellation_enabled=True,
            cancellation_window="PT6H",
            cancellation_note="Cancel at least 6 hours before the appointment.",
            payment_requirement="none",
            deposit=Money(amount_minor=0, currency="USD"),
            verification_method="sms" if self.requires_verification else "none",
            organization=PolicyOrganization(
                id=ORG, name="Bayview Hair Studio", timezone=TIMEZONE, currency="USD", country="US"
            ),
        )

    def _slot(self, local_start: str) -> Slot | None:
        start = parse_wall_clock(local_start)
        if start is None or not 9 <= start.hour <= 16 or start.minute != 0:
            return None
        end = format_wall_clock(start + timedelta(hours=1))
        return Slot(
            id=f"{SCHEDULE}:{PROVIDER}:{SERVICE}:{local_start}",
            organization_id=ORG,
            schedule_id=SCHEDULE,
            schedule_name="Main Studio",
            schedule_timezone=TIMEZONE,
            provider_id=PROVIDER,
            provider_name="Jordan Lee",
            provider_image_url=IMAGE_URL,
            service_id=SERVICE,
            starts_at=wall_clock_to_instant(local_start, TIMEZONE),
            ends_at=wall_clock_to_instant(end, TIMEZONE),
            starts_at_local=local_start,
            ends_at_local=end,
            price=PRICE,
        )

    async def describe_service(self, inp: ServiceDescribeInput) -> AdapterResult[Service]:
        """service.describe."""
        self._enter("service.describe")
        self._upstream(f"GET /api/services/{inp.service_id or SERVICE}")
        if (inp.service_id or SERVICE) != SERVICE:
            return Failure(problem("service_not_found", "No such service."))
        return Success(self._service())

    async def find_availability(self, inp: AvailabilityFindInput) -> AdapterResult[list[Slot]]:
        """availability.find."""
        self._enter("availability.find")
        self._upstream("GET /api/availability")
        slots = [self._slot(f"{inp.date}T{hour:02d}:00:00") for hour in range(9, 17)]
        return Success([slot for slot in slots if slot is not None])

    async def explain_policy(self, inp: PolicyExplainInput) -> AdapterResult[Policy]:
        """policy.explain."""
        self._enter("policy.explain")
        self._upstream(f"GET /api/services/{inp.service_id or SERVICE}")
        return Success(self._policy())

    async def send_verification(self, inp: VerificationSendInput) -> AdapterResult[VerificationChallenge]:
        """verification.send: 'sends' a fresh code (kept in ``sent_codes`` as the test's outbox)."""
        self._enter("verification.send")
        self._upstream("POST /api/verifications", 201)
        self.sent_codes.append(f"{481516 + len(self.sent_codes)}")
        purpose = inp.purpose or f"booking:{ORG}"
        return Success(VerificationChallenge(sent=True, method="sms", purpose=purpose))

    async def verify_code(self, inp: VerificationVerifyInput) -> AdapterResult[VerificationChallenge]:
        """verification.verify: no independent verify primitive here, so an adapter-specific Problem."""
        self._enter("verification.verify")
        return Failure(problem("verification_verify_unsupported", "Pass the code to booking.create instead."))

    async def create_booking(self, inp: BookingCreateInput) -> AdapterResult[Receipt]:
        """booking.create: mandate validation, approval gate, verification and idempotency."""
        self._enter("booking.create")
        local = check_requested_wall_clock(inp.date, inp.time)
        if isinstance(local, Problem):
            return Failure(local)
        slot = self._slot(local)
        ids = (inp.service_id, inp.schedule_id, inp.provider_id)
        if slot is None or ids != (SERVICE, SCHEDULE, PROVIDER):
            return Failure(problem(ProblemCode.SLOT_TAKEN, "That slot is not offered."))
        claim = await self._idempotency.aclaim(inp.idempotency_key, booking_payload_hash(inp))
        if isinstance(claim, Replay):
            return Success(claim.receipt, LOCAL_CACHE_REPLAY)
        if isinstance(claim, Conflict | InProgress):
            return Failure(claim.problem)
        assert isinstance(claim, Claimed)
        settled = False
        try:
            self._upstream(f"GET /api/services/{SERVICE}")
            service, policy = self._service(), self._policy()
            failed = validate_mandate(inp.mandate, slot=slot, service=service, policy=policy, now=self.now())
            if failed is not None:
                return Failure(failed)
            summary = build_approval_summary(service, slot, policy, inp.customer)
            decision = await self._gate.aevaluate(inp, summary)
            if not isinstance(decision, Approved):
                return Failure(decision)
            if self.requires_verification and inp.verification_code not in self.sent_codes:
                self._upstream("POST /api/appointments", 428)
                return Failure(problem(ProblemCode.REQUIRES_VERIFICATION))
            self._upstream("POST /api/appointments", 201)
            self.creates += 1
            booking_id = f"appt_{self.creates}"
            self.bookings[booking_id] = Booking(
                id=booking_id,
                status="booked",
                service_id=SERVICE,
                schedule_id=SCHEDULE,
                provider_id=PROVIDER,
                starts_at=slot.starts_at,
                starts_at_local=slot.starts_at_local,
                schedule_timezone=TIMEZONE,
            )
            who = inp.customer.display_name if inp.customer and inp.customer.display_name else "the customer"
            receipt = Receipt(
                id=f"receipt_{inp.idempotency_key}",
                booking_id=booking_id,
                text=f"Booked Haircut for {who} on {inp.date} at {inp.time}. Appointment id: {booking_id}.",
            )
            await self._idempotency.acomplete(claim.lease, receipt)
            settled = True
        finally:
            if not settled:
                # Every outcome but a created booking gives the key back, so the attempt can be retried.
                await self._idempotency.arelease(claim.lease)
        await self._gate.amark_spent(decision.token)
        return Success(receipt)

    async def get_booking(self, inp: BookingStatusInput) -> AdapterResult[Booking]:
        """booking.status."""
        self._enter("booking.status")
        self._upstream("GET /api/appointments/{id}")
        booking = self.bookings.get(inp.booking_id or "")
        return Success(booking) if booking else Failure(problem(ProblemCode.BOOKING_NOT_FOUND))

    def now(self) -> datetime:
        """The injected clock's now."""
        return self.clock.now()

    async def aclose(self) -> None:
        """Nothing to release but the flag tests check."""
        self.closed = True


def build_memory_adapter(settings: ServerSettings) -> MemoryAdapter:
    """An adapter factory (``--adapter tests.server.memory_adapter:build_memory_adapter``) for CLI tests."""
    return MemoryAdapter(state_path=settings.adapter.state_path, clock=SystemClock())
