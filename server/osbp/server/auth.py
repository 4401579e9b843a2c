"""The OAuth 2.1 resource server: bearer JWTs verified against the issuer's keys, scopes per tool.

As the MCP authorization specification describes it (this server is a resource server only; tokens come
from a separate authorization server, ``osbp auth`` in development):

* :class:`JwtVerifier` is the SDK's ``TokenVerifier``: the JWT's signature against the issuer's JWKS
  (:class:`KeySet`: a URL or a file, cached, fetched again when a token names an unknown ``kid`` so a
  key rotation needs no restart, but one fetch at a time, within a deadline and at most once per
  interval, so tokens with invented kids can neither stall the server nor make it hammer the issuer),
  ``iss`` the configured issuer, ``aud`` this server's resource URL (RFC 8707 audience binding), ``exp``
  and ``nbf`` enforced and numbers (RFC 7519 NumericDates), ``sub`` required and not blank. A token that
  fails any check is no token: the SDK answers ``401`` with ``WWW-Authenticate: Bearer
  error="invalid_token"`` (RFC 6750 §3.1) naming the RFC 9728 metadata.
* :data:`TOOL_SCOPES`: reading needs ``osbp:read``, sending a verification ``osbp:verify``, booking
  ``osbp:book``. A ``tools/call`` without its tool's scope is answered ``403 insufficient_scope`` with the
  scope to ask for (:mod:`osbp.server.http` checks it before the call reaches the server).
* The token's organizations claim (``osbp_organizations`` by default: a list of organization ids, or
  ``"*"`` for any) becomes the call's :class:`~osbp.protocol.principal.Principal`; a token without the
  claim may act for no organization.
"""

from __future__ import annotations

import json
import logging
import math
import time
from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

import anyio
import httpx2
import jwt
from jwt import PyJWK, PyJWKSet
from jwt.exceptions import InvalidSubjectError
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, RequireAuthMiddleware
from mcp.server.auth.provider import AccessToken
from starlette.types import Receive, Scope, Send

from osbp.protocol.models import ToolName
from osbp.protocol.principal import Principal

__all__ = [
    "ALGORITHMS",
    "BOOK",
    "NO_TOKEN",
    "READ",
    "TOOL_SCOPES",
    "VERIFY",
    "JwtVerifier",
    "KeySet",
    "OsbpAccessToken",
    "RequireBearer",
    "principal_of",
]

logger = logging.getLogger("osbp.server")

READ = "osbp:read"
VERIFY = "osbp:verify"
BOOK = "osbp:book"

#: The scope each tool needs.
TOOL_SCOPES: dict[ToolName, str] = {
    "service.describe": READ,
    "availability.find": READ,
    "policy.explain": READ,
    "booking.status": READ,
    "handoff.request": READ,
    "verification.send": VERIFY,
    "verification.verify": VERIFY,
    "booking.create": BOOK,
}

#: Asymmetric algorithms only: a resource server never holds a key that could mint tokens.
ALGORITHMS = ("RS256", "RS384", "RS512", "PS256", "ES256", "ES384", "EdDSA")
#: Clock skew tolerated on exp/nbf between the issuer and this server.
_LEEWAY_S = 30
#: A cached key set is fetched again once it is this old (by the first request after; a failure keeps it)...
_REFRESH_AFTER_S = 1800.0
#: ...and no longer used once this long has passed since the last successful fetch.
_EXPIRE_AFTER_S = 3600.0
#: The largest JWKS read (a set of a few keys is a few KiB).
_JWKS_MAX_BYTES = 65_536
#: The claims RFC 7519 §2 makes NumericDates: JSON numbers, never strings.
_NUMERIC_DATES = ("exp", "nbf", "iat")


class OsbpAccessToken(AccessToken):
    """The SDK's access token plus the organizations the token may act for (``None``: any)."""

    organizations: list[str] | None = None


