"""Every count the README and the docs state (tools, checks, the demo's merchants) is the code's. (The check
catalog's table in docs/conformance.md is compared with the catalog by tests/conformance/test_report.py.)"""

from __future__ import annotations

import re
from pathlib import Path

from osbp.conformance.checks import CATALOG
from osbp.demo.scenarios import SCENARIOS
from osbp.protocol.models import TOOL_NAMES

REPO = Path(__file__).resolve().parents[1]
NUMBERS = {
    "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
}  # fmt: skip
_NUMBER = r"\b(" + "|".join(NUMBERS) + r"|\d+)"
#: What each stated count counts, and the code's number for it.
COUNTED = {
    "tools": (re.compile(_NUMBER + r" (?:OSBP |MCP |flattened )?tools\b", re.I), len(TOOL_NAMES)),
    "demo merchants": (
        re.compile(_NUMBER + r" (?:synthetic appointments|(?:demo )?merchants|verticals)\b", re.I),
        len(SCENARIOS.verticals),
    ),
    "audit checks": (
        re.compile(r"Without `--audit-log` the " + _NUMBER + r" checks", re.I),
        sum(check.id.startswith("audit.") for check in CATALOG),
    ),
}
#: ``the three `elicitation.*` checks``: the checks whose id has that prefix.
_FAMILY = re.compile(_NUMBER + r" `([a-z_]+)\.\*` checks\b", re.I)
#: A report's last line as a page quotes it: `<verdict> n/N checks passed (f failed, s skipped[: ...])`.
_TALLY = re.compile(r"\b[A-Z]+ (\d+)/(\d+) checks passed \((\d+) failed, (\d+) skipped(?:: ([^)`]*))?\)")
#: The line that counts the checks a failed start left unreached.
_UNREACHED = re.compile(r"\b(\d+) more checks SKIP, not reached: wire\.initialize failed first")


def _text(page: Path) -> str:
    """The page with its line breaks as spaces, so a count wrapped onto the next line is still read."""
    return re.sub(r"\s*\n\s*", " ", page.read_text(encoding="utf-8"))


def _number(word: str) -> int:
    return int(word) if word.isdigit() else NUMBERS[word.lower()]


def _tally_adds_up(match: re.Match[str], total: int) -> bool:
    """A quoted last line counts the whole catalog, and its skips add up to the ids and counts it names."""
    passed, of, failed, skipped = (int(group) for group in match.groups()[:4])
    if of != total or passed + failed + skipped != total:
        return False
    if not match[5]:
        return True
    parts = match[5].split(", ")
    unreached = sum(int(part.split()[0]) for part in parts if part.endswith(" not reached"))
    return len([part for part in parts if not part.endswith(" not reached")]) + unreached == skipped


def pages(root: Path) -> list[Path]:
    """The pages whose counts are about the code as it is now: the README and docs/ (the changelog's are
    history)."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]


def wrong_counts(root: Path) -> list[str]:
    """``page: "stated" (the code has N)`` for each count on the pages that is not the code's."""
    wrong = []
    total = len(CATALOG)
    for page in pages(root):
        text, name = _text(page), page.relative_to(root).as_posix()
        for what, (pattern, actual) in COUNTED.items():
            for match in pattern.finditer(text):
                if _number(match[1]) != actual:
                    wrong.append(f'{name}: "{match[0]}" (the code has {actual} {what})')
        for match in _FAMILY.finditer(text):
            family = sum(check.id.startswith(match[2] + ".") for check in CATALOG)
            if _number(match[1]) != family:
                wrong.append(f'{name}: "{match[0]}" (the catalog has {family} {match[2]}.* checks)')
        for match in _TALLY.finditer(text):
            if not _tally_adds_up(match, total):
                wrong.append(f'{name}: "{match[0]}" (the catalog has {total} checks)')
        for match in _UNREACHED.finditer(text):
            if int(match[1]) != total - 1:
                wrong.append(f'{name}: "{match[0]}" (the catalog has {total} checks: {total - 1} more)')
    return wrong


def test_every_count_of_tools_checks_and_merchants_in_the_docs_is_the_codes() -> None:
    """Platform choice: a count the README or a page states (eight tools, a report's n/N checks, the demo's
    four merchants, the four audit checks) follows the code, so it cannot drift when a check is added."""
    assert wrong_counts(REPO) == []


def test_a_stale_count_is_named_with_the_codes_number(tmp_path: Path) -> None:
    """Platform choice: the check fails on a stale tool count and a report line of an older catalog."""
    page = tmp_path / "README.md"
    stale = "The server with its seven tools.\nIt ends `FAIL 78/79 checks\npassed (1 failed, 0 skipped)`.\n"
    page.write_text(stale, encoding="utf-8")
    tally = "FAIL 78/79 checks passed (1 failed, 0 skipped)"
    assert wrong_counts(tmp_path) == [
        f'README.md: "seven tools" (the code has {len(TOOL_NAMES)} tools)',
        f'README.md: "{tally}" (the catalog has {len(CATALOG)} checks)',
    ]
