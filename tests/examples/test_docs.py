"""The worked example's excerpts in docs/adapter.md are its code, verbatim."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DOC = REPO / "docs" / "adapter.md"
EXCERPT = re.compile(r"<!-- excerpt: (?P<path>\S+) -->\n```python\n(?P<code>.*?)\n```", re.DOTALL)


def test_every_excerpt_in_the_adapter_guide_is_verbatim_in_its_file():
    """Platform choice: the walk-through quotes the example's code, so the guide cannot drift from it."""
    excerpts = list(EXCERPT.finditer(DOC.read_text(encoding="utf-8")))
    assert len(excerpts) == 6
    for excerpt in excerpts:
        source = (REPO / excerpt["path"]).read_text(encoding="utf-8")
        assert excerpt["code"] in source, f"not in {excerpt['path']}:\n{excerpt['code']}"
