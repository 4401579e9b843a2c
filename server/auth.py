"""The OAuth 2.1 resource server: bearer JWTs verified against the issuer's keys, scopes per tool.

As the MCP authorization specification describes it (this server is a resource server only; tokens come
from a separate authorization server, ``osbp auth`` in development):

* :class:`JwtVerifier` is the SDK's ``TokenVerifier``: the JWT's signature against the issuer's JWKS
  (:class:`KeySet`: a URL or a file, cached, fetched again when a token names an unknown ``kid``, so a
  key rotation needs no restart), ``iss`` the configured issuer, ``aud`` this server's resource URL
  (RFC 8707 audience binding), ``exp`` and ``nbf`` enforced, ``sub`` required. A token that fails any
  check is no token: the SDK answers ``401`` with ``WWW-Authenticate`` naming the RFC 9728 metadata.
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
import time
from pathlib import Path
from typing import Any

import anyio.to_thread
import jwt
from jwt import PyJWK, PyJWKClient, PyJWKSet
from mcp.server.auth.provider import AccessToken

from osbp.protocol.models import ToolName
from osbp.protocol.principal import Principal

__all__ = [
    "ALGORITHMS",
    "BOOK",
    "READ",
    "TOOL_SCOPES",
    "VERIFY",
    "JwtVerifier",
    "KeySet",
    "OsbpAccessToken",
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
#: A kid-miss refetch at most this often, so unknown-kid tokens cannot make the server hammer the issuer.
_REFETCH_EVERY_S = 10.0


class OsbpAccessToken(AccessToken):
    """The SDK's access token plus the organizations the token may act for (``None``: any)."""

    organizations: list[str] | None = None


class KeySet:
    """The issuer's signing keys from a JWKS URL or file, cached; fetched again on an unknown ``kid``."""

    def __init__(self, source: str) -> None:
        self._source = source
        self._client = PyJWKClient(source, cache_keys=True, lifespan=3600) if "://" in source else None
        self._keys: PyJWKSet | None = None
        self._fetched_at = 0.0

    def _file_keys(self, *, refresh: bool) -> PyJWKSet:
        now = time.monotonic()
        if self._keys is None or (refresh and now - self._fetched_at >= _REFETCH_EVERY_S):
            self._keys = PyJWKSet.from_dict(json.loads(Path(self._source).read_text(encoding="utf-8")))
            self._fetched_at = now
        return self._keys

    def key_for(self, token: str) -> PyJWK:
        """The key that signed ``token`` (blocking: a URL may be fetched); raises ``jwt.PyJWTError``."""
        if self._client is not None:
            return self._client.get_signing_key_from_jwt(token)  # refetches the set on an unknown kid
        kid = jwt.get_unverified_header(token).get("kid")
        for refresh in (False, True):
            keys = self._file_keys(refresh=refresh)
            for key in keys.keys:
                if kid is None or key.key_id == kid:
                    return key
        raise jwt.PyJWKError(f"no key with kid {kid!r} in the JWKS file")


class JwtVerifier:
    """The SDK ``TokenVerifier`` for the configured issuer, audience and organizations claim."""

    def __init__(self, *, issuer: str, audience: str, keys: KeySet, organizations_claim: str) -> None:
        self._issuer = issuer
        self._audience = audience
        self._keys = keys
        self._claim = organizations_claim

    def _decode(self, token: str) -> dict[str, Any]:
        key = self._keys.key_for(token)
        claims: dict[str, Any] = jwt.decode(
            token,
            key,
            algorithms=list(ALGORITHMS),
            audience=self._audience,
            issuer=self._issuer,
            leeway=_LEEWAY_S,
            options={"require": ["exp", "iss", "aud", "sub"]},
        )
        return claims

    async def verify_token(self, token: str) -> AccessToken | None:
        """The token's access info, or ``None`` for any token this server must not accept."""
        try:
            claims = await anyio.to_thread.run_sync(self._decode, token)
        except (jwt.PyJWTError, OSError, ValueError) as error:
            # The reason only (expired, wrong audience...), never the token.
            logger.info("bearer_token_rejected", extra={"reason": type(error).__name__})
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
