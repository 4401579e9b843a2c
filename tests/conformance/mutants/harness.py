"""Run the conformance battery against the right server and every mutant, and decide which are killed.

All runs share one platform (:func:`~tests.conformance.mutants.platform.shared_platform`); each server
process gets its own state directory and its own platform prefix, and a small pool runs them
concurrently (the machine has two cores). Every run is the public, black-box ``run_battery`` over stdio.

Every server runs with the short approval-token lifetime ``--self`` uses. Only the runs that grade token
expiry (the right server, and a mutant whose rule ``approval.token_expired`` names) are told it in their
fixtures: that check waits the lifetime out, and a kill only ever counts the checks naming the mutant's
rule, so the other runs skip it without losing a cell of the matrix.
"""

from __future__ import annotations

import inspect
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio

from osbp.conformance import (
    Report,
    ServerTarget,
    Verdict,
    load_fixtures,
    reference_fixtures_path,
    run_battery,
    server_env,
)
from osbp.conformance.self_target import SELF_APPROVAL_TTL_SECONDS, server_variables
from tests.conformance.mutants.adapters import MUTANT_ENV
from tests.conformance.mutants.catalog import MUTANTS, Mutant
from tests.conformance.mutants.platform import run_base_url, shared_platform

__all__ = ["RIGHT", "MatrixRun", "Outcome", "battery_hooks", "run_matrix", "server_command"]

#: The run name of the unmutated server.
RIGHT = "right_server"
REPO = Path(__file__).resolve().parents[3]
_SERVER = (sys.executable, "-m", "osbp", "mcp")
_PLUGIN = "tests.conformance.mutants.adapters:build"
#: The platform's test-only hooks (docs/backend-api.md), relative to a run's base URL, by battery option.
_HOOKS = {
    "scenario_url": "/_testing/arm",
    "stats_url": "/_testing/stats",
    "status_url": "/_testing/appointment-status",
    "catalog_url": "/_testing/service",
    "provider_url": "/_testing/provider",
    "location_url": "/_testing/location",
}
#: The one check that waits out the token lifetime.
_EXPIRY = "approval.token_expired"


@dataclass(frozen=True, slots=True)
class Outcome:
    """One run's verdicts."""

    name: str
    failed: tuple[str, ...]
    skipped: tuple[str, ...]
    duration: float

    def killers(self, mutant: Mutant) -> tuple[str, ...]:
        """The failing checks that name the mutant's rule."""
        return tuple(check for check in self.failed if mutant.named_by(check))


@dataclass(frozen=True, slots=True)
class MatrixRun:
    """The right server's outcome and every mutant's."""

    right: Outcome
    mutants: dict[str, Outcome]
    wall_seconds: float

    def killed(self, mutant: Mutant) -> bool:
        """Whether the battery killed ``mutant``."""
        return bool(self.mutants[mutant.name].killers(mutant))


def server_command(mutant: Mutant | None) -> tuple[tuple[str, ...], dict[str, str]]:
    """The command that starts ``mutant`` (the right server for None) and its extra variables."""
    if mutant is None:
        return _SERVER, {}
    if mutant.via == "core":
        return (sys.executable, "-m", "tests.conformance.mutants.serve", mutant.name), {}
    if mutant.via in ("adapter", "transport"):
        return (*_SERVER, "--adapter", _PLUGIN), {MUTANT_ENV: mutant.name}
    return (sys.executable, "-m", "tests.conformance.mutants.proxy", mutant.name, "--", *_SERVER), {}


def battery_hooks(base: str, audit_log: Path) -> dict[str, Any]:
    """Every optional hook of `run_battery` for a run on the platform prefix `base`, and its audit log."""
    accepted = inspect.signature(run_battery).parameters
    options: dict[str, Any] = {key: base + path for key, path in _HOOKS.items() if key in accepted}
    if "audit_log" in accepted:
        options["audit_log"] = audit_log
    return options


def _outcome(name: str, report: Report) -> Outcome:
    return Outcome(
        name=name,
        failed=tuple(c.id for c in report.checks if c.status is Verdict.FAIL),
        skipped=tuple(c.id for c in report.checks if c.status is Verdict.SKIP),
        duration=report.duration_seconds,
    )


async def run_matrix(mutants: Sequence[Mutant] = MUTANTS, *, workers: int = 2) -> MatrixRun:
    """Grade the right server and ``mutants`` against one shared platform, ``workers`` at a time."""
    fixtures = load_fixtures(reference_fixtures_path())
    timed = fixtures.model_copy(update={"approval_ttl_seconds": SELF_APPROVAL_TTL_SECONDS})
    limiter = anyio.CapacityLimiter(workers)
    outcomes: dict[str, Outcome] = {}
    started = anyio.current_time()
    with tempfile.TemporaryDirectory(prefix="osbp-mutants-") as state, shared_platform() as platform_url:

        async def grade(name: str, mutant: Mutant | None) -> None:
            async with limiter:
                base = run_base_url(platform_url, name)
                command, extra = server_command(mutant)
                audit_log = Path(state) / name / "audit" / "events.jsonl"
                env = server_env(
                    {
                        **server_variables(
                            base, fixtures.organization_id, Path(state) / name / "state.db", audit_log
                        ),
                        "PYTHONPATH": str(REPO),
                        **extra,
                    }
                )
                options = battery_hooks(base, audit_log)
                expiring = mutant is None or mutant.named_by(_EXPIRY)
                report = await run_battery(
                    ServerTarget(command, env=env, cwd=str(REPO)),
                    timed if expiring else fixtures,
                    **options,
                    # A mutant's run ends at its first killer: the rest would only cost time.
                    stop_when=None if mutant is None else mutant.named_by,
                )
                outcomes[name] = _outcome(name, report)

        async with anyio.create_task_group() as group:
            group.start_soon(grade, RIGHT, None)
            for mutant in mutants:
                group.start_soon(grade, mutant.name, mutant)
    return MatrixRun(
        right=outcomes.pop(RIGHT),
        mutants={mutant.name: outcomes[mutant.name] for mutant in mutants},
        wall_seconds=round(anyio.current_time() - started, 1),
    )
