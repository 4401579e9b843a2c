"""The platform's one settings object (environment prefix `OSBP_BACKEND_`).

Every knob the platform has lives here; the command line (`osbp backend`) derives one flag per field
(`rate_limit_quota` → `--rate-limit-quota`, environment `OSBP_BACKEND_RATE_LIMIT_QUOTA`), so a message
about a field can name the flag and the variable a user actually types. A non-loopback bind is refused
unless `allow_non_loopback` says so explicitly. Proxy headers (`X-Forwarded-For`) are believed only from
the addresses in `trusted_proxies`, none by default, so a client cannot choose its own rate-limit key.
"""

from __future__ import annotations

import ipaddress
from datetime import UTC, datetime
from typing import Annotated, Literal

from pydantic import AwareDatetime, Field, ValidationInfo, field_validator
from pydantic_core import PydanticCustomError
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

from osbp.backend.database_url import parse_database
from osbp.backend.fault_profile import FaultProfile, load_profile
from osbp.backend.listening import ip_of

__all__ = ["ENV_PREFIX", "BackendSettings", "LogLevel", "env_var", "flag", "is_loopback_host"]

ENV_PREFIX = "OSBP_BACKEND_"
LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]


def flag(field: str) -> str:
    """The `osbp backend` flag for a settings field: `log_level` → `--log-level`."""
    return "--" + field.replace("_", "-")


#: The platform's database when `--db` is not given: a SQLite file in the working folder's `.osbp/`.
DEFAULT_DB = ".osbp/backend.db"


def env_var(field: str) -> str:
    """The environment variable for a settings field: `log_level` → `OSBP_BACKEND_LOG_LEVEL`."""
    return ENV_PREFIX + field.upper()


def is_loopback_host(host: str) -> bool:
    """True when `host` names the loopback interface (127.0.0.0/8, ::1, `::ffff:127.x.y.z` or `localhost`)."""
    if host == "localhost":
        return True
    address = ip_of(host)
    return address is not None and address.is_loopback


