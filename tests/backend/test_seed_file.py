"""The seed file's models: the shipped file loads, and a malformed one is refused naming the place."""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import pytest

from osbp.backend.seed_file import SEED_FILE, SeedError, load_seed

SHIPPED = SEED_FILE.read_text(encoding="utf-8")


def _edited(tmp_path: Path, old: str, new: str) -> Path:
    assert old in SHIPPED
    path = tmp_path / "seed.toml"
    path.write_text(SHIPPED.replace(old, new, 1), encoding="utf-8")
    return path


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            'slug = "gus-notary"',
            'slug = "gus-notary"\nmotto = "seal it"',
            "organization[gus_notary].motto: Extra inputs are not permitted",
        ),
        (
            'kind = "online"',
            'kind = "virtual"',
            "organization[gus_notary].location[gus_notary_online].kind: "
            "Input should be 'in_person' or 'online'",
        ),
        (
            "duration_minutes = 20",
            'duration_minutes = "20"',
            "organization[gus_notary].service[gus_notary_notarization].duration_minutes: "
            "Input should be a valid integer",
        ),
        (
            'price_amount = "12.500"',
            'price_amount = "12.5"',
            "organization[conformance_co].service[conformance_fixed_kwd]: "
            "price_amount '12.5' is not a KWD amount such as '12.000'",
        ),
        (
            'service_ids = ["gus_notary_notarization", "gus_notary_remote_signing"]',
            'service_ids = ["gus_notary_notarization", "gus_notary_tea"]',
            "organization[gus_notary]: "
            "provider gus_notary_mina names ids gus_notary does not define: gus_notary_tea",
        ),
        (
            'id = "andys_auto_lena"',
            'id = "andys_auto_andy"',
            "ids defined more than once: provider andys_auto_andy",
        ),
        (
            'time_zone = "Europe/Berlin"',
            'time_zone = "Europe/Kreuzberg"',
            "organization[andys_auto]: time_zone 'Europe/Kreuzberg' is not an IANA time zone",
        ),
        (
            "late_grace_minutes = 10",
            "late_grace_minutes = 10\nlate_fee = 5",
            "(top level): service_defaults has unknown keys: late_fee",
        ),
        (
            'currency = "EUR"\nlocation_ids = ["andys_auto_kreuzberg"]',
            'currency = "EUR"\nlocation_ids = ["andys_auto_kreuzberg"]\nwarranty = true',
            "organization[andys_auto].service_defaults has unknown keys: warranty",
        ),
        (
            "[[organization.service.option]]",
            "[[organization.service.options]]",
            "organization[carolyns_dental].service[carolyns_dental_cleaning].options: "
            "Extra inputs are not permitted",
        ),
    ],
)
def test_a_malformed_seed_file_is_refused_naming_the_place(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    """Platform choice: a seed error names the file and the item by id, not a traceback of indexes."""
    path = _edited(tmp_path, old, new)
    with pytest.raises(SeedError) as refused:
        load_seed(path)
    assert str(refused.value).startswith(f"{path}: ")
    assert message in str(refused.value)


def test_a_seed_file_that_is_not_toml_is_refused_with_the_line(tmp_path: Path) -> None:
    """Platform choice: a syntax error names the file and the TOML parser's line and column."""
    unterminated = 'name = "Phil\'s Spa"'
    path = _edited(tmp_path, unterminated, unterminated[:-1])
    line = SHIPPED[: SHIPPED.index(unterminated)].count("\n") + 1
    with pytest.raises(SeedError) as refused:
        load_seed(path)
    assert str(refused.value).startswith(f"{path}: not valid TOML: ")
    assert f"(at line {line}, column {len(unterminated)})" in str(refused.value)


def test_the_shipped_seed_file_is_valid_toml_with_five_organizations() -> None:
    """Platform choice: the package ships the file the platform seeds from."""
    data: dict[str, Any] = tomllib.loads(SHIPPED)
    assert [item["id"] for item in data["organization"]] == [
        organization.id for organization in load_seed().organizations
    ]
    assert len(data["organization"]) == 5


def test_a_service_unsets_the_defaults_it_must_not_have() -> None:
    """Platform choice (seed data): TOML has no null, so a service's `unset` list removes inherited
    defaults (the conformance policy case with neither a cancellation window nor a late grace)."""
    services = {
        service.id: service for organization in load_seed().organizations for service in organization.services
    }
    unset = services["conformance_policy_no_window"]
    assert (unset.cancellation_window_minutes, unset.late_grace_minutes) == (None, None)
    kept = services["conformance_policy_no_cancel"]
    assert (kept.cancellation_window_minutes, kept.late_grace_minutes) == (360, 10)
