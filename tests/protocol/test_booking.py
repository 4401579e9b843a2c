"""booking.create's pipeline in the protocol core, run against every platform adapter we have.

The which-code-wins matrix: for every pair of failing mandate steps (OSBP spec, Server Obligations →
Mandate Enforcement, "in order"), the earlier step answers, with the platform up and with it down. The
steps that need no platform data (well-formed, expiry, action, scope, the requested date and time, the
earliest start) answer without a platform request; the rest need the platform, and while it is down the
answer is the retryable ``upstream_unavailable``, never a mandate verdict the core could not know.
"""

from __future__ import annotations

import itertools
import socket
from collections.abc import AsyncIterator, Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import anyio
import pytest

from examples.memory_salon import salon_adapter as salon
from osbp.adapter import AdapterSettings, build_platform_adapter
from osbp.adapter.upstream import LifecycleNotices
from osbp.backend.serving import PlatformServer
from osbp.backend.settings import BackendSettings
from osbp.protocol.clock import FixedClock
from osbp.protocol.contract import Failure, Success
from osbp.protocol.core import OsbpCore
from osbp.protocol.models import Approval, Booking, BookingCreateInput, Customer, Problem
from osbp.protocol.port import BookingRequest, PlatformAdapter
from osbp.protocol.problems import ExtensionCode, ProblemCode, problem
from osbp.protocol.upstream import capture_upstream
from tests.support import memory_adapter as memory

NOW = datetime(2030, 5, 1, 12, 0, tzinfo=UTC)
CUSTOMER = Customer(display_name="Casey Conformance", phone="+15555550142")


@dataclass(frozen=True)
class Subject:
    """One platform adapter with the ids of a fixed-price, a consultation and a deposit service."""

    name: str
    build: Callable[[bool], PlatformAdapter]  # up (False) or down (True)
    organization: str
    fixed: str
    consultation: str
    deposit: str
    schedule: str
    provider: str
    date: str
    time: str
    ends_at_local: str
    currency: str

    @property
    def starts_at_local(self) -> str:
        """The slot's merchant-local start."""
        return f"{self.date}T{self.time}:00"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port  # nothing listens here any more: connections are refused


@pytest.fixture(scope="module")
def platform_url() -> Iterator[str]:
    """The real platform under uvicorn on loopback, frozen at NOW."""
    with PlatformServer(BackendSettings(db=":memory:", port=0, now=NOW, enable_testing=True)) as server:
        yield str(server.base_url).rstrip("/")


def _reference(platform_url: str) -> Subject:
    def build(down: bool) -> PlatformAdapter:
        url = f"http://127.0.0.1:{_closed_port()}" if down else platform_url
        settings = AdapterSettings(platform_base_url=url, organization_id="conformance_co")
        return build_platform_adapter(settings, notices=LifecycleNotices())

    return Subject(
        name="reference",
        build=build,
        organization="conformance_co",
        fixed="conformance_fixed_usd",
        consultation="conformance_consultation",
        deposit="conformance_deposit",
        schedule="conformance_main",
        provider="conformance_provider_ada",
        date="2030-05-02",
        time="10:30",
        ends_at_local="2030-05-02T11:15:00",
        currency="USD",
    )


def _memory() -> Subject:
    def build(down: bool) -> PlatformAdapter:
        return memory.MemoryAdapter(clock=FixedClock(NOW), down=down)

    return Subject(
        name="memory",
        build=build,
        organization=memory.ORG,
        fixed=memory.SERVICE,
        consultation=memory.CONSULTATION,
        deposit=memory.DEPOSIT,
        schedule=memory.SCHEDULE,
        provider=memory.PROVIDER,
        date="2030-05-02",
        time="10:00",
        ends_at_local="2030-05-02T11:00:00",
        currency="USD",
    )


