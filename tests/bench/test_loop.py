"""`osbp bench loop`: the canonical loop over stdio and in process, alone or alternating with a checkout."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from osbp.bench import cli

STEPS = ("describe", "find", "explain", "create_gated", "create_approved", "status", "loop")


def _checkout(folder: Path) -> Path:
    """A stand-in checkout whose ``.venv/bin/python`` is this interpreter (so the same code runs twice)."""
    python = folder / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n', encoding="utf-8")
    python.chmod(0o755)
    return folder


def _assert_figures(figures: dict[str, Any]) -> None:
    requests = figures["platform_requests_per_loop"]
    assert isinstance(requests["median"], int)
    assert 0 < requests["min"] <= requests["median"] <= requests["max"]
    for mode, server in (("stdio", "server"), ("in_process", "adapter")):
        for step in STEPS:
            assert 0 < figures[mode][step]["p50_ms"] <= figures[mode][step]["p90_ms"]
            assert figures[mode][step]["answer_bytes"] > 0
        cpu = figures[mode]["cpu_ms_per_loop"]
        assert {server, "platform", "total"} <= cpu.keys()
        assert cpu["total"] == pytest.approx(cpu[server] + cpu["platform"], abs=0.02)


@pytest.mark.integration
def test_the_loop_bench_reports_every_step_requests_bytes_and_cpu_per_mode(tmp_path: Path) -> None:
    """Platform choice: p50/p90 per step and loop, platform requests, answer bytes and CPU per loop."""
    status = cli.main(["loop", "--rounds", "1", "--loops", "2", "--loop-warmup", "1", "--out", str(tmp_path)])
    results = json.loads((tmp_path / "loop.json").read_text(encoding="utf-8"))
    assert status == 0
    assert (results["rounds"], results["loops_per_round"]) == (1, 2)
    _assert_figures(results["this"])
    assert results["this"]["stdio"]["loops"] == 2
    assert "against" not in results
    # The loop's bytes are its six answers together.
    stdio = results["this"]["stdio"]
    assert stdio["loop"]["answer_bytes"] == sum(stdio[step]["answer_bytes"] for step in STEPS[:-1])


@pytest.mark.integration
def test_against_another_checkout_alternates_rounds_and_reports_each_ratio(tmp_path: Path) -> None:
    """Platform choice: `--against DIR` runs DIR's interpreter in alternating rounds; ratios this ÷ DIR."""
    other = _checkout(tmp_path / "other")
    out = tmp_path / "out"
    argv = ["loop", "--rounds", "2", "--loops", "1", "--loop-warmup", "0", "--against", str(other)]
    status = cli.main([*argv, "--out", str(out)])
    results = json.loads((out / "loop.json").read_text(encoding="utf-8"))
    assert status == 0
    _assert_figures(results["against"])
    assert results["against"]["stdio"]["loops"] == 2  # two rounds of one loop
    ratios = results["ratios"]
    assert set(results["targets"]) <= ratios.keys()
    # The same code on both sides: the same requests and the same answers.
    assert ratios["platform_requests_per_loop.median"] == 1.0
    assert ratios["stdio.loop.answer_bytes"] == 1.0


def test_against_a_folder_without_its_own_venv_is_one_stderr_line(tmp_path: Path) -> None:
    """Platform choice: `--against` needs a checkout with .venv/bin/python; a mistake is one line, exit 2."""
    command = [sys.executable, "-m", "osbp", "bench", "loop", "--against", str(tmp_path)]
    result = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert result.returncode == 2
    assert result.stderr == (
        f"osbp bench: argument --against: {str(tmp_path)!r} has no .venv/bin/python: give a checkout of "
        "osbp and run `make install` in it (see `osbp bench --help`)\n"
    )
    assert result.stdout == ""
