"""Which JSON-RPC messages the MCP SDK cannot read, and the error each one is answered with: one rule for
the stdio reader (:mod:`osbp.server.stdin`) and the Streamable HTTP gate (:mod:`osbp.server.http`).

:func:`screen` reads a message with the SDK's own parser first; one it accepts passes untouched. Any other
gets a JSON-RPC 2.0 error response (§5.1): ``-32700`` Parse error for text that is not JSON, or not I-JSON
(a lone surrogate escape, RFC 7493 §2.1), or nests deeper than the parser reads; ``-32600`` Invalid
Request for JSON that is not a request the SDK takes (a batch included: MCP 2025-06-18 removed batching
and the SDK has none). The error carries the request's ``id`` when it can be read (§5), else ``null``;
a message nested too deep for any parser still has its top-level ``id`` read, and a refused batch names
the id of each request in it, so a host waiting on its ids is answered for every one. Only a valid
JSON-RPC 2.0 notification (§4.1: no ``id``) MCP cannot take, such as one with array ``params``, gets no
answer; a message that is not a valid Request object at all is not a notification and is answered with
``id: null``, as §5.1 and the specification's own examples do.
"""

from __future__ import annotations

import json
import re
from bisect import bisect_right
from dataclasses import dataclass
from itertools import accumulate
from typing import Any