def _example() -> Subject:
    def build(down: bool) -> PlatformAdapter:
        # Parallel bookings, as the reference's conformance organization: tests book the one slot repeatedly.
        book = salon.SalonBook(parallel_bookings=True)
        book.reachable = not down
        return salon.SalonAdapter(book)

    # The too_late step moves latest_end from the fixed service's end, so the consultation (45 min) and
    # deposit (60 min) services must last at least as long as the fixed one (45 min): they do.
    return Subject(
        name="example",
        build=build,
        organization=salon.ORGANIZATION_ID,
        fixed="salon_cut",
        consultation="salon_colour_consultation",
        deposit="salon_colour",
        schedule="memory_salon_loop",
        provider="memory_salon_rosa",
        date="2030-05-02",
        time="10:00",
        ends_at_local="2030-05-02T10:45:00",
        currency="USD",
    )


@pytest.fixture(params=["reference", "memory", "example"])
def subject(request: pytest.FixtureRequest) -> Subject:
    """Each platform adapter in turn (the worked example in examples/memory_salon included)."""
    if request.param == "reference":
        return _reference(request.getfixturevalue("platform_url"))
    return _memory() if request.param == "memory" else _example()


async def _core(subject: Subject, tmp_path: Path, *, down: bool = False) -> AsyncIterator[OsbpCore]:
    core = OsbpCore(subject.build(down), state=tmp_path / "state.sqlite3", clock=FixedClock(NOW))
    try:
        yield core
    finally:
        await core.aclose()


@pytest.fixture
async def core(subject: Subject, tmp_path: Path) -> AsyncIterator[OsbpCore]:
    """The subject's adapter, platform up, inside the protocol core."""
    async for built in _core(subject, tmp_path):
        yield built


@pytest.fixture
async def down_core(subject: Subject, tmp_path: Path) -> AsyncIterator[OsbpCore]:
    """The subject's adapter with its platform unreachable, inside the protocol core."""
    async for built in _core(subject, tmp_path, down=True):
        yield built


def _input(subject: Subject, *, key: str = "idem-matrix", **mandate: Any) -> dict[str, Any]:
    return {
        "mandate": {
            "id": "mnd_matrix",
            "expires_at": "2030-05-31T23:59:59Z",
            "allowed_actions": ["booking.create"],
            "organization_id": subject.organization,
            "earliest_start": f"{subject.date}T08:00:00",
            "latest_end": f"{subject.date}T18:00:00",
            "max_price": {"amount_minor": 1_000_000, "currency": subject.currency},
        }
        | mandate,
        "idempotency_key": key,
        "service_id": subject.fixed,
        "schedule_id": subject.schedule,
        "provider_id": subject.provider,
        "date": subject.date,
        "time": subject.time,
        "customer": CUSTOMER.to_wire(),
    }


def _shift(wall_clock: str, minutes: int) -> str:
    moment = datetime.fromisoformat(wall_clock).timestamp() + minutes * 60
    return datetime.fromtimestamp(moment, UTC).replace(tzinfo=None).isoformat(timespec="seconds")


Knob = Callable[[Subject, dict[str, Any]], None]


def _mandate(**fields: Callable[[Subject], Any]) -> Knob:
    return lambda subject, inp: inp["mandate"].update(
        {name: value(subject) for name, value in fields.items()}
    )


def _request(**fields: Callable[[Subject], Any]) -> Knob:
    return lambda subject, inp: inp.update({name: value(subject) for name, value in fields.items()})


