"""OSBP v0.1.0 wire models: every protocol object, the eight tool inputs and the result envelope.

Field names are the spec's wire names exactly. Two promises hold for every model here:

* **Absent optionals are omitted, never ``null``.** Serialize with :meth:`OSBPModel.to_wire` (a JSON-ready
  ``dict``) or :meth:`OSBPModel.to_wire_json` (compact JSON text); both use ``exclude_none=True``.
  Plain ``model_dump()`` keeps pydantic's default and would emit ``None``: do not put it on the wire.
* **Tool inputs are strict.** Unknown fields are rejected, nothing is coerced (``"9500"`` is not an
  integer, ``"true"`` is not a boolean), an explicit ``null`` anywhere in a tool input is rejected
  (omit the field instead), and so is a string with a lone surrogate (not Unicode text, so not I-JSON,
  RFC 7493 §2.1, and not hashable as RFC 8785 canonical JSON).
* **Amounts are JSON-safe integers.** ``amount_minor`` is at most :data:`AMOUNT_MINOR_MAX` (2**53 - 1, the
  largest integer I-JSON and RFC 8785 represent exactly), in the models and in the published schemas.

Mandate fields whose defects the validator must answer with a Problem code (a missing ``id``, a naked
``expires_at``, an offset on a wall-clock field) are plain, optional strings here on purpose: the schema
checks only types and unknown fields, and :func:`osbp.protocol.mandate.validate_mandate` answers
``invalid_mandate``. Likewise ``BookingCreateInput.provider_id`` is required but may be empty (the
validator answers ``provider_unknown``), and ``date``/``time`` are plain strings checked by the validator.
"""

from __future__ import annotations

import re
from typing import Any, Generic, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError

__all__ = [
    "AMOUNT_MINOR_MAX",
    "FIND_LIMIT_MAX",
    "TOOL_NAMES",
    "Approval",
    "AuditEvent",
    "AvailabilityFindInput",
    "Booking",
    "BookingCreateInput",
    "BookingMandate",
    "BookingStatus",
    "BookingStatusInput",
    "Customer",
    "FailureEnvelope",
    "HandoffRequestInput",
    "HandoffResult",
    "Money",
    "MoneyType",
    "OSBPModel",
    "OperatingHours",
    "PaymentRequirement",
    "PlatformIdentity",
    "Policy",
    "PolicyExplainInput",
    "PolicyOrganization",
    "Problem",
    "Receipt",
    "RuntimeDiagnostics",
    "Service",
    "ServiceDescribeInput",
    "ServiceOption",
    "Slot",
    "SuccessEnvelope",
    "ToolInput",
    "ToolName",
    "UpstreamMeta",
    "VerificationChallenge",
    "VerificationMethod",
    "VerificationSendInput",
    "VerificationVerifyInput",
]

ToolName = Literal[
    "service.describe",
    "availability.find",
    "policy.explain",
    "verification.send",
    "verification.verify",
    "booking.create",
    "booking.status",
    "handoff.request",
]
#: The eight protocol-level tool names, in the spec's order.
TOOL_NAMES: tuple[ToolName, ...] = (
    "service.describe",
    "availability.find",
    "policy.explain",
    "verification.send",
    "verification.verify",
    "booking.create",
    "booking.status",
    "handoff.request",
)

MoneyType = Literal["fixed", "insurance_dependent", "quote_required", "unknown"]
PaymentRequirement = Literal["none", "deposit", "full_prepay", "unknown"]
VerificationMethod = Literal["sms", "email", "none", "unknown"]
BookingStatus = Literal["booked", "cancelled", "completed", "no_show", "pending", "unknown"]


