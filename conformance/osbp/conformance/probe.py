"""The state one battery run shares between its groups of checks."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from osbp.conformance.fixtures import Fixtures
from osbp.conformance.grading import Grader
from osbp.conformance.payloads import Payloads
from osbp.conformance.wire import Exchange, Wire

__all__ = ["Probe"]


@dataclass
class Probe:
    """What every check group needs: the wire, the fixtures, the grader and the payload builder."""

    wire: Wire
    fixtures: Fixtures
    grader: Grader
    payloads: Payloads
    scenario_url: str | None
    call_timeout: float
    #: service.describe values by service id, for checks that need a service's name or display price.
    services: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: policy.explain values by service id, for the approval-summary checks.
    policies: dict[str, dict[str, Any]] = field(default_factory=dict)
    #: The fixture slot as availability.find reported it (in-scope provider, fixture start), if it did.
    slot: dict[str, Any] | None = None
    #: The platform's create-request counter (`--stats-url`), when given.
    stats_url: str | None = None
    #: The platform's native-status hook (`--status-url`), when given.
    status_url: str | None = None
    #: The platform's catalog hook that reprices a service (`--catalog-url`), when given.
    catalog_url: str | None = None
    #: The platform's hooks that rename a provider and a schedule (`--provider-url`, `--location-url`).
    provider_url: str | None = None
    location_url: str | None = None
    #: The calls of the run's other sessions (the host-confirmation one), graded with the wire's own.
    other_exchanges: list[Exchange] = field(default_factory=list)
    #: The run's clock (`run_battery`'s), for mandates that must expire during the run.
    clock: Callable[[], dt.datetime] = field(default=lambda: dt.datetime.now(dt.UTC))

    def all_exchanges(self) -> list[Exchange]:
        """Every call of the run: this wire's, then the other sessions'."""
        return [*self.wire.exchanges, *self.other_exchanges]
