"""The platform hooks: arm outcomes, observe create requests, set native statuses, reprice a service (all
optional).

A black-box battery over MCP cannot see the platform behind the server, so a fixture may come with up to
six test-only HTTP hooks on the platform (documented in docs/conformance.md):

- the scenario URL: `POST <scenario-url>` with JSON `{"organization_id": "<fixture org>", "outcome":
  "slot_taken" | "rate_limited"}`; any 2xx answer means the outcome is armed and the platform's next
  appointment create for that organization consumes it. The battery arms right before the approved retry,
  the first call that reaches the platform's create. The same URL takes `"outcome": "unreachable"`: any
  2xx means the organization's platform API cannot be reached until a later `"outcome": "reachable"`
  (which the battery always sends afterwards, whatever the server did). `"outcome": "lost_response"`: any
  2xx means each later appointment create of the organization is applied but its answer never arrives
  (the connection drops), until `"reachable"`; `"outcome": "slow"`: the organization's next appointment
  create is served only after about two seconds (so copies of it sent at once contend for its key).
- the stats URL: `GET <stats-url>` answers a JSON object whose integer `create_requests` counts the
  appointment-create requests the platform has received for the fixture organization, and, optionally,
  whose integer `appointments` counts the appointments it holds (created, whatever their status).
- the status URL: `POST <status-url>` with JSON `{"organization_id", "booking_id", "status": "<native>"}`;
  any 2xx answer means the booking now has that native status on the platform.
- the catalog URL: `POST <catalog-url>` with JSON `{"organization_id", "service_id"}` plus one of
  `"price_amount"`, `"cancellation_fee"`, `"no_show_fee"` (a decimal in the currency's major unit with its
  ISO 4217 decimals, "123.45" for USD) or `"cancellation_window_minutes"` (an integer); any 2xx answer
  means the service now has that value on the platform, for every later read and create.
- the provider and location URLs: `POST <url>` with JSON `{"organization_id", "provider_id" | "location_id",
  "name"}`; any 2xx answer means every later read and create shows that provider's or schedule's new name.

Each function answers the value or None on success, else a one-line reason (never raises).
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any, Literal

import anyio
import httpx2

from osbp.conformance.wire import RATE_LIMIT_PATIENCE, retry_delay, tls_context

__all__ = [
    "Outcome",
    "Reachability",
    "ScenarioOutcome",
    "appointments",
    "arm",
    "change_service",
    "create_requests",
    "rename",
    "set_native_status",
    "set_price",
    "set_reachability",
    "stats",
]

Outcome = Literal["slot_taken", "rate_limited"]
#: Every outcome the battery arms: the failures above, a lost answer and a slow create.
ScenarioOutcome = Literal["slot_taken", "rate_limited", "lost_response", "slow"]
Reachability = Literal["unreachable", "reachable"]


async def _request(
    method: str, url: str, name: str, *, call_timeout: float, body: Any = None
) -> httpx2.Response | str:
    # trust_env=False: the hooks are test-only endpoints, normally on loopback, and a proxy picked up from
    # the environment must not intercept them.
    waited = 0.0
    try:
        async with httpx2.AsyncClient(timeout=call_timeout, trust_env=False, verify=tls_context()) as client:
            for attempt in itertools.count():
                response = await client.request(method, url, json=body)
                # The hooks share the platform's rate limit: an HTTP 429 is waited out per Retry-After.
                if response.status_code != 429:
                    return response
                delay = _retry_after(response.headers.get("retry-after"), attempt)
                if waited + delay > RATE_LIMIT_PATIENCE:
                    return response
                await anyio.sleep(delay)
                waited += delay
    except httpx2.HTTPError as exc:
        return f"could not reach the {name}: {type(exc).__name__}: {exc}"
    raise AssertionError("unreachable")  # pragma: no cover - itertools.count() never ends


def _retry_after(header: str | None, attempt: int) -> float:
    """Retry-After in delay-seconds (RFC 9110), else the wire's backoff for `attempt`."""
    try:
        return max(float(header), 0.1) if header is not None else retry_delay("", attempt)
    except ValueError:
        return retry_delay("", attempt)