class OSBPModel(BaseModel):
    """Base of every OSBP wire object: unknown fields rejected, no coercion, wire form omits absent fields."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=False)

    def to_wire(self) -> dict[str, Any]:
        """The JSON-ready wire form: absent optionals omitted, never ``null``."""
        return self.model_dump(mode="json", exclude_none=True)

    def to_wire_json(self) -> str:
        """The compact JSON text of :meth:`to_wire`."""
        return self.model_dump_json(exclude_none=True)


#: The largest ``amount_minor``: 2**53 - 1, the largest integer I-JSON (RFC 7493 §2.2) and RFC 8785 carry
#: exactly. A larger amount could not be hashed for the audit log or the idempotency payload, and no
#: price needs it (it is 90 trillion US dollars).
AMOUNT_MINOR_MAX = 2**53 - 1

#: The largest ``limit`` availability.find takes: a whole seeded day fits in one answer, if asked for.
FIND_LIMIT_MAX = 200

_SURROGATE = re.compile(r"[\ud800-\udfff]")


def _check_json_text(value: Any, path: str) -> None:
    """Reject ``null`` (absent and null differ on the OSBP wire) and strings that are not Unicode text."""
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and _SURROGATE.search(key):
                raise PydanticCustomError(
                    "lone_surrogate",
                    "a field name in {where} is not valid Unicode text (a lone surrogate)",
                    {"where": path or "the arguments"},
                )
            where = f"{path}.{key}" if path else str(key)
            if item is None:
                # A null is never silently read as absent.
                raise PydanticCustomError(
                    "null_value", "{where} is null; omit the field instead", {"where": where}
                )
            _check_json_text(item, where)
    elif isinstance(value, list):
        for index, item in enumerate(value):
            where = f"{path}[{index}]"
            if item is None:
                raise PydanticCustomError("null_value", "{where} is null", {"where": where})
            _check_json_text(item, where)
    elif isinstance(value, str) and _SURROGATE.search(value):
        raise PydanticCustomError(
            "lone_surrogate", "{where} is not valid Unicode text (a lone surrogate)", {"where": path}
        )


class ToolInput(OSBPModel):
    """Base of the eight tool inputs: strict, closed, ``null`` nowhere, every string Unicode text."""

    @model_validator(mode="before")
    @classmethod
    def _json_text_only(cls, data: Any) -> Any:
        _check_json_text(data, "")
        return data


# --- Core objects -----------------------------------------------------------------------------------------


class Money(OSBPModel):
    """A money-bearing value: `amount_minor` in the currency's ISO 4217 minor unit; `display` is a hint."""

    amount_minor: int | None = Field(
        default=None,
        ge=0,
        le=AMOUNT_MINOR_MAX,
        description="Integer amount in the currency's ISO 4217 minor unit, at most 2**53 - 1.",
    )
    currency: str = Field(pattern=r"^[A-Z]{3}$")
    type: MoneyType | None = None
    display: str | None = None


_WALL_CLOCK_HELP = 'Merchant-local wall-clock "YYYY-MM-DDTHH:MM:SS" with no Z and no offset.'


class BookingMandate(OSBPModel):
    """The user's scoped authorization; every field is checked by ``validate_mandate``, not by the schema."""

    id: str | None = Field(default=None, description="Mandate id (required by the validator).")
    expires_at: str | None = Field(
        default=None,
        description="RFC 3339 instant with Z or an explicit UTC offset, e.g. 2026-05-01T23:59:59-07:00.",
    )
    allowed_actions: list[ToolName] | None = Field(
        default=None, description='Dotted tool names this mandate allows; must include "booking.create".'
    )
    organization_id: str | None = Field(
        default=None, description="The merchant's organization id (policy.explain)."
    )
    service_ids: list[str] | None = Field(
        default=None, description="Allowed service ids; omit to allow any, an empty list allows none."
    )
    provider_ids: list[str] | None = Field(
        default=None, description="Allowed provider ids; omit to allow any, an empty list allows none."
    )
    schedule_ids: list[str] | None = Field(
        default=None, description="Allowed schedule ids; omit to allow any, an empty list allows none."
    )
    earliest_start: str | None = Field(default=None, description="Window start. " + _WALL_CLOCK_HELP)
    latest_end: str | None = Field(default=None, description="Window end. " + _WALL_CLOCK_HELP)
    max_price: Money | None = Field(default=None, description="Price cap (fixed amount_minor and currency).")
    allow_policy_fee: bool | None = Field(
        default=None, description="True allows a required deposit or prepayment (capped by max_extra_fee)."
    )
    max_extra_fee: Money | None = Field(default=None, description="Cap on a required deposit or prepayment.")


class ServiceOption(OSBPModel):
    """A display-only variant or add-on of a service (v0.1.0 booking.create has no option selector)."""

    id: str
    name: str
    description: str | None = None
    duration: str | None = None
    price: Money | None = None


class Service(OSBPModel):
    """The thing being booked."""

    id: str
    name: str
    description: str | None = None
    duration: str | None = None
    price: Money | None = None
    requires_consultation: bool = False
    options: list[ServiceOption] | None = None


class OperatingHours(OSBPModel):
    """Typical opening hours: ISO weekday (1 = Monday … 7 = Sunday) and wall-clock "HH:MM" open/close."""

    day: int = Field(ge=1, le=7)
    open: str
    close: str