class KeySet:
    """The issuer's signing keys from a JWKS URL or file: fetched once at a time, rarely, within a deadline.

    A fetch is **single-flight** (requests that miss while one is under way wait for that one), **bounded**
    (``timeout_s`` for the whole fetch, however slowly the issuer drips its answer; a waiter waits no
    longer), **rate-limited** (at most one fetch started per ``refresh_s``, whatever the number of unknown
    ``kid`` values asked for and whether the last fetch worked) and **negatively cached**: a ``kid`` not in
    the set the last fetch brought is unknown until the next fetch is allowed, answered at once without
    any I/O. The negative cache is that rule, not a list of kids: a list would grow with every random kid
    an unauthenticated caller invents.

    A token whose ``kid`` is in the cached set is verified with it at once, never held by a fetch under
    way for another kid. The set is fetched again by the first request after it is ``_REFRESH_AFTER_S`` old
    (that one request waits, within ``timeout_s``; a failed refresh keeps the set) and is no longer used
    once ``_EXPIRE_AFTER_S`` has passed without a successful fetch, so a key the issuer withdrew stops
    being accepted within an hour, as PyJWT's one-hour cache had it.
    """

    def __init__(
        self,
        source: str,
        *,
        refresh_s: float = 30.0,
        timeout_s: float = 5.0,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._source = source
        self._url = "://" in source
        self._refresh_s = refresh_s
        self._timeout_s = timeout_s
        self._clock = clock
        self._keys: list[PyJWK] = []
        self._fetched_at: float | None = None  # the last successful fetch
        self._attempted_at = -math.inf  # the last fetch started, successful or not
        self._inflight: anyio.Event | None = None
        #: Fetches started (for the log and for tests).
        self.fetches = 0

    def _usable(self, kid: object, now: float) -> PyJWK | None:
        """The cached key for ``kid`` (a token without one: the set's only key), if the set is in date."""
        if self._fetched_at is None or now - self._fetched_at >= _EXPIRE_AFTER_S:
            return None
        if kid is None:
            return self._keys[0] if len(self._keys) == 1 else None
        return next((key for key in self._keys if key.key_id == kid), None)

    def _allowed(self, now: float) -> bool:
        return self._inflight is None and now - self._attempted_at >= self._refresh_s

    async def key_for(self, token: str) -> PyJWK:
        """The key that signed ``token``; raises ``jwt.PyJWTError`` (unknown kid, no keys, bad header)."""
        kid = jwt.get_unverified_header(token).get("kid")
        if kid is not None and not isinstance(kid, str):
            raise jwt.InvalidTokenError("the kid header must be a string")
        now = self._clock()
        key = self._usable(kid, now)
        if key is not None:
            if now - (self._fetched_at or now) >= _REFRESH_AFTER_S and self._allowed(now):
                await self._refresh()  # due: this one request refreshes; the others go on with the set
                key = self._usable(kid, self._clock())
        elif self._inflight is not None:
            with anyio.move_on_after(self._timeout_s):
                await self._inflight.wait()
            key = self._usable(kid, self._clock())
        elif self._allowed(now):
            await self._refresh()
            key = self._usable(kid, self._clock())
        if key is None:
            raise jwt.PyJWKError(f"no key with kid {kid!r} in the issuer's JWKS")
        return key

    async def _refresh(self) -> None:
        """One fetch within ``timeout_s``; the cached set is replaced only by a good one."""
        done = self._inflight = anyio.Event()
        self._attempted_at = self._clock()
        self.fetches += 1
        try:
            with anyio.move_on_after(self._timeout_s) as deadline:
                keys = await (self._fetch_url() if self._url else self._read_file())
            if deadline.cancelled_caught:
                raise TimeoutError(f"no answer within {self._timeout_s:g} s")
            self._keys = keys
            self._fetched_at = self._clock()
        except (httpx2.HTTPError, OSError, ValueError, jwt.PyJWTError) as error:
            logger.warning(
                "jwks_fetch_failed",
                extra={
                    "reason": type(error).__name__,
                    "detail": str(error)[:200],
                    "next_fetch_in_s": self._refresh_s,
                },
            )
        finally:
            self._inflight = None
            done.set()

    async def _fetch_url(self) -> list[PyJWK]:
        # Proxies and netrc from the environment must not reroute the fetch (as for the platform); no
        # redirects (PyJWKClient refused them too); the body is read up to a cap, never unbounded.
        async with (
            httpx2.AsyncClient(timeout=self._timeout_s, trust_env=False, follow_redirects=False) as client,
            client.stream("GET", self._source, headers={"accept": "application/json"}) as response,
        ):
            if response.status_code != 200:
                raise ValueError(f"the JWKS URL answered {response.status_code}")
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > _JWKS_MAX_BYTES:
                    raise ValueError(f"the JWKS is over {_JWKS_MAX_BYTES} bytes")
        return _signing_keys(json.loads(body))

    async def _read_file(self) -> list[PyJWK]:
        return _signing_keys(json.loads(await anyio.Path(self._source).read_bytes()))


def _signing_keys(document: object) -> list[PyJWK]:
    """The signature keys of a JWKS document (``use`` ``sig`` or absent); raises for no usable key."""
    if not isinstance(document, dict):
        raise ValueError("the JWKS is not a JSON object")
    keys = [key for key in PyJWKSet.from_dict(document).keys if key.public_key_use in ("sig", None)]
    if not keys:
        raise jwt.PyJWKSetError("the JWKS has no signature key")
    return keys


class JwtVerifier:
    """The SDK ``TokenVerifier`` for the configured issuer, audience and organizations claim."""

    def __init__(self, *, issuer: str, audience: str, keys: KeySet, organizations_claim: str) -> None:
        self._issuer = issuer
        self._audience = audience
        self._keys = keys
        self._claim = organizations_claim

    def _decode(self, token: str, key: PyJWK) -> dict[str, Any]:
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=list(ALGORITHMS),
            audience=self._audience,
            issuer=self._issuer,
            leeway=_LEEWAY_S,
            options={"require": ["exp", "iss", "aud", "sub"]},
        )
        # PyJWT takes int() of exp/nbf/iat, so "9999999999" passes as a date: RFC 7519 wants a number.
        for name in _NUMERIC_DATES:
            value = claims.get(name)
            if name in claims and (isinstance(value, bool) or not isinstance(value, int | float)):
                raise jwt.InvalidTokenError(f"{name} must be a NumericDate (a JSON number)")
        # PyJWT checks that sub is a string; an empty one would make every such token one anonymous user.
        if not claims["sub"].strip():
            raise InvalidSubjectError("sub must not be empty")
        return claims

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's access info, or ``None`` for any token this server must not accept."""
        try:
            # Fetching keys is async and bounded (KeySet); verifying one signature is CPU only.
            claims = self._decode(token, await self._keys.key_for(token))
        except (jwt.PyJWTError, ValueError) as error:
            # The reason only (expired, wrong audience...), never the token.
            logger.info("bearer_token_rejected", extra={"reason": type(error).__name__})
            _REJECTION.set(_why(error))
            return None
        scope = claims.get("scope", "")
        listed = claims.get(self._claim)
        organizations: list[str] | None = []  # no claim, or a malformed one: no organization at all
        if listed == "*":
            organizations = None
        elif isinstance(listed, list):
            organizations = [item for item in listed if isinstance(item, str)]
        return OsbpAccessToken(
            token=token,
            client_id=str(claims.get("client_id") or claims.get("azp") or claims["sub"]),
            scopes=scope.split() if isinstance(scope, str) else [],
            expires_at=int(claims["exp"]),
            resource=self._audience,
            subject=str(claims["sub"]),
            claims=claims,
            organizations=organizations,
        )


