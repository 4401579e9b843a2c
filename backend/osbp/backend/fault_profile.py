"""The fault profile: which requests the platform fails on purpose, and how (docs/backend-api.md).

A profile is a seed and an ordered list of rules. A rule names where it applies (an organization, an
endpoint: a route name such as ``create_appointment`` or a method and path template such as
``POST /api/organizations/{organization_id}/appointments``; either left out means every one), what it
does (``mode``), and which of the matching requests it hits (``rate``: the probability, drawn from the
profile's seeded generator; ``count``: at most the first N it hits). The first rule that hits a request
applies; a request no rule hits is served normally.

Here are the models (the settings and the test surface validate with them) and :class:`FaultInjector`, the
profile in force with its seeded draws and hit counts; the layer that applies it is
:mod:`osbp.backend.faults`.
"""

from __future__ import annotations

import json
import random
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

__all__ = [
    "MAX_HOLD_MS",
    "SLOW_CREATE_MS",
    "FaultInjector",
    "FaultMode",
    "FaultProfile",
    "FaultRule",
    "Hit",
    "Operation",
    "load_profile",
    "lost_response_rule",
    "outage_rule",
    "slow_create_rule",
    "slow_rule",
]

#: The longest any fault holds a request or a write lock (ms): the platform never hangs for good.
MAX_HOLD_MS = 120_000
#: How long the scenario hook's ``slow`` outcome holds the next appointment create before serving it, or
#: the next cancel's or reschedule's commit (ms).
SLOW_CREATE_MS = 2_000
#: The appointment writes the scenario hook can fault, and the native route each one reaches.
Operation = Literal["create", "cancel", "reschedule"]
_ENDPOINTS: dict[Operation, str] = {
    "create": "create_appointment",
    "cancel": "cancel_appointment",
    "reschedule": "reschedule_appointment",
}

FaultMode = Literal["latency", "reset", "timeout", "error", "rate_limited", "lost_response", "slow_commit"]


class FaultRule(BaseModel):
    """One rule: where it applies, what it does, and which matching requests it hits."""

    model_config = ConfigDict(extra="forbid")

    organization_id: str | None = Field(default=None, min_length=1, max_length=100)
    endpoint: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        description="a route name (create_appointment) or METHOD /path/template; every endpoint if left out",
    )
    mode: FaultMode
    latency_ms: float = Field(default=0, ge=0, le=MAX_HOLD_MS, description="latency: the fixed delay")
    jitter_ms: float = Field(
        default=0, ge=0, le=MAX_HOLD_MS, description="latency: plus a uniform random delay up to this"
    )
    hold_ms: float = Field(
        default=30_000,
        ge=0,
        le=MAX_HOLD_MS,
        description="timeout: hold before dropping the connection (or until the client gives up); "
        "slow_commit: how long the write lock is held before the commit",
    )
    status: Literal[500, 502, 503] = Field(default=503, description="error: the status answered")
    retry_after: int | None = Field(
        default=None, ge=0, le=86_400, description="error, rate_limited: the Retry-After seconds"
    )
    rate: float = Field(default=1.0, ge=0, le=1, description="probability of hitting a matching request")
    count: int | None = Field(default=None, ge=0, description="hit at most the first N matching requests")

    @model_validator(mode="after")
    def _fields_of_mode(self) -> FaultRule:
        given = self.model_fields_set
        allowed = {
            "latency": {"latency_ms", "jitter_ms"},
            "timeout": {"hold_ms"},
            "slow_commit": {"hold_ms"},
            "error": {"status", "retry_after"},
            "rate_limited": {"retry_after"},
        }.get(self.mode, set())
        stray = sorted(given & {"latency_ms", "jitter_ms", "hold_ms", "status", "retry_after"} - allowed)
        if stray:
            raise ValueError(f"mode {self.mode!r} takes no {', '.join(stray)}")
        return self


class FaultProfile(BaseModel):
    """A seed and the ordered rules (the first rule hitting a request applies)."""

    model_config = ConfigDict(extra="forbid")

    seed: int = Field(default=0, description="seeds the rate draws and jitter: the same seed, the same run")
    rules: list[FaultRule] = Field(default_factory=list, max_length=100)


def load_profile(source: str) -> FaultProfile:
    """A profile from inline JSON (starting with ``{``) or from the JSON file ``source`` names.

    Raises ``ValueError`` with a one-line reason (an unreadable file, invalid JSON, a rule out of shape).
    """
    text = source.strip()
    if not text.startswith("{"):
        try:
            text = Path(text).read_text(encoding="utf-8")
        except OSError as error:
            raise ValueError(f"cannot read fault profile file {source!r}: {error.strerror}") from None
    try:
        return FaultProfile.model_validate(json.loads(text))
    except json.JSONDecodeError as error:
        raise ValueError(f"the fault profile is not JSON: {error.msg} at line {error.lineno}") from None
    except ValidationError as error:
        first = error.errors(include_url=False)[0]
        where = ".".join(str(part) for part in first["loc"]) or "profile"
        more = f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
        raise ValueError(f"fault profile {where}: {first['msg']}{more}") from None


def outage_rule(organization_id: str) -> FaultRule:
    """The rule that makes one organization's platform unreachable: every native request answers 503."""
    return FaultRule(organization_id=organization_id, mode="error", status=503)


def lost_response_rule(organization_id: str, operation: Operation = "create") -> FaultRule:
    """The rule that applies every appointment create (or cancel, or reschedule) of one organization and
    drops its answer."""
    return FaultRule(organization_id=organization_id, endpoint=_ENDPOINTS[operation], mode="lost_response")


