"""`osbp bench state`: claims across processes on both engines, every key claimed once, figures written."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from osbp.bench import cli


@pytest.mark.integration
def test_bench_claims_each_key_once_on_sqlite_and_postgresql(tmp_path: Path, postgres_url: str) -> None:
    """Platform choice: the state benchmark measures both engines and finds no key claimed twice."""
    flags = ["--claims", "15", "--state-processes", "2", "--postgres-url", postgres_url]
    status = cli.main(["state", *flags, "--out", str(tmp_path)])
    results = json.loads((tmp_path / "state.json").read_text(encoding="utf-8"))
    assert status == 0
    for engine in ("sqlite", "postgresql"):
        distinct, same = results["engines"][engine]["distinct"], results["engines"][engine]["same"]
        assert (distinct["keys"], distinct["outcomes"]) == (30, {"Claimed": 30})
        assert (same["keys"], same["outcomes"]) == (15, {"Claimed": 15, "Replay": 15})
        assert distinct["double_claims"] == same["double_claims"] == 0
        assert distinct["claims_per_s"] > 0
