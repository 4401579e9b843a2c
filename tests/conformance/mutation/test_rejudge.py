"""Finding a decided survivor's mutant in today's source, by its changed line rather than its position."""

from __future__ import annotations

import pytest

from tests.conformance.mutation.rejudge import locate
from tests.conformance.mutation.score import Decision

pytest.importorskip("cosmic_ray")

_SOURCE = (
    "def cap(price, limit):\n"
    "    if price > limit:\n"
    "        return False\n"
    "    return True\n"
    "\n\n"
    "def floor(price, limit):\n"
    "    if price > limit:\n"
    "        return limit\n"
    "    return price\n"
)


def _decision(before: str, after: str, nth: int = 0) -> Decision:
    return Decision("rules.py", "core/ReplaceComparisonOperator_Gt_GtE", before, after, "open", nth=nth)


def test_the_nth_identical_line_is_the_one_mutated() -> None:
    first = locate(_SOURCE, _decision("if price > limit:", "if price >= limit:"))
    second = locate(_SOURCE, _decision("if price > limit:", "if price >= limit:", nth=1))
    assert first is not None
    assert second is not None
    assert first.splitlines()[1] == "    if price >= limit:"
    assert first.splitlines()[7] == "    if price > limit:"
    assert second.splitlines()[1] == "    if price > limit:"
    assert second.splitlines()[7] == "    if price >= limit:"


def test_an_edit_elsewhere_does_not_lose_the_mutant() -> None:
    edited = "import math\n\n\n" + _SOURCE
    mutated = locate(edited, _decision("if price > limit:", "if price >= limit:", nth=1))
    assert mutated is not None
    assert mutated.splitlines()[10] == "    if price >= limit:"


def test_a_mutant_whose_line_is_gone_is_missing() -> None:
    assert locate(_SOURCE, _decision("if price > ceiling:", "if price >= ceiling:")) is None
    assert locate(_SOURCE, _decision("if price > limit:", "if price >= limit:", nth=2)) is None
