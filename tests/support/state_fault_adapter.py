"""The reference platform adapter, plugged in with ``--adapter``, that breaks the OSBP state on cue.

The state is a PostgreSQL database (``OSBP_STATE_PATH`` a ``postgresql://`` URL of a superuser, as the
test cluster's is). ``OSBP_TEST_STATE_FAULT`` names what happens right after the platform created the
appointment and the adapter translated its answer, before the core records it (once per process; the
retry runs untouched):

* ``kill_in_complete``: the core's write of the outcome finds the record locked (an operator's
  transaction holds it) and its session is then terminated mid-transaction, with every other session of
  the state database, as ``pg_terminate_backend`` does; the lock goes with the operator's session, so the
  key can be handed back;
* ``down``: every session of the state database is terminated and the database refuses new ones
  (``ALLOW_CONNECTIONS false``) until the test allows them again (:func:`allow_connections`).
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import psycopg

from osbp.adapter import build_platform_adapter
from osbp.adapter.upstream import LifecycleNotices
from osbp.protocol.models import Booking, Problem
from osbp.protocol.port import BookingRequest
from osbp.server.settings import ServerSettings

__all__ = ["STATE_FAULT", "allow_connections", "build", "maintenance_url"]

STATE_FAULT = "OSBP_TEST_STATE_FAULT"
_WAIT_S = 10.0


def maintenance_url(state_url: str) -> str:
    """The same server's ``postgres`` database: where the state database's connections are governed."""
    return urlunsplit(urlsplit(state_url)._replace(path="/postgres"))


def _database(state_url: str) -> str:
    return urlsplit(state_url).path.lstrip("/")


def _terminate_all(admin: psycopg.Connection[Any], database: str) -> None:
    admin.execute(
        "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
        " WHERE datname = %s AND pid <> pg_backend_pid()",
        (database,),
    )


def allow_connections(state_url: str, allowed: bool) -> None:
    """Let the state database accept connections again (or refuse them)."""
    with psycopg.connect(maintenance_url(state_url), autocommit=True) as admin:
        value = "true" if allowed else "false"
        admin.execute(f'ALTER DATABASE "{_database(state_url)}" WITH ALLOW_CONNECTIONS {value}')


def _kill_in_complete(state_url: str) -> threading.Thread:
    """Lock every idempotency record; once a session waits on the lock, terminate it, then all others."""
    database = _database(state_url)
    holder = psycopg.connect(state_url)
    holder.execute("LOCK TABLE idempotency IN EXCLUSIVE MODE")
    waiting = "SELECT pid FROM pg_stat_activity WHERE datname = %s AND wait_event_type = 'Lock'"

    def kill_when_waiting() -> None:
        try:
            with psycopg.connect(maintenance_url(state_url), autocommit=True) as admin:
                deadline = time.monotonic() + _WAIT_S
                # Polling the server's view, with a deadline: first the waiter appears, then it is gone.
                while not (pids := [row[0] for row in admin.execute(waiting, (database,))]):
                    if time.monotonic() > deadline:
                        return
                    time.sleep(0.005)
                for pid in pids:
                    admin.execute("SELECT pg_terminate_backend(%s)", (pid,))
                while admin.execute(
                    "SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", (pids,)
                ).fetchone() != (0,):
                    if time.monotonic() > deadline:
                        return
                    time.sleep(0.005)
                # Only now the rest, the holder among them: the waiter never got the lock.
                _terminate_all(admin, database)
        finally:
            holder.close()

    killer = threading.Thread(target=kill_when_waiting, daemon=True)
    killer.start()
    return killer


class StateFaultAdapter:
    """Delegates to the reference platform adapter; breaks the state once, after the first create."""

    def __init__(self, inner: Any, fault: str | None, state_url: str) -> None:
        self._inner = inner
        self._fault = fault
        self._state_url = state_url

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)

    async def place_booking(self, request: BookingRequest, customer_name: str) -> Booking | Problem:
        """Create for real; then break the state before the core can record the outcome."""
        result: Booking | Problem = await self._inner.place_booking(request, customer_name)
        fault, self._fault = self._fault, None
        if fault == "kill_in_complete":
            _kill_in_complete(self._state_url)
        elif fault == "down":
            allow_connections(self._state_url, False)
            with psycopg.connect(maintenance_url(self._state_url), autocommit=True) as admin:
                _terminate_all(admin, _database(self._state_url))
        return result


def build(settings: ServerSettings) -> StateFaultAdapter:
    """The adapter factory: ``--adapter tests.support.state_fault_adapter:build``."""
    inner = build_platform_adapter(settings.adapter, notices=LifecycleNotices())
    return StateFaultAdapter(inner, os.environ.get(STATE_FAULT) or None, str(settings.adapter.state_path))
