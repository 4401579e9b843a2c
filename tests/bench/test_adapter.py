"""`osbp bench adapter`: it runs against the real platform, stops by itself and writes its figures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from osbp.bench import cli


@pytest.mark.integration
def test_bench_writes_latencies_and_upstream_counts_within_target(tmp_path: Path) -> None:
    """Platform choice: preflight and approved create p50/p99, upstream requests per approved create ≤ 2."""
    status = cli.main(["adapter", "--iterations", "3", "--out", str(tmp_path)])
    results = json.loads((tmp_path / "adapter.json").read_text(encoding="utf-8"))
    assert status == 0
    assert results["iterations"] == 3
    for measure in ("preflight", "approved_create"):
        assert 0 < results[measure]["p50_ms"] <= results[measure]["p99_ms"]
    upstream = results["upstream_requests_per_approved_create"]
    assert upstream["max"] == 1  # the conditional POST: the approved offer is not resolved again
    assert upstream["duplicated_fetches"] == 0