def slow_create_rule(organization_id: str) -> FaultRule:
    """The rule that holds the next appointment create :data:`SLOW_CREATE_MS`, then serves it."""
    return FaultRule(
        organization_id=organization_id,
        endpoint=_ENDPOINTS["create"],
        mode="latency",
        latency_ms=SLOW_CREATE_MS,
        count=1,
    )


def slow_rule(organization_id: str, operation: Operation = "create") -> FaultRule:
    """The scenario hook's slow `operation`: a create held before it is served (:func:`slow_create_rule`);
    a cancel or reschedule whose commit holds the write lock :data:`SLOW_CREATE_MS` (once)."""
    if operation == "create":
        return slow_create_rule(organization_id)
    return FaultRule(
        organization_id=organization_id,
        endpoint=_ENDPOINTS[operation],
        mode="slow_commit",
        hold_ms=SLOW_CREATE_MS,
        count=1,
    )


@dataclass(frozen=True, slots=True)
class Hit:
    """A rule hitting one request, with its drawn latency (seconds)."""

    index: int
    rule: FaultRule
    delay_s: float


class FaultInjector:
    """The running fault profile, its seeded draws and hit counts (thread-safe)."""

    def __init__(self, profile: FaultProfile | None = None) -> None:
        self._configured = profile or FaultProfile()
        self._lock = threading.Lock()
        self._profile = self._configured
        self._rng = random.Random(self._configured.seed)  # noqa: S311  reproducible draws, not secrets
        self._hits = [0] * len(self._configured.rules)

    @property
    def profile(self) -> FaultProfile:
        """The profile in force."""
        return self._profile

    @property
    def active(self) -> bool:
        """Whether any rule is in force (no rule: requests pass untouched, at no cost)."""
        return bool(self._profile.rules)

    def hits(self) -> list[int]:
        """How many requests each rule has hit since the profile was set."""
        with self._lock:
            return list(self._hits)

    def set(self, profile: FaultProfile) -> None:
        """Put ``profile`` in force, its generator seeded afresh and its counts at zero."""
        with self._lock:
            self._profile = profile
            self._rng = random.Random(profile.seed)  # noqa: S311  reproducible draws, not secrets
            self._hits = [0] * len(profile.rules)

    def clear(self) -> None:
        """No rule in force."""
        self.set(FaultProfile())

    def restore(self) -> None:
        """Back to the profile the process started with (none unless ``--faults`` gave one)."""
        self.set(self._configured)

    def cut_off(self, organization_id: str) -> None:
        """Fail every native request of ``organization_id`` with a 503 until :meth:`reconnect` (one rule,
        put first, so it wins over the rest of the profile; the other organizations are untouched)."""
        self.put_first(outage_rule(organization_id))

    def reconnect(self, organization_id: str) -> None:
        """Serve ``organization_id`` again: remove the rules :meth:`cut_off` and the scenario hook's lost and
        slow creates, cancels and reschedules put in force (nothing else)."""
        self.remove(outage_rule(organization_id))
        for operation in _ENDPOINTS:
            self.remove(lost_response_rule(organization_id, operation))
            self.remove(slow_rule(organization_id, operation))

    def put_first(self, rule: FaultRule) -> None:
        """Put ``rule`` first in the profile in force, its hit count at zero (an equal rule is replaced)."""
        with self._lock:
            pairs = zip(self._profile.rules, self._hits, strict=True)
            kept = [(each, hits) for each, hits in pairs if each != rule]
            rules = [rule, *(each for each, _ in kept)]
            self._profile = self._profile.model_copy(update={"rules": rules})
            self._hits = [0, *(hits for _, hits in kept)]

    def remove(self, rule: FaultRule) -> None:
        """Remove ``rule`` (and any equal rule) from the profile in force; the others keep their counts."""
        with self._lock:
            pairs = zip(self._profile.rules, self._hits, strict=True)
            kept = [(each, hits) for each, hits in pairs if each != rule]
            self._profile = self._profile.model_copy(update={"rules": [each for each, _ in kept]})
            self._hits = [hits for _, hits in kept]

    def check_endpoints(self, known: frozenset[str], profile: FaultProfile | None = None) -> None:
        """Raise ``ValueError`` naming the first rule whose ``endpoint`` is not one of ``known``."""
        for index, rule in enumerate((profile or self._configured).rules):
            if rule.endpoint is not None and rule.endpoint not in known:
                raise ValueError(
                    f"fault profile rules.{index}.endpoint: unknown endpoint {rule.endpoint!r}; use a route "
                    "name such as create_appointment or a method and path template such as "
                    "'POST /api/organizations/{organization_id}/appointments'"
                )

    def draw(self, organization_id: str | None, endpoints: frozenset[str]) -> Hit | None:
        """The first rule hitting a request to ``endpoints`` of ``organization_id``, counted; or ``None``."""
        with self._lock:
            for index, rule in enumerate(self._profile.rules):
                if rule.organization_id is not None and rule.organization_id != organization_id:
                    continue
                if rule.endpoint is not None and rule.endpoint not in endpoints:
                    continue
                if rule.count is not None and self._hits[index] >= rule.count:
                    continue
                if rule.rate < 1 and self._rng.random() >= rule.rate:
                    continue
                self._hits[index] += 1
                jitter = self._rng.uniform(0, rule.jitter_ms) if rule.jitter_ms else 0.0
                return Hit(index, rule, (rule.latency_ms + jitter) / 1000)
        return None