from mcp.types.jsonrpc import (
    INVALID_REQUEST,
    PARSE_ERROR,
    ErrorData,
    JSONRPCError,
    RequestId,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

__all__ = ["Rejection", "screen"]

_MESSAGES = {PARSE_ERROR: "Parse error", INVALID_REQUEST: "Invalid Request"}
#: Why a message was rejected: the suffix of the error message, by the reason logged.
_EXPLAINED = {
    "not_json": "the line is not JSON",
    "lone_surrogate": "a string holds a lone surrogate escape, which is not I-JSON (RFC 7493)",
    "too_deep": "the JSON nests deeper than the server reads",
    "batch": "batches are not supported (MCP 2025-06-18 removed JSON-RPC batching)",
    "not_a_request": "not a JSON-RPC 2.0 request object the server takes",
}


@dataclass(frozen=True)
class Rejection:
    """A message the SDK cannot read: the JSON-RPC error code, why, the request id if readable, whether it
    is answered (everything but a valid JSON-RPC notification is) and, for a batch, its requests' ids."""

    code: int
    reason: str
    id: RequestId | None
    answered: bool = True
    batch_ids: tuple[RequestId, ...] = ()

    def response(self, request_id: RequestId | None = None) -> JSONRPCError:
        """The JSON-RPC 2.0 error response that answers the message (or the batch's ``request_id``)."""
        message = f"{_MESSAGES[self.code]}: {_EXPLAINED[self.reason]}"
        answered = self.id if request_id is None else request_id
        return JSONRPCError(jsonrpc="2.0", id=answered, error=ErrorData(code=self.code, message=message))

    def responses(self) -> list[JSONRPCError]:
        """One error per request id a host waits on: each of a batch's, else the one response."""
        return [self.response(item) for item in self.batch_ids] or [self.response()]


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _loads(text: str | bytes) -> tuple[str | None, Any]:
    """``(None, value)`` when ``text`` is JSON by RFC 8259 (lone surrogates allowed), else the reason."""
    try:
        return None, json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        return "too_deep", None
    except ValueError:
        return "not_json", None


def _is_i_json(value: Any) -> bool:
    """No lone surrogate anywhere in the value (paired escapes are already one character here)."""
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    except (ValueError, RecursionError):
        return True  # not a surrogate problem: the nesting, which the caller reports
    return True


def _request_id(value: Any) -> RequestId | None:
    """The id of a would-be request, when it is one MCP can echo (an integer or a UTF-8 string)."""
    if not isinstance(value, dict) or "result" in value or "error" in value:
        return None  # a response's id names one of the server's requests, not a request to answer
    found = value.get("id")
    if isinstance(found, bool) or not isinstance(found, int | str):
        return None
    if isinstance(found, str) and not _is_i_json(found):
        return None
    return found


def _is_notification(value: Any) -> bool:
    """A valid JSON-RPC 2.0 Request object without an id (§4, §4.1)."""
    return (
        isinstance(value, dict)
        and "id" not in value
        and value.get("jsonrpc") == "2.0"
        and isinstance(value.get("method"), str)
        and isinstance(value.get("params", {}), dict | list)
    )


#: An escape in a string, replaced by two neutral characters before a nested value is skipped: the
#: text keeps its length (and positions), and each of its strings is then a plain ``"..."`` run.
_ESCAPE = re.compile(r"\\.", re.DOTALL)
#: Runs of anything but a closing bracket, and runs of closing brackets: nesting of any depth is a few
#: runs; only alternating brackets (``[],[],...``) make many.
_RUNS = re.compile(r"[^\]}]++|[\]}]++")
#: Past this many runs, or strings, a nested value is not skipped (its message's id is not read): a bound
#: on the work and memory an attacker's message costs.
_MOST_RUNS = 20_000
_MOST_STRINGS = 200_000
_DECODER = json.JSONDecoder()


def _space(text: str, at: int) -> int:
    """The first position from ``at`` that is not JSON whitespace."""
    while text[at : at + 1] in (" ", "\t", "\n", "\r"):
        at += 1
    return at


def _closing(brackets: str) -> int:
    """The index in ``brackets`` (JSON text without its strings) of the bracket closing its first one."""
    depth = 0
    for count, run in enumerate(_RUNS.finditer(brackets)):
        part = run.group()
        if count == _MOST_RUNS:
            break
        if part[0] not in ("]", "}"):
            depth += part.count("[") + part.count("{")
        elif len(part) >= depth:
            return run.start() + depth - 1
        else:
            depth -= len(part)
    raise ValueError("unterminated, or too many runs to skip")


def _skip_nested(neutral: str, start: int) -> int:
    """The end of the array or object at ``start`` of ``neutral`` (the text with its escapes replaced),
    found without recursion at any depth, in linear time: the brackets are counted with the strings
    (every other piece between quotes) left out, and the position found is mapped back."""
    if neutral.count('"', start) > 2 * _MOST_STRINGS:
        raise ValueError("too many strings to skip")
    pieces = neutral[start:].split('"')
    outside = pieces[0::2]
    index = _closing("".join(outside))
    ends = list(accumulate(map(len, outside)))
    piece = bisect_right(ends, index)  # the outside piece the closing bracket is in
    before = sum(map(len, pieces[: 2 * piece])) + 2 * piece  # the pieces before it and their quotes
    return start + before + index - (ends[piece - 1] if piece else 0) + 1


def _top_level(text: str) -> dict[str, Any]:
    """A top-level object's members, each nested array or object read as ``[]``: what a message too deep
    for the parser still says about itself (its id, whether it is a response). Reading stops at the first
    thing it cannot read (the members before it stand); nothing if the text is not an object."""
    members: dict[str, Any] = {}
    neutral = ""
    at = _space(text, 0)
    if text[at : at + 1] != "{":
        return members
    try:
        at = _space(text, at + 1)
        while text[at : at + 1] not in ("}", ""):
            key, at = _DECODER.raw_decode(text, at)
            at = _space(text, at)
            if not isinstance(key, str) or text[at : at + 1] != ":":
                break
            at = _space(text, at + 1)
            if text[at : at + 1] in ("[", "{"):
                neutral = neutral or _ESCAPE.sub("__", text)
                members[key], at = [], _skip_nested(neutral, at)
            else:
                members[key], at = _DECODER.raw_decode(text, at)
            at = _space(text, at)
            if text[at : at + 1] == ",":
                at = _space(text, at + 1)
            elif text[at : at + 1] != "}":
                break
    except (ValueError, RecursionError):
        pass  # what was read before stands
    return members


def _batch_ids(items: list[Any]) -> tuple[RequestId, ...]:
    """The ids of a batch's requests, each once, in order."""
    found = (_request_id(item) for item in items)
    return tuple(dict.fromkeys(item for item in found if item is not None))


def screen(message: str | bytes) -> Rejection | None:
    """``None`` when the SDK reads ``message`` as a JSON-RPC message (or it is blank), else its rejection."""
    if not message.strip():
        return None
    try:
        jsonrpc_message_adapter.validate_json(message, by_name=False)
    except ValidationError as error:
        not_json = any(detail["type"] == "json_invalid" for detail in error.errors())
    else:
        return None
    unreadable, value = _loads(message)
    if unreadable == "too_deep":
        text = message if isinstance(message, str) else message.decode("utf-8", "replace")
        return Rejection(PARSE_ERROR, "too_deep", _request_id(_top_level(text)))
    if unreadable is not None:
        return Rejection(PARSE_ERROR, unreadable, None)
    if not_json:
        reason = "too_deep" if _is_i_json(value) else "lone_surrogate"
        return Rejection(PARSE_ERROR, reason, _request_id(value))
    if isinstance(value, list):
        return Rejection(INVALID_REQUEST, "batch", None, batch_ids=_batch_ids(value))
    if _is_notification(value):
        return Rejection(INVALID_REQUEST, "not_a_request", None, answered=False)
    return Rejection(INVALID_REQUEST, "not_a_request", _request_id(value))
