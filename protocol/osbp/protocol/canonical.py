"""RFC 8785 (JCS) canonical JSON and SHA-256 hashing: the one hash function of the project.

Payload hashes (idempotency, approval binding) and audit hashes all go through :func:`canonical_json`, so
two equal JSON values always hash the same regardless of key order or number formatting. Pydantic models
are hashed in their wire form (absent optionals omitted).

The ``rfc8785`` library is the reference serializer. It is pure Python, so a large value (a day of
slots in an audit record) costs milliseconds; the standard library's C encoder writes the very same bytes
whenever a value avoids the three places where the two formats differ, and :func:`_json_module_agrees`
checks that before each use:

* key order: RFC 8785 sorts by UTF-16 code units, ``json`` by code points; identical for ASCII keys;
* floats: RFC 8785 writes ECMAScript number text, ``repr`` differs for integral floats (``40.0``) and
  in exponent notation (below 1e-4 and from 1e16 on), and is identical otherwise;
* integers: RFC 8785 refuses any beyond ±(2**53 - 1), ``json`` would write them.

Anything else (another type, a lone surrogate) goes to ``rfc8785``, which also reports what is not JSON.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import rfc8785
from pydantic import BaseModel

__all__ = ["canonical_json", "canonical_object", "sha256_hex", "sha256_hex_bytes"]


def _plain(obj: Any) -> Any:
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json", exclude_none=True)
    return obj


_SAFE_INTEGER = 2**53 - 1


#: Deeper values (or cyclic ones, which are not JSON) are left to ``rfc8785``.
_MAX_DEPTH = 200


def _json_module_agrees(node: Any, depth: int = 0) -> bool:
    """Whether ``json.dumps(node, sort_keys=True)`` is exactly RFC 8785 for ``node`` (see the module)."""
    kind = type(node)
    if kind is dict:
        if depth == _MAX_DEPTH:
            return False
        for key, child in node.items():
            if type(key) is not str or not key.isascii():
                return False
            # Strings, the bulk of any value, are settled here without a call.
            if type(child) is not str and not _json_module_agrees(child, depth + 1):
                return False
        return True
    if kind is list or kind is tuple:
        if depth == _MAX_DEPTH:
            return False
        return all(type(child) is str or _json_module_agrees(child, depth + 1) for child in node)
    if kind is str or kind is bool or node is None:
        return True
    if kind is int:
        return bool(-_SAFE_INTEGER <= node <= _SAFE_INTEGER)
    if kind is float:
        # Fixed notation in both formats, and not integral (NaN and infinities fail the range).
        return bool(1e-4 <= abs(node) < 1e16 and not node.is_integer())
    return False


def canonical_json(obj: Any) -> bytes:
    """The RFC 8785 canonical UTF-8 JSON bytes of a JSON value or pydantic model."""
    value = _plain(obj)
    if _json_module_agrees(value):
        text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
        try:
            return text.encode("utf-8")
        except UnicodeEncodeError:  # a lone surrogate: not JSON text, rfc8785 says so below
            pass
    return bytes(rfc8785.dumps(value))


def sha256_hex(obj: Any) -> str:
    """Lower-case hex SHA-256 of :func:`canonical_json` of ``obj``."""
    return hashlib.sha256(canonical_json(obj)).hexdigest()


def canonical_object(members: Mapping[str, Any], precomputed: Mapping[str, bytes]) -> bytes:
    """:func:`canonical_json` of the object ``members``, reusing canonical bytes already made for some.

    RFC 8785 writes an object as its members sorted by the UTF-16 code units of their keys, each
    ``"key":value`` with the value in its own canonical form, so a member's canonical bytes are the same
    inside the object as alone. ``precomputed[key]`` must be ``canonical_json(members[key])``; large
    snapshots hashed on their own and again inside a record are then serialized once.
    """
    parts = []
    # Big-endian UTF-16 bytes compare exactly as RFC 8785's code-unit order.
    for key in sorted(members, key=lambda name: name.encode("utf-16-be")):
        value = precomputed.get(key)
        if value is None:
            value = canonical_json(members[key])
        parts.append(canonical_json(key) + b":" + value)
    return b"{" + b",".join(parts) + b"}"


def sha256_hex_bytes(data: bytes) -> str:
    """Lower-case hex SHA-256 of bytes that are already canonical JSON."""
    return hashlib.sha256(data).hexdigest()
