"""Every relative link in the project's Markdown names a file that exists, and an anchor a heading of it;
and the reference pages carry no benchmark diary (measurements live in docs/performance.md, history in
CHANGELOG.md)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
#: ``[text](target)`` or ``[text](target "title")``, not an image.
_LINK = re.compile(r'(?<!!)\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)')
_FENCE = re.compile(r"```.*?```", re.S)
_SKIPPED = {"node_modules", "build", "bench-results"}
#: The two pages where measurements and history belong.
_DIARIES = {Path("docs/performance.md"), Path("CHANGELOG.md")}
#: A commit hash: 7 to 40 lower-case hex digits with a letter and a digit, a word of its own. A hash inside
#: a longer token (an example value such as ``1f0a9c3be2d4-42``, a path) or pinned to another repository
#: (``owner/repo@7f5339e``, a citation of an upstream file) is not one.
_COMMIT = re.compile(r"(?<![\w./@-])(?=[0-9a-f]*[a-f])(?=[0-9a-f]*[0-9])[0-9a-f]{7,40}(?![\w/-])")
_LOAD = re.compile(r"\bload (?:average|avg)\b", re.I)


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


def markdown_files(root: Path) -> list[Path]:
    """The project's Markdown files under ``root``, outside hidden, installed and generated folders."""
    files = []
    for file in sorted(root.rglob("*.md")):
        relative = file.relative_to(root)
        if not any(part.startswith(".") or part in _SKIPPED for part in relative.parts):
            files.append(file)
    return files


def diary_lines(root: Path) -> list[str]:
    """``file:line: why`` for each commit hash or load-average line outside performance.md and the
    changelog."""
    found = []
    for file in markdown_files(root):
        relative = file.relative_to(root)
        if relative in _DIARIES:
            continue
        for number, line in enumerate(file.read_text(encoding="utf-8").splitlines(), start=1):
            if commit := _COMMIT.search(line):
                found.append(f"{relative}:{number}: commit hash {commit[0]}")
            if _LOAD.search(line):
                found.append(f"{relative}:{number}: load average")
    return found


def broken_links(root: Path) -> list[str]:
    """``file: target (why)`` for each relative link under ``root`` whose file or anchor is missing."""
    broken = []
    for file in markdown_files(root):
        relative = file.relative_to(root)
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


def test_the_reference_pages_carry_no_commit_hashes_or_load_averages() -> None:
    """Platform choice: measurements belong in docs/performance.md and history in CHANGELOG.md, so a
    reference page never reads as a benchmark diary (it drifts: the figures age, the commits move on)."""
    assert diary_lines(REPO) == []


def test_a_diary_line_in_a_reference_page_is_named(tmp_path: Path) -> None:
    """Platform choice: the check names the file, the line and what it found; the two diary pages, an
    example value and a pinned upstream citation pass."""
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "server.md").write_text(
        "# Server\n\nRevision `1f0a9c3be2d4-42`, as read at `osbp-dev/osbp@7f5339e`.\n"
        "Measured against 7fd10ed (before this change),\n"
        "on the shared machine (Load average about 7).\n",
        encoding="utf-8",
    )
    (tmp_path / "docs" / "performance.md").write_text("Against 7fd10ed, load average 2.\n", encoding="utf-8")
    (tmp_path / "CHANGELOG.md").write_text("- 8f50514: faster, at load average 3.\n", encoding="utf-8")
    assert diary_lines(tmp_path) == [
        "docs/server.md:4: commit hash 7fd10ed",
        "docs/server.md:5: load average",
    ]


#: A code span naming a file of the tree by its path from the root (the wheel's `osbp/…` paths are not).
_SOURCE_SPAN = re.compile(
    r"`((?:protocol|adapter|server|backend|conformance|demo|tests)/[\w/.-]+\.(?:py|toml|json|md))`"
)
#: A generated section (`<!-- name:start … -->` to `<!-- name:end -->`), whose tool names its own modules.
_GENERATED = re.compile(r"<!-- ([\w-]+):start.*?<!-- \1:end -->", re.S)


def missing_source_paths(root: Path) -> list[str]:
    """``file: path`` for each source path a reference page names in a code span that is not in the tree
    (the changelog is history: it names files as they were)."""
    missing = []
    for file in markdown_files(root):
        relative = file.relative_to(root)
        if relative in _DIARIES:
            continue
        text = _GENERATED.sub("", file.read_text(encoding="utf-8"))
        missing += [
            f"{relative}: {path}"
            for path in dict.fromkeys(_SOURCE_SPAN.findall(text))
            if not (root / path).exists()
        ]
    return missing


def test_every_source_path_a_page_names_exists() -> None:
    """Platform choice: a page that names a module names its file as it is in the tree
    (`protocol/osbp/protocol/mandate.py`), so a reader who opens it finds it."""
    assert missing_source_paths(REPO) == []


def test_a_page_naming_a_moved_file_is_reported(tmp_path: Path) -> None:
    """Platform choice: the check names the page and the path; a generated section and the changelog pass."""
    (tmp_path / "protocol" / "osbp" / "protocol").mkdir(parents=True)
    (tmp_path / "protocol" / "osbp" / "protocol" / "mandate.py").write_text("", encoding="utf-8")
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "protocol.md").write_text(
        "See `protocol/osbp/protocol/mandate.py` and `protocol/mandate.py`.\n"
        "<!-- score:start -->\n`protocol/money.py`\n<!-- score:end -->\n",
        encoding="utf-8",
    )
    (tmp_path / "CHANGELOG.md").write_text("Moved `protocol/booking.py`.\n", encoding="utf-8")
    assert missing_source_paths(tmp_path) == ["docs/protocol.md: protocol/mandate.py"]
