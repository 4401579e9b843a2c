"""The MCP server process's one settings object: flags first, then ``OSBP_*`` environment variables.

:class:`ServerSettings` holds the server's own settings (audit log, log level, adapter plug-in, approval
token lifetime, frozen clock) and nests the adapter's part, :class:`~osbp.adapter.settings.AdapterSettings`,
as ``adapter``. Every field names its variable and flag once, in a :class:`~osbp.adapter.settings.Setting`;
everything else is derived from the fields (:func:`settings_of`): the environment reading (each field from
its own flat ``OSBP_*`` name, nested or not; an empty value counts as unset), the flags of ``osbp mcp``
(:mod:`osbp.server.cli`), and the one-line message naming what is missing or which value breaks which
rule (:func:`describe`).

The platform base URL and the organization id have no default, so an unconfigured server says what to
set instead of guessing a merchant; the organization setting names one organization (the spec's scope,
as on stdio), several (comma-separated) or ``*`` (every organization the platform has), see
:mod:`osbp.server.orgs`. ``transport`` with the nested ``http`` and ``auth`` parts configure remote
serving (:mod:`osbp.server.remote_settings`).

:meth:`ServerSettings.clock` is the process's one clock, shared by the adapter (mandate expiry, approval
TTLs, idempotency leases) and the server (audit ``created_at``): the system clock, or, when ``now`` is
set (``--now`` / ``OSBP_NOW``), a :class:`~osbp.protocol.clock.FixedClock` that never advances. The fixed
clock exists for demos, recorded traces and tests that freeze the platform's clock at the same instant;
a real deployment never sets it, because a frozen clock never lets a mandate or an approval expire.
"""

from __future__ import annotations

import math
import os
import typing
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AwareDatetime,
    BaseModel,
    Field,
    PrivateAttr,
    SecretStr,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic.fields import FieldInfo
from pydantic_core import PydanticCustomError
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource

from osbp.adapter.settings import AdapterSettings, Setting
from osbp.protocol.approval import APPROVAL_TTL
from osbp.protocol.clock import Clock, FixedClock, SystemClock
from osbp.protocol.retention import DEFAULT_RETENTION
from osbp.protocol.state import redacted
from osbp.protocol.timeutil import parse_instant
from osbp.server.audit import AUDIT_KEY_MIN_LENGTH, DEFAULT_AUDIT_PATH
from osbp.server.confirmation import ConfirmationMode, ConfirmationPolicy, PerOrganization
from osbp.server.orgs import served_organizations
from osbp.server.remote_settings import HttpSettings, OAuthSettings, split_list

__all__ = [
    "AUDIT_KEY_RULE",
    "Leaf",
    "LogLevel",
    "ServerSettings",
    "Transport",
    "confirmation_modes",
    "describe",
    "nest",
    "settings_of",
]

LogLevel = Literal["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"]
Transport = Literal["stdio", "streamable-http"]


@dataclass(frozen=True, slots=True)
class Leaf:
    """One setting of a settings model: where it sits (``("adapter", "state_path")``) and how it is given."""

    path: tuple[str, ...]
    field: FieldInfo
    setting: Setting

    @property
    def who(self) -> str:
        """How an operator names it: ``--flag / OSBP_VARIABLE``, or the variable alone."""
        return f"{self.setting.flag} / {self.setting.env}" if self.setting.flag else self.setting.env

    @property
    def choices(self) -> tuple[str, ...]:
        """The allowed values of a ``Literal`` setting, else none."""
        if typing.get_origin(self.field.annotation) is Literal:
            return tuple(str(choice) for choice in typing.get_args(self.field.annotation))
        return ()

    @property
    def help(self) -> str:
        """The flag's help line: the field's description, its default (when it has one) and its variable."""
        description = str(self.field.description)
        default = None if self.field.is_required() else self.field.get_default(call_default_factory=True)
        unshown = default in (None, "", False) or self.setting.secret or "default" in description
        shown = "" if unshown else f" (default: {default})"
        # argparse formats help with %: a literal percent sign in a description or default is doubled.
        return f"{description}{shown} [{self.setting.env}]".replace("%", "%%")

    def to_set(self) -> str:
        """What to set when the value is missing."""
        return f"{self.setting.flag} or {self.setting.env}" if self.setting.flag else self.setting.env

    def rejection(self, error: Mapping[str, Any]) -> str:
        """Why a value was rejected, in the rule's words (a secret's value is never repeated)."""
        rule = self.setting.rule or (f"be one of {', '.join(self.choices)}" if self.choices else None)
        given = error.get("input")
        # A URL's password is a secret inside a value that is not (a postgresql:// state location).
        got = "" if self.setting.secret or not isinstance(given, str) else f" (got {redacted(given)!r})"
        if rule is None:
            return f"{self.who}: {str(error['msg']).lower()}{got}"
        return f"{self.who} must {rule}{got}"