# One way to break each step, in the spec's order: (name, code, needs the platform, how to break it).
STEPS: list[tuple[str, str, bool, Knob]] = [
    ("well_formed", "invalid_mandate", False, lambda subject, inp: inp["mandate"].pop("id")),
    ("expired", "mandate_expired", False, _mandate(expires_at=lambda s: "2030-04-30T23:59:59Z")),
    ("action", "action_not_allowed", False, _mandate(allowed_actions=lambda s: ["booking.status"])),
    ("organization", "organization_not_allowed", False, _mandate(organization_id=lambda s: "elsewhere")),
    ("service", "service_not_allowed", False, _mandate(service_ids=lambda s: ["elsewhere"])),
    ("schedule", "schedule_not_allowed", False, _mandate(schedule_ids=lambda s: ["elsewhere"])),
    ("provider", "provider_not_allowed", False, _mandate(provider_ids=lambda s: ["elsewhere"])),
    ("time_shape", "invalid_mandate", False, _request(time=lambda s: f"{s.time}Z")),
    ("too_early", "slot_too_early", False, _mandate(earliest_start=lambda s: _shift(s.starts_at_local, 1))),
    ("too_late", "slot_too_late", True, _mandate(latest_end=lambda s: _shift(s.ends_at_local, -1))),
    (
        "price",
        "currency_mismatch",
        True,
        _mandate(max_price=lambda s: {"amount_minor": 1, "currency": "EUR"}),
    ),
    ("consultation", "requires_consultation_handoff", True, _request(service_id=lambda s: s.consultation)),
    ("payment", "requires_payment_handoff", True, _request(service_id=lambda s: s.deposit)),
]
_SERVICE_KNOBS = {"consultation", "payment"}  # both choose the service: they cannot fail together
CASES = [(step,) for step in range(len(STEPS))] + [
    pair
    for pair in itertools.combinations(range(len(STEPS)), 2)
    if not {STEPS[pair[0]][0], STEPS[pair[1]][0]} <= _SERVICE_KNOBS
]


def _case_id(case: tuple[int, ...]) -> str:
    return "+".join(STEPS[step][0] for step in case)


def _broken(subject: Subject, case: tuple[int, ...]) -> BookingCreateInput:
    inp = _input(subject)
    for step in case:
        STEPS[step][3](subject, inp)
    return BookingCreateInput.model_validate(inp)


@pytest.mark.anyio
@pytest.mark.parametrize("case", CASES, ids=_case_id)
async def test_the_earliest_failing_mandate_step_answers_with_the_platform_up(
    core: OsbpCore, subject: Subject, case: tuple[int, ...]
) -> None:
    """OSBP spec, Mandate Enforcement: the checks run in order; platform-free steps need no request."""
    name, code, needs_platform, _ = STEPS[min(case)]
    with capture_upstream() as capture:
        result = await core.create_booking(_broken(subject, case))
    assert isinstance(result, Failure), result
    assert (result.problem.code, result.problem.retryable) == (code, False), name
    if not needs_platform:
        assert capture.last is None, "a platform-free mandate step answered after a platform request"


@pytest.mark.anyio
@pytest.mark.parametrize("case", CASES, ids=_case_id)
async def test_platform_free_mandate_steps_answer_while_the_platform_is_down(
    down_core: OsbpCore, subject: Subject, case: tuple[int, ...]
) -> None:
    """OSBP spec, Mandate Enforcement: an expired or out-of-scope mandate is never a retryable outage."""
    name, code, needs_platform, _ = STEPS[min(case)]
    result = await down_core.create_booking(_broken(subject, case))
    assert isinstance(result, Failure), result
    if needs_platform:
        assert (result.problem.code, result.problem.retryable) == ("upstream_unavailable", True), name
    else:
        assert (result.problem.code, result.problem.retryable) == (code, False), name


@pytest.mark.anyio
async def test_an_unbroken_booking_reaches_the_final_confirmation_gate(
    core: OsbpCore, subject: Subject
) -> None:
    """OSBP spec, booking.create: a valid call without approval is challenged, retryable, with a token."""
    result = await core.create_booking(BookingCreateInput.model_validate(_input(subject)))
    assert isinstance(result, Failure)
    assert (result.problem.code, result.problem.retryable) == ("requires_user_confirmation", True)
    assert 'approval.token="' in result.problem.message


