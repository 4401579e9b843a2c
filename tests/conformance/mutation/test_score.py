"""The mutation score table from a session database shaped like Cosmic Ray's, and survivors' decisions."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from tests.conformance.mutation.score import (
    END,
    START,
    forget_survivors,
    load_decisions,
    read_session,
    render_owed,
    render_table,
    replace_between,
    scores,
)

_SOURCE = "def cap(price, limit):\n    if price > limit:\n        return False\n    return True\n"


def _diff(before: str, after: str) -> str:
    return f"--- mutation diff ---\n--- a/rules.py\n+++ b/rules.py\n@@ -2 +2 @@\n-{before}\n+{after}\n"


def _session(path: Path, rows: list[tuple[str, int, str | None, str | None, str | None, str | None]]) -> None:
    with sqlite3.connect(path) as db:
        db.execute(
            "create table mutation_specs (module_path, operator_name, operator_args, occurrence,"
            " start_pos_row, start_pos_col, end_pos_row, end_pos_col, definition_name, job_id primary key)"
        )
        db.execute(
            "create table work_results (worker_outcome, output, test_outcome, diff, job_id primary key)"
        )
        for number, (operator, row, worker, test, output, diff) in enumerate(rows):
            job = f"job{number}"
            db.execute(
                "insert into mutation_specs values (?, ?, '{}', 0, ?, 4, ?, 9, 'cap', ?)",
                ("rules.py", operator, row, row, job),
            )
            if worker is not None:
                db.execute(
                    "insert into work_results values (?, ?, ?, ?, ?)", (worker, output, test, diff, job)
                )


@pytest.fixture
def session(tmp_path: Path) -> Path:
    (tmp_path / "rules.py").write_text(_SOURCE, encoding="utf-8")
    path = tmp_path / "session.sqlite"
    _session(
        path,
        [
            ("core/ReplaceComparisonOperator_Gt_GtE", 2, "NORMAL", "SURVIVED", "PASS",
             _diff("if price > limit:", "if price >= limit:")),
            ("core/ReplaceComparisonOperator_Gt_LtE", 2, "NORMAL", "KILLED", "FAIL mandate.price_over_cap",
             _diff("if price > limit:", "if price <= limit:")),
            ("core/ReplaceTrueWithFalse", 4, "NORMAL", "SURVIVED", "PASS",
             _diff("return True", "return False")),
            ("core/AddNot", 2, "NORMAL", "KILLED", "timeout",
             _diff("if price > limit:", "if not price > limit:")),
            ("core/ReplaceFalseWithTrue", 3, "SKIPPED", None, "not mutated: docstring", None),
            ("core/NumberReplacer", 3, None, None, None, None),
        ],
    )  # fmt: skip
    return path


def test_outcomes_are_read_with_the_changed_line_as_identity(session, tmp_path):
    """Skipped positions are left out; a pending mutant keeps its source line (platform choice, score.py)."""
    mutants = read_session(session, tmp_path)
    assert [(m.operator.split("/")[1], m.outcome, m.before, m.after) for m in mutants] == [
        ("AddNot", "timeout", "if price > limit:", "if not price > limit:"),
        ("ReplaceComparisonOperator_Gt_GtE", "survived", "if price > limit:", "if price >= limit:"),
        ("ReplaceComparisonOperator_Gt_LtE", "killed", "if price > limit:", "if price <= limit:"),
        ("NumberReplacer", "pending", "return False", ""),
        ("ReplaceTrueWithFalse", "survived", "return True", "return False"),
    ]


def test_score_excludes_equivalent_mutants_and_counts_timeouts_as_killed(session, tmp_path):
    """score = (killed + timeout) / (mutants - equivalent) (platform choice, docs/conformance.md)."""
    decisions_file = tmp_path / "survivors.toml"
    decisions_file.write_text(
        '[[survivor]]\nmodule = "rules.py"\noperator = "core/ReplaceTrueWithFalse"\nbefore = "return True"\n'
        'after = "return False"\ndecision = "equivalent"\nreason = "never reached"\n',
        encoding="utf-8",
    )
    (row,) = scores(read_session(session, tmp_path), load_decisions(decisions_file), ("rules.py",))
    assert (row.mutants, row.counts["killed"], row.counts["timeout"], row.counts["survived"]) == (4, 1, 1, 1)
    assert row.counts["equivalent"] == 1
    assert row.score == pytest.approx(2 / 3)
    table = render_table([row], footer="footer")
    assert "| `rules.py` | 4 (1 not run) | 1 | 1 | 1 | 0 | 1 | 66.7 % |" in table


def test_open_survivors_are_counted_by_the_rule_group_of_their_reason(session, tmp_path):
    """An open decision's reason starts with the group that owes the check (platform choice, score.py)."""
    decisions_file = tmp_path / "survivors.toml"
    decisions_file.write_text(
        '[[survivor]]\nmodule = "rules.py"\noperator = "core/ReplaceComparisonOperator_Gt_GtE"\n'
        'before = "if price > limit:"\nafter = "if price >= limit:"\ndecision = "open"\n'
        'reason = "binding: a price equal to the cap books"\n',
        encoding="utf-8",
    )
    owed = render_owed(read_session(session, tmp_path), load_decisions(decisions_file))
    assert "| binding | 1 | `rules.py:2` |" in owed
    assert "| not decided yet | 1 | `rules.py:4` |" in owed


def test_an_unknown_decision_is_refused(tmp_path):
    """A decision is equivalent, unreachable, check or open (platform choice, mutation-survivors.toml)."""
    path = tmp_path / "survivors.toml"
    path.write_text(
        '[[survivor]]\nmodule = "m"\noperator = "o"\nbefore = "a"\nafter = "b"\ndecision = "maybe"\n',
        encoding="utf-8",
    )
    with pytest.raises(ValueError, match="unknown decision 'maybe'"):
        load_decisions(path)


def test_the_table_replaces_only_the_text_between_its_markers():
    """The generated block is rewritten in place (platform choice, like the kill matrix's table)."""
    text = f"before\n{START}\nold\n{END}\nafter\n"
    assert replace_between(text, "new") == f"before\n{START}\nnew\n{END}\nafter\n"
    with pytest.raises(ValueError, match="markers"):
        replace_between("no markers", "new")


def test_rejudging_forgets_only_the_survivors_results(session):
    """Platform choice (docs/conformance.md, mutation score): `run --rejudge-survivors` runs the survivors
    again after the battery gained checks; kills, timeouts and skipped positions keep their results."""
    assert forget_survivors(session) == 2
    with sqlite3.connect(session) as db:
        kept = db.execute("select test_outcome, worker_outcome from work_results order by job_id").fetchall()
    assert kept == [("KILLED", "NORMAL"), ("KILLED", "NORMAL"), (None, "SKIPPED")]
    assert forget_survivors(session) == 0