@cache
def settings_of(model: type[BaseModel]) -> tuple[Leaf, ...]:
    """Every :class:`Setting`-annotated field of ``model``, nested models' fields included, in order."""
    return tuple(_leaves(model, ()))


def _leaves(model: type[BaseModel], prefix: tuple[str, ...]) -> typing.Iterator[Leaf]:
    for name, field in model.model_fields.items():
        setting = next((item for item in field.metadata if isinstance(item, Setting)), None)
        if setting is not None:
            yield Leaf((*prefix, name), field, setting)
        elif isinstance(field.annotation, type) and issubclass(field.annotation, BaseModel):
            yield from _leaves(field.annotation, (*prefix, name))


def nest(values: Mapping[tuple[str, ...], Any], leaves: tuple[Leaf, ...]) -> dict[str, Any]:
    """Values keyed by setting path as the nested dict a settings model takes (every part present)."""
    nested: dict[str, Any] = {}
    for leaf in leaves:
        parent = nested
        for part in leaf.path[:-1]:
            parent = parent.setdefault(part, {})
        if leaf.path in values:
            parent[leaf.path[-1]] = values[leaf.path]
    return nested


class _Variables(PydanticBaseSettingsSource):
    """Each setting from its own documented ``OSBP_*`` variable; an empty variable counts as unset."""

    def get_field_value(self, field: FieldInfo, field_name: str) -> tuple[Any, str, bool]:
        # Unused: __call__ reads every setting, nested ones included, by its own variable name.
        return None, field_name, False

    def __call__(self) -> dict[str, Any]:
        leaves = settings_of(self.settings_cls)
        given = {leaf.path: os.environ.get(leaf.setting.env) for leaf in leaves}
        return nest({path: value for path, value in given.items() if value}, leaves)


#: A token is short-lived (the spec): a day at most, which also keeps every expiry instant representable.
_LONGEST_TTL_SECONDS = 86_400
_TTL_RULE = f"be a positive number of seconds, at most {_LONGEST_TTL_SECONDS} (a day)"
_RETENTION_RULE = f"be a number of seconds from 0 to {_LONGEST_TTL_SECONDS} (a day)"
_INSTANT = "be an RFC 3339 instant with Z or an offset, like 2030-05-06T13:00:00Z"
#: The SDK's request-state codec derives its AES-256 key from at least 32 bytes of secret randomness.
REQUEST_STATE_KEY_MIN_LENGTH = 32
#: The least a key's characters must carry, counted by their frequencies (see :func:`looks_random`).
REQUEST_STATE_KEY_MIN_BITS = 80
_REQUEST_STATE_KEY_RULE = (
    f"be one or more comma-separated keys of at least {REQUEST_STATE_KEY_MIN_LENGTH} characters each, "
    "random ones, not a character or a block repeated "
    '(python -c "import secrets; print(secrets.token_hex(32))")'
)

AUDIT_KEY_RULE = (
    f"be at least {AUDIT_KEY_MIN_LENGTH} random characters, not a character or a block repeated "
    '(python -c "import secrets; print(secrets.token_hex(32))")'
)


