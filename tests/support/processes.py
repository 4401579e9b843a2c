"""Process helpers: start processes together (cross-process races on one state file), tell a live one."""

from __future__ import annotations

import multiprocessing
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any


def spawn_together(target: Callable[[str, Any, Any], None], path: str, count: int) -> Counter[str]:
    """Start ``count`` spawned processes running ``target(path, start, results)``, release them at once,
    and count what each put on ``results``; every process must exit 0."""
    context = multiprocessing.get_context("spawn")
    start, results = context.Event(), context.Queue()
    processes = [context.Process(target=target, args=(path, start, results)) for _ in range(count)]
    for process in processes:
        process.start()
    start.set()
    outcomes = [results.get(timeout=60) for _ in processes]
    for process in processes:
        process.join(30)
        assert process.exitcode == 0
    return Counter(outcomes)


def alive(pid: int) -> bool:
    """Whether ``pid`` is still a running process (a zombie, exited but not yet reaped, is not)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text(encoding="ascii").rpartition(")")[2].split()[0]
    except OSError:
        return False
    return state != "Z"
