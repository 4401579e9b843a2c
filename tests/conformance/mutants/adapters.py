"""Mutants made through the public extension points: an ``--adapter`` plug-in that lies, and an upstream
transport that rewrites what the platform says (or what the adapter sends it).

``osbp mcp --adapter tests.conformance.mutants.adapters:build`` with ``OSBP_TEST_MUTANT=NAME`` builds the
reference platform adapter (optionally over a rewriting transport) and wraps it in a :class:`LyingAdapter`
that changes one thing. The server's composition root wraps the result in the protocol core as for any
plug-in, so every core rule still runs: the defect is the adapter's alone.
"""

from __future__ import annotations

import datetime as dt
import json
import os
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

import httpx2
from pydantic import BaseModel

from osbp.adapter import build_platform_adapter
from osbp.adapter.upstream import LifecycleNotices
from osbp.protocol.models import Booking, Money, OperatingHours, Policy, Problem, Service
from osbp.protocol.port import BookingRequest
from osbp.protocol.problems import ExtensionCode, ProblemCode, problem
from osbp.protocol.timeutil import load_zone, parse_wall_clock
from osbp.server.settings import ServerSettings

__all__ = ["ADAPTER_MUTANTS", "MUTANT_ENV", "LyingAdapter", "build"]

#: The variable naming the mutant this plug-in builds.
MUTANT_ENV = "OSBP_TEST_MUTANT"
#: The sandbox code a careless implementation might hard-code (the conformance organization's).
_SANDBOX_CODE = "123456"

Place = Callable[[BookingRequest, str], Awaitable[Booking | Problem]]


def _map_models(value: Any, change: Callable[[BaseModel], BaseModel]) -> Any:
    """``value`` with ``change`` applied to every model inside it, innermost first."""
    if isinstance(value, list):
        return [_map_models(item, change) for item in value]
    if not isinstance(value, BaseModel):
        return value
    updates = {
        name: _map_models(field, change)
        for name, field in value
        if isinstance(field, BaseModel | list) and field
    }
    return change(value.model_copy(update=updates) if updates else value)


def _money(change: Callable[[Money], Money]) -> Callable[[BaseModel], BaseModel]:
    return lambda model: change(model) if isinstance(model, Money) else model


def _scaled(money: Money, factor: float, currency: str | None = None) -> Money:
    if money.amount_minor is None or (currency is not None and money.currency != currency):
        return money
    return money.model_copy(update={"amount_minor": int(money.amount_minor * factor)})


def _fixed_offset(hours: int) -> Callable[[BaseModel], BaseModel]:
    """Instants computed with one fixed UTC offset instead of the zone's rules (DST ignored)."""
    offset = dt.timezone(dt.timedelta(hours=hours))

    def change(model: BaseModel) -> BaseModel:
        updates = {}
        for instant, local in (("starts_at", "starts_at_local"), ("ends_at", "ends_at_local")):
            wall = parse_wall_clock(getattr(model, local, None) or "")
            if wall is not None and getattr(model, instant, None) is not None:
                updates[instant] = (
                    wall.replace(tzinfo=offset).astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
                )
        return model.model_copy(update=updates) if updates else model

    return change


def _collapsed_status(model: BaseModel) -> BaseModel:
    return model.model_copy(update={"status": "booked"}) if isinstance(model, Booking) else model


def _unknown_status_as_booked(model: BaseModel) -> BaseModel:
    if isinstance(model, Booking) and model.status == "unknown":
        return model.model_copy(update={"status": "booked"})
    return model


_DISPLAY_SIGNS = {"USD": "$", "EUR": "€", "GBP": "£", "JPY": "¥"}


def _display_divided_by_100(money: Money) -> Money:
    """Every display written as if the currency had two decimals ("¥120.00" for 12000 yen)."""
    if money.amount_minor is None or money.display is None:
        return money
    sign = _DISPLAY_SIGNS.get(money.currency, f"{money.currency} ")
    return money.model_copy(update={"display": f"{sign}{money.amount_minor / 100:,.2f}"})


def _cancellation_fee_dropped(model: BaseModel) -> BaseModel:
    return model.model_copy(update={"cancellation_fee": None}) if isinstance(model, Policy) else model


def _consultation_flag_dropped(model: BaseModel) -> BaseModel:
    return model.model_copy(update={"requires_consultation": False}) if isinstance(model, Service) else model


