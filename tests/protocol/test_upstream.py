"""The upstream capture channel."""

from __future__ import annotations

import anyio
import pytest

from osbp.protocol.models import UpstreamMeta
from osbp.protocol.upstream import capture_upstream, record_upstream


def test_record_outside_a_capture_is_a_noop() -> None:
    """Recording with no active capture does nothing and does not fail (platform choice)."""
    record_upstream(UpstreamMeta(call="GET /x", status=200))
    with capture_upstream() as capture:
        assert capture.last is None
        assert capture.calls == []


def test_capture_keeps_calls_in_order_and_last_is_most_recent() -> None:
    """upstream is the most recent upstream call observed during the tool call (OSBP spec, Audit)."""
    with capture_upstream() as capture:
        record_upstream(UpstreamMeta(call="GET /a", status=200))
        record_upstream(UpstreamMeta(call="POST /b", status=201))
    assert [m.call for m in capture.calls] == ["GET /a", "POST /b"]
    assert capture.last is not None
    assert capture.last.call == "POST /b"


@pytest.mark.anyio
async def test_overlapping_tasks_see_only_their_own_calls() -> None:
    """Concurrent tool calls never mix upstream metadata (platform choice: ContextVar scoping)."""
    seen: dict[str, list[str]] = {}
    both_recorded = anyio.Event()
    count = 0

    async def call(name: str) -> None:
        nonlocal count
        with capture_upstream() as capture:
            record_upstream(UpstreamMeta(call=f"GET /{name}", status=200))
            count += 1
            if count == 2:
                both_recorded.set()
            with anyio.fail_after(5):
                await both_recorded.wait()
            seen[name] = [m.call for m in capture.calls]

    async with anyio.create_task_group() as tg:
        tg.start_soon(call, "a")
        tg.start_soon(call, "b")
    assert seen == {"a": ["GET /a"], "b": ["GET /b"]}
