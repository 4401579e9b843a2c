"""The injectable clock."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from osbp.protocol.clock import Clock, FixedClock, SystemClock


def test_system_clock_is_aware_utc() -> None:
    """The default clock returns aware UTC instants (platform choice: no naive datetimes)."""
    now = SystemClock().now()
    assert now.utcoffset() == timedelta(0)
    assert isinstance(SystemClock(), Clock)


def test_fixed_clock_moves_only_when_advanced() -> None:
    """Tests freeze and advance time for TTLs and expiries (STYLE: inject time)."""
    clock = FixedClock(datetime(2026, 5, 1, tzinfo=UTC))
    assert clock.now() == datetime(2026, 5, 1, tzinfo=UTC)
    assert clock.advance(timedelta(minutes=10)) == datetime(2026, 5, 1, 0, 10, tzinfo=UTC)
    assert clock.now() == datetime(2026, 5, 1, 0, 10, tzinfo=UTC)
    clock.set(datetime(2027, 1, 1, tzinfo=UTC))
    assert clock.now().year == 2027


def test_fixed_clock_refuses_naive_datetimes() -> None:
    """A naive 'now' would be read in the host zone (OSBP spec, Time Discipline)."""
    with pytest.raises(ValueError, match="aware"):
        FixedClock(datetime(2026, 5, 1))
