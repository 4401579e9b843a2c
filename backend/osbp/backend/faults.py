"""Failure modes on demand: the layer that applies the fault profile (:mod:`osbp.backend.fault_profile`).

The runtime's :class:`~osbp.backend.fault_profile.FaultInjector` holds the profile in force (set for a run
by ``--faults``, replaced or cleared through ``/_testing/faults``, restored by ``/_testing/reset``), so a
run under one seed draws the same faults for the same sequence of requests. :class:`FaultLayer` is a pure
ASGI middleware inside the platform edge (a faulted answer still carries the request id, the version echo
and the rate-limit fields) that, for a request a rule hits:

* ``latency``: waits ``latency_ms`` plus a uniform draw up to ``jitter_ms``, then serves it;
* ``reset``: aborts the connection before the request is handled (nothing happens);
* ``timeout``: answers nothing until the client gives up or ``hold_ms`` passes, then aborts (nothing
  happens);
* ``error``: answers 500/502/503 problem+json, with ``Retry-After`` when the rule gives one (nothing
  happens);
* ``rate_limited``: answers 429 with ``Retry-After`` and a spent ``RateLimit`` field (nothing happens);
* ``lost_response``: serves it (a create commits), then drops the connection before the answer;
* ``slow_commit``: serves it with every write transaction holding its lock ``hold_ms`` before the commit.

Requests under ``/_testing/`` are never faulted. Aborting a connection needs the platform's own HTTP
protocol (:func:`abortable`, installed by :func:`osbp.backend.serving.uvicorn_config`), which hands each
request a way to abort its transport; under any other server the three modes that abort (``reset``,
``timeout``, ``lost_response``) answer 500.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import anyio
from starlette.routing import Match, Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.h11_impl import H11Protocol

from osbp.backend.api import ROUTERS
from osbp.backend.commit_hold import holding_commits
from osbp.backend.fault_profile import Hit
from osbp.backend.logs import logger
from osbp.backend.problems import Problem, problem_response
from osbp.backend.ratelimit import Decision

if TYPE_CHECKING:
    from osbp.backend.runtime import Runtime

__all__ = ["ABORT_STATE", "FaultLayer", "abortable", "endpoint_names"]

#: The key under ``scope["state"]`` holding the callable that aborts the request's connection.
ABORT_STATE = "bookwell.abort_connection"
#: How long an aborted request waits for the server to notice the closed connection.
_DISCONNECT_WAIT_S = 5.0
_ORGANIZATION = re.compile(r"^/api/organizations/([^/]+)")
_ERROR_CODES = {500: "internal_error", 502: "bad_gateway", 503: "service_unavailable"}


def _native_routes() -> list[Route]:
    return [route for router in ROUTERS for route in router.routes if isinstance(route, Route)]


def endpoint_names() -> frozenset[str]:
    """Every name a rule's ``endpoint`` may use: the native API's route names and ``METHOD /path`` pairs."""
    names: set[str] = set()
    for route in _native_routes():
        names.add(route.name)
        names.update(f"{method} {route.path}" for method in route.methods or ())
    return frozenset(names)


def _identify(scope: Scope) -> tuple[str | None, frozenset[str]]:
    """The request's organization (from the path) and the names of the route it reaches."""
    path: str = scope.get("path", "")
    found = _ORGANIZATION.match(path)
    for route in _native_routes():
        match, _child = route.matches(scope)
        if match is Match.FULL:
            return (found[1] if found else None), frozenset({route.name, f"{scope['method']} {route.path}"})
    return (found[1] if found else None), frozenset()


async def _until_disconnect(receive: Receive) -> None:
    while (await receive())["type"] != "http.disconnect":
        pass


async def _abort(scope: Scope, receive: Receive) -> None:
    abort: Callable[[], None] | None = scope.get("state", {}).get(ABORT_STATE)
    if abort is None:
        raise RuntimeError("connection faults need the platform's own HTTP protocol (osbp backend)")
    abort()
    # Returning only once the server saw the connection close, so it answers nothing on it.
    with anyio.move_on_after(_DISCONNECT_WAIT_S):
        await _until_disconnect(receive)


class FaultLayer:
    """A pure ASGI layer applying the runtime's fault profile (inside the platform edge)."""

    def __init__(self, app: ASGIApp, runtime: Runtime) -> None:
        self.app = app
        self.runtime = runtime

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve the request, or fail it as the first rule hitting it says."""
        faults = self.runtime.faults
        if scope["type"] != "http" or not faults.active or scope.get("path", "").startswith("/_testing"):
            await self.app(scope, receive, send)
            return
        organization_id, endpoints = _identify(scope)
        hit = faults.draw(organization_id, endpoints)
        if hit is None:
            await self.app(scope, receive, send)
            return
        rule = hit.rule
        logger.info(
            "fault_injected",
            extra={
                "mode": rule.mode,
                "rule": hit.index,
                "method": scope.get("method"),
                "path": scope.get("path"),
                "organization_id": organization_id,
            },
        )
        await self._apply(hit, scope, receive, send)

    async def _apply(self, hit: Hit, scope: Scope, receive: Receive, send: Send) -> None:
        rule = hit.rule
        if rule.mode == "latency":
            await anyio.sleep(hit.delay_s)
            await self.app(scope, receive, send)
        elif rule.mode == "reset":
            await _abort(scope, receive)
        elif rule.mode == "timeout":
            with anyio.move_on_after(rule.hold_ms / 1000):
                await _until_disconnect(receive)
            await _abort(scope, receive)
        elif rule.mode == "error":
            headers = {} if rule.retry_after is None else {"Retry-After": str(rule.retry_after)}
            detail = f"The platform is failing (HTTP {rule.status}); nothing was done. Retry later."
            await problem_response(Problem(_ERROR_CODES[rule.status], detail, headers=headers))(
                scope, receive, send
            )
        elif rule.mode == "rate_limited":
            limiter = self.runtime.limiter
            wait = 1 if rule.retry_after is None else rule.retry_after
            spent = Decision(False, limiter.quota, limiter.window, 0, wait).headers()
            problem = Problem("rate_limited", "Request quota spent; retry after the window resets.")
            await problem_response(Problem(problem.code, problem.detail, headers=spent))(scope, receive, send)
        elif rule.mode == "lost_response":
            await self.app(scope, receive, _swallow)
            await _abort(scope, receive)
        else:  # slow_commit
            with holding_commits(rule.hold_ms / 1000):
                await self.app(scope, receive, send)


async def _swallow(_message: Message) -> None:
    """Where a lost response goes."""


def abortable(protocol: type[H11Protocol]) -> type[H11Protocol]:
    """A subclass of ``protocol`` whose requests carry, under ``scope["state"]``, their connection's abort."""

    class AbortableProtocol(protocol):  # type: ignore[valid-type,misc]  # a class made at run time
        """``protocol`` whose requests can abort their own connection (an RST, no answer)."""

        def connection_made(self, transport: asyncio.Transport) -> None:
            super().connection_made(transport)
            # A per-connection copy: every request scope on this connection starts from it.
            shared: dict[str, Any] = self.app_state  # type: ignore[has-type]  # uvicorn sets it untyped
            self.app_state = {**shared, ABORT_STATE: transport.abort}

    AbortableProtocol.__name__ = AbortableProtocol.__qualname__ = f"Abortable{protocol.__name__}"
    return AbortableProtocol
