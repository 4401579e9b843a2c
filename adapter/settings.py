"""The adapter's one settings object (environment prefix ``OSBP_``).

Everything the reference adapter needs to reach one Bookwell organization: the platform's base URL, the
organization, where the local OSBP state (idempotency records and pending approvals) lives, timeouts, the
read defaults, and optional platform credentials. Credentials come from the environment only and are
attached in exactly one place, :mod:`osbp.adapter.upstream`.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from osbp.protocol.store import DEFAULT_STATE_PATH

__all__ = ["AdapterSettings"]


class AdapterSettings(BaseSettings):
    """Configuration of the reference adapter (``OSBP_<FIELD>`` environment variables)."""

    # extra="ignore": other components (the MCP server, the audit log) share the OSBP_ prefix.
    model_config = SettingsConfigDict(env_prefix="OSBP_", extra="ignore")

    platform_base_url: str = Field(
        default="http://127.0.0.1:8400",
        description="Base URL of the Bookwell platform (the adapter appends /api/...).",
    )
    organization_id: str = Field(
        default="carolyns_dental", min_length=1, description="The Bookwell organization this adapter serves."
    )
    state_path: Path = Field(
        default=DEFAULT_STATE_PATH,
        description="SQLite file holding idempotency records and pending approvals.",
    )
    connect_timeout_s: float = Field(default=5.0, gt=0, description="TCP connect timeout per request.")
    read_timeout_s: float = Field(default=15.0, gt=0, description="Response read timeout per request.")
    default_service_id: str | None = Field(
        default=None, description="Service used by the read tools when their input omits service_id."
    )
    default_schedule_id: str | None = Field(
        default=None, description="Schedule (Bookwell location) used by availability.find when omitted."
    )
    platform_api_key: SecretStr | None = Field(
        default=None,
        description="Optional platform credential, sent as a bearer token (Bookwell itself needs none).",
    )
    source: str = Field(
        default="osbp-local-mcp", min_length=1, description="The self-declared x-osbp-source marker value."
    )
