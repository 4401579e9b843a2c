"""The one place the adapter speaks HTTP: :meth:`Upstream.fetch` (the spec's ``upstreamFetch``).

Every request to the platform goes through one reused ``httpx2.AsyncClient`` (keep-alive; for a plain
``http://`` platform on the lean HTTP/1.1 transport of :mod:`osbp.adapter.http11`) and carries:

* the native version pin (``Bookwell-Version: 2026-04-01``), never relying on the platform's default;
* the self-declared caller identity: ``User-Agent: OSBP/0.1.0 osbp-bookwell-adapter/0.1.0 python/3.11``
  and ``x-osbp-source`` (not authentication; the spec's "Caller identity is self-declared");
* the platform credential when one is configured (here and nowhere else; it never enters metadata).

Every response is captured as an :class:`~osbp.protocol.models.UpstreamMeta` (``call`` without the query
string and with contact-bearing path segments redacted, status, ``Server`` verbatim, the first
``*request-id*`` header, the version echo, ``Deprecation``, ``Sunset`` and the rate-limit headers keyed
lowercase) and put, for the audit trail, in the position :func:`osbp.protocol.upstream.reserve_upstream`
took when the request was issued (so the audit's "last call" follows issue order, not the race of
concurrent responses; a request without a response leaves its position empty). A
``Deprecation`` or ``Sunset`` header logs one loud structured warning per endpoint per process on the
operator channel (stderr), on the ``osbp.adapter.lifecycle`` logger whose level is pinned so that no
host log level silences it; it never becomes a Problem and never reaches agent-facing output.

Outcomes are values, like httpx's own split between responses and transport errors::

    UpstreamOutcome
    ├── UpstreamResponse      any HTTP status, with its parsed JSON body and captured meta
    └── UpstreamUnavailable   no response: timeout, refused/failed connection, broken transport
"""

from __future__ import annotations

import logging
import random
import sys
import threading
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, TypeGuard
from urllib.parse import quote

import anyio
import httpx2

from osbp import OSBP_VERSION, __version__
from osbp.adapter.http11 import Http11Transport
from osbp.adapter.retry import RETRIED_STATUSES, RetryPolicy, retry_after_seconds
from osbp.adapter.settings import AdapterSettings
from osbp.protocol.contact_shapes import is_contact_shaped
from osbp.protocol.models import PlatformIdentity, UpstreamMeta
from osbp.protocol.upstream import reserve_upstream

__all__ = [
    "ADAPTER_NAME",
    "LIFECYCLE_LOGGER",
    "PROCESS_NOTICES",
    "LifecycleNotices",
    "Upstream",
    "UpstreamOutcome",
    "UpstreamResponse",
    "UpstreamUnavailable",
    "capture_meta",
    "redact_segment",
    "user_agent",
]

#: The adapter's product token in the User-Agent.
ADAPTER_NAME = "osbp-bookwell-adapter"

#: The operator channel of the spec's lifecycle MUST. Its own level is pinned to WARNING, so a host's
#: log level (``osbp mcp --log-level ERROR`` sets the root logger's) passes it all the same: the notice is
#: once per endpoint per process, so it cannot flood. Only setting this logger's level explicitly quiets it.
LIFECYCLE_LOGGER = "osbp.adapter.lifecycle"
lifecycle_logger = logging.getLogger(LIFECYCLE_LOGGER)
lifecycle_logger.setLevel(logging.WARNING)
logger = logging.getLogger("osbp.adapter")

_RATELIMIT_NAMES = ("retry-after", "ratelimit", "ratelimit-policy")
REDACTED = "{redacted}"


def user_agent() -> str:
    """``OSBP/<osbp> <adapter>/<version> python/<major.minor>``."""
    python = f"{sys.version_info.major}.{sys.version_info.minor}"
    return f"OSBP/{OSBP_VERSION} {ADAPTER_NAME}/{__version__} python/{python}"


def redact_segment(value: str) -> str:
    """A path segment, or ``{redacted}`` when it is contact-shaped (an email address or phone number)."""
    return REDACTED if is_contact_shaped(value) else value


