"""RFC 8785 (JCS) canonical JSON and SHA-256 hashing: the one hash function of the project.

Payload hashes (idempotency, approval binding) and audit hashes all go through :func:`canonical_json`, so
two equal JSON values always hash the same regardless of key order or number formatting. Pydantic models
are hashed in their wire form (absent optionals omitted).
"""

from __future__ import annotations

import hashlib
from typing import Any

import rfc8785
from pydantic import BaseModel

__all__ = ["canonical_json", "sha256_hex"]


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
