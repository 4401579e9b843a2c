"""The upstream capture channel."""

from __future__ import annotations

import asyncio

import anyio
import anyio.lowlevel
import pytest

from osbp.protocol.models import UpstreamMeta
from osbp.protocol.upstream import capture_upstream, record_upstream, reserve_upstream


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


@pytest.mark.anyio
async def test_concurrent_calls_answered_in_reverse_order_report_the_last_issued() -> None:
    """OSBP spec, Audit (upstream is the last call) made deterministic: issue order, not arrival order."""
    second_answered = anyio.Event()

    async def first() -> None:
        slot = reserve_upstream()
        with anyio.fail_after(5):
            await second_answered.wait()
        slot.fill(UpstreamMeta(call="GET /organization", status=200))

    async def second() -> None:
        slot = reserve_upstream()
        await anyio.lowlevel.checkpoint()
        slot.fill(UpstreamMeta(call="GET /availability", status=200))
        second_answered.set()

    with capture_upstream() as capture:
        await asyncio.gather(first(), second())
    assert [meta.call for meta in capture.calls] == ["GET /organization", "GET /availability"]
    assert capture.last is not None
    assert capture.last.call == "GET /availability"


def test_a_request_without_a_response_leaves_its_position_empty() -> None:
    """OSBP spec, Audit: upstream is a response's metadata; a call that got none is not reported."""
    with capture_upstream() as capture:
        record_upstream(UpstreamMeta(call="GET /a", status=200))
        reserve_upstream()  # issued, never answered (a timeout, say)
    assert [meta.call for meta in capture.calls] == ["GET /a"]
    assert capture.last is not None
    assert capture.last.call == "GET /a"


def test_a_slot_reserved_outside_a_capture_records_nothing() -> None:
    """Platform choice: the adapter needs no capture to run (tests, benchmarks, other hosts)."""
    slot = reserve_upstream()
    slot.fill(UpstreamMeta(call="GET /x", status=200))
    assert slot.capture is None
