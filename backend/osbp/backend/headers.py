"""The edge every request passes: request id, version pin, rate limit, standard and lifecycle headers.

A pure ASGI middleware (outermost in the app) that
- assigns the request id (echoing a well-formed client UUID) and binds it to the logs;
- counts the request against the client's rate limit and refuses with 429 + Retry-After when spent;
- resolves the `Bookwell-Version` pin (unknown → 400) and echoes the served version;
- stamps `Server`, `X-Request-Id`, `Bookwell-Version`, `RateLimit-Policy`, `RateLimit` on every
  response, and `Deprecation`/`Sunset`/`Link` on deprecated endpoints;
- turns any unexpected exception into a problem+json 500 without a stack trace (logged server-side);
- writes one JSON access log line per request (method, path without query, status, duration).
"""

from __future__ import annotations

import functools
import re
import time
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from email.utils import format_datetime

import http_sf
from starlette.datastructures import Headers
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from osbp.backend.logs import current_request_id, logger
from osbp.backend.problems import Problem, problem_response
from osbp.backend.runtime import Runtime

__all__ = [
    "AVAILABILITY_DEPRECATED_AT",
    "AVAILABILITY_SUNSET_AT",
    "DEFAULT_VERSION",
    "DEPRECATIONS",
    "NO_SHOW_DEPRECATED_AT",
    "NO_SHOW_SUNSET_AT",
    "PLATFORM_SERVER",
    "REQUEST_ID_HEADER",
    "SUPPORTED_VERSIONS",
    "VERSION_HEADER",
    "PlatformEdge",
]

PLATFORM_SERVER = "Bookwell/0.1.0"
VERSION_HEADER = "Bookwell-Version"
REQUEST_ID_HEADER = "X-Request-Id"
#: Dated API versions, oldest first; the last is the default.
SUPPORTED_VERSIONS = ("2025-10-01", "2026-04-01")
DEFAULT_VERSION = SUPPORTED_VERSIONS[-1]

#: The availability endpoint's announced lifecycle: deprecated from this instant, removed at the next.
AVAILABILITY_DEPRECATED_AT = datetime(2026, 6, 13, tzinfo=UTC)
AVAILABILITY_SUNSET_AT = datetime(2032, 10, 1, tzinfo=UTC)
#: The customer surface's no-show, a merchant action in the wrong place: the merchant's own
#: `…/merchant/appointments/{id}/no-show` replaces it (the same rule: one status table, `merchant.ACTIONS`).
NO_SHOW_DEPRECATED_AT = datetime(2026, 12, 1, tzinfo=UTC)
NO_SHOW_SUNSET_AT = datetime(2033, 1, 1, tzinfo=UTC)
#: Endpoints announced for retirement: path pattern -> lifecycle headers (RFC 9745: a structured-field
#: Date; RFC 8594: an HTTP-date; RFC 8288 Link).
DEPRECATIONS: tuple[tuple[re.Pattern[str], dict[str, str]], ...] = (
    (
        re.compile(r"^/api/organizations/[^/]+/availability/?$"),
        {
            "Deprecation": http_sf.ser(AVAILABILITY_DEPRECATED_AT),
            "Sunset": format_datetime(AVAILABILITY_SUNSET_AT, usegmt=True),
            "Link": '<https://developer.bookwell.example/deprecations/availability-v1>; rel="deprecation"; '
            'type="text/html"',
        },
    ),
    (
        re.compile(r"^/api/organizations/[^/]+/appointments/[^/]+/no-show/?$"),
        {
            "Deprecation": http_sf.ser(NO_SHOW_DEPRECATED_AT),
            "Sunset": format_datetime(NO_SHOW_SUNSET_AT, usegmt=True),
            "Link": "<https://developer.bookwell.example/deprecations/appointment-no-show>; "
            'rel="deprecation"; type="text/html"',
        },
    ),
)
_CREATE_PATH = re.compile(r"^/api/organizations/([^/]+)/appointments/?$")


@functools.lru_cache(maxsize=64)
def _header_name(name: str) -> bytes:
    """A header name as ASGI carries it (lower case, latin-1), for the few names the edge stamps."""
    return name.lower().encode("latin-1")


def _request_id(sent: str | None, fresh: Callable[[], str]) -> str:
    if sent is not None:
        try:
            return str(uuid.UUID(sent.strip()))
        except ValueError:
            pass
    return fresh()


class PlatformEdge:
    """The outermost ASGI layer of the platform app."""

    def __init__(self, app: ASGIApp, runtime: Runtime) -> None:
        self.app = app
        self.runtime = runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve one request with the platform's edge behaviour."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started_at = time.perf_counter()
        request_headers = Headers(scope=scope)
        request_id = _request_id(request_headers.get(REQUEST_ID_HEADER), self.runtime.tokens.request_id)
        token = current_request_id.set(request_id)
        path: str = scope.get("path", "")
        client = scope.get("client")
        decision = self.runtime.limiter.hit(client[0] if client else "unknown")
        pin = request_headers.get(VERSION_HEADER)
        served = DEFAULT_VERSION
        extra = {
            "Server": PLATFORM_SERVER,
            REQUEST_ID_HEADER: request_id,
            VERSION_HEADER: served,
            **decision.headers(),
        }
        for pattern, lifecycle in DEPRECATIONS:
            if pattern.match(path):
                extra.update(lifecycle)
        status_box = [500]
        response_started = [False]

        async def stamped(message: Message) -> None:
            if message["type"] == "http.response.start":
                response_started[0] = True
                status_box[0] = message["status"]
                raw = message["headers"] = list(message.get("headers", ()))
                present = {name for name, _value in raw}
                for name, value in extra.items():
                    # A field an inner layer set itself (a faulted 429's spent RateLimit) is kept.
                    encoded = _header_name(name)
                    if encoded not in present:
                        raw.append((encoded, value.encode("latin-1")))
            await send(message)

        try:
            if pin is not None and pin.strip() not in SUPPORTED_VERSIONS:
                problem = Problem(
                    "unsupported_version",
                    f"{VERSION_HEADER} {pin!r} is not a supported version.",
                    {"supported_versions": list(SUPPORTED_VERSIONS)},
                )
                await problem_response(problem)(scope, receive, stamped)
            elif not decision.allowed:
                problem = Problem("rate_limited", "Request quota spent; retry after the window resets.")
                await problem_response(problem)(scope, receive, stamped)
            else:
                extra[VERSION_HEADER] = pin.strip() if pin is not None else served
                scope.setdefault("state", {})["bookwell_version"] = extra[VERSION_HEADER]
                if scope.get("method") == "POST" and (match := _CREATE_PATH.match(path)):
                    self.runtime.count_create_request(match[1])
                await self.app(scope, receive, stamped)
        except Exception:
            logger.exception("unhandled_error", extra={"method": scope.get("method"), "path": path})
            if not response_started[0]:
                problem = Problem("internal_error", "The platform failed unexpectedly; the error was logged.")
                await problem_response(problem)(scope, receive, stamped)
        finally:
            logger.info(
                "request",
                extra={
                    "method": scope.get("method"),
                    "path": path,
                    "status": status_box[0],
                    "duration_ms": round((time.perf_counter() - started_at) * 1000, 2),
                },
            )
            current_request_id.reset(token)
