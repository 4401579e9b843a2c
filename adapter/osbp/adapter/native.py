"""Bookwell's native wire shapes, as the adapter reads them (the platform's dialect, not OSBP's).

These models are the adapter's own reading of the platform's published API reference, never the
platform's code: the platform is a foreign system reached only over HTTP. They ignore unknown members
(a platform may add fields within one version) but require every member the translation depends on, so
a response the adapter cannot read is an error at the boundary rather than a silently wrong result.
"""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict

__all__ = [
    "NativeAddress",
    "NativeAppointment",
    "NativeAvailability",
    "NativeCancellation",
    "NativeCoordinates",
    "NativeFieldError",
    "NativeHours",
    "NativeLocation",
    "NativeModel",
    "NativeOption",
    "NativeOrganization",
    "NativePayment",
    "NativePolicy",
    "NativePrice",
    "NativeProblem",
    "NativeProvider",
    "NativeService",
    "NativeServiceList",
    "NativeSlot",
    "NativeVerificationSent",
]


class NativeModel(BaseModel):
    """Base of the native shapes: unknown members ignored, models immutable."""

    model_config = ConfigDict(extra="ignore", frozen=True)


class NativePrice(NativeModel):
    """``{"kind", "amount" (major-unit decimal string or null), "currency"}``."""

    kind: str
    amount: str | None = None
    currency: str


class NativeHours(NativeModel):
    """One opening period; ``weekday`` 0 = Sunday … 6 = Saturday."""

    weekday: int
    open: str
    close: str


class NativeAddress(NativeModel):
    """A postal address of an in-person location."""

    line1: str
    line2: str | None = None
    city: str | None = None
    region: str | None = None
    postal_code: str | None = None
    country: str | None = None


class NativeCoordinates(NativeModel):
    """WGS 84 coordinates of an in-person location."""

    latitude: float
    longitude: float


class NativeLocation(NativeModel):
    """A location (OSBP's schedule); online locations have no address or coordinates."""

    id: str
    name: str
    kind: str
    time_zone: str
    address: NativeAddress | None = None
    coordinates: NativeCoordinates | None = None
    hours: list[NativeHours] = []


class NativeProvider(NativeModel):
    """A provider with the locations and services they cover."""

    id: str
    name: str
    image_url: str | None = None
    location_ids: list[str] = []
    service_ids: list[str] = []


class NativeOrganization(NativeModel):
    """``GET /api/organizations/{org}``: the organization with its locations and providers."""

    id: str
    name: str
    time_zone: str
    currency: str
    country: str
    locations: list[NativeLocation] = []
    providers: list[NativeProvider] = []


class NativeCancellation(NativeModel):
    """The cancellation part of a service policy."""

    allowed: bool
    window_minutes: int | None = None
    fee: NativePrice | None = None
    note: str | None = None


class NativePayment(NativeModel):
    """The payment part of a service policy."""

    requirement: str
    deposit: NativePrice | None = None


class NativePolicy(NativeModel):
    """A service's booking policy."""

    cancellation: NativeCancellation
    late_grace_minutes: int | None = None
    no_show_fee: NativePrice | None = None
    payment: NativePayment
    verification: str


class NativeOption(NativeModel):
    """A display-only add-on of a service."""

    id: str
    name: str
    duration_minutes: int | None = None
    price: NativePrice | None = None


class NativeService(NativeModel):
    """``GET …/services/{service_id}``: one service with its policy."""

    id: str
    organization_id: str
    name: str
    description: str | None = None
    duration_minutes: int
    price: NativePrice
    requires_consultation: bool
    location_ids: list[str] = []
    options: list[NativeOption] = []
    policy: NativePolicy


class NativeServiceList(NativeModel):
    """``GET …/services``."""

    services: list[NativeService]


class NativeSlot(NativeModel):
    """One computed opening; times are merchant wall-clock in ``time_zone``."""

    location_id: str
    location_name: str
    time_zone: str
    provider_id: str
    provider_name: str
    provider_image_url: str | None = None
    service_id: str
    date: str
    time: str
    end_date: str
    end_time: str
    duration_minutes: int
    price: NativePrice
    #: The offer's validator, sent back as ``If-Match`` on the create (absent on older platform versions).
    offer_token: str | None = None


class NativeAvailability(NativeModel):
    """``GET …/availability``."""

    organization_id: str
    service_id: str
    date: str
    slots: list[NativeSlot]


class NativeAppointment(NativeModel):
    """An appointment (create response and direct read)."""

    id: str
    organization_id: str
    status: str
    service_id: str
    service_name: str | None = None
    location_id: str
    provider_id: str
    date: str
    time: str
    end_date: str
    end_time: str
    time_zone: str
    duration_minutes: int
    metadata: dict[str, Any] | None = None


class NativeVerificationSent(NativeModel):
    """``POST …/verifications`` → 202."""

    id: str
    purpose: str
    channel: str


class NativeFieldError(NativeModel):
    """One entry of an ``invalid_request`` problem's ``errors``."""

    field: str


class NativeProblem(NativeModel):
    """An RFC 9457 problem body; the adapter branches on ``code`` and never forwards ``detail``."""

    code: str | None = None
    errors: list[NativeFieldError] = []
    status: int | None = None
    reason: str | None = None
    field: str | None = None
    channel: str | None = None
    #: ``endpoint_retired``: where the retired endpoint's successor is described (a URL).
    successor: str | None = None