def _approve(inp: BookingCreateInput, challenge: Any) -> BookingCreateInput:
    assert isinstance(challenge, Failure)
    assert challenge.problem.code == "requires_user_confirmation"
    token = challenge.problem.message.split('approval.token="')[1].split('"')[0]
    return inp.model_copy(update={"approval": Approval(confirmed=True, token=token)})


@pytest.mark.anyio
async def test_approved_create_books_once_and_a_replay_answers_after_the_mandate_expired(
    core: OsbpCore, subject: Subject, tmp_path: Path
) -> None:
    """OSBP spec, booking.create: a settled key replays its receipt without a platform request."""
    inp = BookingCreateInput.model_validate(_input(subject, key="idem-once"))
    approved = _approve(inp, await core.create_booking(inp))
    booked = await core.create_booking(approved)
    assert isinstance(booked, Success)
    assert booked.value.id == "receipt_idem-once"
    # The same attempt retried a month later, its mandate expired: a replay is not a new mutation.
    later = OsbpCore(
        core.adapter, state=tmp_path / "state.sqlite3", clock=FixedClock(datetime(2030, 6, 2, tzinfo=UTC))
    )
    with capture_upstream() as capture:
        replayed = await later.create_booking(approved)
    assert isinstance(replayed, Success)
    assert replayed.value == booked.value
    assert replayed.runtime is not None
    assert replayed.runtime.idempotency == "local_cache_replay"
    assert capture.last is None


@pytest.mark.anyio
async def test_same_key_with_another_payload_is_a_conflict_after_the_mandate_checks(
    core: OsbpCore, subject: Subject
) -> None:
    """OSBP spec, Mandate Enforcement: idempotency is the last obligation, after the mandate steps."""
    first = BookingCreateInput.model_validate(_input(subject, key="idem-shared"))
    assert isinstance(await core.create_booking(first), Failure)  # the preflight binds the key
    other = BookingCreateInput.model_validate(_input(subject, key="idem-shared") | {"time": "12:00"})
    conflict = await core.create_booking(other)
    assert isinstance(conflict, Failure)
    assert conflict.problem.code == "idempotency_conflict"
    expired = BookingCreateInput.model_validate(
        _input(subject, key="idem-shared", expires_at="2030-04-30T23:59:59Z") | {"time": "12:00"}
    )
    answered = await core.create_booking(expired)
    assert isinstance(answered, Failure)
    assert answered.problem.code == "mandate_expired"


@pytest.mark.anyio
async def test_a_token_authorizes_only_its_own_payload_and_key(core: OsbpCore, subject: Subject) -> None:
    """OSBP spec, booking.create: a leaked token cannot authorize another payload or idempotency key."""
    inp = BookingCreateInput.model_validate(_input(subject, key="idem-token"))
    approved = _approve(inp, await core.create_booking(inp))
    assert approved.approval is not None
    elsewhere = BookingCreateInput.model_validate(_input(subject, key="idem-other")).model_copy(
        update={"approval": approved.approval}
    )
    refused = await core.create_booking(elsewhere)
    assert isinstance(refused, Failure)
    assert refused.problem.code == "requires_user_confirmation"
    assert approved.approval.token not in refused.problem.message
    assert isinstance(await core.create_booking(approved), Success)


@pytest.mark.anyio
async def test_a_spent_token_authorizes_nothing_new(core: OsbpCore, subject: Subject) -> None:
    """OSBP spec, booking.create: after its booking succeeded a token cannot book again under a new key."""
    inp = BookingCreateInput.model_validate(_input(subject, key="idem-spent"))
    approved = _approve(inp, await core.create_booking(inp))
    assert isinstance(await core.create_booking(approved), Success)
    again = approved.model_copy(update={"idempotency_key": "idem-spent-2"})
    refused = await core.create_booking(again)
    assert isinstance(refused, Failure)
    assert refused.problem.code == "requires_user_confirmation"


