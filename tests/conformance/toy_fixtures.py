"""The toy server's own fixture file: the reference fixtures in format 1 (ids, roles and prices only).

The toy's in-memory platform has the reference organization's ids, slot and prices but none of the
oracle's further facts (its display strings, the free and fees services, the all-day schedule, the
archived native status), so it is graded with a format-1 file, as another project's server without an
oracle would be: the checks that need a format-2 fact are skipped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from osbp.conformance import Fixtures, reference_fixtures_path
from osbp.conformance.all_day_checks import ALL_DAY_CHECKS
from osbp.conformance.oracle_checks import ORACLE_CHECKS
from osbp.conformance.summary_facts import OVERNIGHT_CHECKS

__all__ = ["FORMAT_2_CHECKS", "format_1", "toy_fixtures", "write_toy_fixtures"]

#: The checks a format-1 file leaves ungraded (SKIP): each needs a fact only format 2 states.
FORMAT_2_CHECKS = frozenset(
    {
        *ORACLE_CHECKS,
        *ALL_DAY_CHECKS,
        *OVERNIGHT_CHECKS,
        "status.native_unknown",
        "summary.fees_oracle",
        "prose.price_text",
        "prose.policy_supported",
        "approval.free_service_gated",
    }
)


def format_1(raw: dict[str, Any]) -> dict[str, Any]:
    """A format-2 fixture document as format 1 wrote it: ids, roles and amounts, no oracle facts."""
    old = {
        key: value
        for key, value in raw.items()
        if key not in ("fixture_format", "all_day", "slots", "policy_cases", "overnight")
    }
    old["schedule"] = {"id": raw["schedule"]["id"], "has_coordinates": raw["schedule"]["has_coordinates"]}
    old["providers"] = {key: raw["providers"][key] for key in ("in_scope", "other")}
    kept = {"id", "price", "deposit", "method", "code", "pre_verification"}
    old["services"] = {
        role: {key: value for key, value in service.items() if key in kept}
        for role, service in raw["services"].items()
        if role not in ("free", "fees")
    }
    for service in old["services"].values():
        if service.get("price", {}).get("type") not in (None, "fixed"):
            del service["price"]
        for money in (service.get("price"), service.get("deposit")):
            if money is not None:
                money.pop("type", None)
                money.pop("display", None)
    old["native_statuses"] = {
        native: status for native, status in raw.get("native_statuses", {}).items() if status != "unknown"
    }
    return old


def toy_fixtures() -> Fixtures:
    """The toy's fixtures: the shipped reference file as format 1."""
    raw = json.loads(reference_fixtures_path().read_text(encoding="utf-8"))
    return Fixtures.model_validate(format_1(raw))


def write_toy_fixtures(path: Path, **update: Any) -> Path:
    """Write the toy's fixtures (with `update` applied) to `path` and return it."""
    path.write_text(toy_fixtures().model_copy(update=update).model_dump_json(), encoding="utf-8")
    return path