def capture_meta(call: str, response: httpx2.Response, version_header: str) -> UpstreamMeta:
    """The spec's UpstreamMeta of one response (response headers only: no credential can leak in)."""
    headers = response.headers
    request_id = next((value for name, value in headers.items() if "request-id" in name.lower()), None)
    ratelimit = {
        name.lower(): value
        for name, value in headers.items()
        if name.lower() in _RATELIMIT_NAMES or name.lower().startswith("x-ratelimit-")
    }
    return UpstreamMeta(
        call=call,
        status=response.status_code,
        server=headers.get("server"),
        request_id=request_id,
        api_version=headers.get(version_header),
        deprecation=headers.get("deprecation"),
        sunset=headers.get("sunset"),
        ratelimit=ratelimit or None,
    )


class LifecycleNotices:
    """Remembers which endpoints already produced a Deprecation/Sunset warning (thread-safe)."""

    def __init__(self) -> None:
        self._seen: set[str] = set()
        self._lock = threading.Lock()

    def first(self, endpoint: str) -> bool:
        """True the first time ``endpoint`` is announced, False afterwards."""
        with self._lock:
            if endpoint in self._seen:
                return False
            self._seen.add(endpoint)
            return True


#: The per-process record behind "at least once per endpoint per process".
PROCESS_NOTICES = LifecycleNotices()


@dataclass(frozen=True, slots=True)
class UpstreamResponse:
    """A platform response of any status: parsed JSON body (``None`` if not JSON) and its meta."""

    status: int
    headers: httpx2.Headers
    body: Any
    meta: UpstreamMeta


@dataclass(frozen=True, slots=True)
class UpstreamUnavailable:
    """No response arrived: the caller maps this to a retryable ``upstream_unavailable`` Problem."""

    call: str
    reason: Literal["timeout", "connect", "transport"]


UpstreamOutcome = UpstreamResponse | UpstreamUnavailable

#: Distinct request targets (path and query) whose parsed URL is kept; past it the oldest are forgotten.
URL_CACHE_SIZE = 256


