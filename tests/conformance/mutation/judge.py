"""The mutation run's test command: grade the server of this checkout with the battery, exit 1 on any FAIL.

Cosmic Ray runs it in a worker's copy of the tree with one mutation applied; the server is started from
that copy (``python -m osbp mcp``, this directory first on the path), against the shared platform whose
base URL :data:`PLATFORM_ENV` names, under a run prefix of its own, with a throwaway state directory and
audit log, and every hook the kill matrix gives (`battery_hooks`). The battery stops at the first FAIL
(``fail_fast``) and prints the failing check.
"""

from __future__ import annotations

import os
import sys
import tempfile
import uuid
from pathlib import Path

import anyio

from osbp.conformance import (
    ServerTarget,
    Verdict,
    load_fixtures,
    reference_fixtures_path,
    run_battery,
    server_env,
)
from osbp.conformance.self_target import SELF_APPROVAL_TTL_SECONDS, server_variables
from tests.conformance.mutants.harness import battery_hooks
from tests.conformance.mutants.platform import run_base_url
from tests.support.paths import python_path

__all__ = ["PLATFORM_ENV", "main"]

#: The variable that carries the shared platform's base URL to every judge run.
PLATFORM_ENV = "OSBP_MUTATION_PLATFORM"


async def _grade(platform_url: str, tree: Path) -> int:
    fixtures = load_fixtures(reference_fixtures_path()).model_copy(
        update={"approval_ttl_seconds": SELF_APPROVAL_TTL_SECONDS}
    )
    base = run_base_url(platform_url, "mut" + uuid.uuid4().hex[:12])
    with tempfile.TemporaryDirectory(prefix="osbp-mutation-") as state:
        audit_log = Path(state) / "audit" / "events.jsonl"
        env = server_env(
            {
                **server_variables(base, fixtures.organization_id, Path(state) / "state.db", audit_log),
                # The mutated module is imported from this tree, and never from a stale bytecode cache.
                "PYTHONPATH": python_path(tree),
                "PYTHONDONTWRITEBYTECODE": "1",
            }
        )
        report = await run_battery(
            ServerTarget((sys.executable, "-m", "osbp", "mcp"), env=env, cwd=str(tree)),
            fixtures,
            **battery_hooks(base, audit_log),
            fail_fast=True,
        )
    failed = [check for check in report.checks if check.status is Verdict.FAIL]
    for check in failed:
        sys.stdout.write(f"FAIL {check.id}: {check.detail[:300]}\n")
    sys.stdout.write(f"{'FAIL' if failed else 'PASS'} in {report.duration_seconds:.1f}s\n")
    return 1 if failed else 0


def main() -> int:
    """Grade this checkout's server; 0 when every check passed (the mutant survived), 1 otherwise."""
    platform_url = os.environ.get(PLATFORM_ENV)
    if not platform_url:
        sys.stderr.write(f"{PLATFORM_ENV} is not set: run `python -m tests.conformance.mutation run`\n")
        return 2
    return anyio.run(_grade, platform_url, Path.cwd())


if __name__ == "__main__":
    raise SystemExit(main())
