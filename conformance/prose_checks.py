"""Problem messages are prose: graded over every failure of the run, like the other envelope checks.

The spec: "problem.message is explanatory English prose in v0.1.0, not a parsing target". A message that
embeds a JSON object is a platform's (or a library's) raw answer passed through: foreign text that may
carry customer data and that an agent would be tempted to parse.
"""

from __future__ import annotations

import re

from osbp.conformance.grading import Grader, expect, summarize
from osbp.conformance.wire import Wire

__all__ = ["grade_problem_prose"]

#: A JSON object with at least one key, as a raw body would carry: `{"type": …` or `{ "detail":…`.
_JSON_OBJECT = re.compile(r'\{\s*"[^"\n]{1,64}"\s*:')


def _raw_bodies(wire: Wire) -> list[str]:
    problems = []
    for index, exchange in enumerate(wire.exchanges):
        message = exchange.message
        if exchange.ok is False and (found := _JSON_OBJECT.search(message)):
            start = max(found.start() - 20, 0)
            problems.append(f"#{index + 1} {exchange.tool}: …{message[start : found.end() + 40]}…")
    return problems


def grade_problem_prose(grader: Grader, wire: Wire) -> None:
    """Grade envelope.problem_message_prose over every recorded failure."""
    with grader.check("envelope.problem_message_prose"):
        problems = _raw_bodies(wire)
        expect(not problems, "a Problem message embeds a JSON object: " + summarize(problems))
