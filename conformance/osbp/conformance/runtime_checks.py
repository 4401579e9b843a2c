"""`osbp_runtime`'s replay marker, graded over every booking.create of the run (all sessions).

v0.1.0 defines one value, `idempotency: "local_cache_replay"`: a settled result returned from local
idempotency state *instead of calling the booking platform again*. So the first success under a key (a
create that reached the platform) must not carry it, and a repeat of a settled key with the same payload
(an idempotent replay) should.
"""

from __future__ import annotations

from typing import Any

from osbp.conformance.grading import Grader, expect, summarize
from osbp.conformance.payloads import CREATE
from osbp.conformance.wire import Exchange

__all__ = ["CHECK_IDS", "LOCAL_CACHE_REPLAY", "grade_runtime_markers"]

CHECK_IDS = ("idempotency.fresh_create_unmarked", "idempotency.replay_marked")
LOCAL_CACHE_REPLAY = "local_cache_replay"
#: The transient fields of booking.create, outside its logical payload (the spec's payload hash).
_TRANSIENT = ("approval", "verification_code")


def _marked(exchange: Exchange) -> bool:
    runtime = (exchange.envelope or {}).get("osbp_runtime")
    return isinstance(runtime, dict) and runtime.get("idempotency") == LOCAL_CACHE_REPLAY


def _payload(arguments: dict[str, Any]) -> dict[str, Any]:
    return {key: value for key, value in arguments.items() if key not in _TRANSIENT}


def grade_runtime_markers(grader: Grader, exchanges: list[Exchange]) -> None:
    """Grade both checks over `exchanges` in call order (`#n` in the details counts from 1)."""
    settled: dict[str, dict[str, Any]] = {}
    fresh, replays = 0, 0
    marked_fresh: list[str] = []
    unmarked_replays: list[str] = []
    for index, exchange in enumerate(exchanges, start=1):
        if exchange.tool != CREATE or exchange.ok is not True:
            continue
        key = exchange.arguments.get("idempotency_key")
        if not isinstance(key, str):
            continue
        payload = _payload(exchange.arguments)
        if key not in settled:
            settled[key] = payload
            fresh += 1
            if _marked(exchange):
                marked_fresh.append(f"#{index} (key {key})")
        elif settled[key] == payload:
            replays += 1
            if not _marked(exchange):
                unmarked_replays.append(f"#{index} (key {key})")
    if not fresh:
        for check_id in CHECK_IDS:
            grader.skipped(check_id, "no booking.create of the run booked")
        return
    with grader.check("idempotency.fresh_create_unmarked"):
        expect(
            not marked_fresh,
            "a create that booked claims it was replayed without calling the platform: "
            + summarize(marked_fresh),
            expected="no osbp_runtime.idempotency on the first booking under a key",
            observed=f'osbp_runtime.idempotency "{LOCAL_CACHE_REPLAY}" on {len(marked_fresh)} of {fresh}',
        )
    if not replays:
        grader.skipped("idempotency.replay_marked", "no booking.create of the run was replayed")
        return
    with grader.check("idempotency.replay_marked"):
        expect(
            not unmarked_replays,
            f"an idempotent replay does not say so: {summarize(unmarked_replays)}",
            expected=f'osbp_runtime.idempotency "{LOCAL_CACHE_REPLAY}" on every replay',
            observed=f"no marker on {len(unmarked_replays)} of {replays} replays",
        )
