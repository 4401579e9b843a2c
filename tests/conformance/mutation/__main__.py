"""`python -m tests.conformance.mutation run|table|survivors`: the mutation score with the battery as judge.

``run [--workers N] [--timeout S] [--resume | --rejudge-survivors] [--module PATH]`` executes the session
(`make mutation`);
``table [--write]`` renders the score table (into docs/conformance.md between its markers);
``survivors [--write]`` lists each survivor with its decision (adding the undecided ones as "open");
``rejudge [--module PATH] [--decision D] [--match TEXT] [--workers N] [--write]`` judges the decided
survivors again without a session (the inner loop of adding a check; ``--write`` records the kills).
"""

# ruff: noqa: T201 - a command line that reports on its terminal
from __future__ import annotations

import argparse
import datetime as dt
import json
import sys
from collections.abc import Sequence

from tests.conformance.mutation.plan import MODULES
from tests.conformance.mutation.score import (
    Decision,
    Key,
    Mutant,
    load_decisions,
    read_session,
    render_owed,
    render_table,
    replace_between,
    scores,
)

REPO_DOCS = "docs/conformance.md"
SURVIVORS = "docs/mutation-survivors.toml"


def _run(args: argparse.Namespace) -> int:
    from tests.conformance.mutation.run import WORK_DIR, RunOptions, run

    modules = tuple(args.module) if args.module else MODULES
    options = RunOptions(
        modules=modules,
        workers=args.workers,
        timeout=args.timeout,
        resume=args.resume or args.rejudge_survivors,
        rejudge_survivors=args.rejudge_survivors,
    )
    seconds = run(options)
    (WORK_DIR / "run.json").write_text(
        json.dumps(
            {
                "finished": dt.datetime.now(dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                "seconds": round(seconds),
                "workers": args.workers,
                "resumed": args.resume or args.rejudge_survivors,
                "rejudged_survivors": args.rejudge_survivors,
            }
        ),
        encoding="utf-8",
    )
    print(f"mutation: the run took {seconds / 60:.1f} min")
    return 0


def _session() -> tuple[list[Mutant], dict[str, object]]:
    from tests.conformance.mutation.run import REPO, session_path

    path = session_path()
    if not path.exists():
        raise SystemExit(f"no session at {path}: run `make mutation` first")
    meta_path = path.parent / "run.json"
    meta = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.exists() else {}
    return read_session(path, REPO), meta


def _table(args: argparse.Namespace) -> int:
    from tests.conformance.mutation.run import REPO

    mutants, meta = _session()
    decisions = load_decisions(REPO / SURVIVORS)
    rows = scores(mutants, decisions, MODULES)
    when = f", last run {meta['finished']}" if meta.get("finished") else ""
    took = (
        f" in {int(meta['seconds']) // 60} min with {meta['workers']} workers" if meta.get("seconds") else ""  # type: ignore[call-overload]
    )
    pending = sum(1 for m in mutants if m.outcome == "pending")
    partial = f"; interrupted with {pending} of {len(mutants)} mutants not run" if pending else ""
    footer = f"Cosmic Ray 8.7, the operators of `tests/conformance/mutation/plan.py`{took}{when}{partial}."
    owed = render_owed(mutants, decisions)
    table = (
        render_table(rows, footer=footer) + "\n\nThe surviving mutants that still need a check:\n\n" + owed
    )
    if args.write:
        docs = REPO / REPO_DOCS
        docs.write_text(replace_between(docs.read_text(encoding="utf-8"), table), encoding="utf-8")
    print(table)
    return 0


_HEADER = """\
# The decision for each mutant that survives `make mutation` (docs/conformance.md, "Mutation score").
# Keyed by module, operator and the changed line before/after (stripped). decision is one of:
#   equivalent   no answer of any server built from the mutant differs (reason: why)
#   unreachable  only a platform answer or state the battery cannot produce tells it apart (reason: which)
#   check        a battery check now kills it (check: its id)
#   open         a check is owed (reason: the check it needs)
# `python -m tests.conformance.mutation survivors --write` rewrites this file in this order, keeping every
# decision and adding each undecided survivor as "open".
"""


def _toml_string(text: str) -> str:
    return json.dumps(text, ensure_ascii=False)


def _entry(decision: Decision) -> str:
    fields = [
        ("module", decision.module),
        ("function", decision.function),
        ("operator", decision.operator),
        ("before", decision.before),
        ("after", decision.after),
        ("decision", decision.decision),
        ("reason", decision.reason),
    ]
    if decision.check:
        fields.append(("check", decision.check))
    text = "".join(f"{name} = {_toml_string(value)}\n" for name, value in fields)
    return "\n[[survivor]]\n" + text + (f"nth = {decision.nth}\n" if decision.nth else "")


def _survivors(args: argparse.Namespace) -> int:
    from tests.conformance.mutation.run import REPO

    mutants, _ = _session()
    decisions = load_decisions(REPO / SURVIVORS)
    for mutant in (m for m in mutants if m.outcome == "survived"):
        decision = decisions.get(mutant.key)
        label = decision.decision if decision else "undecided"
        print(f"{label:11} {mutant.module}:{mutant.line} {mutant.function} {mutant.operator}")
        print(f"            - {mutant.before}\n            + {mutant.after}")
        if decision is None:
            decisions[mutant.key] = Decision(
                mutant.module,
                mutant.operator,
                mutant.before,
                mutant.after,
                "open",
                function=mutant.function,
                nth=mutant.nth,
            )
    killed = {m.key for m in mutants if m.outcome in ("killed", "timeout")}
    for key, decision in decisions.items():
        if key in killed and decision.decision != "check":
            print(
                f"stale: {decision.module} {decision.before!r} ({decision.operator}) is killed now",
                file=sys.stderr,
            )
    if args.write:
        _write_decisions(decisions)
    return 0


def _write_decisions(decisions: dict[Key, Decision]) -> None:
    from tests.conformance.mutation.run import REPO

    ordered = sorted(
        decisions.values(),
        key=lambda d: (
            MODULES.index(d.module) if d.module in MODULES else 99,
            d.function,
            d.before,
            d.operator,
            d.after,
        ),
    )
    text = _HEADER + "".join(_entry(decision) for decision in ordered)
    (REPO / SURVIVORS).write_text(text, encoding="utf-8")


def _rejudge(args: argparse.Namespace) -> int:
    from tests.conformance.mutation.rejudge import recorded, rejudge
    from tests.conformance.mutation.run import REPO

    decisions = load_decisions(REPO / SURVIVORS)
    wanted = set(args.decision or ("open", "unreachable"))
    chosen = [
        d
        for d in decisions.values()
        if d.decision in wanted
        and (not args.module or d.module in args.module)
        and (not args.match or args.match in d.before or args.match in d.function)
    ]
    print(f"rejudge: {len(chosen)} survivors", flush=True)
    counts: dict[str, int] = {}
    for verdict in rejudge(chosen, workers=args.workers):
        d = verdict.decision
        counts[verdict.outcome] = counts.get(verdict.outcome, 0) + 1
        print(f"{verdict.outcome:8} {d.module} {d.function} {d.operator}: {d.before!r} -> {d.after!r}")
        if verdict.detail:
            print(f"         {verdict.detail[:240]}")
        decisions[d.key] = recorded(decisions[d.key], verdict)
        sys.stdout.flush()
    print(f"rejudge: {counts}")
    if args.write:
        _write_decisions(decisions)
    return 0


def main(argv: Sequence[str]) -> int:
    """Dispatch the subcommand."""
    parser = argparse.ArgumentParser(
        prog="python -m tests.conformance.mutation", description=__doc__.splitlines()[0]
    )
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("run", help="execute the session")
    run.add_argument("--workers", type=int, default=2)
    run.add_argument("--timeout", type=float, default=60.0, help="seconds per mutant (default 60)")
    run.add_argument("--resume", action="store_true", help="keep earlier results, run only the rest")
    run.add_argument(
        "--rejudge-survivors",
        action="store_true",
        help="keep the kills, run the survivors and the rest again (after the battery gained checks)",
    )
    run.add_argument("--module", action="append", choices=MODULES, help="only this module (repeatable)")
    for name in ("table", "survivors"):
        sub.add_parser(name).add_argument("--write", action="store_true")
    again = sub.add_parser("rejudge", help="judge the decided survivors again, without a session")
    again.add_argument("--module", action="append", choices=MODULES, help="only this module (repeatable)")
    again.add_argument(
        "--decision", action="append", choices=("open", "unreachable", "check", "equivalent"),
        help="only survivors with this decision (repeatable; default open and unreachable)",
    )  # fmt: skip
    again.add_argument("--match", help="only survivors whose line or function contains this text")
    again.add_argument("--workers", type=int, default=1)
    again.add_argument("--write", action="store_true", help='record each kill as decision = "check"')
    args = parser.parse_args(list(argv))
    commands = {"run": _run, "table": _table, "survivors": _survivors, "rejudge": _rejudge}
    return commands[args.command](args)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
