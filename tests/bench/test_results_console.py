"""A benchmark's table printed into a pipe keeps every column whole."""

from __future__ import annotations

import contextlib
import io

from rich.table import Table

from osbp.bench.results import console

TOOL = "osbp_availability_find_paged_through_a_whole_day"


def test_a_piped_table_is_not_cut_to_eighty_columns() -> None:
    """Platform choice: off a terminal rich would assume 80 columns and cut the tool names to one shared
    prefix; the bench console prints the table at its natural width instead."""
    table = Table()
    table.add_column("tool")
    for index in range(8):
        table.add_column(f"p50 run {index} (ms)")
    table.add_row(TOOL, *["12.3"] * 8)
    piped = io.StringIO()
    with contextlib.redirect_stdout(piped):
        console().print(table)
    lines = piped.getvalue().splitlines()
    assert any(TOOL in line for line in lines)
    assert max(len(line) for line in lines) > 80
    assert "…" not in piped.getvalue()