def _hours_shifted_one_weekday(model: BaseModel) -> BaseModel:
    if not isinstance(model, OperatingHours):
        return model
    return model.model_copy(update={"day": model.day % 7 + 1})


def _instants(resolve: Callable[[dt.datetime, dt.tzinfo], dt.datetime]) -> Callable[[BaseModel], BaseModel]:
    """Instants recomputed from the wall-clock and the schedule's zone by ``resolve`` (one wrong rule)."""

    def change(model: BaseModel) -> BaseModel:
        tz = load_zone(getattr(model, "schedule_timezone", None) or "")
        if tz is None:
            return model
        updates = {}
        for instant, local in (("starts_at", "starts_at_local"), ("ends_at", "ends_at_local")):
            wall = parse_wall_clock(getattr(model, local, None) or "")
            if wall is not None and getattr(model, instant, None) is not None:
                updates[instant] = resolve(wall, tz).astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return model.model_copy(update=updates) if updates else model

    return change


def _midnight_offset(wall: dt.datetime, tz: dt.tzinfo) -> dt.datetime:
    """The offset in force at the day's local midnight, used all day (wrong after a DST change)."""
    midnight = dt.datetime.combine(wall.date(), dt.time()).replace(tzinfo=tz)
    offset = midnight.utcoffset() or dt.timedelta()
    return wall.replace(tzinfo=dt.timezone(offset))


def _later_fold(wall: dt.datetime, tz: dt.tzinfo) -> dt.datetime:
    """A repeated wall-clock time resolved to its second (later) occurrence."""
    return wall.replace(tzinfo=tz, fold=1)


class _Rewriting(httpx2.AsyncBaseTransport):
    """The real transport with one rewrite of requests or responses; remembers the last response body."""

    def __init__(
        self,
        request: Callable[[httpx2.Request], httpx2.Request] | None = None,
        response: Callable[[httpx2.Response, bytes], httpx2.Response] | None = None,
    ) -> None:
        self._inner = httpx2.AsyncHTTPTransport()
        self._request = request
        self._response = response
        self.last_body = ""

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        """Send (rewritten) for real, then rewrite the answer."""
        if self._request is not None:
            await request.aread()
            request = self._request(request)
        response = await self._inner.handle_async_request(request)
        body = await response.aread()
        self.last_body = body.decode("utf-8", "replace")
        return self._response(response, body) if self._response is not None else response

    async def aclose(self) -> None:
        """Close the real transport."""
        await self._inner.aclose()


def _plain_headers(headers: httpx2.Headers) -> list[tuple[str, str]]:
    return [(k, v) for k, v in headers.items() if k.lower() not in ("content-length", "content-encoding")]


def _without_code(request: httpx2.Request) -> httpx2.Request:
    if request.method != "POST" or not request.url.path.endswith("/appointments"):
        return request
    body = json.loads(request.content)
    body.pop("verification_code", None)
    return httpx2.Request(request.method, request.url, headers=_plain_headers(request.headers), json=body)


def _throttle_as_outage(response: httpx2.Response, body: bytes) -> httpx2.Response:
    if response.status_code != 429:
        return response
    return httpx2.Response(
        503, headers=_plain_headers(response.headers), content=body, request=response.request
    )


@dataclass(frozen=True)
class Lie:
    """One adapter defect: a change to success values, to Problems, to placing, or to the transport."""

    values: Callable[[BaseModel], BaseModel] | None = None
    problems: Callable[[Problem, _Rewriting], Problem] | None = None
    place: Callable[[Place, BookingRequest, str], Awaitable[Booking | Problem]] | None = None
    request: Callable[[httpx2.Request], httpx2.Request] | None = None
    response: Callable[[httpx2.Response, bytes], httpx2.Response] | None = None


