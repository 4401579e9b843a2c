"""The platform application: FastAPI routes behind the platform edge, problem+json for every error.

Routes and the service functions under them raise `ProblemError` for an expected refusal; it is rendered
here, once, like FastAPI's own validation and HTTP errors.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import cast

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.responses import Response

from osbp.backend.api import ROUTERS
from osbp.backend.docs_ui import mount_docs
from osbp.backend.faults import FaultLayer, endpoint_names
from osbp.backend.headers import PLATFORM_SERVER, PlatformEdge
from osbp.backend.openapi import contract
from osbp.backend.paths import PathSegments
from osbp.backend.problems import Problem, ProblemError, problem_response
from osbp.backend.retirement import RetiredEndpoints
from osbp.backend.runtime import Runtime
from osbp.backend.settings import BackendSettings
from osbp.backend.testing_api import router as testing_router
from osbp.backend.tokens import TokenSource
from osbp.backend.webhook_worker import running

__all__ = ["create_app"]

_HTTP_CODES = {404: "not_found", 405: "method_not_allowed", 429: "rate_limited"}


def _field(location: tuple[object, ...]) -> str:
    return ".".join(str(part) for part in location)


async def _validation_problem(_request: Request, error: Exception) -> Response:
    # Input values are deliberately left out: they may hold contact data.
    errors = error.errors() if isinstance(error, RequestValidationError) else []
    details = [
        {"field": _field(tuple(item.get("loc", ()))), "message": str(item.get("msg", ""))} for item in errors
    ]
    summary = "; ".join(f"{item['field']}: {item['message']}" for item in details[:3]) or "invalid request"
    return problem_response(Problem("invalid_request", summary, {"errors": details}))


async def _raised_problem(_request: Request, error: Exception) -> Response:
    # Registered for ProblemError only; Starlette types every handler's error as Exception.
    return problem_response(cast(ProblemError, error).problem)


async def _http_problem(_request: Request, error: Exception) -> Response:
    status = error.status_code if isinstance(error, StarletteHTTPException) else 500
    code = _HTTP_CODES.get(status, "invalid_request" if status < 500 else "internal_error")
    headers = dict(getattr(error, "headers", None) or {})
    detail = str(getattr(error, "detail", "")) or code
    return problem_response(Problem(code, detail, headers=headers))


def create_app(
    settings: BackendSettings | None = None,
    *,
    runtime: Runtime | None = None,
    tokens: TokenSource | None = None,
) -> FastAPI:
    """Build the platform app (a fresh runtime from `settings` unless one is given)."""
    runtime = runtime or Runtime.build(settings or BackendSettings(), tokens=tokens)
    built = runtime  # the closure below sees a Runtime, not the parameter's Optional

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        # The webhook worker delivers the outbox while the app serves, and stops with it.
        async with running(built):
            yield

    app = FastAPI(
        lifespan=lifespan,
        title="Bookwell",
        version=PLATFORM_SERVER.split("/")[1],
        summary="A synthetic merchant booking platform with its own native API (osbp.backend).",
        # Served by `mount_docs` from the app's own assets (FastAPI's defaults load them from a CDN).
        docs_url=None,
        redoc_url=None,
        # operationId = the route function's name (`create_appointment`): what generated clients call.
        generate_unique_id_function=lambda route: route.name,
    )
    # The documented contract is the platform's exact behaviour, edge included (`osbp.backend.openapi`).
    app.openapi = lambda: contract(app)  # type: ignore[method-assign]  # FastAPI's documented override hook
    app.state.runtime = runtime
    mount_docs(app, title=app.title)
    for router in ROUTERS:
        app.include_router(router)
    if runtime.settings.enable_testing:
        app.include_router(testing_router)

    @app.get("/health", tags=["health"])
    async def health() -> dict[str, str]:
        """Liveness for container health checks (on the event loop: it touches nothing that blocks)."""
        return {"status": "ok"}

    app.add_exception_handler(ProblemError, _raised_problem)
    app.add_exception_handler(RequestValidationError, _validation_problem)
    app.add_exception_handler(StarletteHTTPException, _http_problem)
    # Inside the edge, so a refused path still gets the request id, the pin echo and the rate limit.
    # A profile given for the run may name only endpoints that exist (ValueError otherwise).
    runtime.faults.check_endpoints(endpoint_names())
    app.add_middleware(PathSegments)
    app.add_middleware(RetiredEndpoints, runtime=runtime)
    app.add_middleware(FaultLayer, runtime=runtime)
    app.add_middleware(PlatformEdge, runtime=runtime)
    return app