class Slot(OSBPModel):
    """One bookable opening: create-ready ids, the start as instant and as merchant wall-clock, the price."""

    id: str
    organization_id: str
    organization_name: str | None = None
    schedule_id: str
    schedule_name: str | None = None
    schedule_address: str | None = None
    schedule_latitude: float | None = None
    schedule_longitude: float | None = None
    schedule_hours: list[OperatingHours] | None = None
    schedule_timezone: str | None = None
    provider_id: str | None = None
    provider_name: str | None = None
    provider_image_url: str | None = None
    service_id: str
    starts_at: str | None = None
    ends_at: str | None = None
    starts_at_local: str
    ends_at_local: str
    price: Money | None = None


class PolicyOrganization(OSBPModel):
    """The merchant block of a Policy: canonical id, timezone, currency and ISO 3166-1 alpha-2 country."""

    id: str
    name: str | None = None
    timezone: str | None = None
    currency: str | None = None
    country: str | None = None


class Policy(OSBPModel):
    """Payment and cancellation facts read back to the user before booking.create."""

    service_id: str | None = None
    cancellation_enabled: bool | None = None
    cancellation_window: str | None = None
    cancellation_note: str | None = None
    late_grace: str | None = None
    cancellation_fee: Money | None = None
    no_show_fee: Money | None = None
    payment_requirement: PaymentRequirement = "unknown"
    deposit: Money | None = None
    verification_method: VerificationMethod | None = None
    organization: PolicyOrganization | None = None


class Customer(OSBPModel):
    """The person the appointment is for; contact formats are the platform's to enforce."""

    id: str | None = None
    display_name: str | None = None
    given_name: str | None = None
    family_name: str | None = None
    phone: str | None = None
    email: str | None = None


class VerificationChallenge(OSBPModel):
    """The result of verification.send (``sent``) or verification.verify (``verified``)."""

    sent: bool | None = None
    verified: bool | None = None
    method: VerificationMethod
    purpose: str


class Booking(OSBPModel):
    """An appointment as the platform (the system of record) reports it."""

    id: str
    status: BookingStatus
    organization_id: str | None = None
    service_id: str | None = None
    schedule_id: str | None = None
    provider_id: str | None = None
    starts_at: str | None = None
    ends_at: str | None = None
    starts_at_local: str | None = None
    ends_at_local: str | None = None
    schedule_timezone: str | None = None


class Receipt(OSBPModel):
    """OSBP's proof of creation: receipt id, the platform booking id and a human-readable sentence."""

    id: str
    booking_id: str
    text: str


class Problem(OSBPModel):
    """An expected failure: ``code`` is the machine contract, ``message`` explanatory English prose."""

    code: str
    message: str
    retryable: bool = False


class RuntimeDiagnostics(OSBPModel):
    """``osbp_runtime``: how a response was produced (never durable booking truth)."""

    idempotency: Literal["local_cache_replay"] | None = None
    message: str | None = None


class Approval(OSBPModel):
    """The final-confirmation proof on a booking.create retry: ``{confirmed: true, token}``."""

    confirmed: Literal[True]
    token: str


class HandoffResult(OSBPModel):
    """handoff.request's structured ``requires_human`` answer (nothing is sent to the merchant)."""

    status: Literal["requires_human"] = "requires_human"
    reason: str
    message: str
    mandate_id: str | None = None


class PlatformIdentity(OSBPModel):
    """The adapter's static platform identity: vendor slug and exact native API pin."""

    vendor: str
    api_version: str


class UpstreamMeta(OSBPModel):
    """Operator-observability metadata of one upstream response (no customer data by construction)."""

    call: str
    status: int
    server: str | None = None
    request_id: str | None = None
    api_version: str | None = None
    deprecation: str | None = None
    sunset: str | None = None
    ratelimit: dict[str, str] | None = None


class AuditEvent(OSBPModel):
    """One local audit record of a schema-valid tool call (redacted snapshots plus their hashes)."""

    id: str
    mandate_id: str | None = None
    tool_name: ToolName
    created_at: str
    source: str
    input: dict[str, Any]
    result: dict[str, Any]
    input_hash: str
    result_hash: str
    platform: PlatformIdentity | None = None
    upstream: UpstreamMeta | None = None


# --- Tool inputs ------------------------------------------------------------------------------------------


