"""The positions the mutation run leaves alone, and the operators it applies."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conformance.mutation.exempt import exempt_reason
from tests.conformance.mutation.plan import SELECTED

_MODULE = '''"""A module docstring with a | b in it."""
from __future__ import annotations

import logging

__all__ = ["f", "g"]
logger = logging.getLogger(__name__)


def f(value: int | None, limit: int = 3) -> str | None:
    """Return the value when it is under the limit."""
    logger.info("called", extra={"over": value is not None and value > limit})
    if value is not None and value < limit:
        return str(value + 1)
    return None
'''


def _position(text: str, needle: str, nth: int = 0) -> tuple[int, int]:
    for number, line in enumerate(text.splitlines(), start=1):
        column = line.find(needle)
        if column >= 0:
            if nth == 0:
                return number, column
            nth -= 1
    raise AssertionError(needle)


@pytest.fixture
def module(tmp_path: Path) -> Path:
    path = tmp_path / "rules.py"
    path.write_text(_MODULE, encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("needle", "nth", "reason"),
    [
        ("a | b", 0, "docstring"),
        ("int | None", 0, "annotation"),
        ("str | None", 0, "annotation"),
        ("3", 0, None),
        ('"f"', 0, "__all__"),
        ("value > limit", 0, "logging"),
        ("Return the value", 0, "docstring"),
        ("value < limit", 0, None),
        ("value + 1", 0, None),
    ],
)
def test_exempt_positions_are_docstrings_annotations_logging_and_all(module, needle, nth, reason):
    """Mutants there cannot change a server's answer (platform choice: they would only cost battery runs)."""
    assert exempt_reason(module, _position(_MODULE, needle, nth)) == reason


@pytest.mark.parametrize(
    ("operator", "selected"),
    [
        ("core/ReplaceBinaryOperator_Add_Sub", True),
        ("core/ReplaceBinaryOperator_Add_Mul", False),
        ("core/ReplaceComparisonOperator_Lt_LtE", True),
        ("core/ReplaceComparisonOperator_Lt_GtE", True),
        ("core/ReplaceComparisonOperator_Lt_Eq", False),
        ("core/ReplaceComparisonOperator_Is_IsNot", True),
        ("core/AddNot", True),
        ("core/NumberReplacer", True),
        ("core/ReplaceUnaryOperator_Delete_Not", True),
        ("core/ReplaceUnaryOperator_USub_Invert", False),
        ("core/VariableReplacer", False),
    ],
)
def test_one_representative_replacement_per_operator_is_selected(operator, selected):
    """Selective mutation keeps the boundary and negation neighbours only (platform choice, plan.py)."""
    assert bool(SELECTED.match(operator)) is selected