def looks_random(key: str) -> bool:
    """Whether ``key`` could be a generated secret: no check can prove one is, this refuses what is not.

    Two rules. No shorter block repeated (``a`` × 32, ``ab`` × 16, a 16-character alphabet twice). And at
    least :data:`REQUEST_STATE_KEY_MIN_BITS` by the key's character counts (its length times the Shannon
    entropy of its characters' frequencies): a key of few distinct characters, or one character
    dominating, falls far below, while ``secrets.token_hex(32)`` scores over 200 and even
    ``token_hex(16)`` (32 hex digits) over 90 in every one of 100,000 draws.
    """
    length = len(key)
    if any(key == (key[:period] * (length // period + 1))[:length] for period in range(1, length // 2 + 1)):
        return False
    bits = -sum(count * math.log2(count / length) for count in Counter(key).values())
    return bits >= REQUEST_STATE_KEY_MIN_BITS


_MODES: tuple[ConfirmationMode, ...] = typing.get_args(ConfirmationMode)


def confirmation_modes(text: str, served: tuple[str, ...] | None) -> dict[str, ConfirmationMode]:
    """``ORG=MODE,ORG=MODE`` as a mapping; each organization once, among ``served`` (``None``: any)."""
    modes: dict[str, ConfirmationMode] = {}
    for item in (part.strip() for part in text.split(",")):
        organization_id, equals, mode = (side.strip() for side in item.partition("="))
        if not organization_id or not equals or mode not in _MODES:
            raise PydanticCustomError(
                "confirmation_for",
                "each item must be an organization id, = and a mode (" + ", ".join(_MODES) + ")",
            )
        if organization_id in modes:
            raise PydanticCustomError("confirmation_for", "names {org} twice", {"org": organization_id})
        if served is not None and organization_id not in served:
            raise PydanticCustomError(
                "confirmation_for",
                "names {org}, which this server does not serve (--organization-id)",
                {"org": organization_id},
            )
        modes[organization_id] = mode
    return modes


class ServerSettings(BaseSettings):
    """Configuration of one MCP server process: its own settings and the adapter's, from flags and env."""

    adapter: AdapterSettings = Field(description="the adapter's part (the reference adapter's settings)")
    transport: Annotated[Transport, Setting("OSBP_TRANSPORT", "--transport")] = Field(
        default="stdio", description="how MCP is served: stdio (default) or streamable-http"
    )
    http: HttpSettings = Field(
        default_factory=HttpSettings, description="the Streamable HTTP listener (remote serving)"
    )
    auth: OAuthSettings = Field(
        default_factory=OAuthSettings, description="the OAuth resource server (remote serving)"
    )
    audit_log_path: Annotated[Path, Setting("OSBP_AUDIT_LOG_PATH", "--audit-log-path", metavar="PATH")] = (
        Field(default=DEFAULT_AUDIT_PATH, description="the JSONL audit log")
    )
    audit_key: Annotated[
        SecretStr | None,
        Setting("OSBP_AUDIT_KEY", rule=AUDIT_KEY_RULE, secret=True),
    ] = Field(
        default=None,
        min_length=AUDIT_KEY_MIN_LENGTH,
        description="HMAC key for the audit log's macs (environment only; never a flag)",
    )
    request_state_key: Annotated[
        SecretStr | None,
        Setting("OSBP_REQUEST_STATE_KEY", rule=_REQUEST_STATE_KEY_RULE, secret=True),
    ] = Field(
        default=None,
        description="the key(s) sealing the host confirmation's request state, shared by every replica "
        "(environment only; comma-separated for rotation: the first seals, every one unseals)",
    )
    log_level: Annotated[LogLevel, Setting("OSBP_LOG_LEVEL", "--log-level")] = Field(
        default="WARNING", description="stderr log level"
    )
    adapter_factory: Annotated[
        str | None,
        Setting("OSBP_ADAPTER_FACTORY", "--adapter", "be module:function", "MODULE:FUNCTION"),
    ] = Field(
        default=None,
        pattern=r"^[\w.]+:\w+$",
        description="a plug-in adapter: module:function building the PlatformAdapter from these settings "
        "(default: the reference adapter)",
    )
    approval_ttl_seconds: Annotated[
        float,
        Setting("OSBP_APPROVAL_TTL_SECONDS", "--approval-ttl-seconds", _TTL_RULE, "SECONDS"),
    ] = Field(
        default=APPROVAL_TTL.total_seconds(),
        gt=0,
        le=_LONGEST_TTL_SECONDS,
        allow_inf_nan=False,
        description="how long an approval token stays valid after its challenge (default 600: ten minutes)",
    )
    confirmation: Annotated[ConfirmationMode, Setting("OSBP_CONFIRMATION", "--confirmation")] = Field(
        default="auto",
        description="who confirms a booking: auto (through the host when the client can elicit, else the "
        "approval token), elicitation (only through the host), page (only on this server's confirmation "
        "page, URL-mode elicitation over authorized Streamable HTTP), token (always the approval token)",
    )
    confirmation_for: Annotated[
        str | None, Setting("OSBP_CONFIRMATION_FOR", "--confirmation-for", metavar="ORG=MODE,...")
    ] = Field(
        default=None,
        description="a --confirmation mode for some of the organizations served (comma-separated ORG=MODE, "
        "e.g. phils_spa=elicitation); the others keep --confirmation",
    )
    state_retention_seconds: Annotated[
        float,
        Setting("OSBP_STATE_RETENTION_SECONDS", "--state-retention-seconds", _RETENTION_RULE, "SECONDS"),
    ] = Field(
        default=DEFAULT_RETENTION.total_seconds(),
        ge=0,
        le=_LONGEST_TTL_SECONDS,
        allow_inf_nan=False,
        description="how long an expired confirmation page, approval or confirmation round is kept before "
        "the server's purge deletes it (default 600: ten minutes past its expiry)",
    )
    now: Annotated[AwareDatetime | None, Setting("OSBP_NOW", "--now", _INSTANT, "INSTANT")] = Field(
        default=None,
        description="freeze this process's clock at an RFC 3339 instant; demos, traces and tests only",
    )
    _clock: Clock | None = PrivateAttr(default=None)

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Keyword arguments (the flags) first, then each setting's own variable; no dotenv, no files."""
        return init_settings, _Variables(settings_cls)

    @field_validator("log_level", mode="before")
    @classmethod
    def _level_upper(cls, value: object) -> object:
        # `--log-level debug` as `osbp backend` takes it: level names are case-insensitive.
        return value.upper() if isinstance(value, str) else value

    @field_validator("audit_key")
    @classmethod
    def _audit_key(cls, value: SecretStr | None) -> SecretStr | None:
        # A placeholder such as 32 times "a" passes the length check but keys nothing an attacker could
        # not guess: the macs and the subject hashes would authenticate nothing.
        if value is not None and not looks_random(value.get_secret_value()):
            raise ValueError(f"must {AUDIT_KEY_RULE}")
        return value

    @field_validator("request_state_key")
    @classmethod
    def _key_ring(cls, value: SecretStr | None) -> SecretStr | None:
        # Checked here so a short key is the operator's one-line error, not the SDK's at the first call;
        # a placeholder such as 32 times "a" passes the SDK's length check but seals nothing.
        if value is None:
            return None
        keys = split_list(value.get_secret_value())
        if not keys or any(len(key) < REQUEST_STATE_KEY_MIN_LENGTH or not looks_random(key) for key in keys):
            raise ValueError(f"must {_REQUEST_STATE_KEY_RULE}")
        return value

    @field_validator("confirmation_for")
    @classmethod
    def _per_organization(cls, value: str | None, info: ValidationInfo) -> str | None:
        if value is not None:
            adapter = info.data.get("adapter")
            served = served_organizations(adapter.organization_id) if adapter is not None else None
            confirmation_modes(value, served)  # raises what is wrong with it
        return value

    def confirmation_policy(self) -> ConfirmationPolicy:
        """Who confirms: ``confirmation`` everywhere, or per organization with ``confirmation_for``."""
        if self.confirmation_for is None:
            return self.confirmation
        return PerOrganization(self.confirmation, confirmation_modes(self.confirmation_for, None))

    def page_required(self) -> bool:
        """Whether some organization (or every one) must be confirmed on the confirmation page."""
        policy = self.confirmation_policy()
        if isinstance(policy, PerOrganization):
            return policy.default == "page" or "page" in policy.modes.values()
        return policy == "page"

    @field_validator("now", mode="before")
    @classmethod
    def _rfc3339(cls, value: Any) -> Any:
        # Only an RFC 3339 instant with Z or an offset: no bare dates, no epoch numbers, no local times.
        if isinstance(value, str):
            instant = parse_instant(value)
            if instant is None:
                raise ValueError(f"must {_INSTANT}")
            return instant
        if isinstance(value, datetime) or value is None:
            return value
        raise ValueError(f"must {_INSTANT}")

    def clock(self) -> Clock:
        """The process's one clock, the same object every time: frozen at ``now`` if set, else real."""
        if self._clock is None:
            self._clock = FixedClock(self.now) if self.now is not None else SystemClock()
        return self._clock

    def state_retention(self) -> timedelta:
        """How long expired per-attempt state is kept before the purge deletes it."""
        return timedelta(seconds=self.state_retention_seconds)

    def approval_ttl(self) -> timedelta:
        """How long an approval token stays valid."""
        return timedelta(seconds=self.approval_ttl_seconds)

    def request_state_keys(self) -> tuple[str, ...]:
        """The request-state key ring (empty: none configured; the first key seals, every key unseals)."""
        return () if self.request_state_key is None else split_list(self.request_state_key.get_secret_value())

    def audit_key_bytes(self) -> bytes | None:
        """The audit key as bytes (UTF-8 of ``OSBP_AUDIT_KEY``), or None for an unkeyed log."""
        return None if self.audit_key is None else self.audit_key.get_secret_value().encode()


def describe(error: ValidationError, model: type[BaseModel] = ServerSettings) -> str:
    """The rejected configuration in plain words on one line: which values break which rule, what to set."""
    leaves = settings_of(model)
    invalid: list[str] = []
    missing: list[str] = []
    for item in error.errors(include_url=False):
        loc = tuple(str(part) for part in item["loc"])
        leaf = next((leaf for leaf in leaves if loc[: len(leaf.path)] == leaf.path), None)
        if leaf is None:  # not an operator's setting: a caller's keyword argument, in pydantic's words
            invalid.append(f"{'.'.join(loc)}: {item['msg']}")
        elif item["type"] == "missing":
            missing.append(leaf.to_set())
        else:
            invalid.append(leaf.rejection(item))
    parts = [f"invalid configuration: {'; '.join(invalid)}"] if invalid else []
    if missing:
        parts.append(f"missing configuration: set {', and '.join(missing)}")
    return "; ".join(parts)
