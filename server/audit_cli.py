"""`osbp audit verify [PATH]`: check the audit log's hash chain and name the first broken link.

Exit status 0 when the chain is intact (the head hash is printed so it can be anchored elsewhere), 1 at
the first broken link, 2 on a usage error. PATH defaults to ``OSBP_AUDIT_LOG_PATH``, else
``.osbp/audit/events.jsonl``. When ``OSBP_AUDIT_KEY`` is set (environment only), every line's mac is
checked against it as well.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence
from pathlib import Path

from osbp.server.audit import AUDIT_KEY_MIN_LENGTH, DEFAULT_AUDIT_PATH
from osbp.server.audit_verify import verify_chain

__all__ = ["main"]


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="osbp audit", description="Inspect the OSBP audit log.")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    verify = commands.add_parser("verify", help="check the hash chain and name the first broken link")
    verify.add_argument(
        "path",
        nargs="?",
        type=Path,
        help="the log file (default: $OSBP_AUDIT_LOG_PATH or .osbp/audit/events.jsonl)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `osbp audit ...`; returns the process exit status."""
    try:
        args = _parser().parse_args(list(sys.argv[1:] if argv is None else argv))
    except SystemExit as exc:  # argparse exits on --help (0) and on usage errors (2)
        return int(exc.code or 0)
    path: Path = args.path or Path(os.environ.get("OSBP_AUDIT_LOG_PATH") or DEFAULT_AUDIT_PATH)
    if path.exists() and not path.is_file():
        sys.stderr.write(f"osbp audit verify: {path} is not a file\n")
        return 2
    secret = os.environ.get("OSBP_AUDIT_KEY") or None
    if secret is not None and len(secret) < AUDIT_KEY_MIN_LENGTH:
        limit = AUDIT_KEY_MIN_LENGTH
        sys.stderr.write(f"osbp audit verify: OSBP_AUDIT_KEY must be at least {limit} characters\n")
        return 2
    report = verify_chain(path, None if secret is None else secret.encode())
    if report.first_break is None:
        how = "chain intact"
        if report.authenticated:
            how += ", every mac checked with OSBP_AUDIT_KEY"
        sys.stdout.write(f"ok: {report.lines} events, {how}, head {report.head}\n")
        return 0
    broken = report.first_break
    event = f" (event {broken.event_id})" if broken.event_id else ""
    sys.stdout.write(
        f"broken: line {broken.line}{event}: {broken.reason}\n"
        f"the {report.lines} lines before it are intact (head {report.head})\n"
    )
    return 1
