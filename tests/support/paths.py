"""Where the repository's checked-in artefacts are, for tests that read or regenerate them."""

from __future__ import annotations

from pathlib import Path

#: The repository root (the demo's commands resolve `traces/` and `.osbp/` relative to it).
REPO = Path(__file__).resolve().parents[2]
#: The checked-in gallery.
GALLERY_DIR = REPO / "traces"
