"""Impossible calendar dates and clock times in a request are refused as a Problem, never a crash.

A date such as February 30 or a time such as 25:00 has the right shape (``YYYY-MM-DD``, ``HH:MM``) but
names no moment. A server must refuse it as it refuses any malformed input: a non-retryable Problem
without an approval token (for a mandate field, invalid_mandate), not internal_adapter_error (an adapter
that threw on it) and never a slot list or an approval challenge. Each payload differs from one the other
checks show valid in that one field.
"""

from __future__ import annotations

from typing import Any

from osbp.conformance.grading import expect, summarize
from osbp.conformance.payloads import CREATE, approval_token
from osbp.conformance.probe import Probe
from osbp.conformance.wire import Exchange

__all__ = ["INPUT_CHECKS", "grade_impossible_inputs", "refusal_problem"]

#: Every check this module grades, in report order.
INPUT_CHECKS = ("input.impossible_date", "input.impossible_time", "mandate.impossible_wall_clock")
_AVAILABILITY = "osbp_availability_find"
#: The code an adapter that threw is reported with (the spec's code table).
_THREW = "internal_adapter_error"
#: Shapes that are right and moments that do not exist.
_IMPOSSIBLE_TIMES = ("25:00", "24:30")


def _impossible_day(year: int) -> str:
    return f"{year:04d}-02-30"


def refusal_problem(where: str, exchange: Exchange, code: str | None = None) -> str | None:
    """Why `exchange` is not a refusal of malformed input (of `code` when given), or None."""
    if exchange.ok is not False or exchange.code is None:
        return f"{where}: expected a Problem, got {exchange.describe()}"
    if code is not None and exchange.code != code:
        return f"{where}: expected {code}, got {exchange.describe()}"
    if exchange.code == _THREW:
        return f"{where}: the adapter threw ({exchange.describe()})"
    if exchange.problem.get("retryable") is True or approval_token(exchange.message) is not None:
        return f"{where}: a retryable Problem or an approval challenge ({exchange.describe()})"
    return None


async def _grade(
    probe: Probe, check_id: str, cases: list[tuple[str, str, dict[str, Any], str | None]]
) -> None:
    with probe.grader.check(check_id, f"{len(cases)} requests"):
        problems = []
        for where, tool, payload, code in cases:
            exchange = await probe.wire.call(tool, payload)
            if problem := refusal_problem(where, exchange, code):
                problems.append(problem)
        expect(not problems, summarize(problems))


async def grade_impossible_inputs(probe: Probe) -> None:
    """availability.find and booking.create with an impossible date or time, and a mandate with one."""
    fixtures, build = probe.fixtures, probe.payloads
    usd = fixtures.services.fixed_usd.id
    day = _impossible_day(fixtures.slot.date.year)
    find = {
        "service_id": usd,
        "schedule_id": fixtures.schedule.id,
        "date": fixtures.slot.date.isoformat(),
        "provider_id": fixtures.providers.in_scope,
    }
    await _grade(
        probe,
        "input.impossible_date",
        [
            (f"availability.find date {day}", _AVAILABILITY, {**find, "date": day}, None),
            (f"booking.create date {day}", CREATE, build.create(usd, date=day), None),
        ],
    )
    await _grade(
        probe,
        "input.impossible_time",
        [
            (f"booking.create time {clock}", CREATE, build.create(usd, time=clock), None)
            for clock in _IMPOSSIBLE_TIMES
        ],
    )
    expiry = f"{_impossible_day(build.now.year + 1)}T10:00:00Z"
    await _grade(
        probe,
        "mandate.impossible_wall_clock",
        [
            (
                f"mandate earliest_start {day}T00:00:00",
                CREATE,
                build.with_mandate(usd, earliest_start=f"{day}T00:00:00"),
                "invalid_mandate",
            ),
            (
                f"mandate expires_at {expiry}",
                CREATE,
                build.with_mandate(usd, expires_at=expiry),
                "invalid_mandate",
            ),
        ],
    )
