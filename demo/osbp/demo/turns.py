"""Start MCP server subprocesses ahead of time, then use them strictly one after another.

Launching ``python -m osbp.server`` costs about a second of imports; the agent's work on each server is
much shorter. :func:`run_in_turns` therefore starts the next few servers while the current one works and
hands each piece of work its server only when its turn comes, so the story (and every recorded trace) is
still told in order, one tool call at a time. ``before`` (the platform's own start, for ``make demo``)
runs alongside the first servers' start-ups; the first turn waits for it.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import anyio

from osbp.demo.client import HostDialog, OsbpClient, ServerConfig, osbp_server

__all__ = ["ServerJob", "Work", "run_in_turns"]

Work = Callable[[OsbpClient], Awaitable[None]]


@dataclass
class ServerJob:
    """One server process and the work it serves: ``(turn, work)`` pairs, turns counted across all jobs."""

    config: ServerConfig
    errlog: Path
    work: list[tuple[int, Work]] = field(default_factory=list)
    #: The host dialog of a client that lets the user confirm through the host (elicitation), if any.
    host: HostDialog | None = None


async def run_in_turns(
    jobs: Sequence[ServerJob], *, ahead: int = 2, before: Callable[[], Awaitable[None]] | None = None
) -> None:
    """Run every job's work in global turn order, each on its own already-started server.

    A job's server starts once the turn ``ahead`` turns before its first turn is done (at once for the
    first ones), so about ``ahead + 1`` servers are alive at a time and nothing waits on a later turn.
    ``before`` runs while the first servers start; the first turn begins once it has returned.
    """
    turns = sorted(turn for job in jobs for turn, _ in job.work)
    if turns != list(range(len(turns))):
        raise ValueError("turns must be 0..n-1, each used once")
    done = [anyio.Event() for _ in turns]
    prepared = anyio.Event()

    async def prepare() -> None:
        if before is not None:
            await before()
        prepared.set()

    async def serve(job: ServerJob) -> None:
        work = sorted(job.work, key=lambda item: item[0])
        warm_up_after = work[0][0] - ahead - 1
        if warm_up_after >= 0:
            await done[warm_up_after].wait()
        with job.errlog.open("w", encoding="utf-8") as errlog:
            async with osbp_server(job.config, errlog, job.host) as client:
                for turn, step in work:
                    await (done[turn - 1] if turn > 0 else prepared).wait()
                    try:
                        await step(client)
                    finally:
                        done[turn].set()

    async with anyio.create_task_group() as group:
        group.start_soon(prepare)
        for job in jobs:
            if job.work:
                group.start_soon(serve, job)
