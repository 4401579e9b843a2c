"""The reference adapter's configuration: one part of the server process's one settings object.

:class:`AdapterSettings` is a plain pydantic model: everything the reference adapter needs to reach one
Bookwell organization (the platform's base URL, the organization, where the local OSBP state lives,
timeouts, the retry policy, the read defaults, an optional platform credential). It reads nothing by itself:
the process that runs the adapter builds it, the MCP server as the ``adapter`` part of
:class:`osbp.server.settings.ServerSettings`, a test or a benchmark by passing fields.

Each field carries a :class:`Setting`: its one ``OSBP_*`` environment variable, its flag when it has one,
and the rule a value must follow, in plain words. The server derives its flags, its environment reading
and its error messages from these, so each name is written once, here. Credentials come from the
environment only (no flag) and are attached in exactly one place, :mod:`osbp.adapter.upstream`.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Annotated

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field, SecretStr

from osbp.protocol.state import parse_state_location
from osbp.protocol.store import DEFAULT_STATE_PATH

__all__ = ["AdapterSettings", "Setting"]


@dataclass(frozen=True, slots=True)
class Setting:
    """How an operator gives a setting: the variable, the flag if any, and what a valid value is.

    ``rule`` completes "<flag> / <variable> must ..." when a value is rejected. A ``secret`` has no flag
    and is never echoed back.
    """

    env: str
    flag: str | None = None
    rule: str | None = None
    metavar: str | None = None
    secret: bool = False


_SECONDS = "be a positive number of seconds"
_STATE_LOCATION = "be a file path or a postgresql://[user[:password]@]host[:port]/database URL"


class AdapterSettings(BaseModel):
    """Configuration of the reference adapter for one Bookwell organization."""

    model_config = ConfigDict(extra="forbid")

    platform_base_url: Annotated[
        str,
        Setting(
            "OSBP_PLATFORM_BASE_URL", "--platform-url", "be an http(s) URL, like http://127.0.0.1:8400", "URL"
        ),
    ] = Field(pattern=r"^https?://\S+$", description="base URL of the booking platform (required)")
    organization_id: Annotated[
        str, Setting("OSBP_ORGANIZATION_ID", "--organization-id", "not be empty", "ID")
    ] = Field(
        min_length=1,
        description="the organizations served: one id, a comma-separated list, or * for every organization "
        "on the platform (required)",
    )
    state_path: Annotated[
        Path | str,
        BeforeValidator(parse_state_location),
        Setting("OSBP_STATE_PATH", "--state-path", _STATE_LOCATION, "PATH|URL"),
    ] = Field(
        default=DEFAULT_STATE_PATH,
        description="SQLite file, or postgresql:// URL shared by replicas, holding idempotency records and"
        " pending approvals",
    )
    connect_timeout_s: Annotated[float, Setting("OSBP_CONNECT_TIMEOUT_S", rule=_SECONDS)] = Field(
        default=5.0, gt=0, description="TCP connect timeout per request"
    )
    read_timeout_s: Annotated[float, Setting("OSBP_READ_TIMEOUT_S", rule=_SECONDS)] = Field(
        default=15.0, gt=0, description="response read timeout per request"
    )
    retry_attempts: Annotated[
        int, Setting("OSBP_RETRY_ATTEMPTS", rule="be a whole number from 1 (never retry) to 10")
    ] = Field(
        default=3, ge=1, le=10, description="attempts per request that is safe to retry, the first included"
    )
    retry_backoff_s: Annotated[float, Setting("OSBP_RETRY_BACKOFF_S", rule=_SECONDS)] = Field(
        default=0.2, gt=0, description="backoff before the first retry; doubles each retry, with jitter"
    )
    retry_max_backoff_s: Annotated[float, Setting("OSBP_RETRY_MAX_BACKOFF_S", rule=_SECONDS)] = Field(
        default=2.0, gt=0, description="the longest backoff between two attempts"
    )
    retry_after_cap_s: Annotated[float, Setting("OSBP_RETRY_AFTER_CAP_S", rule=_SECONDS)] = Field(
        default=5.0, gt=0, description="the longest Retry-After waited out; a longer one ends the retries"
    )
    default_service_id: Annotated[str | None, Setting("OSBP_DEFAULT_SERVICE_ID")] = Field(
        default=None, description="service used by the read tools when their input omits service_id"
    )
    default_schedule_id: Annotated[str | None, Setting("OSBP_DEFAULT_SCHEDULE_ID")] = Field(
        default=None, description="schedule (Bookwell location) used by availability.find when omitted"
    )
    platform_api_key: Annotated[SecretStr | None, Setting("OSBP_PLATFORM_API_KEY", secret=True)] = Field(
        default=None,
        description="optional platform credential, sent as a bearer token (Bookwell itself needs none)",
    )
    source: Annotated[str, Setting("OSBP_SOURCE", rule="not be empty")] = Field(
        default="osbp-local-mcp", min_length=1, description="the self-declared x-osbp-source marker value"
    )
