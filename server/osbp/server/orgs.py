"""Many organizations behind one server: each call routed, by the ids it carries, to its organization's core.

:class:`OrganizationRouter` is a :class:`~osbp.protocol.contract.BookingAdapter` over one
:class:`~osbp.protocol.core.OsbpCore` per organization (all on one state store, so approvals and
idempotency are shared), created on first use. A call is routed by:

* booking.create: the mandate's ``organization_id``;
* service.describe, policy.explain, availability.find: the ``service_id`` (or the configured default
  service), availability.find without a service by its ``schedule_id``;
* booking.status: the ``booking_id``;
* verification.send / verify: the ``purpose`` (``booking:{organization_id}``).

The candidates of a call are the organizations this server serves that the call's principal
(:mod:`osbp.protocol.principal`) may act for; without a principal (no authorization), all it serves.
When exactly one organization is a candidate, a call that names no id goes to it, so one organization
behaves as a single-organization server does. An id that belongs to no candidate is answered with the
Problem an unknown id gets (``service_not_found``, ``booking_not_found``, ``organization_not_allowed`` for
a mandate), so a caller cannot learn whether another organization's id exists. Which organization owns
an id is the platform's answer (:class:`Directory`, implemented for Bookwell by
:class:`osbp.adapter.directory.BookwellDirectory`).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, TypeVar

from osbp.protocol.clock import Clock
from osbp.protocol.contract import AdapterResult, Failure, Success
from osbp.protocol.core import SNAPSHOT_FALLBACK, OsbpCore
from osbp.protocol.mandate import precheck_mandate
from osbp.protocol.models import (
    AvailabilityFindInput,
    Booking,
    BookingCreateInput,
    BookingStatusInput,
    PlatformIdentity,
    Policy,
    PolicyExplainInput,
    Problem,
    Receipt,
    Service,
    ServiceDescribeInput,
    Slot,
    VerificationChallenge,
    VerificationSendInput,
    VerificationVerifyInput,
)
from osbp.protocol.principal import current_principal
from osbp.protocol.problems import UPSTREAM_UNAVAILABLE, ProblemCode, problem
from osbp.protocol.state import StateStoreError

__all__ = ["Directory", "OrganizationRouter", "SingleDirectory", "served_organizations"]

T = TypeVar("T")

_SERVICE_NOT_FOUND = problem("service_not_found", "The platform has no such service for this organization.")
_SCHEDULE_NOT_FOUND = problem(
    "schedule_not_found", "The platform has no such schedule (location) for this organization."
)
_NO_SERVICE = problem(
    "invalid_input",
    "This server serves several organizations: give the service_id (from the merchant's catalog) so the "
    "call can reach its organization.",
)
_PURPOSE = problem(
    "invalid_verification_purpose",
    "The verification purpose must be booking:{organization_id} for an organization this server serves.",
)


def served_organizations(setting: str) -> tuple[str, ...] | None:
    """The organization setting as the organizations served: ``*`` (``None``: every one) or a comma list."""
    if setting.strip() == "*":
        return None
    return tuple(dict.fromkeys(item.strip() for item in setting.split(",") if item.strip()))


class Directory(Protocol):
    """The platform's answer to "which organization is this id of" (``None``: none of ``among``)."""

    async def organizations(self) -> tuple[str, ...] | Problem:
        """Every organization on the platform."""
        ...

    async def service_owner(self, service_id: str, among: tuple[str, ...]) -> str | Problem | None:
        """The owner of a service id among the candidates."""
        ...

    async def schedule_owner(self, schedule_id: str, among: tuple[str, ...]) -> str | Problem | None:
        """The owner of a schedule id among the candidates."""
        ...

    async def booking_owner(self, booking_id: str, among: tuple[str, ...]) -> str | Problem | None:
        """The owner of a booking id among the candidates."""
        ...

    async def aclose(self) -> None:
        """Close the platform connection."""
        ...


