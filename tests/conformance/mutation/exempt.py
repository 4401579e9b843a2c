"""Which mutation positions are not worth a battery run: docstrings, logging, `__all__`, type annotations.

Cosmic Ray proposes a mutant for every operator it can rewrite; one inside an annotation (``X | None``,
evaluated lazily under ``from __future__ import annotations``), a docstring, a log call or ``__all__``
cannot change what the server answers, so :func:`exempt_reason` names why such a position is skipped.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from functools import cache
from pathlib import Path

__all__ = ["exempt_reason"]

#: Receivers whose method calls are logging (``logger.info(...)``, ``logging.warning(...)``).
_LOGGERS = frozenset({"logger", "log", "logging", "_logger", "_log", "LOGGER"})


@dataclass(frozen=True, slots=True)
class _Span:
    start: tuple[int, int]
    end: tuple[int, int]
    reason: str

    def holds(self, position: tuple[int, int]) -> bool:
        return self.start <= position < self.end


def _span(node: ast.expr | ast.stmt, reason: str) -> _Span:
    end = (node.end_lineno or node.lineno, node.end_col_offset or 0)
    return _Span((node.lineno, node.col_offset), end, reason)


def _is_docstring(statement: ast.stmt) -> bool:
    return (
        isinstance(statement, ast.Expr)
        and isinstance(statement.value, ast.Constant)
        and isinstance(statement.value.value, str)
    )


def _spans(tree: ast.Module) -> list[_Span]:
    spans: list[_Span] = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef)
            and node.body
            and _is_docstring(node.body[0])
        ):
            spans.append(_span(node.body[0], "docstring"))
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.returns is not None:
            spans.append(_span(node.returns, "annotation"))
        elif isinstance(node, ast.arg) and node.annotation is not None:
            spans.append(_span(node.annotation, "annotation"))
        if isinstance(node, ast.AnnAssign):
            spans.append(_span(node.annotation, "annotation"))
        if isinstance(node, ast.Assign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any(isinstance(t, ast.Name) and t.id == "__all__" for t in targets):
                spans.append(_span(node, "__all__"))
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
            receiver = node.func.value
            if isinstance(receiver, ast.Name) and receiver.id in _LOGGERS:
                spans.append(_span(node, "logging"))
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            spans.append(_span(node, "annotation"))
    return spans


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


@cache
def _module_spans(path: Path) -> tuple[_Span, ...]:
    return tuple(_spans(ast.parse(path.read_text(encoding="utf-8"))))


def exempt_reason(path: Path, start: tuple[int, int]) -> str | None:
    """Why a mutation starting at ``start`` (line from 1, column from 0) in ``path`` is skipped, if it is."""
    for span in _module_spans(path):
        if span.holds(start):
            return span.reason
    return None
