"""``python -m tests.conformance.mutants.proxy NAME -- SERVER COMMAND...``: a stdio proxy in front of the
real server that rewrites its JSON-RPC messages in one way.

The proxy starts the server command as its child, copies the client's stdin lines to the child
unchanged, and passes each line the child writes to stdout through the mutant's rewrite. The server's
stderr is inherited. It imports nothing of this project: what it mutates is only what crosses the wire.
"""

from __future__ import annotations

import contextlib
import json
import subprocess
import sys
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["PROXY_MUTANTS", "main"]

Message = dict[str, Any]


def _tool_result(message: Message) -> Message | None:
    result = message.get("result")
    return result if isinstance(result, dict) and "content" in result else None


def _structured_without_audit_id(message: Message) -> Message:
    result = _tool_result(message)
    if result is not None and isinstance(result.get("structuredContent"), dict):
        # structuredContent built from the value before the audit record was appended.
        result["structuredContent"].pop("audit_event_id", None)
    return message


def _is_error_never_set(message: Message) -> Message:
    result = _tool_result(message)
    if result is not None:
        result["isError"] = False
    return message


def _send_marked_read_only(message: Message) -> Message:
    result = message.get("result")
    for tool in result.get("tools", []) if isinstance(result, dict) else []:
        if tool.get("name") == "osbp_verification_send":
            tool.setdefault("annotations", {})["readOnlyHint"] = True
    return message


#: Every proxy mutant by name: the rewrite of one server-to-client message.
PROXY_MUTANTS: dict[str, Callable[[Message], Message]] = {
    "proxy_structured_differs_from_text": _structured_without_audit_id,
    "proxy_is_error_never_set": _is_error_never_set,
    "proxy_annotation_wrong": _send_marked_read_only,
    "proxy_stdout_banner": lambda message: message,
}


def _pump_stdin(child: subprocess.Popen[bytes]) -> None:
    assert child.stdin is not None
    try:
        for line in sys.stdin.buffer:
            child.stdin.write(line)
            child.stdin.flush()
    except (BrokenPipeError, ValueError):
        pass
    finally:
        with contextlib.suppress(BrokenPipeError):
            child.stdin.close()


def main(argv: list[str]) -> int:
    """Run the proxy: ``NAME -- COMMAND...``."""
    if len(argv) < 3 or argv[0] not in PROXY_MUTANTS or argv[1] != "--":
        sys.stderr.write(
            f"usage: proxy NAME -- COMMAND...; NAME is one of {', '.join(sorted(PROXY_MUTANTS))}\n"
        )
        return 2
    rewrite = PROXY_MUTANTS[argv[0]]
    child = subprocess.Popen(argv[2:], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdout is not None
    out = sys.stdout.buffer
    if argv[0] == "proxy_stdout_banner":
        out.write(b"osbp server ready\n")  # a start-up banner on the protocol channel
        out.flush()
    threading.Thread(target=_pump_stdin, args=(child,), daemon=True).start()
    for line in child.stdout:
        try:
            message = json.loads(line)
        except ValueError:
            out.write(line)
        else:
            out.write(json.dumps(rewrite(message), separators=(",", ":")).encode() + b"\n")
        out.flush()
    return child.wait()


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
