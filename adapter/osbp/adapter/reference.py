"""The reference adapter: OSBP's platform port over Bookwell's native HTTP API.

:class:`ReferenceAdapter` implements :class:`~osbp.protocol.port.PlatformAdapter`: the read and
verification tools, booking.status, and booking.create's two port methods (:mod:`osbp.adapter.booking`).
Every rule around a create (mandate, approval gate, idempotency, receipt, snapshot) is the protocol
core's: :func:`build_adapter` wraps the reference adapter in :class:`~osbp.protocol.core.OsbpCore` for
in-process use, and the MCP server's composition root does the same with :func:`build_platform_adapter`.
Every method returns a value and never raises for an expected failure.

* Catalog reads (the organization, services and policies) come from the exact catalog cache of
  :mod:`osbp.adapter.bookwell`: a conditional GET, or no request at all when another answer states the
  very catalog version the cached entry was read at; availability is always read afresh.
* The read tools (service.describe, availability.find, policy.explain) fall back to the configured
  default service and schedule when the input omits them; booking.create never defaults anything
  (:mod:`osbp.adapter.booking`).
* booking.status is a direct platform read (current state); ``upstream_unavailable`` when the platform
  cannot be reached (the core then answers from its creation snapshot, marked as not fresh).
* verification.send asks the platform to send a code by the channel the organization's services verify
  with; an organization without verification answers ``verification_not_supported``.
* verification.verify is rejected with ``pre_verification_not_supported``: Bookwell checks and consumes
  the code inside the appointment create and has no independent verify step, so any pre-verification
  would either be simulated or burn the booking's code (the spec's rule for adapters without a safe
  verify primitive). The agent passes the code to booking.create instead.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial

import httpx2

from osbp.adapter import translate
from osbp.adapter.availability import page
from osbp.adapter.booking import BookwellBooking
from osbp.adapter.bookwell import PLATFORM, VERSION_HEADER, BookwellApi
from osbp.adapter.problems import (
    INVALID_CUSTOMER,
    INVALID_INPUT,
    INVALID_VERIFICATION_PURPOSE,
    MISSING_CONFIG,
    PRE_VERIFICATION_NOT_SUPPORTED,
    VERIFICATION_NOT_SUPPORTED,
    at_edge,
)
from osbp.adapter.settings import AdapterSettings
from osbp.adapter.upstream import LifecycleNotices, Upstream
from osbp.protocol.approval import default_token_source
from osbp.protocol.clock import Clock
from osbp.protocol.contract import AdapterResult, Failure, Success
from osbp.protocol.core import OsbpCore
from osbp.protocol.models import (
    AvailabilityFindInput,
    Booking,
    BookingStatusInput,
    Customer,
    PlatformIdentity,
    Policy,
    PolicyExplainInput,
    Problem,
    Service,
    ServiceDescribeInput,
    Slot,
    VerificationChallenge,
    VerificationMethod,
    VerificationSendInput,
    VerificationVerifyInput,
)
from osbp.protocol.port import BookingRequest, Offer
from osbp.protocol.problems import ProblemCode, problem
from osbp.protocol.timeutil import parse_date, parse_wall_clock

__all__ = ["ReferenceAdapter", "build_adapter", "build_platform_adapter"]

_EARLIEST_START_FORMAT = (
    "earliest_start must be a merchant-local wall-clock YYYY-MM-DDTHH:MM:SS with no offset, such as a slot's "
    "starts_at_local."
)


class ReferenceAdapter:
    """The platform adapter (OSBP's platform port) for one Bookwell organization."""

    def __init__(self, settings: AdapterSettings, *, api: BookwellApi) -> None:
        self._settings = settings
        self._org = settings.organization_id
        self._api = api
        self._booking = BookwellBooking(api)

    @property
    def platform(self) -> PlatformIdentity:
        """The static platform identity (vendor slug and the exact native version pin)."""
        return PLATFORM

    @property
    def organization_id(self) -> str:
        """The one Bookwell organization this adapter serves."""
        return self._org

    def _service_id(self, given: str | None) -> str | Problem:
        service_id = given or self._settings.default_service_id
        if not service_id:
            return problem(
                MISSING_CONFIG,
                "No service_id was given and no default service is configured (OSBP_DEFAULT_SERVICE_ID).",
            )
        return service_id

    async def describe_service(self, inp: ServiceDescribeInput) -> AdapterResult[Service]:
        """service.describe: one service read (the configured default when ``service_id`` is omitted)."""

        async def work() -> AdapterResult[Service]:
            service_id = self._service_id(inp.service_id)
            if isinstance(service_id, Problem):
                return Failure(service_id)
            native = await self._api.service(service_id)
            if isinstance(native, Problem):
                return Failure(native)
            return Success(translate.service(native))

        return await at_edge(work)

    async def find_availability(self, inp: AvailabilityFindInput) -> AdapterResult[list[Slot]]:
        """availability.find: the platform's computed slots with the organization's data, a page at a time."""

        async def work() -> AdapterResult[list[Slot]]:
            service_id = self._service_id(inp.service_id)
            if isinstance(service_id, Problem):
                return Failure(service_id)
            if parse_date(inp.date) is None:
                return Failure(problem(INVALID_INPUT, "date must be a merchant-local date YYYY-MM-DD."))
            if inp.earliest_start is not None and parse_wall_clock(inp.earliest_start) is None:
                return Failure(problem(INVALID_INPUT, _EARLIEST_START_FORMAT))
            slots = partial(
                self._api.availability,
                service_id=service_id,
                date=inp.date,
                location_id=inp.schedule_id or self._settings.default_schedule_id,
                provider_id=inp.provider_id,
            )
            if self._api.holds():
                # The organization as of the catalog the slots were computed from (no request if exact).
                availability, revision = await slots()
                if isinstance(availability, Problem):
                    return Failure(availability)
                organization = await self._api.organization(at=revision)
            else:
                organization, (availability, _) = await asyncio.gather(self._api.organization(), slots())
            if isinstance(availability, Problem):
                return Failure(availability)
            if isinstance(organization, Problem):
                return Failure(organization)
            found = page(availability.slots, organization, earliest_start=inp.earliest_start, limit=inp.limit)
            return Success(found.slots, runtime=found.notice)

        return await at_edge(work)

    async def explain_policy(self, inp: PolicyExplainInput) -> AdapterResult[Policy]:
        """policy.explain: the service's policy plus the organization block."""

        async def work() -> AdapterResult[Policy]:
            service_id = self._service_id(inp.service_id)
            if isinstance(service_id, Problem):
                return Failure(service_id)
            if self._api.holds():
                service, revision = await self._api.service_read(service_id)
                if isinstance(service, Problem):
                    return Failure(service)
                organization = await self._api.organization(at=revision)
            else:
                service, organization = await asyncio.gather(
                    self._api.service(service_id), self._api.organization()
                )
            if isinstance(service, Problem):
                return Failure(service)
            if isinstance(organization, Problem):
                return Failure(organization)
            return Success(translate.policy(service, organization))

        return await at_edge(work)

    async def send_verification(self, inp: VerificationSendInput) -> AdapterResult[VerificationChallenge]:
        """verification.send: the platform sends a code by the channel its services verify with."""

        async def work() -> AdapterResult[VerificationChallenge]:
            purpose = inp.purpose or f"booking:{self._org}"
            if purpose != f"booking:{self._org}":
                return Failure(
                    problem(
                        INVALID_VERIFICATION_PURPOSE,
                        f"The verification purpose must be booking:{self._org} for this organization.",
                    )
                )
            services = await self._api.services()
            if isinstance(services, Problem):
                return Failure(services)
            methods = {service.policy.verification for service in services.services} & {"sms", "email"}
            if not methods:
                return Failure(
                    problem(
                        VERIFICATION_NOT_SUPPORTED,
                        "This organization does not verify customers, so there is no code to send.",
                    )
                )
            customer = inp.customer or Customer()
            if customer.phone and "sms" in methods:
                body = {"purpose": purpose, "channel": "sms", "phone": customer.phone}
            elif customer.email and "email" in methods:
                body = {"purpose": purpose, "channel": "email", "email": customer.email}
            else:
                needed = " or ".join(sorted({"sms": "phone", "email": "email"}[method] for method in methods))
                message = f"This organization verifies customers by {needed}; give the customer's {needed}."
                return Failure(problem(INVALID_CUSTOMER, message))
            sent = await self._api.send_verification(body)
            if isinstance(sent, Problem):
                return Failure(sent)
            method: VerificationMethod = "sms" if sent.channel == "sms" else "email"
            return Success(VerificationChallenge(sent=True, method=method, purpose=sent.purpose))

        return await at_edge(work)

    async def verify_code(self, inp: VerificationVerifyInput) -> AdapterResult[VerificationChallenge]:
        """verification.verify: rejected, because Bookwell has no independent, non-consuming verify step."""
        return Failure(
            problem(
                PRE_VERIFICATION_NOT_SUPPORTED,
                "This platform has no independent verification step: it checks and consumes the code "
                "during the appointment create. Do not pre-verify; pass the customer's code to "
                "booking.create as verification_code instead. No platform call was made.",
            )
        )

    async def resolve_booking(self, request: BookingRequest) -> Offer | Problem:
        """booking.create's facts: service, organization and the day's availability (reads only)."""
        return await self._booking.resolve(request)

    async def place_booking(self, request: BookingRequest, customer_name: str) -> Booking | Problem:
        """booking.create's platform write, idempotent per the OSBP key."""
        return await self._booking.place(request, customer_name)

    async def get_booking(self, inp: BookingStatusInput) -> AdapterResult[Booking]:
        """booking.status: a direct platform read of the appointment (always current platform state)."""

        async def work() -> AdapterResult[Booking]:
            if not inp.booking_id:
                return Failure(
                    problem(
                        ProblemCode.BOOKING_NOT_FOUND,
                        "booking.status needs the booking_id from the booking.create receipt.",
                    )
                )
            native = await self._api.appointment(inp.booking_id)
            if isinstance(native, Problem):
                return Failure(native)
            return Success(translate.booking(native))

        return await at_edge(work)

    async def aclose(self) -> None:
        """Close the HTTP client (the state file needs no closing: connections are per operation)."""
        await self._api.aclose()


def build_platform_adapter(
    settings: AdapterSettings,
    *,
    transport: httpx2.AsyncBaseTransport | None = None,
    notices: LifecycleNotices | None = None,
) -> ReferenceAdapter:
    """The reference platform adapter alone (the server wraps it in the core); ``aclose`` it after."""
    upstream = Upstream(
        settings, platform=PLATFORM, version_header=VERSION_HEADER, transport=transport, notices=notices
    )
    return ReferenceAdapter(settings, api=BookwellApi(upstream, settings.organization_id))


def build_adapter(
    settings: AdapterSettings,
    *,
    clock: Clock | None = None,
    transport: httpx2.AsyncBaseTransport | None = None,
    token_source: Callable[[], str] = default_token_source,
    notices: LifecycleNotices | None = None,
) -> OsbpCore:
    """The complete OSBP adapter for Bookwell: the reference adapter inside the protocol core."""
    platform = build_platform_adapter(settings, transport=transport, notices=notices)
    return OsbpCore(platform, state=settings.state_path, clock=clock, token_source=token_source)
