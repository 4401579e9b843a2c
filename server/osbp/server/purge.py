"""The state purge in the background of a serving process (stdio or Streamable HTTP).

:func:`purging` runs :class:`~osbp.protocol.retention.StatePurge` once at start and then every
``interval`` seconds while the server serves, in a task of its own: a purge costs a tool call nothing,
and an idle server forgets expired personal data as surely as a busy one. A purge that met a full batch
runs again at once, so a backlog drains in bounded transactions. A failing purge (the database away for
a moment) is logged and tried again at the next interval; it never stops the server. Every replica runs
its own: deletes of the same expired rows are idempotent.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from osbp.protocol.retention import StatePurge

__all__ = ["PURGE_INTERVAL_S", "purging"]

logger = logging.getLogger("osbp.server")

#: How often a serving process purges (seconds): expired state lives at most this much past its retention.
PURGE_INTERVAL_S = 60.0


async def _run(purge: StatePurge, interval: float) -> None:
    while True:
        full = False
        try:
            purged = await purge.apurge()
        except Exception:
            logger.warning("state_purge_failed", exc_info=True)
        else:
            full = purged.full
            if purged.total:
                logger.info(
                    "state_purged",
                    extra={
                        "confirmation_pages": purged.confirmation_pages,
                        "approvals": purged.approvals,
                        "confirmation_rounds": purged.confirmation_rounds,
                    },
                )
        if not full:
            await anyio.sleep(interval)


@asynccontextmanager
async def purging(purge: StatePurge, *, interval: float = PURGE_INTERVAL_S) -> AsyncIterator[None]:
    """Purge in the background while the enclosed block serves; stopped when it ends."""
    async with anyio.create_task_group() as group:
        group.start_soon(_run, purge, interval)
        try:
            yield
        finally:
            group.cancel_scope.cancel()
