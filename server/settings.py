"""The MCP server process's settings: flags first, then ``OSBP_*`` environment variables.

One organization per server process (the spec's scope), so the platform base URL and the organization id
must be configured explicitly; :meth:`ServerSettings.missing` names what is absent so the entry point can
say so and exit 2 instead of guessing a merchant.

:meth:`ServerSettings.clock` is the process's one clock, shared by the adapter (mandate expiry, approval
TTLs, idempotency leases) and the server (audit ``created_at``): the system clock, or, when ``now`` is
set (``--now`` / ``OSBP_NOW``), a :class:`~osbp.protocol.clock.FixedClock` that never advances. The fixed
clock exists for demos, recorded traces and tests that freeze the platform's clock at the same instant;
a real deployment never sets it, because a frozen clock never lets a mandate or an approval expire.
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from pydantic import AliasChoices, AwareDatetime, Field, PrivateAttr, SecretStr, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from osbp.protocol.clock import Clock, FixedClock, SystemClock
from osbp.protocol.timeutil import parse_instant
from osbp.server.audit import AUDIT_KEY_MIN_LENGTH, DEFAULT_AUDIT_PATH

__all__ = ["DEFAULT_ADAPTER_FACTORY", "REQUIRED", "LogLevel", "ServerSettings"]

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
#: The reference adapter for the synthetic platform; any ``module:function`` taking ServerSettings works.
DEFAULT_ADAPTER_FACTORY = "osbp.server.adapter_factory:reference_adapter"


class ServerSettings(BaseSettings):
    """Configuration of one MCP server process (``OSBP_<FIELD>`` environment variables)."""

    # extra="ignore": the adapter reads its own OSBP_* settings from the same environment.
    model_config = SettingsConfigDict(env_prefix="OSBP_", extra="ignore", populate_by_name=True)

    platform_base_url: str | None = Field(
        default=None,
        validation_alias=AliasChoices("platform_base_url", "OSBP_PLATFORM_BASE_URL"),
        pattern=r"^https?://\S+$",
        description="Base URL of the booking platform.",
    )
    organization_id: str | None = Field(
        default=None, min_length=1, description="The one organization this server process serves."
    )
    state_path: Path | None = Field(
        default=None, description="Local OSBP state file (idempotency, approvals); unset: the adapter's."
    )
    audit_log_path: Path = Field(default=DEFAULT_AUDIT_PATH, description="The JSONL audit log.")
    audit_key: SecretStr | None = Field(
        default=None,
        min_length=AUDIT_KEY_MIN_LENGTH,
        description="HMAC key for the audit log's macs (OSBP_AUDIT_KEY, environment only; never a flag).",
    )
    log_level: LogLevel = Field(default="WARNING", description="stderr log level.")
    adapter_factory: str = Field(
        default=DEFAULT_ADAPTER_FACTORY,
        pattern=r"^[\w.]+:\w+$",
        description="module:function building the BookingAdapter from these settings.",
    )
    now: AwareDatetime | None = Field(
        default=None,
        description="Freeze this process's clock at this RFC 3339 instant (demos, traces, tests only).",
    )
    _clock: Clock | None = PrivateAttr(default=None)

    @field_validator("now", mode="before")
    @classmethod
    def _rfc3339(cls, value: Any) -> Any:
        # Only an RFC 3339 instant with Z or an offset: no bare dates, no epoch numbers, no local times.
        if isinstance(value, str):
            instant = parse_instant(value)
            if instant is None:
                raise ValueError("must be an RFC 3339 instant with Z or an offset, like 2030-05-06T13:00:00Z")
            return instant
        if isinstance(value, datetime) or value is None:
            return value
        raise ValueError("must be an RFC 3339 instant with Z or an offset, like 2030-05-06T13:00:00Z")

    def clock(self) -> Clock:
        """The process's one clock, the same object every time: frozen at ``now`` if set, else real."""
        if self._clock is None:
            self._clock = FixedClock(self.now) if self.now is not None else SystemClock()
        return self._clock

    def audit_key_bytes(self) -> bytes | None:
        """The audit key as bytes (UTF-8 of ``OSBP_AUDIT_KEY``), or None for an unkeyed log."""
        return None if self.audit_key is None else self.audit_key.get_secret_value().encode()

    def missing(self) -> list[str]:
        """The required settings that are not configured, as ``--flag / OSBP_VARIABLE`` descriptions."""
        return [how for field, how in REQUIRED.items() if getattr(self, field) is None]


#: Required settings and how to set them.
REQUIRED: dict[str, str] = {
    "platform_base_url": "--platform-url or OSBP_PLATFORM_BASE_URL",
    "organization_id": "--organization-id or OSBP_ORGANIZATION_ID",
}
