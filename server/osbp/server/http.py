"""`osbp mcp --transport streamable-http`: the OSBP MCP server over the SDK's Streamable HTTP, on uvicorn.

Stateless (every request stands alone, so any replica can answer any request and no sticky sessions are
needed) with JSON responses, at ``/mcp``. The SDK's transport speaks the newest protocol revision it
knows and the revisions current hosts negotiate. Around it, outermost first:

1. **DNS-rebinding protection**, always on: ``Host`` must be on the allow-list (``421`` otherwise) and an
   ``Origin``, when sent, too (``403``); both default to the loopback names (``--allowed-hosts``,
   ``--allowed-origins``).
2. **Bearer authorization** when an issuer is configured (:mod:`osbp.server.auth`): a missing or invalid
   token is ``401`` with ``WWW-Authenticate: Bearer ... resource_metadata="..."`` naming the RFC 9728
   metadata, served at ``/.well-known/oauth-protected-resource`` (and at the path-suffixed form RFC 9728
   §3.1 derives from the resource URL).
3. **The request gate** (:class:`RequestGate`): the body must arrive whole within
   ``request_timeout_s`` (``408``) and be at most ``max_body_bytes`` (``413``); a body the SDK cannot read
   as one JSON-RPC message (a batch, nesting past the parser's limit) is ``400`` with the JSON-RPC error
   :func:`osbp.server.jsonrpc.screen` answers it with over stdio too; a ``tools/call`` whose tool needs a
   scope the token lacks is ``403 insufficient_scope`` naming the scope, before the call runs.

Host confirmation (:mod:`osbp.server.confirmation`) works here for 2026-07-28 clients, whose requests
carry their capabilities: the ``input_required`` request state is sealed under ``OSBP_REQUEST_STATE_KEY``
(:func:`request_state_security`; replicas must share it), and with authorization a client declaring
URL-mode elicitation confirms on the page at ``/confirm/<secret>`` (:mod:`osbp.server.confirmation_page`,
outside bearer authorization: a browser has no token; behind the Host/Origin allow-lists). The app's
lifespan also runs the state purge (:mod:`osbp.server.purge`).

Under it all, the edge (:mod:`osbp.server.edge`, on uvicorn): a request's headers within
``header_timeout_s``, idle keep-alive connections closed after ``keep_alive_s``, at most
``max_connections_per_client`` connections per client address and ``max_open_connections`` in all (the
one waiting longest for a request makes room), ``max_connections`` requests served at once (``503``
beyond), incomplete HTTP events capped at 64 KiB. A ``GET`` of the endpoint is ``405``: a stateless server
has no stream of its own messages to offer (MCP Streamable HTTP, "Listening for Messages").

:func:`refusal` is the start-up rule: a non-loopback address needs ``--allow-remote`` **and**
authorization; otherwise the server does not start.
"""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any
from urllib.parse import urlsplit

import anyio
import uvicorn
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend
from mcp.server.auth.routes import build_resource_metadata_url, create_protected_resource_routes
from mcp.server.request_state import RequestStateSecurity
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from osbp.protocol.confirmation_pages import ConfirmationPages
from osbp.protocol.contract import BookingAdapter
from osbp.protocol.retention import StatePurge
from osbp.protocol.state import StateBackend, open_state_store
from osbp.server.app import create_server
from osbp.server.audit import AuditLog
from osbp.server.auth import BOOK, READ, TOOL_SCOPES, VERIFY, JwtVerifier, KeySet, RequireBearer, principal_of
from osbp.server.compose import close_parts
from osbp.server.confirmation_page import ConfirmationSite
from osbp.server.edge import RequestLimit, edge_protocol, raise_file_limit
from osbp.server.jsonrpc import screen
from osbp.server.listening import listen, url_host
from osbp.server.purge import purging
from osbp.server.remote_settings import is_loopback
from osbp.server.settings import ServerSettings
from osbp.server.tools import dotted_name

__all__ = [
    "HEALTH_PATH",
    "MCP_PATH",
    "RequestGate",
    "build_app",
    "page_origin",
    "refusal",
    "request_state_security",
    "resource_url",
    "serve_http",
]

logger = logging.getLogger("osbp.server")

MCP_PATH = "/mcp"
#: Liveness for a load balancer or an orchestrator: answers while the process serves.
HEALTH_PATH = "/health"
_METADATA_PATH = "/.well-known/oauth-protected-resource"


