"""The narrated native-API tour runs end to end against a real platform."""

from __future__ import annotations

import pytest

from osbp.backend import tour

pytestmark = pytest.mark.integration


def test_tour_meets_every_expected_outcome(capsys):
    """Platform choice: the tour exits 0 only when every native-API outcome matched."""
    assert tour.main([]) == 0
    out = capsys.readouterr().out
    assert "all outcomes as expected" in out
    assert "slot_taken" in out
    assert "requires_verification" in out
