"""Endpoint retirement: after its announced ``Sunset`` instant a deprecated endpoint answers 410 Gone.

The instant is read on the platform clock (so ``/_testing/clock`` can move past it). The answer is the
problem ``endpoint_retired`` naming the sunset instant and the ``successor``: where the replacement is
described (the endpoint's deprecation notice, the same URL its ``Link: rel="deprecation"`` carried). A pure
ASGI layer inside the platform edge, so the 410 still carries the request id and the lifecycle headers.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime

from starlette.types import ASGIApp, Receive, Scope, Send

from osbp.backend.headers import AVAILABILITY_SUNSET_AT, NO_SHOW_SUNSET_AT
from osbp.backend.problems import Problem, problem_response
from osbp.backend.runtime import Runtime

__all__ = ["RETIREMENTS", "RetiredEndpoints", "Retirement"]


@dataclass(frozen=True, slots=True)
class Retirement:
    """A deprecated endpoint's path pattern, its sunset instant and where its successor is described."""

    pattern: re.Pattern[str]
    sunset: datetime
    successor: str


RETIREMENTS: tuple[Retirement, ...] = (
    Retirement(
        re.compile(r"^/api/organizations/[^/]+/availability/?$"),
        AVAILABILITY_SUNSET_AT,
        "https://developer.bookwell.example/deprecations/availability-v1",
    ),
    Retirement(
        re.compile(r"^/api/organizations/[^/]+/appointments/[^/]+/no-show/?$"),
        NO_SHOW_SUNSET_AT,
        "https://developer.bookwell.example/deprecations/appointment-no-show",
    ),
)


class RetiredEndpoints:
    """Answers 410 ``endpoint_retired`` on an endpoint past its sunset; passes everything else on."""

    def __init__(self, app: ASGIApp, runtime: Runtime) -> None:
        self.app = app
        self.runtime = runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a retired endpoint, or serve the request."""
        if scope["type"] == "http":
            path: str = scope.get("path", "")
            for retired in RETIREMENTS:
                if retired.pattern.match(path) and self.runtime.clock.now() >= retired.sunset:
                    sunset = retired.sunset.isoformat().replace("+00:00", "Z")
                    problem = Problem(
                        "endpoint_retired",
                        f"This endpoint was retired at its announced sunset ({sunset}); use its successor.",
                        {"sunset": sunset, "successor": retired.successor},
                    )
                    await problem_response(problem)(scope, receive, send)
                    return
        await self.app(scope, receive, send)
