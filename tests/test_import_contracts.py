"""The import direction as import-linter contracts (``[tool.importlinter]``), run with ``lint-imports``.

Platform choice (STYLE.md, Shape): backend · protocol ← adapter ← server ← demo, conformance. The
contracts hold on the tree, and they break on a copy of it with one wrong-way import planted; the copy is
imported instead of the checkout because its roots come first on PYTHONPATH and the checkout's own roots
(the editable install's .pth) are taken off sys.path before import-linter builds its graph.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.paths import REPO, SOURCE_ROOTS, python_path

#: Runs import-linter's command in a process that sees only the tree at PYTHONPATH's roots.
_LINT = """
import os, sys
wanted = {os.path.realpath(entry) for entry in os.environ["PYTHONPATH"].split(os.pathsep)}
mine = {os.path.realpath(os.path.join(sys.argv[1], root)) for root in sys.argv[2:]} - wanted
sys.path[:] = [entry for entry in sys.path if os.path.realpath(entry or ".") not in mine]
sys.argv[1:] = ["--no-cache"]
from importlinter.cli import lint_imports_command
lint_imports_command()
"""


def _lint(tree: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": python_path(tree), "PYTHONDONTWRITEBYTECODE": "1"}
    return subprocess.run(
        [sys.executable, "-c", _LINT, str(REPO), *SOURCE_ROOTS],
        cwd=tree, env=env, capture_output=True, text=True, check=False, timeout=120,
    )  # fmt: skip


def _copy(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    tree.mkdir()
    shutil.copy(REPO / "pyproject.toml", tree)
    for root in SOURCE_ROOTS:
        part = "osbp" if root == "." else f"{root}/osbp"
        shutil.copytree(REPO / part, tree / part, ignore=shutil.ignore_patterns("__pycache__"))
    return tree


def test_the_contracts_hold_on_the_tree():
    done = _lint(REPO)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "Contracts: 6 kept, 0 broken." in done.stdout


@pytest.mark.parametrize(
    ("path", "line", "contract", "chain"),
    [
        (
            "protocol/osbp/protocol/money.py",
            "import osbp.adapter.translate\n",
            "protocol, the core, imports only itself BROKEN",
            "osbp.protocol.money -> osbp.adapter.translate",
        ),
        (
            "backend/osbp/backend/text.py",
            "from osbp.version import __version__\n",
            "backend is a foreign system: it imports nothing of ours BROKEN",
            "osbp.backend.text -> osbp.version",
        ),
        (
            "server/osbp/server/tools.py",
            "from osbp.adapter import reference\n",
            "server imports protocol; the adapter only in its composition root and settings BROKEN",
            "osbp.server.tools -> osbp.adapter",
        ),
        (
            "conformance/osbp/conformance/wire.py",
            "import osbp.protocol.models\n",
            "conformance knows OSBP from the wire alone; only --self starts this project's",
            "osbp.conformance.wire -> osbp.protocol.models",
        ),
    ],
    ids=[
        "protocol-to-adapter",
        "backend-to-version",
        "server-beside-its-composition-root",
        "conformance-to-core",
    ],
)
def test_a_wrong_way_import_breaks_its_contract(
    tmp_path: Path, path: str, line: str, contract: str, chain: str
):
    tree = _copy(tmp_path)
    with (tree / path).open("a", encoding="utf-8") as module:
        module.write(line)
    done = _lint(tree)
    assert done.returncode == 1, done.stdout + done.stderr
    # A wrong-way import can break more than its own contract (a server module importing protocol.money
    # then reaches the adapter too); its own is among them, with the planted import in the chain.
    assert ", 0 broken." not in done.stdout
    assert contract in " ".join(done.stdout.split())
    assert chain in done.stdout
