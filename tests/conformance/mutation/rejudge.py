"""Judge the decided survivors again, without a Cosmic Ray session: the inner loop of adding a check.

Each survivor of ``docs/mutation-survivors.toml`` names its mutant by module, operator, the changed line
before and after, and ``nth``. :func:`locate` finds that mutant in today's source by asking Cosmic Ray's
own operator for each of its occurrences in the module and keeping the one whose changed line matches (so
an edit elsewhere in the module does not lose it), applies it in a copy of this tree, and runs the judge
(:mod:`tests.conformance.mutation.judge`) there against one shared platform. ``--write`` records a kill as
``decision = "check"`` with the id of the check that failed first.
"""

from __future__ import annotations

import difflib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path

from tests.conformance.mutants.platform import shared_platform
from tests.conformance.mutation.judge import PLATFORM_ENV
from tests.conformance.mutation.plan import source_path
from tests.conformance.mutation.score import Decision

__all__ = ["Verdict", "locate", "rejudge"]


@dataclass(frozen=True, slots=True)
class Verdict:
    """What judging one survivor again found."""

    decision: Decision
    #: killed, survived, or missing (no such mutant in today's source).
    outcome: str
    #: The id of the first failing check, for a kill.
    check: str = ""
    detail: str = ""


def _changed_line(original: list[str], mutated: list[str]) -> tuple[str, str]:
    removed: list[str] = []
    added: list[str] = []
    for line in difflib.unified_diff(original, mutated, lineterm="", n=0):
        if line.startswith(("---", "+++", "@@")):
            continue
        (removed if line.startswith("-") else added).append(line[1:].strip())
    return " ".join(removed), " ".join(added)


def _words(text: str) -> str:
    return " ".join(text.split())


def locate(source: str, decision: Decision) -> str | None:
    """The module's source with the decided mutant applied, or None when today's source has no such mutant."""
    from cosmic_ray.mutating import mutate_code
    from cosmic_ray.plugins import get_operator

    operator = get_operator(decision.operator)()
    original = source.splitlines()
    same_line = 0
    occurrence = 0
    while (mutated := mutate_code(source, operator, occurrence)) is not None:
        occurrence += 1
        before, after = _changed_line(original, mutated.splitlines())
        # Compared with runs of whitespace as one space: the session's diff joins a removed decorator and
        # its blank lines, or a module's last line with its missing newline, with spaces.
        if _words(before) != _words(decision.before):
            continue
        # nth counts the operator's mutants of identical source lines, whatever their replacement.
        if same_line == decision.nth and _words(after) == _words(decision.after):
            return str(mutated)
        same_line += 1
    return None


def _copy(tree: Path) -> Path:
    from tests.conformance.mutation.run import _NOT_COPIED, REPO

    shutil.copytree(REPO, tree, symlinks=True, ignore=_NOT_COPIED)
    return tree


def _judge(decision: Decision, tree: Path, env: dict[str, str]) -> Verdict:
    path = tree / source_path(decision.module)
    source = path.read_text(encoding="utf-8")
    mutated = locate(source, decision)
    if mutated is None:
        return Verdict(decision, "missing")
    path.write_text(mutated, encoding="utf-8")
    try:
        done = subprocess.run(
            [sys.executable, "-m", "tests.conformance.mutation.judge"],
            cwd=tree, env=env, capture_output=True, text=True, check=False, timeout=300,
        )  # fmt: skip
    finally:
        path.write_text(source, encoding="utf-8")
    if done.returncode == 0:
        return Verdict(decision, "survived")
    first = next((line for line in done.stdout.splitlines() if line.startswith("FAIL ")), "")
    check = first.removeprefix("FAIL ").split(":", 1)[0] if first else ""
    detail = first or (done.stdout + done.stderr).strip()[-300:]
    return Verdict(decision, "killed", check, detail)


def rejudge(decisions: Iterable[Decision], *, workers: int = 1) -> Iterator[Verdict]:
    """Judge each decision's mutant again, ``workers`` at a time; verdicts in the order given."""
    chosen = list(decisions)
    with tempfile.TemporaryDirectory(prefix="osbp-rejudge-") as scratch, shared_platform() as platform_url:
        env = {**os.environ, PLATFORM_ENV: platform_url, "PYTHONDONTWRITEBYTECODE": "1"}
        trees = [_copy(Path(scratch) / f"tree{index}") for index in range(max(1, workers))]
        free = list(trees)

        def one(decision: Decision) -> Verdict:
            tree = free.pop()
            try:
                return _judge(decision, tree, env)
            finally:
                free.append(tree)

        with ThreadPoolExecutor(max_workers=len(trees)) as pool:
            yield from pool.map(one, chosen)


def recorded(decision: Decision, verdict: Verdict) -> Decision:
    """The decision ``--write`` keeps after ``verdict``: a kill becomes ``check``, the rest is unchanged."""
    if verdict.outcome != "killed" or decision.decision == "check":
        return decision
    return replace(decision, decision="check", check=verdict.check)
