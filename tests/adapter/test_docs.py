"""The booking script in docs/adapter.md runs as written and books a cleaning at Carolyn's Dental."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "adapter.md"
MARKER = "<!-- adapter-booking-script -->"


def booking_script() -> str:
    """The fenced python block that follows the marker in docs/adapter.md."""
    text = DOC.read_text(encoding="utf-8")
    after = text.split(MARKER, 1)[1]
    body = after.split("```python\n", 1)[1]
    return body.split("\n```", 1)[0] + "\n"


@pytest.mark.integration
def test_documented_script_books_a_cleaning_end_to_end(tmp_path: Path) -> None:
    """docs/adapter.md: a short script books a cleaning through the adapter alone (preflight → status)."""
    script = tmp_path / "book_cleaning.py"
    script.write_text(booking_script(), encoding="utf-8")
    completed = subprocess.run(
        [sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=120, check=False
    )
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert lines[0].startswith("Book Regular cleaning on Tuesday, 2026-07-07 at 09:00 until 09:45")
    assert "No upfront payment or deposit is required to book." in lines[0]
    assert "approval.token" not in completed.stdout
    receipt = "Booked Regular cleaning on 2026-07-07 at 09:00 America/New_York with Dr. Carolyn Reyes."
    assert lines[1].startswith(f"{receipt} Booking id: apt_")
    assert lines[2] == "status: booked"
