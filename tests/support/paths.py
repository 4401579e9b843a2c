"""Where the repository's checked-in artefacts are, for tests that read or regenerate them."""

from __future__ import annotations

import os
import tomllib
from pathlib import Path

#: The repository root (the demo's commands resolve `traces/` and `.osbp/` relative to it).
REPO = Path(__file__).resolve().parents[2]
#: The roots of the osbp namespace package (the repository's own osbp/ and each component folder), relative
#: to the repository root: what the editable install puts on sys.path.
_PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
SOURCE_ROOTS: tuple[str, ...] = tuple(_PROJECT["tool"]["hatch"]["build"]["dev-mode-dirs"])


def python_path(tree: Path) -> str:
    """A PYTHONPATH that imports osbp from the copy of the repository at ``tree`` before the installed one."""
    return os.pathsep.join(str((tree / root).resolve()) for root in SOURCE_ROOTS)


#: The checked-in gallery.
GALLERY_DIR = REPO / "traces"
