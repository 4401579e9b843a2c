"""RFC 8785 (JCS) canonical JSON and SHA-256 hashing: the one hash function of the project.

Payload hashes (idempotency, approval binding) and audit hashes all go through :func:`canonical_json`, so
two equal JSON values always hash the same regardless of key order or number formatting. Pydantic models
are hashed in their wire form (absent optionals omitted).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

import rfc8785
from pydantic import BaseModel

__all__ = ["canonical_json", "canonical_object", "sha256_hex", "sha256_hex_bytes"]


def _plain(obj: Any) -> Any:
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json", exclude_none=True)
    return obj


def canonical_json(obj: Any) -> bytes:
    """The RFC 8785 canonical UTF-8 JSON bytes of a JSON value or pydantic model."""
    return bytes(rfc8785.dumps(_plain(obj)))


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
