"""How a benchmark publishes its figures: ``<out>/<name>.json`` and its table on stdout."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

__all__ = ["console", "publish"]

#: A piped table's width: wide enough that no column is cut (rich assumes 80 columns off a terminal).
_PIPED_WIDTH = 240


def console(*, stderr: bool = False) -> Console:
    """The console a benchmark prints on: the terminal's width, or, piped or captured, a width wide enough
    that tool names are never cut to one shared prefix."""
    stream = sys.stderr if stderr else sys.stdout
    return Console(stderr=stderr, width=None if stream.isatty() else _PIPED_WIDTH)


def publish(out: Path, name: str, results: dict[str, Any], table: Table) -> None:
    """Write ``results`` to ``<out>/<name>.json`` and print ``table`` and where the figures went."""
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{name}.json"
    path.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    out_console = console()
    out_console.print(table)
    out_console.print(f"wrote {path}")
