"""docs/backend-api.md, Fault profile: the example profile, the endpoint names and the curl lines hold."""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from osbp.backend.fault_profile import FaultProfile
from osbp.backend.faults import endpoint_names

DOC = Path(__file__).resolve().parents[2] / "docs" / "backend-api.md"
MARKER = "<!-- fault-profile-example -->"


def section() -> str:
    """The Fault profile section of docs/backend-api.md."""
    text = DOC.read_text(encoding="utf-8")
    return text.split("## Fault profile", 1)[1].split("\n## ", 1)[0]


def example() -> str:
    """The JSON profile that follows the marker."""
    return section().split(MARKER, 1)[1].split("```json\n", 1)[1].split("\n```", 1)[0]


def curl_lines() -> list[str]:
    """The curl commands of the section's shell block (comments dropped)."""
    block = section().split("```sh\n", 1)[1].split("\n```", 1)[0]
    return [line.split("#", 1)[0].strip() for line in block.splitlines() if line.startswith("curl ")]


def test_the_documented_example_is_a_valid_profile_the_platform_accepts(client):
    """docs/backend-api.md, Fault profile: the example is accepted by PUT /_testing/faults as written."""
    profile = FaultProfile.model_validate_json(example())
    put = client.put("/_testing/faults", json=json.loads(example()))
    assert put.status_code == 200
    assert put.json()["rules"] == [rule.model_dump() for rule in profile.rules]


def test_the_documented_route_names_are_exactly_the_native_endpoints():
    """docs/backend-api.md, Fault profile: the list of route names an `endpoint` may use cannot drift."""
    row = next(line for line in section().splitlines() if line.startswith("| `endpoint` |"))
    listed = set(re.findall(r"`([a-z_]+)`", row)) - {"endpoint"}
    assert listed == {name for name in endpoint_names() if " " not in name}


@pytest.mark.integration
@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed")
def test_the_documented_curl_lines_run_against_the_real_platform(platform_server, tmp_path: Path):
    """docs/backend-api.md, Fault profile: the curl examples work as written (against a real server)."""
    (tmp_path / "faults.json").write_text(example(), encoding="utf-8")
    outputs = []
    for line in curl_lines():
        command = shlex.split(line.replace("http://127.0.0.1:8400", platform_server.base_url))
        done = subprocess.run(command, cwd=tmp_path, capture_output=True, text=True, timeout=30, check=False)
        assert done.returncode == 0, done.stderr
        outputs.append(json.loads(done.stdout))
    put, read, cleared = outputs
    assert put["seed"] == read["seed"] == 42
    assert read["hits"] == [0, 0, 0]
    assert cleared == {"seed": 0, "rules": [], "hits": []}
