"""JSON-RPC request lines for the tests of the servers' message screening (stdio and HTTP alike)."""

from __future__ import annotations

import json
from typing import Any

__all__ = ["REQUEST", "holding", "request"]

REQUEST = '{"jsonrpc":"2.0","id":7,"method":"tools/list"}'


def request(**members: Any) -> str:
    """A JSON-RPC request line with ``members`` replaced (a member given as ``...`` is left out)."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "x"}}
    body |= members
    return json.dumps({key: value for key, value in body.items() if value is not ...})


def holding(raw: str, **members: Any) -> str:
    """A request whose ``params.text`` is the raw JSON text ``raw`` (an escape json.dumps would not write)."""
    return request(params={"text": "HOLE"}, **members).replace('"HOLE"', raw)
