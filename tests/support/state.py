"""What an OSBP state location holds, read from outside the store (for tests of what it never keeps)."""

from __future__ import annotations

from pathlib import Path

import psycopg

__all__ = ["stored_text"]

_TABLES = ("idempotency", "approvals", "booking_snapshots", "confirmation_pages", "confirmation_rounds")


def stored_text(location: str) -> str:
    """Everything the state at ``location`` holds, as text: a SQLite file's bytes (with its WAL), or every
    row of a PostgreSQL state database's tables."""
    if not location.startswith("postgresql://"):
        files = (Path(location), Path(f"{location}-wal"))
        return "".join(file.read_bytes().decode("latin-1") for file in files if file.exists())
    with psycopg.connect(location) as db:
        return "\n".join(str(row) for table in _TABLES for row in db.execute(f"SELECT * FROM {table}"))  # noqa: S608  # constant names