class LyingAdapter:
    """The reference platform adapter with one :class:`Lie` applied to what it answers."""

    def __init__(self, inner: Any, lie: Lie, transport: _Rewriting) -> None:
        self._inner = inner
        self._lie = lie
        self._transport = transport

    def __getattr__(self, name: str) -> Any:
        attribute = getattr(self._inner, name)
        if name in (
            "describe_service",
            "find_availability",
            "explain_policy",
            "get_booking",
            "send_verification",
        ):
            return self._told(attribute)
        return attribute

    def _told(self, method: Callable[[Any], Awaitable[Any]]) -> Callable[[Any], Awaitable[Any]]:
        async def told(inp: Any) -> Any:
            result = await method(inp)
            if isinstance(result, Problem):
                return self._lie.problems(result, self._transport) if self._lie.problems else result
            return _map_models(result, self._lie.values) if self._lie.values is not None else result

        return told

    async def resolve_booking(self, request: BookingRequest) -> Any:
        """The inner offer, its facts told the same way as the reads."""
        offer = await self._inner.resolve_booking(request)
        if self._lie.values is None or isinstance(offer, Problem):
            return offer
        return type(offer)(
            service=_map_models(offer.service, self._lie.values),
            slot=_map_models(offer.slot, self._lie.values),
            policy=_map_models(offer.policy, self._lie.values),
            not_offered=offer.not_offered,
            unpriced_fees=offer.unpriced_fees,
        )

    async def place_booking(self, request: BookingRequest, customer_name: str) -> Booking | Problem:
        """Place through the lie, if it has one for placing."""
        place: Place = self._inner.place_booking
        result = await (
            self._lie.place(place, request, customer_name)
            if self._lie.place
            else place(request, customer_name)
        )
        if isinstance(result, Problem) and self._lie.problems is not None:
            return self._lie.problems(result, self._transport)
        return result


def _with_code(request: BookingRequest, code: str) -> BookingRequest:
    return BookingRequest(
        request.input.model_copy(update={"verification_code": code}), request.starts_at_local
    )


async def _invent_code(place: Place, request: BookingRequest, name: str) -> Booking | Problem:
    return await place(
        request if request.input.verification_code else _with_code(request, _SANDBOX_CODE), name
    )


async def _accept_wrong_code(place: Place, request: BookingRequest, name: str) -> Booking | Problem:
    result = await place(request, name)
    if isinstance(result, Problem) and result.code == ProblemCode.VERIFICATION_FAILED:
        return await place(_with_code(request, _SANDBOX_CODE), name)
    return result


async def _slot_taken_as_outage(place: Place, request: BookingRequest, name: str) -> Booking | Problem:
    result = await place(request, name)
    if isinstance(result, Problem) and result.code == ProblemCode.SLOT_TAKEN:
        return problem(
            ExtensionCode.UPSTREAM_UNAVAILABLE,
            "The booking platform failed; try again later.",
            retryable=True,
        )
    return result


def _raw_body(found: Problem, transport: _Rewriting) -> Problem:
    return found.model_copy(update={"message": f"{found.message} Platform said: {transport.last_body}"})


#: Every adapter-side mutant by name.
ADAPTER_MUTANTS: dict[str, Lie] = {
    "adapter_price_scaled_by_100": Lie(values=_money(lambda m: _scaled(m, 100))),
    "adapter_kwd_two_decimals": Lie(values=_money(lambda m: _scaled(m, 0.1, "KWD"))),
    "adapter_status_collapsed_to_booked": Lie(values=_collapsed_status),
    "adapter_fixed_standard_offset": Lie(values=_fixed_offset(-5)),
    "adapter_fixed_daylight_offset": Lie(values=_fixed_offset(-4)),
    "adapter_slot_taken_as_outage": Lie(place=_slot_taken_as_outage),
    "adapter_problem_carries_upstream_body": Lie(problems=_raw_body),
    "adapter_verification_code_invented": Lie(place=_invent_code),
    "adapter_wrong_code_accepted": Lie(place=_accept_wrong_code),
    "transport_verification_code_dropped": Lie(request=_without_code),
    "transport_rate_limit_as_outage": Lie(response=_throttle_as_outage),
    "adapter_consultation_flag_dropped": Lie(values=_consultation_flag_dropped),
    "adapter_display_divided_by_100": Lie(values=_money(_display_divided_by_100)),
    "adapter_cancellation_fee_dropped": Lie(values=_cancellation_fee_dropped),
    "adapter_hours_shifted_one_weekday": Lie(values=_hours_shifted_one_weekday),
    "adapter_gap_midnight_offset": Lie(values=_instants(_midnight_offset)),
    "adapter_fold_later_instant": Lie(values=_instants(_later_fold)),
    "adapter_unknown_status_as_booked": Lie(values=_unknown_status_as_booked),
}


def build(settings: ServerSettings) -> LyingAdapter:
    """The adapter factory: ``--adapter tests.conformance.mutants.adapters:build``."""
    lie = ADAPTER_MUTANTS[os.environ[MUTANT_ENV]]
    transport = _Rewriting(lie.request, lie.response)
    inner = build_platform_adapter(settings.adapter, transport=transport, notices=LifecycleNotices())
    return LyingAdapter(inner, lie, transport)
