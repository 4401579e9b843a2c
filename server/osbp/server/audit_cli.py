"""`osbp audit verify [PATH ...]`: check audit logs' hash chains and name the first broken link of each.

Exit status 0 when the chain is intact (the head hash is printed so it can be anchored elsewhere), 1 at
the first broken link, 2 when there is no log to check (no such file, a directory, unreadable) or on a
usage error, with one line on stderr saying which. PATH defaults to ``OSBP_AUDIT_LOG_PATH``, else
``.osbp/audit/events.jsonl``. When ``OSBP_AUDIT_KEY`` is set (environment only), every line's mac is
checked against it as well.

An intact chain with write-ahead records that no outcome closes (a server that died between an effect's
intent and its outcome, or a call still in flight) prints one line per open intent after the verdict;
the chain is still intact, so the status stays 0.

Several PATHs are the chains of several replicas (each replica keeps its own: docs/server.md, replicas):
each is checked on its own, its verdict printed on lines that start with the file that names the
replica, and the exit status is the worst of them (2 over 1 over 0).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from osbp.server.audit import AUDIT_KEY_MIN_LENGTH, DEFAULT_AUDIT_PATH
from osbp.server.audit_verify import OpenIntent, verify_chain

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="osbp audit", description="Inspect the OSBP audit log.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    verify = commands.add_parser("verify", help="check the hash chain and name the first broken link")
    verify.add_argument(
        "paths",
        nargs="*",
        metavar="PATH",
        help="the log file, or one per replica (default: $OSBP_AUDIT_LOG_PATH or .osbp/audit/events.jsonl)",
    )
    return parser


def _fail(message: str) -> int:
    sys.stderr.write(f"osbp audit verify: {message}\n")
    return 2


def _log_path(given: str | None) -> Path | str:
    """The log to check, or why the path given cannot name one."""
    if given is None:
        return Path(os.environ.get("OSBP_AUDIT_LOG_PATH") or DEFAULT_AUDIT_PATH)
    if not given.strip():
        return "the log path is empty: give the audit log file, or leave it out to check $OSBP_AUDIT_LOG_PATH"
    return Path(given)


def _unreadable(path: Path, error: OSError) -> str:
    if isinstance(error, FileNotFoundError):
        # Logs elsewhere under the working folder's .osbp/ (the demo's, a second server's) are named, so
        # `osbp audit verify` after `make demo` says where to look.
        found = sorted(str(log) for log in Path(".osbp").glob("*/*.jsonl") if log != path)
        nearby = f"; audit logs under .osbp/: {', '.join(found[:5])}" if found else ""
        return (
            f"no audit log at {path}: check the path (a server creates its log when it starts, at "
            f"--audit-log-path / OSBP_AUDIT_LOG_PATH){nearby}"
        )
    if isinstance(error, IsADirectoryError):
        return f"{path} is a directory: give the audit log file inside it"
    return f"cannot read the audit log {path}: {(error.strerror or str(error)).lower()}"


def _shown(event_id: str) -> str:
    """An event id as it can be printed on one line: a forged line's id may hold a newline or be huge."""
    if event_id.isprintable() and len(event_id) <= 80:
        return event_id
    return json.dumps(event_id[:80])


def _open_intents(intents: tuple[OpenIntent, ...], label: str) -> str:
    """The open intents: a count, then each on its own line (what, under which mandate, when, where)."""
    what = "1 intent" if len(intents) == 1 else f"{len(intents)} intents"
    lines = [
        f"{label}{what} without an outcome: the effect may have happened unrecorded (a retry of the same "
        "booking.create, same idempotency key, settles it; otherwise check the platform):"
    ]
    for intent in intents:
        mandate = f" mandate {_shown(intent.mandate_id)}" if intent.mandate_id else ""
        lines.append(
            f"{label}  {_shown(intent.event_id)} {_shown(intent.tool_name)}{mandate} at "
            f"{_shown(intent.created_at)} (line {intent.line})"
        )
    return "".join(line + "\n" for line in lines)


def main(argv: Sequence[str] | None = None) -> int:
    """Run `osbp audit ...`; returns the process exit status."""
    try:
        args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # argparse exits on --help (0) and on usage errors (2)
        return int(exc.code or 0)
    paths = [_log_path(given) for given in args.paths or [None]]
    refused = next((path for path in paths if isinstance(path, str)), None)
    if refused is not None:
        return _fail(refused)
    secret = os.environ.get("OSBP_AUDIT_KEY") or None
    if secret is not None and len(secret) < AUDIT_KEY_MIN_LENGTH:
        return _fail(f"OSBP_AUDIT_KEY must be at least {AUDIT_KEY_MIN_LENGTH} characters")
    key = None if secret is None else secret.encode()
    several = len(paths) > 1
    return max(
        _verify_one(path, key, f"{path}: " if several else "") for path in paths if isinstance(path, Path)
    )


def _verify_one(path: Path, key: bytes | None, label: str) -> int:
    """Check one chain and print its verdict, each line led by ``label`` (the replica's file, if several)."""
    try:
        report = verify_chain(path, key)
    except OSError as error:
        return _fail(_unreadable(path, error))  # the message names the file already
    if report.first_break is None:
        how = "chain intact"
        if report.authenticated:
            how += ", every mac checked with OSBP_AUDIT_KEY"
        sys.stdout.write(f"{label}ok: {report.lines} events, {how}, head {report.head}\n")
        if report.open_intents:
            sys.stdout.write(_open_intents(report.open_intents, label))
        return 0
    broken = report.first_break
    event = f" (event {_shown(broken.event_id)})" if broken.event_id else ""
    sys.stdout.write(
        f"{label}broken: line {broken.line}{event}: {broken.reason}\n"
        f"{label}the {report.lines} lines before it are intact (head {report.head})\n"
    )
    return 1
