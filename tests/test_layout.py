"""One name per module: the layout the build, the editable install, mypy, ruff and Docker agree on.

Platform choice (issue: one name per module): each component folder holds its modules in
``<component>/osbp/<component>/``, one part of the ``osbp`` namespace package, so ``osbp.protocol`` is the
only name its files are imported by; the folder itself is not a package, and importing it says so.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.support.paths import REPO, SOURCE_ROOTS

COMPONENTS = ("protocol", "backend", "adapter", "server", "demo", "conformance")
_PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def _tracked() -> list[str]:
    done = subprocess.run(["git", "ls-files", "-s"], cwd=REPO, capture_output=True, text=True, check=True)
    return done.stdout.splitlines()


def test_the_tree_holds_no_symlink():
    links = [line.split("\t", 1)[1] for line in _tracked() if line.startswith("120000 ")]
    assert links == []


@pytest.mark.parametrize("component", COMPONENTS)
def test_a_component_folder_is_not_importable_under_its_own_name(component: str):
    done = subprocess.run(
        [sys.executable, "-c", f"import {component}"], cwd=REPO, capture_output=True, text=True, check=False
    )
    assert done.returncode == 1
    assert done.stderr.splitlines()[-1] == (
        f"ImportError: {component}/ is a source folder: import osbp.{component}. "
        f"If 'import osbp.{component}' led here, the current folder is the one above an osbp checkout "
        "named 'osbp': run from another folder, or with 'python -P'."
    )


def test_every_tool_sees_the_same_roots():
    """The editable install, the wheel, mypy, ruff and the container image name the same package roots."""
    roots = list(SOURCE_ROOTS)
    assert roots == [".", *COMPONENTS]
    parts = ["osbp", *(f"{component}/osbp" for component in COMPONENTS)]
    assert _PROJECT["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"] == parts
    assert _PROJECT["tool"]["mypy"]["mypy_path"] == roots
    assert _PROJECT["tool"]["mypy"]["files"] == [*parts, "tests", "examples"]
    assert _PROJECT["tool"]["ruff"]["src"] == roots
    dockerfile = (REPO / "Dockerfile").read_text(encoding="utf-8").splitlines()
    assert [line for line in dockerfile if line.startswith("COPY ") and "osbp" in line] == [
        f"COPY {part} ./{part}" for part in parts
    ]


def test_the_installed_modules_come_from_the_component_folders():
    import osbp.backend.app
    import osbp.cli
    import osbp.protocol.mandate

    assert Path(osbp.protocol.mandate.__file__) == REPO / "protocol/osbp/protocol/mandate.py"
    assert Path(osbp.backend.app.__file__) == REPO / "backend/osbp/backend/app.py"
    assert Path(osbp.cli.__file__) == REPO / "osbp/cli.py"


def test_the_wheel_ships_every_tracked_file_of_the_package_and_nothing_else(tmp_path: Path):
    """Found by the build from the roots alone: modules, data files (schemas, seed, ReDoc), no guard files."""
    from hatchling.builders.wheel import WheelBuilder

    (wheel,) = WheelBuilder(str(REPO)).build(directory=str(tmp_path), versions=["standard"])
    with zipfile.ZipFile(wheel) as archive:
        shipped = {name for name in archive.namelist() if not name.startswith("osbp-0.1.0.dist-info/")}
    expected = set()
    for line in _tracked():
        path = line.split("\t", 1)[1]
        for root in SOURCE_ROOTS:
            prefix = "osbp/" if root == "." else f"{root}/osbp/"
            if path.startswith(prefix):
                expected.add(path if root == "." else path.removeprefix(f"{root}/"))
    assert shipped == expected
    assert {"osbp/protocol/schemas/booking.create.input.json", "osbp/backend/seed.toml"} <= shipped


@pytest.mark.integration
def test_the_battery_runs_from_the_folder_above_a_checkout_named_osbp(tmp_path: Path):
    """Rough edge: from the folder above a clone named ``osbp``, ``osbp conformance --self`` imported the
    clone folder as the package (FAIL 0/85); the subprocesses it starts run with ``-P`` and never see it."""
    (tmp_path / "osbp").symlink_to(REPO, target_is_directory=True)
    osbp = Path(sys.executable).with_name("osbp")
    env = {key: value for key, value in os.environ.items() if key != "PYTHONPATH"}
    done = subprocess.run(
        [str(osbp), "conformance", "--self", "--fail-fast"],
        cwd=tmp_path, env=env, capture_output=True, text=True, check=False, timeout=600,
    )  # fmt: skip
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert done.stdout.splitlines()[-1].startswith("PASS ")
