"""Starting the demo's MCP servers ahead of their turns, alongside the platform's own start."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from osbp.demo import turns
from osbp.demo.client import ServerConfig
from osbp.demo.turns import ServerJob, run_in_turns


def _job(tmp_path: Path, name: str) -> ServerJob:
    config = ServerConfig("http://127.0.0.1:9", name, tmp_path / f"{name}.db", tmp_path / "audit.jsonl")
    return ServerJob(config, tmp_path / f"{name}.log")


@pytest.fixture
def started(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The organizations whose server was started, in order (a server here is its start only)."""
    log: list[str] = []

    @asynccontextmanager
    async def server(config: ServerConfig, _errlog: Any, _host: Any = None) -> AsyncIterator[Any]:
        log.append(config.organization_id)
        yield config.organization_id

    monkeypatch.setattr(turns, "osbp_server", server)
    return log


@pytest.mark.anyio
async def test_every_server_starts_while_the_work_before_the_first_turn_runs(tmp_path, started):
    """Platform choice: `make demo` starts its servers and the platform together; the first turn waits
    for both (here `before` returns only once it has seen every server started)."""
    first, second = _job(tmp_path, "first"), _job(tmp_path, "second")
    order: list[str] = []

    async def work(client: Any) -> None:
        order.append(f"turn on {client}")

    first.work.append((0, work))
    second.work.append((1, work))

    async def before() -> None:
        while len(started) < 2:  # the servers' start-ups run meanwhile, or this never returns
            await anyio.lowlevel.checkpoint()
        order.append("before")

    with anyio.fail_after(10):
        await run_in_turns([first, second], ahead=2, before=before)
    assert order == ["before", "turn on first", "turn on second"]


@pytest.mark.anyio
async def test_a_later_server_still_waits_for_the_turns_ahead_of_it(tmp_path, started):
    """Platform choice: with ``ahead`` smaller than the turns before its first one, a server starts only
    once the turn that many turns earlier is done (the trace gallery's many servers, a few at a time)."""
    early, late = _job(tmp_path, "early"), _job(tmp_path, "late")
    seen_at_turn: list[list[str]] = []

    async def work(_client: Any) -> None:
        seen_at_turn.append(list(started))

    early.work.extend([(0, work), (1, work)])
    late.work.append((2, work))
    await run_in_turns([early, late], ahead=0)
    assert seen_at_turn == [["early"], ["early"], ["early", "late"]]
