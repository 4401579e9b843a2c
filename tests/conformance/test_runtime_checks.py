"""The replay-marker checks over every booking.create of a run."""

from __future__ import annotations

from typing import Any

from osbp.conformance.grading import Grader, Verdict
from osbp.conformance.runtime_checks import CHECK_IDS, grade_runtime_markers
from osbp.conformance.wire import Exchange
from tests.conformance.fake_session import result

CREATE = "osbp_booking_create"
PAYLOAD = {"idempotency_key": "key_1", "service_id": "svc", "customer": {"display_name": "Casey"}}
REPLAYED = {"idempotency": "local_cache_replay", "message": "Replayed."}


def _create(arguments: dict[str, Any], *, runtime: dict[str, str] | None = None, ok: bool = True) -> Exchange:
    body: dict[str, Any] = {"ok": ok, "audit_event_id": "aud"}
    body |= {"value": {"id": "r", "booking_id": "b"}} if ok else {"problem": {"code": "slot_taken"}}
    if runtime is not None:
        body["osbp_runtime"] = runtime
    return Exchange(CREATE, arguments, result(body))


def _verdicts(*exchanges: Exchange) -> dict[str, Verdict | None]:
    grader = Grader()
    grade_runtime_markers(grader, list(exchanges))
    return {check_id: grader.verdict(check_id) for check_id in CHECK_IDS}


def test_a_fresh_booking_unmarked_and_its_replays_marked_pass():
    """OSBP spec, Result Envelope: local_cache_replay marks a result from local idempotency state only;
    the approval and code are transient, so a retry carrying them is the same payload."""
    approved = PAYLOAD | {"approval": {"confirmed": True, "token": "t"}}
    exchanges = (_create(approved), _create(PAYLOAD, runtime=REPLAYED), _create(approved, runtime=REPLAYED))
    assert _verdicts(*exchanges) == dict.fromkeys(CHECK_IDS, Verdict.PASS)


def test_a_fresh_booking_marked_as_a_replay_fails():
    """OSBP spec, Result Envelope: a create that reached the platform is no local_cache_replay."""
    verdicts = _verdicts(_create(PAYLOAD, runtime=REPLAYED), _create(PAYLOAD, runtime=REPLAYED))
    assert verdicts == {
        "idempotency.fresh_create_unmarked": Verdict.FAIL,
        "idempotency.replay_marked": Verdict.PASS,
    }


def test_a_replay_without_the_marker_fails():
    """Beyond the spec (osbp_runtime is optional): a replay says it did not call the platform."""
    verdicts = _verdicts(_create(PAYLOAD), _create(PAYLOAD))
    assert verdicts == {
        "idempotency.fresh_create_unmarked": Verdict.PASS,
        "idempotency.replay_marked": Verdict.FAIL,
    }


def test_failures_and_changed_payloads_are_neither_fresh_nor_replays():
    """Platform choice: only successes count; the same key with another payload is no replay."""
    changed = PAYLOAD | {"service_id": "other"}
    verdicts = _verdicts(_create(PAYLOAD, ok=False), _create(PAYLOAD), _create(changed))
    assert verdicts == {
        "idempotency.fresh_create_unmarked": Verdict.PASS,
        "idempotency.replay_marked": Verdict.SKIP,
    }
    assert _verdicts(_create(PAYLOAD, ok=False)) == dict.fromkeys(CHECK_IDS, Verdict.SKIP)
