"""Where a module spells a problem code as a string literal, found with `ast` (for the code-table tests).

A *code position* is where a value can only be a problem code: a comparison with ``….code``,
``….problem_code`` or a name ``code`` (``==``, ``!=``, ``in``, ``not in``), the first argument or the
``code=`` keyword of a call to ``problem``, ``Problem`` or ``ProblemError``, the codes of a call to
``problem_responses``, and a ``"code": …`` member of a dict display. Only literals spelled like a code
(lower-case words joined by ``_``) count: ``code != "000000"`` compares a verification code.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

__all__ = ["CodeLiteral", "code_literals"]

_CODE_ATTRIBUTES = {"code", "problem_code"}
_CONSTRUCTORS = {"problem", "Problem", "ProblemError"}
_LISTS = {"problem_responses"}
_SPELLED_LIKE_A_CODE = re.compile(r"[a-z]+(?:_[a-z]+)*")


@dataclass(frozen=True)
class CodeLiteral:
    """One string literal in a code position: ``path:line`` and the code it spells."""

    path: str
    line: int
    code: str


def _strings(node: ast.expr) -> Iterator[ast.Constant]:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        if _SPELLED_LIKE_A_CODE.fullmatch(node.value):
            yield node
    elif isinstance(node, ast.Tuple | ast.List | ast.Set):
        for item in node.elts:
            yield from _strings(item)


def _names_a_code(node: ast.expr) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr in _CODE_ATTRIBUTES
    return isinstance(node, ast.Name) and node.id == "code"


def _callee(node: ast.Call) -> str | None:
    if isinstance(node.func, ast.Name):
        return node.func.id
    if isinstance(node.func, ast.Attribute):
        return node.func.attr
    return None


def _positions(tree: ast.AST) -> Iterator[ast.Constant]:
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            operands = [node.left, *node.comparators]
            if any(_names_a_code(operand) for operand in operands):
                for operand in operands:
                    yield from _strings(operand)
        elif isinstance(node, ast.Call):
            callee = _callee(node)
            if callee in _CONSTRUCTORS:
                if node.args:
                    yield from _strings(node.args[0])
                for keyword in node.keywords:
                    if keyword.arg == "code":
                        yield from _strings(keyword.value)
            elif callee in _LISTS:
                for argument in node.args:
                    yield from _strings(argument)
        elif isinstance(node, ast.Dict):
            for key, value in zip(node.keys, node.values, strict=True):
                if isinstance(key, ast.Constant) and key.value == "code":
                    yield from _strings(value)


def _expected(tree: ast.AST, calls: dict[str, int]) -> Iterator[ast.Constant]:
    for node in ast.walk(tree):
        index = calls.get(_callee(node) or "", -1) if isinstance(node, ast.Call) else -1
        if isinstance(node, ast.Call) and 0 <= index < len(node.args):
            yield from _strings(node.args[index])


def code_literals(root: Path, *folders: str, expected: dict[str, int] | None = None) -> list[CodeLiteral]:
    """Every string literal in a code position in the ``.py`` files under ``folders`` (relative to root).

    ``expected`` adds calls whose argument at an index is an expected code (a grader's case table).
    """
    found: list[CodeLiteral] = []
    for folder in folders:
        base = root / folder
        files = [base] if base.is_file() else sorted(base.rglob("*.py"))
        for path in files:
            tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
            relative = path.relative_to(root).as_posix()
            nodes = [*_positions(tree), *_expected(tree, expected or {})]
            found.extend(CodeLiteral(relative, node.lineno, str(node.value)) for node in nodes)
    return sorted(found, key=lambda item: (item.path, item.line, item.code))