class OrganizationRouter:
    """The seven-method BookingAdapter over one core per organization (see the module docstring)."""

    def __init__(
        self,
        *,
        served: tuple[str, ...] | None,
        directory: Directory,
        core_for: Callable[[str], OsbpCore],
        platform: PlatformIdentity,
        clock: Clock,
        default_service_id: str | None = None,
    ) -> None:
        self._clock = clock
        self._served = served
        self._directory = directory
        self._core_for = core_for
        self._platform = platform
        self._default_service_id = default_service_id
        self._cores: dict[str, OsbpCore] = {}

    @property
    def platform(self) -> PlatformIdentity:
        """The platform's static identity."""
        return self._platform

    def core(self, organization_id: str) -> OsbpCore:
        """The core of one organization (created on first use)."""
        core = self._cores.get(organization_id)
        if core is None:
            core = self._cores[organization_id] = self._core_for(organization_id)
        return core

    async def _candidates(self) -> tuple[str, ...] | Problem:
        served = self._served
        if served is None:
            listed = await self._directory.organizations()
            if isinstance(listed, Problem):
                return listed
            served = self._served = listed
        principal = current_principal()
        if principal is None:
            return served
        return tuple(org for org in served if principal.may_act_for(org))

    async def _route(
        self,
        lookup: Callable[[tuple[str, ...]], Awaitable[str | Problem | None]] | None,
        missing: Problem,
        call: Callable[[OsbpCore], Awaitable[AdapterResult[T]]],
    ) -> AdapterResult[T]:
        """Find the organization (``lookup`` ``None``: the call names no id) and run ``call`` on its core."""
        candidates = await self._candidates()
        if isinstance(candidates, Problem):
            return Failure(candidates)
        if lookup is None:
            owner: str | Problem | None = candidates[0] if len(candidates) == 1 else None
        else:
            owner = await lookup(candidates)
        if isinstance(owner, Problem):
            return Failure(owner)
        if owner is None:
            return Failure(missing.model_copy())
        return await call(self.core(owner))

    def _by_service(
        self, service_id: str | None
    ) -> tuple[Callable[[tuple[str, ...]], Awaitable[str | Problem | None]] | None, Problem]:
        chosen = service_id or self._default_service_id
        if chosen is None:
            return None, _NO_SERVICE
        return (lambda among: self._directory.service_owner(chosen, among)), _SERVICE_NOT_FOUND

    async def describe_service(self, inp: ServiceDescribeInput) -> AdapterResult[Service]:
        """service.describe on the service's organization."""
        lookup, missing = self._by_service(inp.service_id)
        return await self._route(lookup, missing, lambda core: core.describe_service(inp))

    async def find_availability(self, inp: AvailabilityFindInput) -> AdapterResult[list[Slot]]:
        """availability.find on the service's (else the schedule's) organization."""
        lookup, missing = self._by_service(inp.service_id)
        schedule_id = inp.schedule_id
        if lookup is None and schedule_id is not None:
            lookup, missing = (
                (lambda among: self._directory.schedule_owner(schedule_id, among)),
                _SCHEDULE_NOT_FOUND,
            )
        return await self._route(lookup, missing, lambda core: core.find_availability(inp))

    async def explain_policy(self, inp: PolicyExplainInput) -> AdapterResult[Policy]:
        """policy.explain on the service's organization."""
        lookup, missing = self._by_service(inp.service_id)
        return await self._route(lookup, missing, lambda core: core.explain_policy(inp))

    @staticmethod
    def _by_purpose(
        purpose: str | None,
    ) -> Callable[[tuple[str, ...]], Awaitable[str | Problem | None]] | None:
        if purpose is None:
            return None
        organization_id = purpose.removeprefix("booking:") if purpose.startswith("booking:") else None

        async def owner(among: tuple[str, ...]) -> str | None:
            return organization_id if organization_id in among else None

        return owner

    async def send_verification(self, inp: VerificationSendInput) -> AdapterResult[VerificationChallenge]:
        """verification.send on the purpose's organization."""
        return await self._route(
            self._by_purpose(inp.purpose), _PURPOSE, lambda core: core.send_verification(inp)
        )

    async def verify_code(self, inp: VerificationVerifyInput) -> AdapterResult[VerificationChallenge]:
        """verification.verify on the purpose's organization."""
        return await self._route(self._by_purpose(inp.purpose), _PURPOSE, lambda core: core.verify_code(inp))

    async def create_booking(self, inp: BookingCreateInput) -> AdapterResult[Receipt]:
        """booking.create on the mandate's organization (any other: ``organization_not_allowed``)."""
        organization_id = inp.mandate.organization_id

        async def owner(among: tuple[str, ...]) -> str | None:
            return organization_id if organization_id in among else None

        # Refused before any core: the shared idempotency store would otherwise replay a receipt of an
        # organization this caller may not act for. The mandate's earlier rules still answer first, in
        # the spec's order: the scope check against no organization at all is exactly the refusal.
        checked = precheck_mandate(inp, organization_id="", now=self._clock.now())
        refused = checked if isinstance(checked, Problem) else problem(ProblemCode.ORGANIZATION_NOT_ALLOWED)
        return await self._route(owner, refused, lambda core: core.create_booking(inp))

    async def get_booking(self, inp: BookingStatusInput) -> AdapterResult[Booking]:
        """booking.status on the booking's organization (the creation snapshot while the platform is down)."""
        booking_id = inp.booking_id
        missing = problem(ProblemCode.BOOKING_NOT_FOUND)
        if booking_id is None:
            return await self._route(None, missing, lambda core: core.get_booking(inp))
        result = await self._route(
            lambda among: self._directory.booking_owner(booking_id, among),
            missing,
            lambda core: core.get_booking(inp),
        )
        if isinstance(result, Failure) and result.problem.code == UPSTREAM_UNAVAILABLE:
            return await self._snapshot(booking_id, result)
        return result

    async def _snapshot(self, booking_id: str, unavailable: Failure) -> AdapterResult[Booking]:
        """The creation snapshot of a booking of a candidate organization, while the platform is down."""
        candidates = await self._candidates()
        if isinstance(candidates, Problem) or not candidates:
            return unavailable
        try:
            snapshot = await self.core(candidates[0]).idempotency.abooking_snapshot(booking_id)
        except StateStoreError:
            return unavailable  # the fallback is unavailable too: the platform's own answer stands
        if snapshot is None or snapshot.organization_id not in candidates:
            return unavailable
        return Success(snapshot, runtime=SNAPSHOT_FALLBACK)

    async def aclose(self) -> None:
        """Close every organization's core, then the platform connection."""
        try:
            for core in self._cores.values():
                await core.aclose()
        finally:
            await self._directory.aclose()


class SingleDirectory:
    """The directory of a server serving one organization: every id is that organization's to answer.

    The organization's own adapter answers an unknown id; the router only checks the principal may act
    for the organization. The adapter owns the platform connection, so there is nothing to close.
    """

    def __init__(self, organization_id: str) -> None:
        self._organization_id = organization_id

    async def organizations(self) -> tuple[str, ...] | Problem:
        """The one organization."""
        return (self._organization_id,)

    async def _owner(self, among: tuple[str, ...]) -> str | None:
        return self._organization_id if self._organization_id in among else None

    async def service_owner(self, service_id: str, among: tuple[str, ...]) -> str | Problem | None:
        """The organization, when it is a candidate."""
        return await self._owner(among)

    async def schedule_owner(self, schedule_id: str, among: tuple[str, ...]) -> str | Problem | None:
        """The organization, when it is a candidate."""
        return await self._owner(among)

    async def booking_owner(self, booking_id: str, among: tuple[str, ...]) -> str | Problem | None:
        """The organization, when it is a candidate."""
        return await self._owner(among)

    async def aclose(self) -> None:
        """Nothing to close."""
