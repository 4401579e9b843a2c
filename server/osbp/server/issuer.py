"""`osbp auth`: a tiny local token issuer, a development tool for remote OSBP (never for production).

A remote OSBP server is an OAuth resource server: it accepts bearer JWTs of a configured issuer
(:mod:`osbp.server.auth`). Production points it at a real authorization server. For local development,
tests and demos this issuer stands in:

* ``osbp auth token --scope "osbp:read osbp:book" --org ORG [--org ORG2 | --org '*'] [--subject S]
  [--ttl SECONDS] [--audience URL]`` prints a signed JWT on stdout (no OAuth flow: it is minted here);
* ``osbp auth jwks`` prints the public JWKS (for the server's ``--auth-jwks FILE``);
* ``osbp auth serve [--port 8600]`` serves the JWKS (``/.well-known/jwks.json``) and RFC 8414 metadata
  on loopback only, for the server's default ``<issuer>/.well-known/jwks.json``.

The signing key (ES256) is created on first use in the state directory (``--state-dir``, default
``.osbp/state``) as ``dev-issuer-key.pem``, ``0600`` in a ``0700`` directory; a key file that group or
others may read or write is refused, as ssh refuses such a private key. The issuer URL is
``http://127.0.0.1:<port>`` (``--issuer`` to change it); the server's ``--auth-issuer`` must be the same.
"""

from __future__ import annotations

import argparse
import json
import os
import stat
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NoReturn

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec

from osbp.protocol.canonical import sha256_hex
from osbp.server.listening import ListenError, listen, url_host
from osbp.server.remote_settings import is_loopback

__all__ = ["DEFAULT_ISSUER", "DevIssuer", "main"]

PROG = "osbp auth"
DEFAULT_PORT = 8600
DEFAULT_ISSUER = f"http://127.0.0.1:{DEFAULT_PORT}"
DEFAULT_AUDIENCE = "http://127.0.0.1:8500/mcp"
DEFAULT_STATE_DIR = Path(".osbp/state")
KEY_FILE = "dev-issuer-key.pem"
#: The longest token this tool mints: a day.
LONGEST_TTL_S = 86_400


class DevIssuer:
    """The development issuer's signing key (created on first use) and what it signs."""

    def __init__(self, state_dir: Path, issuer: str) -> None:
        self.issuer = issuer
        self._path = state_dir / KEY_FILE
        self._key = self._load_or_create()
        self.kid = sha256_hex(self.public_jwk(with_kid=False))[:16]

    def _load_or_create(self) -> ec.EllipticCurvePrivateKey:
        if self._path.exists():
            mode = stat.S_IMODE(self._path.stat().st_mode)
            if mode & 0o077:
                # As ssh does for a private key: one others can read may already be someone else's.
                raise ValueError(
                    f"{self._path} is open to other users (mode {mode:04o}): "
                    f"chmod 600 it, or delete it for a new key"
                )
            key = serialization.load_pem_private_key(self._path.read_bytes(), password=None)
            if not isinstance(key, ec.EllipticCurvePrivateKey):
                raise ValueError(f"{self._path} is not an EC private key")
            return key
        self._path.parent.mkdir(parents=True, mode=0o700, exist_ok=True)
        key = ec.generate_private_key(ec.SECP256R1())
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        fd = os.open(self._path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as out:
            out.write(pem)
        # Said aloud: run from another folder, this is a second key, and a server that reads the first
        # one's JWKS refuses every token it signs.
        sys.stderr.write(
            f"{PROG}: created a new signing key {self._path} (a server must read this key's JWKS: "
            f"`osbp auth jwks` or `osbp auth serve` from this folder, or --state-dir)\n"
        )
        return key

    def public_jwk(self, *, with_kid: bool = True) -> dict[str, Any]:
        """The public key as a JWK."""
        jwk: dict[str, Any] = json.loads(jwt.algorithms.ECAlgorithm.to_jwk(self._key.public_key()))
        jwk |= {"use": "sig", "alg": "ES256"}
        if with_kid:
            jwk["kid"] = self.kid
        return jwk

    def jwks(self) -> dict[str, Any]:
        """The JWKS a resource server verifies this issuer's tokens with."""
        return {"keys": [self.public_jwk()]}

    def token(
        self,
        *,
        subject: str,
        audience: str,
        scopes: Sequence[str],
        organizations: Sequence[str],
        ttl_s: int,
        now: float | None = None,
        claim: str = "osbp_organizations",
    ) -> str:
        """A signed access token (``organizations`` ``["*"]``: any organization)."""
        issued = int(time.time() if now is None else now)
        claims: dict[str, Any] = {
            "iss": self.issuer,
            "sub": subject,
            "aud": audience,
            "iat": issued,
            "nbf": issued,
            "exp": issued + ttl_s,
            "scope": " ".join(scopes),
            "client_id": "osbp-dev",
            claim: "*" if list(organizations) == ["*"] else list(organizations),
        }
        return jwt.encode(claims, self._key, algorithm="ES256", headers={"kid": self.kid})


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog=PROG, description="Development token issuer for remote OSBP (not for production).")
    parser.add_argument(
        "--state-dir", type=Path, default=DEFAULT_STATE_DIR, help="where the signing key lives"
    )
    parser.add_argument("--issuer", default=DEFAULT_ISSUER, help="the issuer URL (iss)")
    commands = parser.add_subparsers(dest="command", required=True)
    token = commands.add_parser("token", help="print a signed access token")
    token.add_argument("--scope", required=True, help='space-separated scopes, e.g. "osbp:read osbp:book"')
    token.add_argument("--org", action="append", required=True, help="an organization id (repeat), or *")
    token.add_argument("--subject", default="dev-user", help="the token subject (sub)")
    token.add_argument("--ttl", type=int, default=3600, help="lifetime in seconds (at most a day)")
    token.add_argument("--audience", default=DEFAULT_AUDIENCE, help="the server's resource URL (aud)")
    commands.add_parser("jwks", help="print the public JWKS")
    serve = commands.add_parser("serve", help="serve the JWKS and metadata on loopback")
    serve.add_argument("--host", default="127.0.0.1", help="loopback address to bind")
    serve.add_argument("--port", type=int, default=DEFAULT_PORT, help="port to listen on")
    return parser


