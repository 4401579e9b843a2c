"""Problem codes and constructors."""

from __future__ import annotations

import re
from pathlib import Path

from osbp.protocol.problems import ALL_CODES, DEFAULT_MESSAGES, ExtensionCode, ProblemCode, problem
from tests.support.code_literals import code_literals

SPEC_TABLE = [
    "invalid_mandate",
    "mandate_expired",
    "action_not_allowed",
    "organization_not_allowed",
    "service_not_allowed",
    "schedule_not_allowed",
    "provider_unknown",
    "provider_not_allowed",
    "slot_too_early",
    "slot_too_late",
    "price_exceeds_mandate",
    "policy_fee_exceeds_mandate",
    "currency_mismatch",
    "requires_payment_handoff",
    "requires_consultation_handoff",
    "requires_user_confirmation",
    "requires_verification",
    "verification_failed",
    "slot_taken",
    "idempotency_conflict",
    "booking_not_found",
    "booking_status_requires_verification",
    "rate_limited",
    "internal_adapter_error",
]


def test_codes_are_exactly_the_spec_table() -> None:
    """ProblemCode is the spec's protocol-meaningful set, in order (OSBP spec, Result Envelope)."""
    assert [c.value for c in ProblemCode] == SPEC_TABLE
    assert set(DEFAULT_MESSAGES) == set(ProblemCode)


def test_retryable_defaults_follow_the_spec() -> None:
    """slot_taken, requires_verification and rate_limited are retryable; the rest are not (OSBP spec)."""
    retryable = {c.value for c in ProblemCode if problem(c).retryable}
    assert retryable == {"slot_taken", "requires_verification", "rate_limited"}
    assert problem("requires_user_confirmation").retryable is False


def test_adapter_specific_codes_are_allowed() -> None:
    """Adapters may emit additional codes (OSBP spec, Problem table)."""
    custom = problem("missing_config", "OSBP_BACKEND_URL is not set.", retryable=False)
    assert custom.to_wire() == {
        "code": "missing_config",
        "message": "OSBP_BACKEND_URL is not set.",
        "retryable": False,
    }
    assert problem(ProblemCode.PRICE_EXCEEDS_MANDATE).message.startswith("Selected service or slot price")


REPO = Path(__file__).resolve().parents[2]
#: Every module of the OSBP side that answers or branches on a code (the table itself excepted).
OSBP_MODULES = ("protocol", "adapter", "server", "demo", "osbp/bench", "osbp/cli.py", "examples")
#: The grader's own case tables: the call and the index of its expected-code argument.
GRADER_CASES = {"case": 1, "Pair": 2}


def test_no_osbp_module_spells_a_code_the_table_holds() -> None:
    """Platform choice (one table): a module names a ProblemCode or ExtensionCode member, never the string."""
    literals = [item for item in code_literals(REPO, *OSBP_MODULES) if item.path != "protocol/problems.py"]
    assert literals == []


def test_every_code_the_grader_expects_is_in_the_table() -> None:
    """OSBP spec, Result Envelope: the conformance grader spells codes itself (it knows OSBP from the wire
    alone), so each one it expects must be a code of the table."""
    literals = code_literals(REPO, "conformance", expected=GRADER_CASES)
    assert len({item.code for item in literals}) > 20
    assert [item for item in literals if item.code not in ALL_CODES] == []


def test_the_scanner_finds_a_literal_code_in_each_position(tmp_path: Path) -> None:
    """Platform choice: the one-table test can fail: each position it guards is found."""
    (tmp_path / "mod.py").write_text(
        "def f(result, exchange, code):\n"
        "    '''slot_taken in a docstring is prose.'''\n"
        "    problem('slot_takne', 'typo')\n"
        "    Problem(code='invalid_input', message='m', retryable=False)\n"
        "    return (result.problem.code == 'rate_limited', exchange.problem_code != 'slot_taken',\n"
        "            code in ('unknown_tool', 'audit_unavailable'), code != '000000',\n"
        "            {'code': 'booking_not_found'}, case('id', 'slot_too_late'))\n"
    )
    found = [item.code for item in code_literals(tmp_path, "mod.py", expected=GRADER_CASES)]
    assert sorted(found) == sorted(
        [
            "slot_takne",
            "invalid_input",
            "rate_limited",
            "slot_taken",
            "unknown_tool",
            "audit_unavailable",
            "booking_not_found",
            "slot_too_late",
        ]
    )
    assert "slot_takne" not in ALL_CODES


def test_extension_codes_stay_beside_the_spec_table() -> None:
    """OSBP spec, Result Envelope: adapter-specific codes are additional; none redefines a spec code."""
    assert set(ProblemCode).isdisjoint(set(ExtensionCode))
    assert len(ALL_CODES) == len(set(ALL_CODES)) == len(ProblemCode) + len(ExtensionCode)


def test_the_protocol_docs_list_the_table() -> None:
    """Platform choice (docs that cannot drift): docs/protocol.md lists both enums, in table order."""
    text = (REPO / "docs" / "protocol.md").read_text(encoding="utf-8")
    section = text.split("## Problem codes", 1)[1].split("\n## ", 1)[0]
    prose, table = section.split("| code |", 1)
    listed = re.findall(r"`([a-z_]+)`", prose.split("in its order:", 1)[1].split("`ExtensionCode`", 1)[0])
    rows = re.findall(r"^\| `([a-z_]+)` \|", table, re.M)
    assert listed == [code.value for code in ProblemCode]
    assert rows == [code.value for code in ExtensionCode]
