"""Every relative link in the project's Markdown names a file that exists, and an anchor a heading of it."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: ``[text](target)`` or ``[text](target "title")``, not an image.
_LINK = re.compile(r'(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)')
_FENCE = re.compile(r"```.*?```", re.S)
_SKIPPED = {"node_modules", "build", "bench-results"}


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower())
    return text.replace(" ", "-")


def anchors(path: Path) -> set[str]:
    """The anchors of a Markdown file's headings (a repeated heading gets ``-1``, ``-2``…)."""
    text = _FENCE.sub("", path.read_text(encoding="utf-8"))
    found: set[str] = set()
    seen: dict[str, int] = {}
    for match in re.finditer(r"^#{1,6}\s+(.*)$", text, flags=re.M):
        slug = _slug(match[1])
        count = seen.get(slug, 0)
        seen[slug] = count + 1
        found.add(slug if count == 0 else f"{slug}-{count}")
    return found


def broken_links(root: Path) -> list[str]:
    """``file: target (why)`` for each relative link under ``root`` whose file or anchor is missing."""
    broken = []
    for file in sorted(root.rglob("*.md")):
        relative = file.relative_to(root)
        if any(part.startswith(".") or part in _SKIPPED for part in relative.parts):
            continue
        for match in _LINK.finditer(_FENCE.sub("", file.read_text(encoding="utf-8"))):
            target = match[1]
            if re.match(r"^[a-z][a-z0-9+.-]*:", target):  # http:, https:, mailto:
                continue
            path, _, fragment = target.partition("#")
            named = (file.parent / path) if path else file
            if not named.exists():
                broken.append(f"{relative}: {target} (no such file)")
            elif fragment and named.suffix == ".md" and fragment not in anchors(named):
                broken.append(f"{relative}: {target} (no such heading)")
    return broken


def test_every_relative_link_in_the_docs_resolves() -> None:
    """Platform choice: the README and docs link to files and headings that exist."""
    assert broken_links(REPO) == []


@pytest.mark.parametrize(
    ("link", "why"),
    [("missing.md", "no such file"), ("guide.md#no-such-part", "no such heading")],
)
def test_a_broken_link_is_reported_with_its_file(tmp_path: Path, link: str, why: str) -> None:
    """Platform choice: the check names the file and the link that does not resolve."""
    (tmp_path / "guide.md").write_text("# Guide\n\n## Set up `osbp`\n", encoding="utf-8")
    (tmp_path / "README.md").write_text(
        f"See [the guide](guide.md#set-up-osbp) and [this]({link}).\n", encoding="utf-8"
    )
    assert broken_links(tmp_path) == [f"README.md: {link} ({why})"]