@pytest.mark.anyio
async def test_concurrent_duplicates_of_one_approved_create_book_once(
    core: OsbpCore, subject: Subject
) -> None:
    """OSBP spec, booking.create: one key is one booking, however many copies of the retry arrive."""
    inp = BookingCreateInput.model_validate(_input(subject, key="idem-race"))
    approved = _approve(inp, await core.create_booking(inp))
    results: list[Any] = []

    async def attempt() -> None:
        results.append(await core.create_booking(approved))

    async with anyio.create_task_group() as group:
        for _ in range(4):
            group.start_soon(attempt)
    receipts = {result.value.booking_id for result in results if isinstance(result, Success)}
    assert len(receipts) == 1, results
    assert all(isinstance(result, Success) for result in results), results
    replays = [result for result in results if result.runtime is not None]
    assert len(replays) == 3


@pytest.mark.anyio
@pytest.mark.parametrize("field", ["display_name", "given_name", "family_name"])
async def test_a_control_character_in_a_name_is_invalid_customer_before_the_challenge(
    core: OsbpCore, subject: Subject, field: str
) -> None:
    """OSBP spec, booking.create: the summary shows the merchant-visible name, so it must be plain text."""
    arguments = _input(subject)
    arguments["customer"] = arguments["customer"] | {field: "Casey\x07Conformance"}
    result = await core.create_booking(BookingCreateInput.model_validate(arguments))
    assert isinstance(result, Failure)
    assert (result.problem.code, result.problem.retryable) == ("invalid_customer", False)
    assert f"customer.{field}" in result.problem.message


class _LostThenThrottled(memory.MemoryAdapter):
    """Books the first create but loses its answer, then answers the next create 429 (nothing done)."""

    def __init__(self, clock: FixedClock) -> None:
        super().__init__(clock=clock)
        self.answers: list[str] = ["lost", "rate_limited"]

    async def place_booking(self, request: BookingRequest, customer_name: str) -> Booking | Problem:
        """The scripted answer first, then the memory platform's own (which replays under the key)."""
        scripted = self.answers.pop(0) if self.answers else None
        if scripted == "rate_limited":
            return problem(ProblemCode.RATE_LIMITED, retryable=True)
        booked = await super().place_booking(request, customer_name)
        if scripted == "lost":
            return problem(ExtensionCode.UPSTREAM_UNAVAILABLE, "No answer from the platform.", retryable=True)
        return booked


@pytest.mark.anyio
async def test_a_lost_answer_resumed_after_a_refused_resend_and_the_mandate_s_expiry_answers_the_booking(
    tmp_path: Path,
) -> None:
    """OSBP spec, Mandate Enforcement ("the same idempotency_key returns the same result if retried") and
    the port's contract: a refusal of a resumed create (429: nothing done by that request) says nothing of
    the earlier create whose answer was lost, so the attempt stays placed and the next retry, after the
    mandate expired, answers the booking the platform holds, not mandate_expired."""
    clock = FixedClock(NOW)
    adapter = _LostThenThrottled(clock)
    core = OsbpCore(adapter, state=tmp_path / "state.sqlite3", clock=clock)
    subject = _memory()
    try:
        inp = BookingCreateInput.model_validate(
            _input(subject, key="idem-lost", expires_at="2030-05-01T12:05:00Z")
        )
        approved = _approve(inp, await core.create_booking(inp))
        lost = await core.create_booking(approved)
        assert isinstance(lost, Failure)
        assert lost.problem.code == "upstream_unavailable"
        assert adapter.creates == 1
        clock.advance(timedelta(minutes=10))  # the mandate expires while the answer is missing
        throttled = await core.create_booking(approved)
        assert isinstance(throttled, Failure)
        assert throttled.problem.code == "rate_limited"
        resumed = await core.create_booking(approved)
        assert isinstance(resumed, Success), resumed
        assert resumed.value.booking_id == "appt_idem-lost"
        assert adapter.creates == 1
    finally:
        await core.aclose()
