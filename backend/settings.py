"""The platform's one settings object (environment prefix `OSBP_BACKEND_`).

Every knob the platform has lives here; the command line (`osbp backend`) mirrors these fields as flags.
A non-loopback bind is refused unless `allow_non_loopback` says so explicitly.
"""

from __future__ import annotations

import ipaddress
from datetime import UTC, datetime

from pydantic import AwareDatetime, Field, field_validator, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

__all__ = ["BackendSettings", "is_loopback_host"]


def is_loopback_host(host: str) -> bool:
    """True when `host` names the loopback interface (127.0.0.0/8, ::1 or `localhost`)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class BackendSettings(BaseSettings):
    """Configuration of one platform process."""

    model_config = SettingsConfigDict(env_prefix="OSBP_BACKEND_", extra="ignore")

    db: str = Field(default=".osbp/backend.db", description="SQLite file path, or `:memory:`")
    host: str = Field(default="127.0.0.1", description="bind address (loopback unless allowed otherwise)")
    port: int = Field(default=8400, ge=0, le=65535, description="TCP port; 0 picks an ephemeral port")
    allow_non_loopback: bool = Field(default=False, description="permit binding a non-loopback address")
    now: AwareDatetime | None = Field(default=None, description="freeze the platform clock at this instant")
    enable_testing: bool = Field(default=False, description="mount the /_testing control surface")
    rate_limit_quota: int = Field(default=1000, ge=1, description="requests per client per window")
    rate_limit_window_seconds: int = Field(default=60, ge=1, description="rate-limit window length")
    verification_send_limit: int = Field(default=5, ge=1, description="code sends per contact per window")
    verification_send_window_seconds: int = Field(default=600, ge=1, description="send-limit window")
    log_level: str = Field(default="INFO", description="stderr JSON log level")

    @field_validator("now")
    @classmethod
    def _utc(cls, value: datetime | None) -> datetime | None:
        return None if value is None else value.astimezone(UTC)

    @model_validator(mode="after")
    def _loopback_only(self) -> BackendSettings:
        if not self.allow_non_loopback and not is_loopback_host(self.host):
            raise ValueError(
                f"refusing to bind non-loopback host {self.host!r}; set allow_non_loopback to permit it"
            )
        return self
