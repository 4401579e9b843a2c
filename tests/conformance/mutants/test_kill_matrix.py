"""The conformance battery kills every mutant server, and passes the right one, in one shared run."""

from __future__ import annotations

import anyio
import pytest

from osbp.conformance import CATALOG
from tests.conformance.mutants.adapters import ADAPTER_MUTANTS
from tests.conformance.mutants.catalog import MUTANTS, MUTANTS_BY_NAME
from tests.conformance.mutants.core import CORE_MUTANTS
from tests.conformance.mutants.harness import MatrixRun, run_matrix
from tests.conformance.mutants.matrix import documented_section, render
from tests.conformance.mutants.proxy import PROXY_MUTANTS

KNOWN_IDS = {check.id for check in CATALOG}


@pytest.fixture(scope="module")
def matrix() -> MatrixRun:
    return anyio.run(run_matrix)


def test_there_are_at_least_thirty_mutants_each_with_one_implementation():
    """Platform choice (docs/conformance.md): each catalogued mutant is built by exactly one mechanism."""
    implemented = {
        "core": set(CORE_MUTANTS),
        "adapter": set(ADAPTER_MUTANTS),
        "transport": set(ADAPTER_MUTANTS),
        "proxy": set(PROXY_MUTANTS),
    }
    assert len(MUTANTS) >= 30
    assert len(MUTANTS_BY_NAME) == len(MUTANTS)
    assert [m.name for m in MUTANTS if m.name not in implemented[m.via]] == []
    assert set(CORE_MUTANTS) | set(ADAPTER_MUTANTS) | set(PROXY_MUTANTS) == set(MUTANTS_BY_NAME)


def test_every_mutant_that_awaits_nothing_names_a_check_of_todays_catalog():
    """Platform choice (docs/conformance.md): a kill is a failing check whose id names the rule."""
    unnamed = [m.name for m in MUTANTS if not m.awaits and not any(m.named_by(i) for i in KNOWN_IDS)]
    assert unnamed == []


def test_the_documented_matrix_lists_every_mutant_in_catalog_order():
    """Platform choice (docs/conformance.md): the checked-in kill matrix is the mutant set."""
    table = [line for line in documented_section().splitlines()[2:] if line.startswith("|")]
    assert [line.split("|")[1].strip().strip("`") for line in table] == [m.name for m in MUTANTS]


@pytest.mark.integration
@pytest.mark.matrix
def test_the_right_server_passes_every_check_in_the_matrix_run(matrix):
    """OSBP spec (whole): the unmutated server passes the battery beside the mutants, on the same platform,
    every hook given (nothing skipped)."""
    assert matrix.right.failed == ()
    assert matrix.right.skipped == ()


@pytest.mark.integration
@pytest.mark.matrix
def test_every_mutant_is_killed_by_a_check_that_names_its_rule(matrix):
    """Platform choice (docs/conformance.md): no mutant survives unless it declares the check it awaits."""
    survivors = {
        m.name: matrix.mutants[m.name].failed for m in MUTANTS if not m.awaits and not matrix.killed(m)
    }
    assert survivors == {}


@pytest.mark.integration
@pytest.mark.matrix
def test_a_mutant_awaiting_a_stronger_check_is_no_longer_marked_once_it_is_killed(matrix):
    """Platform choice (docs/conformance.md): the awaits notes shrink as the battery gets stronger."""
    killed_but_awaiting = [m.name for m in MUTANTS if m.awaits and matrix.killed(m)]
    assert killed_but_awaiting == []


@pytest.mark.integration
@pytest.mark.matrix
def test_the_documented_kill_matrix_is_the_one_this_run_produces(matrix):
    """Platform choice (docs/conformance.md): regenerate with `python -m tests.conformance.mutants --matrix
    --write`."""
    assert documented_section() == render(matrix)
