"""The MCP server process's settings: flags first, then ``OSBP_*`` environment variables.

One organization per server process (the spec's scope), so the platform base URL and the organization id
must be configured explicitly; :meth:`ServerSettings.missing` names what is absent so the entry point can
say so and exit 2 instead of guessing a merchant.
"""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import AliasChoices, Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from osbp.server.audit import DEFAULT_AUDIT_PATH

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
        # OSBP_PLATFORM_URL is accepted too: it is the name the conformance battery and docs use.
        validation_alias=AliasChoices("platform_base_url", "OSBP_PLATFORM_BASE_URL", "OSBP_PLATFORM_URL"),
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
    log_level: LogLevel = Field(default="WARNING", description="stderr log level.")
    adapter_factory: str = Field(
        default=DEFAULT_ADAPTER_FACTORY,
        pattern=r"^[\w.]+:\w+$",
        description="module:function building the BookingAdapter from these settings.",
    )

    def missing(self) -> list[str]:
        """The required settings that are not configured, as ``--flag / OSBP_VARIABLE`` descriptions."""
        return [how for field, how in REQUIRED.items() if getattr(self, field) is None]


#: Required settings and how to set them.
REQUIRED: dict[str, str] = {
    "platform_base_url": "--platform-url or OSBP_PLATFORM_BASE_URL",
    "organization_id": "--organization-id or OSBP_ORGANIZATION_ID",
}