def refusal(settings: ServerSettings) -> str | None:
    """Why these settings must not be served over HTTP, or ``None``."""
    if settings.page_required() and (not settings.auth.enabled or page_origin(settings) is None):
        return (
            "--confirmation page needs the confirmation page: authorization (--auth-issuer) and a loopback "
            "or https resource URL (--resource-url)"
        )
    http = settings.http
    if is_loopback(http.host):
        return None
    if not http.allow_remote:
        return (
            f"--host {http.host} is not a loopback address: add --allow-remote (OSBP_HTTP_ALLOW_REMOTE=true) "
            "and configure authorization (--auth-issuer) to serve other machines"
        )
    if not settings.auth.enabled:
        return (
            f"--host {http.host} with --allow-remote needs authorization: set --auth-issuer / "
            "OSBP_AUTH_ISSUER (a remote server never runs without bearer tokens)"
        )
    return None


def resource_url(settings: ServerSettings) -> str:
    """This server's resource URL (the tokens' audience): configured, else ``http://HOST:PORT/mcp``."""
    if settings.auth.resource_url is not None:
        return settings.auth.resource_url
    host = settings.http.host
    shown = f"[{host}]" if ":" in host and not host.startswith("[") else host
    return f"http://{shown}:{settings.http.port}{MCP_PATH}"


async def _answer(
    send: Send, status: int, body: dict[str, Any] | bytes, headers: list[tuple[bytes, bytes]]
) -> None:
    payload = body if isinstance(body, bytes) else json.dumps(body).encode()
    head = [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()), *headers]
    await send({"type": "http.response.start", "status": status, "headers": head})
    await send({"type": "http.response.body", "body": payload})


def _tool_names(message: Any) -> list[str]:
    """The tool names a JSON-RPC body calls (a batch's every element)."""
    messages = message if isinstance(message, list) else [message]
    names = []
    for item in messages:
        if isinstance(item, dict) and item.get("method") == "tools/call":
            params = item.get("params")
            name = params.get("name") if isinstance(params, dict) else None
            if isinstance(name, str):
                names.append(name)
    return names


class RequestGate:
    """Body size and time limits, then the per-tool scope check, in front of the MCP endpoint."""

    def __init__(
        self, app: ASGIApp, *, max_body: int, timeout_s: float, metadata_url: str | None = None
    ) -> None:
        self._app = app
        self._max_body = max_body
        self._timeout_s = timeout_s
        self._metadata_url = metadata_url

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Buffer a POST's body within the limits, check its scopes, and hand it on unchanged."""
        if scope["type"] == "http" and scope["method"] == "GET":
            # Stateless: no session, so no server-initiated message could ever go out on a GET's stream; the
            # transport's answer for a server without one (MCP Streamable HTTP), not a socket held open.
            await _answer(send, 405, {"error": "method_not_allowed"}, [(b"allow", b"POST")])
            return
        if scope["type"] != "http" or scope["method"] != "POST":
            await self._app(scope, receive, send)
            return
        body = bytearray()
        complete = False
        with anyio.move_on_after(self._timeout_s):
            while not complete:
                message = await receive()
                if message["type"] == "http.disconnect":
                    return
                body += message.get("body", b"")
                if len(body) > self._max_body:
                    await _answer(send, 413, {"error": "request_too_large"}, [(b"connection", b"close")])
                    return
                complete = not message.get("more_body", False)
        if not complete:
            logger.info("request_timed_out", extra={"received_bytes": len(body)})
            await _answer(send, 408, {"error": "request_timeout"}, [(b"connection", b"close")])
            return
        if (rejection := screen(bytes(body))) is not None:
            # The SDK would answer a batch -32602 and its scope check below would fail on deep nesting:
            # answered here, by the rule stdio uses, with the status the SDK gives each code.
            fields = {"code": rejection.code, "reason": rejection.reason, "id": rejection.id}
            logger.info("jsonrpc_request_rejected", extra=fields)
            error = rejection.response().model_dump_json(by_alias=True, exclude_unset=True).encode()
            await _answer(send, ERROR_CODE_HTTP_STATUS.get(rejection.code, 400), error, [])
            return
        if self._metadata_url is not None and (missing := self._missing_scope(scope, bytes(body))):
            challenge = (
                f'Bearer error="insufficient_scope", scope="{missing}", '
                f'error_description="Required scope: {missing}", resource_metadata="{self._metadata_url}"'
            )
            body_out = {"error": "insufficient_scope", "error_description": f"Required scope: {missing}"}
            await _answer(send, 403, body_out, [(b"www-authenticate", challenge.encode())])
            return
        await self._app(scope, _replay(bytes(body), receive), send)

    @staticmethod
    def _missing_scope(scope: Scope, body: bytes) -> str | None:
        user = scope.get("user")
        granted = set(user.scopes) if isinstance(user, AuthenticatedUser) else set()
        try:
            message = json.loads(body)
        except ValueError:
            return None  # not JSON: the transport answers the parse error
        for mcp_name in _tool_names(message):
            name = dotted_name(mcp_name)
            needed = TOOL_SCOPES[name] if name is not None else None
            if needed is not None and needed not in granted:
                return needed
        return None


