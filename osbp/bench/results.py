"""How a benchmark publishes its figures: ``<out>/<name>.json`` and its table on stdout."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["publish"]


def publish(out: Path, name: str, results: dict[str, Any], table: Table) -> None:
    """Write ``results`` to ``<out>/<name>.json`` and print ``table`` and where the figures went."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.json"
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    console = Console()
    console.print(table)
    console.print(f"wrote {path}")
