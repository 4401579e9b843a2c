"""What the mutation run mutates: the rule modules, the operators, and the positions left alone.

Cosmic Ray proposes every replacement it knows (each binary operator by ten others, each comparison by
seven); the run keeps one representative per operator (the "sufficient" selective set: ``+``↔``-``,
``*``↔``/``, each comparison by its boundary neighbour and by its negation, ``is``↔``is not``, ``and``↔``or``,
``not`` removed or added, numbers ±1, booleans, exception handlers, decorators, loops) and skips positions
in docstrings, annotations, log calls and ``__all__`` (:mod:`tests.conformance.mutation.exempt`).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import TYPE_CHECKING

from tests.conformance.mutation.exempt import exempt_reason

if TYPE_CHECKING:
    from cosmic_ray.work_db import WorkDB

__all__ = [
    "MODULES", "SELECTED", "SKIP_PREFIX", "config_toml", "module_name", "skip_unselected", "source_path",
]  # fmt: skip

#: The rule modules and the adapter's translation, in report order, each named ``component/module.py``: the
#: file ``component/osbp/component/module.py`` (:func:`source_path`), as the decisions and the table name it.
MODULES: tuple[str, ...] = (
    "protocol/mandate.py",
    "protocol/approval.py",
    "protocol/idempotency.py",
    "protocol/money.py",
    "protocol/timeutil.py",
    "adapter/translate.py",
)

_BINARY = "Add_Sub|Sub_Add|Mul_Div|Div_Mul|FloorDiv_Div|Mod_FloorDiv|Pow_Mul|LShift_RShift|RShift_LShift"
_BITWISE = "BitOr_BitAnd|BitAnd_BitOr|BitXor_BitAnd"
_COMPARE = "Eq_NotEq|NotEq_Eq|Lt_LtE|LtE_Lt|Gt_GtE|GtE_Gt|Lt_GtE|LtE_Gt|Gt_LtE|GtE_Lt|Is_IsNot|IsNot_Is"
_OTHERS = (
    "AddNot|ReplaceTrueWithFalse|ReplaceFalseWithTrue|ReplaceAndWithOr|ReplaceOrWithAnd|"
    "ReplaceBreakWithContinue|ReplaceContinueWithBreak|ExceptionReplacer|NumberReplacer|RemoveDecorator|"
    "ZeroIterationForLoop"
)
#: The operators the run applies (Cosmic Ray names).
SELECTED = re.compile(
    rf"core/(?:ReplaceBinaryOperator_(?:{_BINARY}|{_BITWISE})|ReplaceComparisonOperator_(?:{_COMPARE})"
    rf"|ReplaceUnaryOperator_(?:Delete_Not|USub_UAdd)|{_OTHERS})$"
)
#: The worker output of a skipped position starts with this (the report counts none of them).
SKIP_PREFIX = "not mutated: "


def source_path(module: str) -> str:
    """The file, relative to the repository root, of a module named as in :data:`MODULES`."""
    component, _, name = module.partition("/")
    return f"{component}/osbp/{component}/{name}"


def module_name(path: str) -> str:
    """The :data:`MODULES` name of the file at ``path`` (relative to the repository root)."""
    component, _, rest = path.partition("/")
    prefix = f"osbp/{component}/"
    return f"{component}/{rest.removeprefix(prefix)}" if rest.startswith(prefix) else path


def config_toml(
    *, modules: tuple[str, ...], test_command: str, timeout: float, worker_urls: list[str]
) -> str:
    """The Cosmic Ray configuration of one run (module paths relative to each worker's tree)."""
    paths = ", ".join(f'"{source_path(module)}"' for module in modules)
    urls = ", ".join(f'"{url}"' for url in worker_urls)
    return (
        "[cosmic-ray]\n"
        f"module-path = [{paths}]\n"
        f"timeout = {timeout:.1f}\n"
        "excluded-modules = []\n"
        f"test-command = {test_command!r}\n"
        "\n[cosmic-ray.distributor]\n"
        'name = "http"\n'
        "\n[cosmic-ray.distributor.http]\n"
        f"worker-urls = [{urls}]\n"
    )


def skip_unselected(db: WorkDB, root: Path) -> Counter[str]:
    """Mark every pending work item outside the operator set or in an exempt position SKIPPED; the counts."""
    from cosmic_ray.work_item import WorkerOutcome, WorkResult  # the `mutation` extra, installed by the run

    by_reason: dict[str, list[str]] = {}
    for item in list(db.pending_work_items):
        (mutation,) = item.mutations
        if not SELECTED.match(mutation.operator_name):
            reason = "operator outside the selected set"
        else:
            reason = exempt_reason(root / mutation.module_path, tuple(mutation.start_pos)) or ""
        if reason:
            by_reason.setdefault(reason, []).append(item.job_id)
    for reason, job_ids in by_reason.items():
        db.set_multiple_results(
            job_ids, WorkResult(worker_outcome=WorkerOutcome.SKIPPED, output=SKIP_PREFIX + reason)
        )
    return Counter({reason: len(job_ids) for reason, job_ids in by_reason.items()})