#: Why this request's bearer token was refused, for its 401 (set by verify_token in the request's task).
_REJECTION: ContextVar[str | None] = ContextVar("osbp_bearer_rejection", default=None)
#: The 401's description when no token came at all.
NO_TOKEN = "no bearer token: send Authorization: Bearer <access token>"  # noqa: S105 - a message, no secret


def _why(error: Exception) -> str:
    """A refused token's reason in the words of RFC 6750's error_description: the class, never the token."""
    if isinstance(error, jwt.ExpiredSignatureError):
        return "the token has expired"
    if isinstance(error, jwt.ImmatureSignatureError):
        return "the token is not valid yet (nbf or iat in the future)"
    if isinstance(error, jwt.InvalidAudienceError):
        return "the token is for another resource (aud is not this server's resource URL)"
    if isinstance(error, jwt.InvalidIssuerError):
        return "the token is from another issuer"
    if isinstance(error, jwt.PyJWKError | jwt.InvalidSignatureError):
        return "the token is not signed by a key of the issuer's JWKS"
    return "the token is malformed or lacks a required claim"


class RequireBearer(RequireAuthMiddleware):
    """The SDK's bearer requirement, with a 401 that says why: no token, or which check refused it."""

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if not isinstance(scope.get("user"), AuthenticatedUser):
            sent = any(name == b"authorization" for name, _ in scope.get("headers", ()))
            why = (_REJECTION.get() or "the token was not accepted") if sent else NO_TOKEN
            await self._send_auth_error(send, status_code=401, error="invalid_token", description=why)
            return
        await super().__call__(scope, receive, send)


def principal_of(request: object) -> Principal | None:
    """The principal of an HTTP request the SDK authenticated (its ``AuthenticatedUser``), else ``None``."""
    scope = getattr(request, "scope", None)
    user = scope.get("user") if isinstance(scope, dict) else None
    token = getattr(user, "access_token", None)
    if not isinstance(token, OsbpAccessToken) or token.subject is None:
        return None
    issuer = str((token.claims or {}).get("iss", ""))
    organizations = None if token.organizations is None else frozenset(token.organizations)
    return Principal(issuer=issuer, subject=token.subject, organizations=organizations)