class ServiceDescribeInput(ToolInput):
    """service.describe: ``service_id`` optional (the adapter may use its configured default)."""

    service_id: str | None = None


class AvailabilityFindInput(ToolInput):
    """availability.find: a merchant-local ``date``; service, schedule and provider optional."""

    service_id: str | None = Field(default=None, description="Omit to use the configured default service.")
    schedule_id: str | None = Field(default=None, description="Omit to use the configured default schedule.")
    date: str = Field(description='Merchant-local date "YYYY-MM-DD".')
    provider_id: str | None = None
    earliest_start: str | None = Field(
        default=None,
        description="Only slots starting at or after this merchant-local wall-clock value "
        '("YYYY-MM-DDTHH:MM:SS", no offset), as the mandate\'s earliest_start. To page, pass the '
        'earliest_start="..." a partial answer\'s osbp_runtime.message names. An OSBP extension '
        "beyond v0.1.0.",
    )
    limit: int | None = Field(
        default=None,
        ge=1,
        le=FIND_LIMIT_MAX,
        description="Slots per answer (a page also keeps the slots sharing its last start time); omit "
        "for every slot of the day. An OSBP extension beyond v0.1.0.",
    )


class PolicyExplainInput(ToolInput):
    """policy.explain: ``service_id`` optional."""

    service_id: str | None = None


class VerificationSendInput(ToolInput):
    """verification.send: the customer contact and ``purpose`` (``booking:{organization_id}``)."""

    customer: Customer | None = Field(
        default=None, description="Phone (E.164) and/or email to send the code to."
    )
    purpose: str | None = Field(default=None, description='"booking:{organization_id}".')


class VerificationVerifyInput(ToolInput):
    """verification.verify: as verification.send, plus the raw ``code``."""

    customer: Customer | None = None
    purpose: str | None = Field(default=None, description='"booking:{organization_id}".')
    code: str = Field(description="The code the customer received, as typed.")


class BookingCreateInput(ToolInput):
    """booking.create: mandate, idempotency key, create-ready ids and merchant-local date/time."""

    mandate: BookingMandate
    idempotency_key: str = Field(
        min_length=1, description="Fresh per logical booking attempt; reuse it only to retry that attempt."
    )
    service_id: str = Field(description="The selected slot's service_id.")
    schedule_id: str = Field(description="The selected slot's schedule_id.")
    provider_id: str = Field(description="The selected slot's provider_id.")
    date: str = Field(description='Merchant-local date "YYYY-MM-DD" from the slot\'s starts_at_local.')
    time: str = Field(description='Merchant-local time "HH:MM" from the slot\'s starts_at_local (no offset).')
    customer: Customer | None = None
    approval: Approval | None = Field(
        default=None, description="Omit on the first call; add after the user confirmed the returned summary."
    )
    verification_code: str | None = Field(
        default=None, description="Only on the retry after requires_verification: the customer's raw code."
    )


class BookingStatusInput(ToolInput):
    """booking.status: the receipt's ``booking_id``; ``customer`` lets an adapter match by contact."""

    booking_id: str | None = Field(
        default=None, description="The booking_id from the booking.create receipt."
    )
    customer: Customer | None = None


class HandoffRequestInput(ToolInput):
    """handoff.request: opaque ``reason`` and non-identifying ``message`` (no names, contacts, addresses)."""

    reason: str = Field(description="A Problem code or short opaque reason; no names, contacts or addresses.")
    message: str = Field(
        description="Non-identifying status text for the user; no names, contacts or addresses."
    )
    mandate_id: str | None = None


# --- Result envelope --------------------------------------------------------------------------------------

T = TypeVar("T")

_AUDIT_ID_HELP = (
    "The id of this call's audit record. Absent only when no record was written: a call rejected before "
    "any handler ran (invalid_input, unknown_tool), or an audit log that failed to append."
)


class SuccessEnvelope(OSBPModel, Generic[T]):
    """``{ok: true, value, audit_event_id, osbp_runtime?}``."""

    ok: Literal[True] = True
    value: T
    audit_event_id: str | None = Field(default=None, description=_AUDIT_ID_HELP)
    osbp_runtime: RuntimeDiagnostics | None = None


class FailureEnvelope(OSBPModel):
    """``{ok: false, problem, audit_event_id, osbp_runtime?}``."""

    ok: Literal[False] = False
    problem: Problem
    audit_event_id: str | None = Field(default=None, description=_AUDIT_ID_HELP)
    osbp_runtime: RuntimeDiagnostics | None = None
