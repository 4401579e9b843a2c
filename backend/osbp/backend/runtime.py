"""The platform's per-process state: settings, database, clock, randomness, limiter, faults, webhook
wake-up, own listening addresses, test arms, counters.

One `Runtime` per app instance (kept on `app.state.runtime`), so several platforms can run side by side
in one test process without sharing anything. Several processes on one PostgreSQL database share every
row (appointments, keys, codes, outbox, the catalog revision); what stays per process is the rate limiter
(see `ratelimit`) and the test surface's arms, counters and clock.
"""

from __future__ import annotations

import threading
from collections import Counter
from dataclasses import dataclass, field

from osbp.backend.catalog_cache import CatalogCache
from osbp.backend.clock import PlatformClock
from osbp.backend.db import Database
from osbp.backend.dialects import serialise
from osbp.backend.fault_profile import FaultInjector
from osbp.backend.listening import OwnAddresses
from osbp.backend.ratelimit import RateLimiter
from osbp.backend.schema import prepare as prepare_schema
from osbp.backend.seed import seed
from osbp.backend.settings import BackendSettings
from osbp.backend.tokens import SecretTokens, TokenSource
from osbp.backend.webhook_wakeup import Wakeup

__all__ = ["ARMABLE_OUTCOMES", "Runtime"]

#: Outcomes the test surface can arm, per operation, for an organization's next request of it.
ARMABLE_OUTCOMES = {
    "create": ("slot_taken", "rate_limited", "requires_verification"),
    "cancel": ("rate_limited",),
    "reschedule": ("slot_taken", "rate_limited"),
}


@dataclass
class Runtime:
    """Everything a request handler may touch."""

    settings: BackendSettings
    db: Database
    clock: PlatformClock
    tokens: TokenSource
    limiter: RateLimiter
    catalog: CatalogCache = field(default_factory=CatalogCache)
    faults: FaultInjector = field(default_factory=FaultInjector)
    #: Wakes the webhook worker once a change queued events or the clock moved.
    webhooks: Wakeup = field(default_factory=Wakeup)
    #: Where this process listens (recorded by whatever serves it, once bound): no webhook may go there.
    own_addresses: OwnAddresses = field(default_factory=OwnAddresses)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _armed: dict[tuple[str, str], str] = field(default_factory=dict)
    _create_requests: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        # A committed write that queued webhook events wakes the worker; no other request does.
        self.db.on_events_queued = self.webhooks.set

    @classmethod
    def build(cls, settings: BackendSettings, tokens: TokenSource | None = None) -> Runtime:
        """Open (and seed) the database and assemble the runtime from `settings`."""
        db = Database(settings.db)
        try:
            prepare_schema(db, migrate=settings.migrate)
            with db.write() as session:
                # Replicas starting together on one PostgreSQL database seed one after the other.
                serialise(session, "seed")
                seed(session)
        except BaseException:
            db.dispose()
            raise
        return cls(
            settings=settings,
            db=db,
            clock=PlatformClock(settings.now),
            tokens=tokens or SecretTokens(),
            limiter=RateLimiter(settings.rate_limit_quota, settings.rate_limit_window_seconds),
            faults=FaultInjector(settings.fault_profile()),
        )

    def arm(self, organization_id: str, outcome: str, operation: str = "create") -> None:
        """Make the organization's next `operation` (an appointment create, cancel or reschedule) fail with
        `outcome` (consumed once)."""
        with self._lock:
            self._armed[organization_id, operation] = outcome

    def take_armed(self, organization_id: str, operation: str = "create") -> str | None:
        """Consume and return the outcome armed for the organization's `operation`, if any."""
        with self._lock:
            return self._armed.pop((organization_id, operation), None)

    def count_create_request(self, organization_id: str) -> None:
        """Record that an appointment-create HTTP request arrived for the organization."""
        with self._lock:
            self._create_requests[organization_id] += 1

    def create_requests(self, organization_id: str | None) -> int:
        """Appointment-create requests received (for one organization, or all)."""
        with self._lock:
            if organization_id is None:
                return sum(self._create_requests.values())
            return self._create_requests[organization_id]

    def reset(self) -> None:
        """Back to seeds: data, arms, counters, rate-limit windows, the clock and the fault profile."""
        with self.db.write() as session:
            serialise(session, "seed")
            self.db.clear(session)
            seed(session)
        with self._lock:
            self._armed.clear()
            self._create_requests.clear()
        self.limiter.clear()
        self.clock.restore()
        self.faults.restore()