class Upstream:
    """The single HTTP helper: one keep-alive client, pinned, identified, captured."""

    def __init__(
        self,
        settings: AdapterSettings,
        *,
        platform: PlatformIdentity,
        version_header: str,
        transport: httpx2.AsyncBaseTransport | None = None,
        notices: LifecycleNotices | None = None,
        sleep: Callable[[float], Awaitable[None]] = anyio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        self._platform = platform
        self._retry = RetryPolicy.of(settings)
        self._sleep = sleep
        # Jitter only spreads retries out; it guards nothing.
        self._rng = rng or random.Random()  # noqa: S311
        self._version_header = version_header
        self._notices = notices or PROCESS_NOTICES
        headers = {
            version_header: platform.api_version,
            "user-agent": user_agent(),
            "x-osbp-source": settings.source,
            "accept": "application/json",
        }
        if settings.platform_api_key is not None:
            headers["authorization"] = f"Bearer {settings.platform_api_key.get_secret_value()}"
        self._base_url = settings.platform_base_url.rstrip("/")
        timeout = httpx2.Timeout(settings.read_timeout_s, connect=settings.connect_timeout_s)
        self._extensions = {"timeout": timeout.as_dict()}
        #: Parsed URLs by target: httpx parses and validates every URL character by character, which is
        #: a quarter of a request's client-side cost; a loop asks for the same few targets again and again.
        self._urls: dict[tuple[str, tuple[tuple[str, str], ...]], httpx2.URL] = {}
        if transport is None and httpx2.URL(self._base_url).scheme == "http":
            # A plain-http platform (the synthetic one on loopback). With a transport of its own the client
            # builds no TLS context, so no CA bundle (about 50 ms) is loaded for a platform that has no TLS;
            # an https platform gets httpx2's default transport, verified against the trusted authorities.
            transport = Http11Transport()
        self._client = httpx2.AsyncClient(
            base_url=self._base_url,
            headers=headers,
            timeout=timeout,
            transport=transport,
            # Proxies and netrc from the environment must not silently reroute platform traffic.
            trust_env=False,
        )

    async def fetch(
        self,
        method: str,
        route: str,
        *,
        path: Mapping[str, str] | None = None,
        params: Mapping[str, str] | None = None,
        body: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> UpstreamOutcome:
        """Send a request to ``route`` (a template like ``/api/organizations/{org}``), retried where safe.

        A read, or a request carrying an ``Idempotency-Key``, is sent again after no response or a 5xx
        (:mod:`osbp.adapter.retry`), each retry and a giving up logged; the last outcome is returned.
        """
        values = dict(path or {})
        url = route.format(**{name: quote(value, safe="") for name, value in values.items()})
        call = f"{method} " + route.format(
            **{name: quote(redact_segment(value), safe="{}") for name, value in values.items()}
        )
        endpoint = f"{method} {route}"
        safe = method == "GET" or any(name.lower() == "idempotency-key" for name in headers or {})
        attempt = 1
        while True:
            outcome = await self._send(method, url, call, endpoint, params, body, headers)
            reason = _retry_reason(outcome)
            if reason is None or not safe:
                return outcome
            asked = retry_after_seconds(outcome.headers.get("retry-after")) if _answered(outcome) else None
            delay = self._retry.delay(attempt, asked, self._rng)
            where = {"endpoint": endpoint, "call": call, "attempt": attempt, "reason": reason}
            if delay is None:
                logger.warning("upstream_gave_up", extra=where | {"retry_after": asked})
                return outcome
            logger.warning("upstream_retry", extra=where | {"delay_s": round(delay, 3)})
            await self._sleep(delay)
            attempt += 1

    async def _send(
        self,
        method: str,
        url: str,
        call: str,
        endpoint: str,
        params: Mapping[str, str] | None,
        body: Any,
        headers: Mapping[str, str] | None,
    ) -> UpstreamOutcome:
        """One attempt, its meta captured."""
        # Reserved before the first await: gathered requests take their positions in argument order.
        slot = reserve_upstream()
        try:
            response = await self._client.send(self._request(method, url, params, body, headers))
        except httpx2.TimeoutException:
            return UpstreamUnavailable(call, "timeout")
        except httpx2.ConnectError:
            return UpstreamUnavailable(call, "connect")
        except httpx2.TransportError:
            return UpstreamUnavailable(call, "transport")
        meta = capture_meta(call, response, self._version_header)
        slot.fill(meta)
        if meta.deprecation is not None or meta.sunset is not None:
            self._announce(endpoint, meta, response.headers.get("link"))
        return UpstreamResponse(response.status_code, response.headers, _json_body(response), meta)

    def _request(
        self,
        method: str,
        url: str,
        params: Mapping[str, str] | None,
        body: Any,
        headers: Mapping[str, str] | None,
    ) -> httpx2.Request:
        """The very request ``AsyncClient.request`` would build, with its URL parsed once per target.

        Built here rather than by the client: the client parses and merges the base URL, the path and the
        query anew for every request.
        """
        target = (url, tuple(params.items()) if params else ())
        parsed = self._urls.get(target)
        if parsed is None:
            if len(self._urls) >= URL_CACHE_SIZE:
                del self._urls[next(iter(self._urls))]
            parsed = httpx2.URL(self._base_url + url, params=dict(params) if params else None)
            self._urls[target] = parsed
        merged = self._client.headers.copy()
        if headers:
            merged.update(headers)
        return httpx2.Request(
            method,
            parsed,
            headers=merged,
            cookies=self._client.cookies,
            json=body,
            extensions=self._extensions,
        )

    def _announce(self, endpoint: str, meta: UpstreamMeta, link: str | None) -> None:
        if not self._notices.first(endpoint):
            return
        fields = {
            "platform": self._platform.vendor,
            "api_version": self._platform.api_version,
            "endpoint": endpoint,
            "call": meta.call,
            "deprecation": meta.deprecation,
            "sunset": meta.sunset,
            "link": link,
            "action": "The platform announced this endpoint's retirement; plan the migration before the "
            "sunset date. The call itself succeeded.",
        }
        lifecycle_logger.warning(
            "upstream_endpoint_deprecated",
            extra={name: value for name, value in fields.items() if value is not None},
        )

    async def aclose(self) -> None:
        """Close the keep-alive client."""
        await self._client.aclose()


def _answered(outcome: UpstreamOutcome) -> TypeGuard[UpstreamResponse]:
    return isinstance(outcome, UpstreamResponse)


def _retry_reason(outcome: UpstreamOutcome) -> str | None:
    """Why ``outcome`` is worth another attempt (``timeout``, ``connect``, ``transport``, ``http_503``...)."""
    if isinstance(outcome, UpstreamUnavailable):
        return outcome.reason
    return f"http_{outcome.status}" if outcome.status in RETRIED_STATUSES else None


def _json_body(response: httpx2.Response) -> Any:
    if not response.content:
        return None
    try:
        return response.json()
    except ValueError:  # not JSON (a proxy's HTML error page, say): the caller sees no body
        return None
