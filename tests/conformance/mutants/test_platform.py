"""The shared platform's run router: per-run prefixes, counters and arm-exclusive creates."""

from __future__ import annotations

import json
from typing import Any

import anyio
import httpx2
import pytest

from tests.conformance.mutants.platform import RunRouter, run_base_url

pytestmark = pytest.mark.anyio

CREATE = "/api/organizations/conformance_co/appointments"


class Platform:
    """A stand-in platform that records the paths it serves; creates answer 201 with a fresh id."""

    def __init__(self) -> None:
        self.seen: list[str] = []

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        self.seen.append(f"{scope['method']} {scope['path']}")
        body = json.dumps({"id": f"apt_{len(self.seen)}"}).encode()
        status = 201 if scope["path"] == CREATE else 200
        await send({"type": "http.response.start", "status": status, "headers": []})
        await send({"type": "http.response.body", "body": body})


def client(router: RunRouter) -> httpx2.AsyncClient:
    return httpx2.AsyncClient(transport=httpx2.ASGITransport(app=router), base_url="http://platform")


async def test_a_run_prefix_is_stripped_and_its_stats_count_only_its_own_creates():
    """Platform choice (docs/conformance.md): each run sees its own create counter on the shared platform."""
    platform = Platform()
    router = RunRouter(platform)
    async with client(router) as http:
        for run in ("a", "a", "b"):
            await http.post(run_base_url("http://platform", run) + CREATE, json={})
        stats = (await http.get("/runs/a/_testing/stats")).json()
        reset = await http.post("/runs/b/_testing/reset")
    assert platform.seen == [f"POST {CREATE}"] * 3
    assert stats["create_requests"] == 2
    assert stats["appointments"] == 2
    assert reset.json() == {"reset": True}  # answered by the router: no run resets another's platform


async def test_after_one_run_arms_another_runs_create_waits_for_the_armed_create():
    """Platform choice (docs/conformance.md): an armed outcome is consumed by the run that armed it."""
    platform = Platform()
    router = RunRouter(platform)
    order: list[str] = []
    async with client(router) as http:
        await http.post("/runs/a/_testing/arm", json={})

        async def create(run: str) -> None:
            await http.post(f"/runs/{run}{CREATE}", json={})
            order.append(run)

        async with anyio.create_task_group() as group:
            group.start_soon(create, "b")
            with anyio.fail_after(5):
                await router.until_parked("b")
            assert order == []
            assert platform.seen == ["POST /_testing/arm"]
            group.start_soon(create, "a")
    assert order == ["a", "b"]
