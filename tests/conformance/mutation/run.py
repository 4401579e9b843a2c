"""Run Cosmic Ray over the rule modules with the conformance battery as the judge.

One shared platform (the kill matrix's, :func:`~tests.conformance.mutants.platform.shared_platform`) serves
every mutant run; each Cosmic Ray HTTP worker owns a copy of this tree, applies one mutation at a time in
place there, and runs :mod:`tests.conformance.mutation.judge` in it. The session database lives in
``.mutation/`` and is resumable: a run only executes the work items that have no result yet.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

from cosmic_ray.work_db import WorkDB, use_db

from tests.conformance.mutants.platform import shared_platform
from tests.conformance.mutation.judge import PLATFORM_ENV
from tests.conformance.mutation.plan import MODULES, config_toml, skip_unselected
from tests.conformance.mutation.score import forget_survivors

__all__ = ["REPO", "WORK_DIR", "RunOptions", "run", "session_path"]

REPO = Path(__file__).resolve().parents[3]
#: Where sessions, configurations and the workers' trees live (ignored by git).
WORK_DIR = REPO / ".mutation"
#: What a worker's copy of the tree leaves out.
_NOT_COPIED = shutil.ignore_patterns(
    ".git", ".venv", ".mutation", "node_modules", ".mypy_cache", ".ruff_cache", ".pytest_cache",
    ".hypothesis", "bench-results", "build", "*.egg-info", ".osbp",
)  # fmt: skip
_START_TIMEOUT_S = 30.0


@dataclass(frozen=True, slots=True)
class RunOptions:
    """How one `make mutation` run goes."""

    modules: tuple[str, ...] = MODULES
    workers: int = 2
    #: Seconds one mutant's battery run may take; at least three times the unmutated run's.
    timeout: float = 60.0
    #: Keep the session's results and run only what has none (after an interrupted run).
    resume: bool = False
    #: With `resume`, also forget the survivors' results so that they are judged again: after the battery
    #: gained checks, a kill stays a kill (checks are only added), a survival may not.
    rejudge_survivors: bool = False


def _cosmic_ray(*args: str, cwd: Path, env: dict[str, str] | None = None) -> None:
    command = [str(Path(sys.executable).parent / "cosmic-ray"), *args]
    subprocess.run(command, cwd=cwd, env=env, check=True)


def _copy_tree(target: Path) -> Path:
    if target.exists():
        shutil.rmtree(target)
    shutil.copytree(REPO, target, symlinks=True, ignore=_NOT_COPIED)
    return target


def _free_ports(count: int) -> list[int]:
    """Loopback ports free now, one per worker: two checkouts can each run a session at once."""
    with ExitStack() as stack:
        sockets = [stack.enter_context(socket.socket()) for _ in range(count)]
        for sock in sockets:
            sock.bind(("127.0.0.1", 0))
        return [sock.getsockname()[1] for sock in sockets]


def _wait_listening(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + _START_TIMEOUT_S
    while True:
        if process.poll() is not None or time.monotonic() > deadline:
            raise RuntimeError(f"the Cosmic Ray worker on port {port} did not start")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                return
        except OSError:
            time.sleep(0.1)


@contextmanager
def _workers(trees: Sequence[Path], ports: Sequence[int], env: dict[str, str]) -> Iterator[list[str]]:
    """One `cosmic-ray http-worker` per tree, each on its own loopback port; yields their URLs."""
    with ExitStack() as stack:
        urls = []
        for tree, port in zip(trees, ports, strict=True):
            log = stack.enter_context(open(tree / "worker.log", "wb"))
            process = subprocess.Popen(
                [str(Path(sys.executable).parent / "cosmic-ray"), "http-worker", "--port", str(port)],
                cwd=tree, env=env, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
            stack.callback(_stop, process)
            _wait_listening(port, process)
            urls.append(f"http://127.0.0.1:{port}")
        yield urls


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    try:
        process.wait(10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(5)


def _baseline(tree: Path, env: dict[str, str]) -> float:
    """Seconds the unmutated tree's judge run takes; it must pass every check."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "tests.conformance.mutation.judge"],
        cwd=tree, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if done.returncode != 0:
        raise RuntimeError(f"the unmutated server does not pass the battery:\n{done.stdout}{done.stderr}")
    return time.monotonic() - started


def session_path() -> Path:
    """The session database `make mutation` writes and the score table reads."""
    return WORK_DIR / "session.sqlite"


def run(options: RunOptions) -> float:
    """Initialize (unless resuming) and execute the session; the wall-clock seconds the run took."""
    started = time.monotonic()
    WORK_DIR.mkdir(exist_ok=True)
    session = session_path()
    trees = [_copy_tree(WORK_DIR / f"worker{index}") for index in range(options.workers)]
    ports = _free_ports(options.workers)
    urls = [f"http://127.0.0.1:{port}" for port in ports]
    test_command = f"{sys.executable} -m tests.conformance.mutation.judge"
    config = WORK_DIR / "cosmic-ray.toml"
    config.write_text(
        config_toml(
            modules=options.modules, test_command=test_command, timeout=options.timeout, worker_urls=urls
        ),
        encoding="utf-8",
    )
    if not (options.resume and session.exists()):
        session.unlink(missing_ok=True)
        _cosmic_ray("init", str(config), str(session), cwd=REPO)
    if options.rejudge_survivors:
        forget_survivors(session)
    with use_db(str(session), WorkDB.Mode.open) as db:
        skipped = skip_unselected(db, REPO)
        pending = sum(1 for _ in db.pending_work_items)
    print(f"mutation: {pending} mutants to run; skipped {dict(skipped)}", flush=True)  # noqa: T201
    with shared_platform() as platform_url:
        env = {**os.environ, PLATFORM_ENV: platform_url, "PYTHONDONTWRITEBYTECODE": "1"}
        baseline = _baseline(trees[0], env)
        print(f"mutation: the unmutated server passes in {baseline:.1f}s", flush=True)  # noqa: T201
        if baseline * 3 > options.timeout:
            raise RuntimeError(
                f"--timeout {options.timeout:g}s is under three unmutated runs ({baseline:.1f}s)"
            )
        with _workers(trees, ports, env):
            _cosmic_ray("exec", str(config), str(session), cwd=REPO, env=env)
    return time.monotonic() - started