def _replay(body: bytes, receive: Receive) -> Receive:
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()  # after the body: the disconnect, as the transport expects

    return replayed


class _HostOriginGuard:
    """DNS-rebinding protection on every path: ``Host`` and ``Origin`` on the allow-lists."""

    def __init__(self, app: ASGIApp, security: TransportSecuritySettings) -> None:
        self._app = app
        self._check = TransportSecurityMiddleware(security)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            rejected = await self._check.validate_request(Request(scope, receive), is_post=False)
            if rejected is not None:
                await rejected(scope, receive, send)
                return
        await self._app(scope, receive, send)


def request_state_security(settings: ServerSettings) -> RequestStateSecurity:
    """How the confirmation's request state is sealed: the configured key ring, else a key of this process.

    Without ``OSBP_REQUEST_STATE_KEY`` a state sealed by one process is refused by every other (a replica,
    or this one after a restart): fail-closed, ``-32602`` and nothing booked, so replicas must share a key.
    """
    ttl = settings.approval_ttl_seconds
    keys = settings.request_state_keys()
    if keys:
        return RequestStateSecurity(keys=list(keys), ttl=ttl)
    # A warning where replicas are likely (a state store they share), a note for a single process.
    shared = str(settings.adapter.state_path).startswith(("postgresql:", "postgres:"))
    logger.log(
        logging.WARNING if shared else logging.INFO,
        "request_state_key_ephemeral",
        extra={
            "detail": "no OSBP_REQUEST_STATE_KEY: a host confirmation started on this process is refused "
            "on any other replica or after a restart; set the same key on every replica"
        },
    )
    return RequestStateSecurity.ephemeral(ttl=ttl)


def page_origin(settings: ServerSettings) -> str | None:
    """Where the confirmation pages are served: the resource URL's origin, if loopback or HTTPS."""
    parts = urlsplit(resource_url(settings))
    if parts.scheme == "https" or (parts.scheme == "http" and is_loopback(parts.hostname or "")):
        return f"{parts.scheme}://{parts.netloc}"
    return None


def _site(settings: ServerSettings, state: StateBackend) -> ConfirmationSite | None:
    """URL-mode confirmation's pages: with authorization (a subject to bind), on loopback or HTTPS."""
    if not settings.auth.enabled:
        return None
    origin = page_origin(settings)
    if origin is None:
        logger.warning(
            "confirmation_page_unavailable",
            extra={"detail": "the resource URL is neither HTTPS nor loopback: no URL-mode confirmation"},
        )
        return None
    return ConfirmationSite(ConfirmationPages(state, settings.clock(), settings.approval_ttl()), origin)


async def _health(_: Request) -> Response:
    """``GET /health``: the process serves (no authorization, no platform call: liveness only)."""
    return JSONResponse({"status": "ok"})