async def _post(
    url: str, name: str, body: Mapping[str, str | int], *, doing: str, call_timeout: float
) -> str | None:
    """POST `body` to a hook; None on any 2xx, else why not."""
    response = await _request("POST", url, name, call_timeout=call_timeout, body=body)
    if isinstance(response, str):
        return response
    if not 200 <= response.status_code < 300:
        return f"the {name} answered HTTP {response.status_code} when {doing}"
    return None


async def arm(url: str, organization_id: str, outcome: ScenarioOutcome, *, call_timeout: float) -> str | None:
    """Arm `outcome`; None when armed, else why not."""
    body = {"organization_id": organization_id, "outcome": outcome}
    return await _post(url, "scenario URL", body, doing=f"arming {outcome}", call_timeout=call_timeout)


async def set_reachability(
    url: str, organization_id: str, state: Reachability, *, call_timeout: float
) -> str | None:
    """Make the organization's platform `state` (through the scenario URL); None when done, else why not."""
    body = {"organization_id": organization_id, "outcome": state}
    doing = f"making the platform {state}"
    return await _post(url, "scenario URL", body, doing=doing, call_timeout=call_timeout)


async def stats(url: str, *, call_timeout: float) -> dict[str, Any] | str:
    """The stats URL's JSON object, else why it could not be read."""
    response = await _request("GET", url, "stats URL", call_timeout=call_timeout)
    if isinstance(response, str):
        return response
    if response.status_code != 200:
        return f"the stats URL answered HTTP {response.status_code}"
    try:
        stats = response.json()
    except ValueError:
        stats = None
    return stats if isinstance(stats, dict) else "the stats URL did not answer a JSON object"


async def create_requests(url: str, *, call_timeout: float) -> int | str:
    """The platform's create-request count for the fixture organization, else why it could not be read."""
    read = await stats(url, call_timeout=call_timeout)
    if isinstance(read, str):
        return read
    count = read.get("create_requests")
    if type(count) is not int:
        return "the stats URL did not answer a JSON object with an integer create_requests"
    return count


async def appointments(url: str, *, call_timeout: float) -> int | str | None:
    """The platform's appointment count (the optional `appointments`; None when the stats omit it), else
    why it could not be read."""
    read = await stats(url, call_timeout=call_timeout)
    if isinstance(read, str):
        return read
    count = read.get("appointments")
    if count is not None and type(count) is not int:
        return "the stats URL answered a non-integer appointments"
    return count


async def set_native_status(
    url: str, organization_id: str, booking_id: str, status: str, *, call_timeout: float
) -> str | None:
    """Give the booking the native `status`; None when set, else why not."""
    body = {"organization_id": organization_id, "booking_id": booking_id, "status": status}
    return await _post(url, "status URL", body, doing=f"setting {status!r}", call_timeout=call_timeout)


async def set_price(
    url: str, organization_id: str, service_id: str, price_amount: str, *, call_timeout: float
) -> str | None:
    """Give the service the price `price_amount` (major units, e.g. "123.45"); None when set, else why not."""
    body = {"organization_id": organization_id, "service_id": service_id, "price_amount": price_amount}
    return await _post(url, "catalog URL", body, doing=f"repricing {service_id}", call_timeout=call_timeout)


async def change_service(
    url: str, organization_id: str, service_id: str, field: str, value: str | int, *, call_timeout: float
) -> str | None:
    """Give the service's `field` (a price or fee in major units, or the window in minutes) `value`."""
    body: dict[str, str | int] = {"organization_id": organization_id, "service_id": service_id, field: value}
    return await _post(url, "catalog URL", body, doing=f"changing {field}", call_timeout=call_timeout)


async def rename(
    url: str, organization_id: str, kind: str, entity_id: str, name: str, *, call_timeout: float
) -> str | None:
    """Rename the `kind` ("provider" or "location") `entity_id` to `name`; None when renamed, else why not."""
    body: dict[str, str | int] = {"organization_id": organization_id, f"{kind}_id": entity_id, "name": name}
    return await _post(url, f"{kind} URL", body, doing=f"renaming {entity_id}", call_timeout=call_timeout)
