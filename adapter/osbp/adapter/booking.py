"""booking.create for Bookwell: the two port methods, translation plus the native calls.

The protocol core (:mod:`osbp.protocol.booking`) runs every rule; this module only talks to the platform:

* :meth:`BookwellBooking.resolve` reads the requested day's availability, the service (with its policy)
  and the organization (locations, providers, zone): when the exact catalog cache holds the last two,
  availability first and the catalog at the version the slots were computed at (no request when the
  cache holds exactly that version, else conditional GETs); otherwise three concurrent GETs,
  and describes the requested slot as an :class:`~osbp.protocol.port.Offer`: offered (with the slot's
  ``offer_token`` as the offer's validator), taken, or naming an id the platform does not know (a 404 on
  the service, or an unknown schedule or provider).
* :meth:`BookwellBooking.place` sends ``POST …/appointments`` with a native ``Idempotency-Key`` derived from
  ``request.idempotency_key`` (the OSBP key, or a remote subject's key derived from it; so a repeated
  place replays the platform's stored 201 instead of booking again), the mandate id and the receipt id in
  the appointment metadata, the customer passed through, and the verification code passed through (never
  stored, never logged) when present, and the approved offer's token as ``If-Match`` when the request
  carries one (``412 offer_changed`` → the port's ``offer_changed``: nothing was booked).
"""

from __future__ import annotations

import asyncio
import unicodedata
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, TypeVar

from osbp.adapter import translate
from osbp.adapter.bookwell import BookwellApi, native_idempotency_key
from osbp.adapter.native import NativeSlot
from osbp.adapter.problems import SERVICE_NOT_FOUND, at_edge
from osbp.protocol.canonical import sha256_hex
from osbp.protocol.contract import AdapterResult, Success
from osbp.protocol.models import Booking, BookingCreateInput, Customer, Problem
from osbp.protocol.port import BookingRequest, Offer
from osbp.protocol.problems import ProblemCode, problem

__all__ = ["BookwellBooking"]

_METADATA_VALUE_MAX = 500  # Bookwell's limit on one metadata value
V = TypeVar("V")


def _metadata_value(value: str) -> str:
    # An id the platform cannot store as it is (over-long, or holding a control character, which Bookwell
    # refuses in metadata) is recorded by its hash rather than cut into something that looks real.
    plain = len(value) <= _METADATA_VALUE_MAX and not any(
        unicodedata.category(char) == "Cc" for char in value
    )
    return value if plain else "sha256:" + sha256_hex(value)


async def _guarded(work: Callable[[], Awaitable[V | Problem]]) -> V | Problem:
    """``work`` with the adapter's edge: platform data OSBP cannot represent becomes a Problem."""

    async def wrapped() -> AdapterResult[V | Problem]:
        return Success(await work())

    result = await at_edge(wrapped)
    return result.value if isinstance(result, Success) else result.problem


class BookwellBooking:
    """The booking half of the platform port for one Bookwell organization."""

    def __init__(self, api: BookwellApi) -> None:
        self._api = api

    async def resolve(self, request: BookingRequest) -> Offer | Problem:
        """The platform's current facts about the requested booking (reads only)."""
        return await _guarded(lambda: self._resolve(request.input, request.starts_at_local))

    async def place(self, request: BookingRequest, customer_name: str) -> Booking | Problem:
        """Create the appointment, idempotent per ``request.idempotency_key`` (the native Idempotency-Key)."""

        async def work() -> Booking | Problem:
            inp = request.input
            created = await self._api.create_appointment(
                self._create_body(request, inp.customer or Customer(), customer_name),
                native_idempotency_key(self._api.organization_id, request.idempotency_key),
                offer_token=request.validator,
            )
            return created if isinstance(created, Problem) else translate.booking(created)

        return await _guarded(work)

    async def _resolve(self, inp: BookingCreateInput, start_local: str) -> Offer | Problem:
        slots = partial(
            self._api.availability,
            service_id=inp.service_id,
            date=start_local[:10],
            location_id=inp.schedule_id,
            provider_id=inp.provider_id or None,
        )
        if self._api.holds(service_id=inp.service_id):
            # The catalog as of the version the slots were computed at: no request when the cache is exact.
            availability, revision = await slots()
            native_service, organization = await asyncio.gather(
                self._api.service(inp.service_id, at=revision), self._api.organization(at=revision)
            )
        else:
            native_service, organization, (availability, _) = await asyncio.gather(
                self._api.service(inp.service_id), self._api.organization(), slots()
            )
        if isinstance(organization, Problem):
            return organization
        if isinstance(native_service, Problem):
            if native_service.code != SERVICE_NOT_FOUND:
                return native_service
            return Offer(service=None, slot=None, policy=None, not_offered=native_service)
        offered: NativeSlot | None = None
        not_offered = problem(ProblemCode.SLOT_TAKEN)
        if isinstance(availability, Problem):
            if availability.retryable or availability.code == ProblemCode.INTERNAL_ADAPTER_ERROR:
                return availability
            # An unknown schedule or provider means "not offered" here: the mandate answers first.
            not_offered = availability
        else:
            wanted = (inp.schedule_id, inp.provider_id, inp.service_id, start_local[:10], start_local[11:16])
            offered = next(
                (
                    native
                    for native in availability.slots
                    if (native.location_id, native.provider_id, native.service_id, native.date, native.time)
                    == wanted
                ),
                None,
            )
        slot = (
            translate.slot(offered, organization)
            if offered is not None
            else translate.slot_from_request(
                organization,
                native_service,
                schedule_id=inp.schedule_id,
                provider_id=inp.provider_id,
                starts_at_local=start_local,
            )
        )
        return Offer(
            service=translate.service(native_service),
            slot=slot,
            policy=translate.policy(native_service, organization),
            not_offered=None if offered is not None else not_offered,
            unpriced_fees=tuple(translate.unknown_fees(native_service)),
            validator=offered.offer_token if offered is not None else None,
        )

    def _create_body(self, request: BookingRequest, customer: Customer, name: str) -> dict[str, Any]:
        inp = request.input
        native_customer = {
            "display_name": name,
            "given_name": customer.given_name,
            "family_name": customer.family_name,
            "phone": customer.phone,
            "email": customer.email,
        }
        body: dict[str, Any] = {
            "service_id": inp.service_id,
            "location_id": inp.schedule_id,
            "provider_id": inp.provider_id,
            "date": request.date,
            "time": request.time,
            "customer": {key: value for key, value in native_customer.items() if value is not None},
            "metadata": {
                "mandate_id": _metadata_value(inp.mandate.id or ""),
                "osbp_receipt_id": _metadata_value(request.receipt_id),
            },
        }
        if inp.verification_code is not None:
            body["verification_code"] = inp.verification_code
        return body