def build_app(
    adapter: BookingAdapter, audit: AuditLog, settings: ServerSettings, *, state: StateBackend | None = None
) -> Starlette:
    """The ASGI application: the MCP endpoint behind the checks of the module docstring.

    ``state``: the OSBP state store the confirmation pages and rounds live in (default: the configured
    one, opened here and closed with the app), purged of expired records while the app runs.
    """
    http = settings.http
    security = TransportSecuritySettings(
        enable_dns_rebinding_protection=True, allowed_hosts=http.hosts(), allowed_origins=http.origins()
    )
    opened = None
    if state is None:
        state = opened = open_state_store(settings.adapter.state_path)
    site = _site(settings, state)
    server = create_server(
        adapter,
        audit,
        clock=settings.clock(),
        principal_of=principal_of,
        confirmation=settings.confirmation_policy(),
        request_state=request_state_security(settings),
        site=site,
        state=state,
    )
    purge = StatePurge(state, settings.clock(), retention=settings.state_retention())
    manager = StreamableHTTPSessionManager(
        app=server,
        json_response=True,
        stateless=True,
        security_settings=security,
        max_request_body_size=http.max_body_bytes,
    )
    endpoint: ASGIApp = StreamableHTTPASGIApp(manager)
    routes: list[Route] = []
    middleware: list[Middleware] = []
    auth = settings.auth
    if auth.issuer is None:
        endpoint = RequestGate(endpoint, max_body=http.max_body_bytes, timeout_s=http.request_timeout_s)
    else:
        resource = resource_url(settings)
        metadata_url = str(build_resource_metadata_url(AnyHttpUrl(resource)))
        verifier = JwtVerifier(
            issuer=auth.issuer,
            audience=resource,
            keys=KeySet(
                auth.jwks or auth.issuer.rstrip("/") + "/.well-known/jwks.json",
                refresh_s=auth.jwks_refresh_s,
                timeout_s=auth.jwks_timeout_s,
            ),
            organizations_claim=auth.organizations_claim,
        )
        gate = RequestGate(
            endpoint,
            max_body=http.max_body_bytes,
            timeout_s=http.request_timeout_s,
            metadata_url=metadata_url,
        )
        endpoint = RequireBearer(gate, [], AnyHttpUrl(metadata_url))
        middleware = [
            Middleware(AuthenticationMiddleware, backend=BearerAuthBackend(verifier)),
            Middleware(AuthContextMiddleware),
        ]
        metadata = create_protected_resource_routes(
            # Strings, validated by the metadata model, which keeps a path-less issuer without the "/"
            # AnyHttpUrl would add (RFC 8414 compares issuers as exact strings).
            resource_url=resource,  # type: ignore[arg-type]
            authorization_servers=[auth.issuer],  # type: ignore[list-item]
            scopes_supported=[READ, VERIFY, BOOK],
            resource_name="OSBP (Open Service Booking Protocol)",
        )
        routes += metadata
        if all(route.path != _METADATA_PATH for route in metadata):
            routes.append(Route(_METADATA_PATH, endpoint=metadata[0].endpoint, methods=["GET", "OPTIONS"]))
    routes.insert(0, Route(MCP_PATH, endpoint=endpoint))
    routes.append(Route(HEALTH_PATH, endpoint=_health, methods=["GET"]))
    if site is not None:
        routes += site.routes()

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        try:
            async with manager.run(), purging(purge):
                yield
        finally:
            if opened is not None:
                opened.close()

    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
    app.add_middleware(_HostOriginGuard, security=security)
    return app


async def serve_http(adapter: BookingAdapter, audit: AuditLog, settings: ServerSettings) -> int:
    """Serve MCP over Streamable HTTP until SIGTERM/SIGINT; always closes the adapter and the audit log."""
    http = settings.http
    try:
        open_connections = raise_file_limit(http.max_open_connections)
        edge = http.model_copy(update={"max_open_connections": open_connections})
        config = uvicorn.Config(
            RequestLimit(build_app(adapter, audit, settings), http.max_connections),
            host=http.host.strip("[]"),
            port=http.port,
            http=edge_protocol(edge),
            ws="none",  # no WebSocket upgrade: the endpoint speaks HTTP only
            # The edge's budgets count the TCP peer; no X-Forwarded-* header may rewrite who the client is.
            proxy_headers=False,
            log_config=None,
            access_log=False,
            lifespan="on",
            timeout_keep_alive=http.keep_alive_s,
            timeout_graceful_shutdown=5,
            h11_max_incomplete_event_size=64 * 1024,
        )
        # Bound here, before serving: a busy port is the caller's one-line error (ListenError), and the
        # real port (--port 0) is known for the announcement; connections made meanwhile wait in the backlog.
        sock = listen(http.host, http.port)
        url = f"http://{url_host(http.host)}:{sock.getsockname()[1]}"
        where = {"url": url + MCP_PATH, "health": url + HEALTH_PATH, "audit": str(audit.path)}
        # stdout is free over HTTP (no MCP on it): one JSON line a parent or a person reads the address from.
        sys.stdout.write(json.dumps({"event": "ready", **where}) + "\n")
        sys.stdout.flush()
        logger.info("serving_http", extra=where)
        try:
            await uvicorn.Server(config).serve(sockets=[sock])
        finally:
            sock.close()
    finally:
        await close_parts(adapter, audit)
    logger.info("stopped")
    return 0
