"""The platform port: what an adapter implements so the protocol core can run booking.create for it.

An OSBP adapter for a platform implements :class:`PlatformAdapter`: the six read and verification methods
of the spec's adapter contract, plus two booking methods that only *translate*:

* :meth:`PlatformAdapter.resolve_booking` gathers the facts of one requested booking from the platform
  (service, slot, policy, and whether the platform still offers that exact slot) as an :class:`Offer`;
* :meth:`PlatformAdapter.place_booking` sends the native appointment create and translates the
  appointment the platform made into a :class:`~osbp.protocol.models.Booking`.

The protocol core (:class:`~osbp.protocol.core.OsbpCore`, through :mod:`osbp.protocol.booking`) owns
every rule around them: mandate validation in the spec's order, the approval gate, idempotency, the
receipt and the booking snapshot. An adapter never validates a mandate and never sees an unapproved
create: ``place_booking`` is called only after every check passed and the user approved the summary
built from the :class:`Offer`.

Guarantees each booking method must give (docs/adapter.md explains them with a worked example):

* both return a Problem value for every expected failure (platform down → ``upstream_unavailable``,
  throttled → ``rate_limited``, an unknown id → a not-found code) and raise only for bugs;
* ``resolve_booking`` makes no platform write and reports what the platform says *now*;
* ``place_booking`` is idempotent per :attr:`BookingRequest.idempotency_key`: calling it again with the
  same key, after any outcome (an answer lost on the way back included), must never create a second
  appointment; send the platform's own idempotency key derived from it where the platform has one;
* ``place_booking`` answers a code in :data:`OUTCOME_UNKNOWN` (``upstream_unavailable`` for no answer or a
  broken connection, ``internal_adapter_error``, ``untranslatable_platform_data`` for an answer it cannot
  read) whenever the platform may have created the appointment; any other Problem promises that it did
  not. The core resumes an unknown outcome by calling ``place_booking`` again with the same request;
* ``place_booking`` passes ``verification_code`` through to the platform untouched and never stores or
  logs it; a platform that wants verification answers ``requires_verification``.

Validators (optional). A platform that can make a create conditional on the facts of an offer (an ETag,
an offer or revision token checked inside its create transaction) lets the adapter put that validator on
:attr:`Offer.validator`. The core then keeps the offer the user approved with the approval (bound to the
approval token's hash) and, on the approved retry, places it without resolving again: the checks that
depend on the clock (the mandate's expiry and window) still run on the stored offer, and
:attr:`BookingRequest.validator` carries the validator to ``place_booking``, which must send it so the
platform refuses the create if any fact it covers changed. That refusal is ``place_booking``'s
:data:`OFFER_CHANGED` Problem (it promises no appointment was made); the core then resolves afresh and
challenges the user again if the summary changed, so nothing is ever booked at facts the user did not
approve. An adapter without validators leaves both ``None``: every create resolves afresh, as before.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from osbp.protocol.contract import PlatformTools
from osbp.protocol.idempotency import IDEMPOTENCY_IN_PROGRESS
from osbp.protocol.models import (
    Booking,
    BookingCreateInput,
    Policy,
    Problem,
    Service,
    Slot,
)
from osbp.protocol.problems import UNTRANSLATABLE_PLATFORM_DATA, UPSTREAM_UNAVAILABLE, ProblemCode

__all__ = [
    "OFFER_CHANGED",
    "OUTCOME_UNKNOWN",
    "BookingRequest",
    "Offer",
    "PlatformAdapter",
    "offer_from_json",
    "offer_to_json",
    "receipt_id",
]

#: ``place_booking``'s answer when the platform refused the create because a fact the offer's validator
#: covers changed (no appointment was made). Port-internal: the core resolves again, never returns it.
OFFER_CHANGED = "offer_changed"

#: ``place_booking`` Problems after which the platform may still have created the appointment.
OUTCOME_UNKNOWN = frozenset(
    {
        UPSTREAM_UNAVAILABLE,
        UNTRANSLATABLE_PLATFORM_DATA,
        ProblemCode.INTERNAL_ADAPTER_ERROR,
        IDEMPOTENCY_IN_PROGRESS,
    }
)


def receipt_id(idempotency_key: str) -> str:
    """The OSBP receipt id of one logical booking attempt."""
    return f"receipt_{idempotency_key}"


@dataclass(frozen=True, slots=True)
class BookingRequest:
    """One booking.create as the core hands it to the port: the input and its merchant-local start."""

    input: BookingCreateInput
    #: ``date`` + ``time`` as one merchant wall-clock string (``2026-05-05T13:00:00``), already checked.
    starts_at_local: str
    #: The approved offer's :attr:`Offer.validator`: ``place_booking`` sends it so the platform refuses
    #: the create (:data:`OFFER_CHANGED`) if the facts moved. ``None``: an unconditional create.
    validator: str | None = None
    #: The key of this logical create at the platform when it is not the OSBP key: a remote subject's
    #: (:func:`osbp.protocol.principal.platform_key`), so two subjects' attempts under one OSBP key are
    #: two creates there. ``None``: the OSBP key (stdio, and attempts placed before subjects were scoped).
    platform_key: str | None = None

    @property
    def date(self) -> str:
        """The merchant-local date ``YYYY-MM-DD``."""
        return self.starts_at_local[:10]

    @property
    def time(self) -> str:
        """The merchant-local time ``HH:MM``."""
        return self.starts_at_local[11:16]

    @property
    def idempotency_key(self) -> str:
        """The key ``place_booking`` must be idempotent per (derive the platform's own key from it).

        The OSBP idempotency key, or, for a remote subject, :attr:`platform_key`: a key derived from it
        and the subject. The receipt id stays the OSBP key's (:attr:`receipt_id`).
        """
        return self.platform_key or self.input.idempotency_key

    @property
    def receipt_id(self) -> str:
        """The receipt id this attempt settles under (an adapter may record it on the platform)."""
        return receipt_id(self.input.idempotency_key)


@dataclass(frozen=True, slots=True)
class Offer:
    """What the platform says, right now, about one requested booking.

    ``service`` is ``None`` only when the platform does not know the requested service; then ``slot`` and
    ``policy`` are ``None`` too and ``not_offered`` says so (e.g. ``service_not_found``). Otherwise
    ``slot`` is the requested slot as the platform describes it (from its availability when offered, else
    built from the catalog so the mandate's scope and window can still be checked) and ``policy`` the
    service's policy with the organization block.
    """

    service: Service | None
    slot: Slot | None
    policy: Policy | None
    #: ``None`` when the platform offers exactly this slot now; else why not (``slot_taken``, unknown id).
    not_offered: Problem | None = None
    #: Fees the platform says it charges without saying how much ("cancellation fee", "no-show fee").
    unpriced_fees: tuple[str, ...] = ()
    #: The platform's opaque validator over these facts (see the module docstring), when it has one.
    validator: str | None = None


def offer_to_json(offer: Offer) -> str:
    """A bookable offer (service, slot and policy known) as the JSON kept with its approval."""
    if offer.service is None or offer.slot is None or offer.policy is None:
        raise ValueError("only an offer with its service, slot and policy is kept")
    return json.dumps(
        {
            # Each model as its own JSON text, every field kept: read back it is equal to the original.
            "service": offer.service.model_dump_json(),
            "slot": offer.slot.model_dump_json(),
            "policy": offer.policy.model_dump_json(),
            "unpriced_fees": list(offer.unpriced_fees),
            "validator": offer.validator,
        },
        separators=(",", ":"),
        sort_keys=True,
    )


def offer_from_json(text: str) -> Offer:
    """The offer :func:`offer_to_json` kept (offered: ``not_offered`` is ``None``)."""
    kept = json.loads(text)
    return Offer(
        service=Service.model_validate_json(kept["service"]),
        slot=Slot.model_validate_json(kept["slot"]),
        policy=Policy.model_validate_json(kept["policy"]),
        unpriced_fees=tuple(kept["unpriced_fees"]),
        validator=kept["validator"],
    )


@runtime_checkable
class PlatformAdapter(PlatformTools, Protocol):
    """What an integrator implements for one platform (the core adds every OSBP rule around it).

    The tools of :class:`~osbp.protocol.contract.PlatformTools` (booking.status is current platform state:
    the core adds the snapshot fallback), plus the organization and booking.create's two port methods.
    """

    @property
    def organization_id(self) -> str:
        """The one organization this adapter serves (the mandate's organization scope)."""
        ...

    async def resolve_booking(self, request: BookingRequest) -> Offer | Problem:
        """The platform's current facts about ``request``; no platform write."""
        ...

    async def place_booking(self, request: BookingRequest, customer_name: str) -> Booking | Problem:
        """Create the appointment (idempotent per ``request.idempotency_key``) and translate it."""
        ...
