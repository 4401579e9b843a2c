"""The webhook worker: a background task in the platform process that delivers what the outbox holds.

It runs for the app's lifespan (`running`), one attempt at a time, so per-appointment order is simple to
keep. It wakes when a write that queued an event commits or the test surface moves the clock
(`Runtime.webhooks`; a read, or a write nobody subscribed to, wakes nothing), and when the next retry
falls due. While a delivery is pending it looks at least every `IDLE_POLL_SECONDS`. With nothing pending
it runs no delivery query at all: on an in-memory database (one process) it sleeps until woken; on a
database other processes may write (a SQLite file, PostgreSQL replicas) it checks every
`IDLE_POLL_SECONDS` with one indexed lookup for a delivery another process queued (`pending_exists`).
Every attempt connects afresh and is refused before it sends anything when the connection reached the
platform itself (`webhook_target`). Stopping cancels it at once, an attempt in flight included: that
delivery stays pending and is attempted again after a restart (at-least-once, same `webhook-id`).
Everything it needs is in the database, so a restarted platform resumes where the last one stopped.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import anyio
import anyio.to_thread
import httpx2

from osbp.backend.headers import PLATFORM_SERVER
from osbp.backend.logs import logger
from osbp.backend.runtime import Runtime
from osbp.backend.webhook_delivery import (
    Attempt,
    Due,
    due,
    next_due_utc,
    pending_exists,
    record_attempt,
    signed_headers,
)
from osbp.backend.webhook_target import Guard, TargetRefused

__all__ = ["IDLE_POLL_SECONDS", "running"]

#: The longest the worker sleeps without looking while a delivery is pending (it also catches a clock
#: moved by other means), and between an idle worker's checks for another process's deliveries.
IDLE_POLL_SECONDS = 1.0


async def _attempt(client: httpx2.AsyncClient, runtime: Runtime, item: Due) -> None:
    attempted = runtime.clock.now()
    headers = signed_headers(item.secret, item.event_id, attempted, item.payload)
    settings = runtime.settings
    guard = Guard(runtime.own_addresses, allow_non_loopback=settings.allow_non_loopback_webhooks)
    try:
        response = await client.post(
            item.url, content=item.payload.encode(), headers=headers, extensions={"trace": guard}
        )
        outcome = Attempt(status_code=response.status_code)
    except TargetRefused as refused:  # the connection reached the platform itself (or off loopback)
        outcome = Attempt(error=refused.reason)
    except httpx2.TimeoutException:
        outcome = Attempt(error="timeout")
    except httpx2.TransportError as error:
        outcome = Attempt(error=type(error).__name__)
    await anyio.to_thread.run_sync(
        lambda: record_attempt(
            runtime.db,
            item,
            outcome,
            attempted=attempted,
            max_attempts=settings.webhook_max_attempts,
            retry_base_seconds=settings.webhook_retry_base_seconds,
        )
    )
    logger.info(
        "webhook_attempt",
        extra={
            "delivery_id": item.delivery_id,
            "webhook_id": item.event_id,
            "attempt": item.attempt,
            "status_code": outcome.status_code,
            "error": outcome.error,
        },
    )


async def _round(client: httpx2.AsyncClient, runtime: Runtime) -> float | None:
    """Attempt everything due; how long to sleep before looking again (0 when more may be due, None when
    nothing is pending at all)."""
    batch = await anyio.to_thread.run_sync(lambda: due(runtime.db, now=runtime.clock.now()))
    for item in batch:
        await _attempt(client, runtime, item)
    if batch:
        return 0.0
    upcoming = await anyio.to_thread.run_sync(lambda: next_due_utc(runtime.db))
    if upcoming is None:
        return None
    return min(IDLE_POLL_SECONDS, max(0.0, upcoming - runtime.clock.now().timestamp()))


async def _idle(runtime: Runtime, wake: asyncio.Event) -> None:
    """Nothing is pending: wait for a wake-up, or (where other processes share the database) for a poll
    that finds a delivery one of them queued."""
    if runtime.db.in_memory:  # no other process can queue anything here
        await wake.wait()
        return
    while True:
        with anyio.move_on_after(IDLE_POLL_SECONDS):
            await wake.wait()
            return
        if await anyio.to_thread.run_sync(lambda: pending_exists(runtime.db)):
            return


async def _work(runtime: Runtime, wake: asyncio.Event) -> None:
    timeout = httpx2.Timeout(runtime.settings.webhook_timeout_seconds)
    headers = {"user-agent": f"{PLATFORM_SERVER} webhooks"}
    # No redirects and no proxies from the environment: a delivery goes to exactly the registered URL.
    # No kept-alive connections: each attempt connects afresh, so the guard sees where each one lands.
    limits = httpx2.Limits(max_keepalive_connections=0)
    async with httpx2.AsyncClient(
        timeout=timeout, headers=headers, trust_env=False, follow_redirects=False, limits=limits
    ) as client:
        while True:
            wake.clear()
            pause: float | None
            try:
                pause = await _round(client, runtime)
            except Exception:  # a broken database must not end delivery for the process's lifetime
                logger.exception("webhook_worker_failed")
                pause = IDLE_POLL_SECONDS
            if pause is None:
                await _idle(runtime, wake)
            elif pause > 0:
                with anyio.move_on_after(pause):
                    await wake.wait()


@contextlib.asynccontextmanager
async def running(runtime: Runtime) -> AsyncIterator[None]:
    """Run the worker while the block runs; cancel it (and wait for it) on the way out.

    Cancelled through anyio, not `Task.cancel`: a database call in a worker thread is shielded and
    finishes first, so the database is never closed under a running query.
    """
    if runtime.settings.pause_webhooks:
        yield  # events are still queued; a later run without the setting delivers them
        return
    wakeup = runtime.webhooks
    wake = wakeup.bind(asyncio.get_running_loop())
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(_work, runtime, wake, name="bookwell-webhooks")
            try:
                yield
            finally:
                group.cancel_scope.cancel()
    finally:
        wakeup.unbind()