def _fail(message: str) -> int:
    sys.stderr.write(f"{PROG}: {message}\n")
    return 2


def _serve(issuer: DevIssuer, host: str, port: int) -> int:
    import uvicorn  # only `serve` needs a web server
    from starlette.applications import Starlette
    from starlette.requests import Request
    from starlette.responses import JSONResponse
    from starlette.routing import Route

    metadata = {
        "issuer": issuer.issuer,
        "jwks_uri": issuer.issuer.rstrip("/") + "/.well-known/jwks.json",
        "scopes_supported": ["osbp:read", "osbp:verify", "osbp:book"],
        "response_types_supported": [],
        "service_documentation": "osbp auth is a development issuer: tokens come from `osbp auth token`",
    }

    async def jwks(_: Request) -> JSONResponse:
        return JSONResponse(issuer.jwks())

    async def about(_: Request) -> JSONResponse:
        return JSONResponse(metadata)

    app = Starlette(
        routes=[
            Route("/.well-known/jwks.json", jwks),
            Route("/.well-known/oauth-authorization-server", about),
        ]
    )
    # Listening first: a busy port is one line, and "serving" is said only once it is true.
    try:
        sock = listen(host, port)
    except ListenError as error:
        return _fail(f"--port {port}: {error}")
    shown = f"http://{url_host(host)}:{port}"
    sys.stderr.write(f"{PROG}: development issuer {issuer.issuer} serving on {shown}\n")
    config = uvicorn.Config(app, log_config=None, access_log=False)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    finally:
        sock.close()
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """`osbp auth token|jwks|serve`."""
    try:
        args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:
        return int(exc.code or 0)
    # The arguments first: a mistake is answered without making a signing key.
    if args.command == "token":
        if not 0 < args.ttl <= LONGEST_TTL_S:
            return _fail(f"--ttl must be 1 to {LONGEST_TTL_S} seconds")
        if not args.subject.strip():
            return _fail("--subject must not be empty (a resource server refuses a token without one)")
    if args.command == "serve" and not is_loopback(args.host):
        return _fail(f"--host {args.host}: the development issuer serves loopback only")
    try:
        issuer = DevIssuer(args.state_dir, args.issuer)
    except (OSError, ValueError) as error:
        return _fail(f"cannot use the signing key in {args.state_dir}: {error}")
    if args.command == "token":
        token = issuer.token(
            subject=args.subject,
            audience=args.audience,
            scopes=args.scope.split(),
            organizations=args.org,
            ttl_s=args.ttl,
        )
        sys.stdout.write(token + "\n")
        return 0
    if args.command == "jwks":
        sys.stdout.write(json.dumps(issuer.jwks()) + "\n")
        return 0
    return _serve(issuer, args.host, args.port)
