"""Seeding: the same catalog as before the seed organizations became a data file.

`snapshots/seed.json` was recorded from the platform while its seed was still built by constructor
calls: every catalog table row as SQLite stores it (JSON columns as their stored text) and the API's
catalog reads. Seeding from `seed.toml` must reproduce both exactly; an intended seed change (such as the
conformance organization's all-day location and oracle services) re-records the snapshot with it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text

from osbp.backend.catalog_cache import CATALOG_TABLES
from osbp.backend.runtime import Runtime

SNAPSHOT = json.loads((Path(__file__).parent / "snapshots" / "seed.json").read_text(encoding="utf-8"))


def test_the_seeded_tables_hold_exactly_the_recorded_rows(runtime: Runtime) -> None:
    """Platform choice: moving the seed into a data file changed no stored byte."""
    with runtime.db.read() as session:
        tables = {
            table: [
                dict(row)
                for row in session.connection().execute(text(f"SELECT * FROM {table} ORDER BY id")).mappings()  # noqa: S608
            ]
            for table in CATALOG_TABLES
        }
    assert tables == SNAPSHOT["tables"]


@pytest.mark.parametrize("path", sorted(SNAPSHOT["api"]))
def test_the_catalog_reads_answer_exactly_as_recorded(client: TestClient, path: str) -> None:
    """Platform choice: every organization and services read is the recorded answer."""
    response = client.get(path)
    assert response.status_code == 200
    assert response.json() == SNAPSHOT["api"][path]
