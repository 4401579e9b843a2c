"""booking.status while the platform cannot be reached, and once it can again (through the scenario hook).

The spec lets a server answer booking.status from a local record when the platform is unavailable, but
such an answer "must not pretend to be fresh platform state": v0.1.0's one channel for how a response was
produced is `osbp_runtime`, so a snapshot must carry an `osbp_runtime.message`; a failure must be
retryable. Once the platform is reachable the answer is current platform state again, without
`osbp_runtime`, and (with the status hook) shows the native status the battery gave the booking before
the outage, which no creation snapshot knows.

The platform is made reachable again whatever happened in between, even when the run is cancelled.
"""

from __future__ import annotations

from typing import Any

import anyio

from osbp.conformance.flows import book, receipt_problems
from osbp.conformance.grading import CheckFailed, expect
from osbp.conformance.probe import Probe
from osbp.conformance.scenario import set_native_status, set_reachability
from osbp.conformance.wire import Exchange

__all__ = ["CHECK_IDS", "grade_outage"]

CHECK_IDS = ("status.unreachable_not_current", "status.reachable_current")
STATUS = "osbp_booking_status"


def _changed_status(probe: Probe) -> tuple[str, str] | None:
    """A native status (and its protocol mapping) other than a fresh booking's, to set before the outage."""
    if probe.status_url is None:
        return None
    mapping = probe.fixtures.native_statuses
    for native, protocol in mapping.items():
        if protocol not in ("booked", "unknown"):
            return native, protocol
    return None


async def _restore(probe: Probe, url: str) -> str | None:
    # Shielded: a cancelled run still gives the platform back to the other clients of the organization.
    with anyio.CancelScope(shield=True):
        restored = await set_reachability(
            url, probe.fixtures.organization_id, "reachable", call_timeout=probe.call_timeout
        )
    return restored


def _grade_unreachable(answer: Exchange, booking_id: str) -> None:
    envelope = answer.envelope or {}
    if answer.ok is True:
        runtime = envelope.get("osbp_runtime")
        message = runtime.get("message") if isinstance(runtime, dict) else None
        expect(
            isinstance(message, str) and bool(message.strip()),
            "booking.status answered while the platform was unreachable as if it were current platform "
            "state (no osbp_runtime.message saying it is not)",
            expected="a retryable failure, or a snapshot marked not current in osbp_runtime.message",
            observed=f"ok, osbp_runtime {runtime!r}",
        )
        value = answer.value
        expect(
            isinstance(value, dict) and value.get("id") == booking_id,
            f"the snapshot is not booking {booking_id}: {value!r}",
        )
        return
    expect(answer.ok is False, f"booking.status while unreachable: {answer.describe()}")
    expect(
        answer.problem.get("retryable") is True and answer.code != "booking_not_found",
        "an unreachable platform is answered as a final failure",
        expected="a retryable Problem (the platform is unavailable, not the booking)",
        observed=answer.describe(),
    )


async def grade_outage(probe: Probe) -> None:
    """Book one appointment, make the platform unreachable, read its status, make it reachable, read again."""
    url = probe.scenario_url
    if url is None:
        for check_id in CHECK_IDS:
            probe.grader.skipped(
                check_id, "no --scenario-url: the battery cannot make the platform unreachable"
            )
        return
    organization = probe.fixtures.organization_id
    changed = _changed_status(probe)
    #: The status answer during the outage, once there is one (a dict: the check block may end early).
    seen: dict[str, Exchange] = {}
    restored: str | None = None
    booking_id = ""
    with probe.grader.check(CHECK_IDS[0]):
        booked = await book(probe, probe.payloads.create(probe.fixtures.services.fixed_usd.id))
        problems = receipt_problems(booked)
        expect(not problems, "; ".join(problems))
        booking_id = booked.value["booking_id"]
        if changed is not None:
            assert probe.status_url is not None
            failed = await set_native_status(
                probe.status_url, organization, booking_id, changed[0], call_timeout=probe.call_timeout
            )
            if failed is not None:
                raise CheckFailed(failed)
        try:
            failed = await set_reachability(url, organization, "unreachable", call_timeout=probe.call_timeout)
            if failed is not None:
                raise CheckFailed(failed)
            seen["during"] = await probe.wire.call(STATUS, {"booking_id": booking_id})
        finally:
            restored = await _restore(probe, url)
        _grade_unreachable(seen["during"], booking_id)
    if "during" not in seen:
        probe.grader.blocked(CHECK_IDS[1], CHECK_IDS[0])
        return
    with probe.grader.check(CHECK_IDS[1]):
        expect(restored is None, f"the platform could not be made reachable again: {restored}")
        after = await probe.wire.call(STATUS, {"booking_id": booking_id})
        value: Any = after.value
        expect(isinstance(value, dict), f"booking.status once reachable: {after.describe()}")
        runtime = (after.envelope or {}).get("osbp_runtime")
        expect(
            runtime is None,
            "booking.status still answers a marked snapshot once the platform is reachable",
            expected="current platform state, without osbp_runtime",
            observed=f"osbp_runtime {runtime!r}",
        )
        expect(value.get("id") == booking_id, f"booking id {value.get('id')!r}, expected {booking_id!r}")
        if changed is not None:
            expect(
                value.get("status") == changed[1],
                f"booking.status is not current: the platform holds native {changed[0]!r}",
                expected=changed[1],
                observed=str(value.get("status")),
            )