class BackendSettings(BaseSettings):
    """Configuration of one platform process."""

    model_config = SettingsConfigDict(env_prefix=ENV_PREFIX, extra="ignore")

    db: str = Field(
        default=DEFAULT_DB,
        description="SQLite file path, :memory:, sqlite:///PATH or postgresql://USER@HOST:PORT/DBNAME",
    )
    migrate: bool = Field(
        default=False,
        description="apply pending schema migrations at start-up (a SQLite database always is migrated)",
    )
    # Declared before `host`, whose check reads it.
    allow_non_loopback: bool = Field(default=False, description="permit binding a non-loopback address")
    host: str = Field(default="127.0.0.1", description="bind address (loopback unless allowed otherwise)")
    port: int = Field(default=8400, ge=0, le=65535, description="TCP port 0-65535; 0 picks a free one")
    listen_fd: int | None = Field(
        default=None,
        ge=0,
        description="serve on the listening TCP socket inherited as this file descriptor instead of "
        "binding host and port (a parent that bound it knows the address before the platform starts)",
    )
    now: AwareDatetime | None = Field(
        default=None, description="freeze the platform clock at this RFC 3339 instant"
    )
    enable_testing: bool = Field(default=False, description="mount the /_testing control surface")
    rate_limit_quota: int = Field(default=1000, ge=1, description="requests per client per window")
    rate_limit_window_seconds: int = Field(default=60, ge=1, description="rate-limit window in seconds")
    verification_send_limit: int = Field(default=5, ge=1, description="code sends per contact per window")
    verification_send_window_seconds: int = Field(
        default=600, ge=1, description="code-send window in seconds"
    )
    trusted_proxies: Annotated[tuple[str, ...], NoDecode] = Field(
        default=(),
        description="comma-separated proxy addresses or networks (127.0.0.1,10.0.0.0/8) whose "
        "X-Forwarded-For names the client; none by default, so the peer address is the client",
    )
    log_level: LogLevel = Field(default="INFO", description="stderr JSON log level")
    faults: Annotated[FaultProfile | None, NoDecode] = Field(
        default=None,
        description="a fault profile for the whole run: inline JSON or a JSON file (docs/backend-api.md, "
        "Fault profile)",
    )
    fault_seed: int | None = Field(
        default=None, description="seed for the fault profile's draws (overrides the profile's seed)"
    )
    exit_with_stdin: bool = Field(
        default=False,
        description="stop (gracefully) once standard input is closed: a parent that spawned the platform "
        "ends it by closing the pipe, and the platform never outlives a parent killed outright",
    )
    pause_webhooks: bool = Field(
        default=False, description="queue webhook events without delivering them (no delivery worker runs)"
    )
    allow_non_loopback_webhooks: bool = Field(
        default=False, description="permit webhook endpoints whose URL host is not loopback"
    )
    webhook_max_attempts: int = Field(
        default=8, ge=1, le=50, description="delivery attempts per webhook event before it is given up"
    )
    webhook_retry_base_seconds: float = Field(
        default=5.0, gt=0, le=86400, description="delay after a failed first attempt; doubles each time"
    )
    webhook_timeout_seconds: float = Field(
        default=5.0, gt=0, le=120, description="seconds a webhook receiver has to answer an attempt"
    )

    def fault_profile(self) -> FaultProfile | None:
        """The run's fault profile, seeded by `fault_seed` when that is given."""
        if self.faults is None or self.fault_seed is None:
            return self.faults
        return self.faults.model_copy(update={"seed": self.fault_seed})

    @field_validator("host")
    @classmethod
    def _loopback_only(cls, value: str, info: ValidationInfo) -> str:
        if not info.data.get("allow_non_loopback", False) and not is_loopback_host(value):
            raise PydanticCustomError(
                "non_loopback_host",
                "refusing a non-loopback bind: the platform listens on loopback only (127.0.0.1, ::1 or "
                "localhost); use one of those, or add {allow_flag} ({allow_env}=true) to expose it on "
                "purpose",
                {"allow_flag": flag("allow_non_loopback"), "allow_env": env_var("allow_non_loopback")},
            )
        return value

    @field_validator("db")
    @classmethod
    def _database(cls, value: str) -> str:
        try:
            database = parse_database(value)
        except ValueError as error:
            raise PydanticCustomError("database_url", str(error)) from None
        folder = database.path.parent if database.path is not None else None
        # Only the default's own folder (.osbp/) is made: a mistyped folder is a mistake, not a place to
        # create a new, empty platform.
        if folder is not None and not folder.exists() and value.strip() != DEFAULT_DB:
            raise PydanticCustomError(
                "database_folder", "the folder {folder} does not exist", {"folder": str(folder)}
            )
        return value.strip()

    @field_validator("now", mode="before")
    @classmethod
    def _rfc3339(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        try:
            parsed = datetime.fromisoformat(value)
        except ValueError:
            parsed = None
        if parsed is None or parsed.tzinfo is None:
            raise PydanticCustomError(
                "rfc3339_instant", "expected an RFC 3339 instant with an offset, such as 2026-05-04T12:00:00Z"
            )
        return parsed

    @field_validator("now")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return None if value is None else value.astimezone(UTC)

    @field_validator("trusted_proxies", mode="before")
    @classmethod
    def _comma_separated(cls, value: object) -> object:
        if isinstance(value, str):
            return tuple(item.strip() for item in value.split(",") if item.strip())
        return value

    @field_validator("trusted_proxies")
    @classmethod
    def _networks(cls, value: tuple[str, ...]) -> tuple[str, ...]:
        networks = []
        for item in value:
            try:
                network = ipaddress.ip_network(item.strip(), strict=False)
            except ValueError:
                raise PydanticCustomError(
                    "trusted_proxy",
                    "'{item}' is not an IP address or network; list proxies as addresses or CIDR networks "
                    "separated by commas, such as 127.0.0.1,10.0.0.0/8",
                    {"item": item},
                ) from None
            # A single address stays an address (uvicorn compares it as one); a network keeps its prefix.
            single = network.prefixlen == network.max_prefixlen
            networks.append(str(network.network_address) if single else str(network))
        return tuple(networks)

    @field_validator("faults", mode="before")
    @classmethod
    def _profile(cls, value: object) -> object:
        if not isinstance(value, str):
            return value
        try:
            return load_profile(value)
        except ValueError as error:
            raise PydanticCustomError("fault_profile", "{reason}", {"reason": str(error)}) from None

    @field_validator("log_level", mode="before")
    @classmethod
    def _upper(cls, value: object) -> object:
        return value.upper() if isinstance(value, str) else value
