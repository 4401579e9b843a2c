"""The remote server's parts of the settings: the Streamable HTTP listener and the OAuth resource server.

Both are nested in :class:`~osbp.server.settings.ServerSettings` (``http`` and ``auth``) and, like every
setting, name their variable and flag once in a :class:`~osbp.adapter.settings.Setting`. They only
matter with ``--transport streamable-http``; stdio ignores them.

Defaults are the safe ones: loopback address, ``Host``/``Origin`` allow-lists of the loopback names,
a 1 MiB request body, 10 seconds to send a request's headers and 30 to receive a request, 200 requests
served at once, 1000 connections open (64 per client address), and no authorization (which is refused
on any address but loopback: :func:`osbp.server.http.refusal`).
"""

from __future__ import annotations

import ipaddress
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field

from osbp.adapter.settings import Setting

__all__ = ["LOOPBACK_HOSTS", "HttpSettings", "OAuthSettings", "is_loopback", "split_list"]

#: The names a loopback listener answers to, and the defaults of both allow-lists.
LOOPBACK_HOSTS = ("127.0.0.1", "localhost", "[::1]")


def split_list(text: str) -> tuple[str, ...]:
    """A comma-separated setting as its items (blank items dropped)."""
    return tuple(item.strip() for item in text.split(",") if item.strip())


def is_loopback(host: str) -> bool:
    """Whether a bind address is a loopback one (``localhost`` included)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


class HttpSettings(BaseModel):
    """The Streamable HTTP listener: where it binds, whom it answers, how much it accepts."""

    model_config = ConfigDict(extra="forbid")

    host: Annotated[str, Setting("OSBP_HTTP_HOST", "--host", "not be empty", "ADDRESS")] = Field(
        default="127.0.0.1", min_length=1, description="address to bind (loopback unless --allow-remote)"
    )
    port: Annotated[int, Setting("OSBP_HTTP_PORT", "--port", "be a port number 0-65535", "PORT")] = Field(
        default=8500, ge=0, le=65_535, description="TCP port to listen on (0: any free port)"
    )
    allow_remote: Annotated[
        bool, Setting("OSBP_HTTP_ALLOW_REMOTE", "--allow-remote", "be true or false", "BOOL")
    ] = Field(
        default=False,
        description="allow binding a non-loopback address (authorization must be configured too)",
    )
    allowed_hosts: Annotated[str, Setting("OSBP_HTTP_ALLOWED_HOSTS", "--allowed-hosts", metavar="HOSTS")] = (
        Field(
            default="",
            description="comma-separated Host values accepted (host or host:port, host:* for any port; "
            "default: the loopback names on any port)",
        )
    )
    allowed_origins: Annotated[
        str, Setting("OSBP_HTTP_ALLOWED_ORIGINS", "--allowed-origins", metavar="ORIGINS")
    ] = Field(
        default="",
        description="comma-separated Origin values accepted (a request without Origin is accepted; "
        "default: http://<loopback name>:* )",
    )
    max_body_bytes: Annotated[
        int, Setting("OSBP_HTTP_MAX_BODY_BYTES", rule="be a positive number of bytes")
    ] = Field(default=1_048_576, gt=0, description="largest request body accepted (413 beyond)")
    request_timeout_s: Annotated[
        float, Setting("OSBP_HTTP_REQUEST_TIMEOUT_S", rule="be a positive number of seconds")
    ] = Field(default=30.0, gt=0, description="time a client has to send a whole request (408 beyond)")
    max_connections: Annotated[
        int, Setting("OSBP_HTTP_MAX_CONNECTIONS", rule="be a positive number of connections")
    ] = Field(
        default=200,
        gt=0,
        description="requests served at once (503 beyond); connections waiting for a request don't count",
    )
    header_timeout_s: Annotated[
        float, Setting("OSBP_HTTP_HEADER_TIMEOUT_S", rule="be a positive number of seconds")
    ] = Field(
        default=10.0,
        gt=0,
        allow_inf_nan=False,
        description="time a connection has to send a request's headers, from its opening or its last "
        "response (closed beyond, 408 if it had begun)",
    )
    keep_alive_s: Annotated[
        int, Setting("OSBP_HTTP_KEEP_ALIVE_S", rule="be a positive whole number of seconds")
    ] = Field(default=5, gt=0, description="an idle keep-alive connection is closed after this long")
    max_open_connections: Annotated[
        int, Setting("OSBP_HTTP_MAX_OPEN_CONNECTIONS", rule="be a positive number of connections")
    ] = Field(
        default=1000,
        gt=0,
        description="connections open at once, idle ones included (beyond it the one waiting longest for "
        "a request is closed)",
    )
    max_connections_per_client: Annotated[
        int, Setting("OSBP_HTTP_MAX_CONNECTIONS_PER_CLIENT", rule="be a positive number of connections")
    ] = Field(
        default=64,
        gt=0,
        description="connections open at once from one client address (the TCP peer, never a forwarded "
        "header; behind a proxy, the proxy's); one more is closed at once",
    )

    def hosts(self) -> list[str]:
        """The Host allow-list (loopback names on any port by default)."""
        return list(split_list(self.allowed_hosts)) or [f"{name}:*" for name in LOOPBACK_HOSTS]

    def origins(self) -> list[str]:
        """The Origin allow-list (loopback http origins on any port by default)."""
        return list(split_list(self.allowed_origins)) or [f"http://{name}:*" for name in LOOPBACK_HOSTS]


class OAuthSettings(BaseModel):
    """The OAuth 2.1 resource server: whose tokens are accepted, and for which resource."""

    model_config = ConfigDict(extra="forbid")

    issuer: Annotated[
        str | None, Setting("OSBP_AUTH_ISSUER", "--auth-issuer", "be an http(s) URL", "URL")
    ] = Field(
        default=None,
        pattern=r"^https?://\S+$",
        description="the authorization server whose JWTs are accepted (enables authorization)",
    )
    jwks: Annotated[str | None, Setting("OSBP_AUTH_JWKS", "--auth-jwks", metavar="URL|FILE")] = Field(
        default=None,
        description="the issuer's JWKS: an http(s) URL or a file (default: <issuer>/.well-known/jwks.json)",
    )
    resource_url: Annotated[
        str | None, Setting("OSBP_AUTH_RESOURCE_URL", "--resource-url", "be an http(s) URL", "URL")
    ] = Field(
        default=None,
        pattern=r"^https?://\S+$",
        description="this server's resource URL, the tokens' audience (default: http://HOST:PORT/mcp)",
    )
    organizations_claim: Annotated[str, Setting("OSBP_AUTH_ORGANIZATIONS_CLAIM", rule="not be empty")] = (
        Field(
            default="osbp_organizations",
            min_length=1,
            description="the token claim listing the organizations it may act for",
        )
    )
    jwks_refresh_s: Annotated[
        float, Setting("OSBP_AUTH_JWKS_REFRESH_S", rule="be a positive number of seconds")
    ] = Field(
        default=30.0,
        gt=0,
        allow_inf_nan=False,
        description="at most one JWKS fetch per this many seconds, however many unknown kids are asked for",
    )
    jwks_timeout_s: Annotated[
        float, Setting("OSBP_AUTH_JWKS_TIMEOUT_S", rule="be a positive number of seconds")
    ] = Field(
        default=5.0,
        gt=0,
        allow_inf_nan=False,
        description="the longest a JWKS fetch may take, and a request wait for one",
    )

    @property
    def enabled(self) -> bool:
        """Whether bearer tokens are required."""
        return self.issuer is not None
