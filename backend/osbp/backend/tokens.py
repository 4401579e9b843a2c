"""The platform's source of randomness: ids, request ids and verification codes.

Injected so tests can make ids predictable; the default draws from `secrets`.
"""

from __future__ import annotations

import secrets
import uuid
from typing import Protocol

__all__ = ["SecretTokens", "TokenSource"]


class TokenSource(Protocol):
    """Where ids and codes come from."""

    def hex_id(self, prefix: str) -> str:
        """A fresh opaque id such as `apt_7c1e2b9d04f3a6e1`."""
        ...

    def request_id(self) -> str:
        """A fresh UUID string for the request id header."""
        ...

    def code6(self) -> str:
        """A fresh 6-digit verification code."""
        ...


class SecretTokens:
    """Cryptographically random tokens."""

    def hex_id(self, prefix: str) -> str:
        """A fresh opaque id: `prefix_` plus 16 hex digits."""
        return f"{prefix}_{secrets.token_hex(8)}"

    def request_id(self) -> str:
        """A fresh UUID4."""
        return str(uuid.uuid4())

    def code6(self) -> str:
        """A uniformly random code from 000000 to 999999."""
        return f"{secrets.randbelow(1_000_000):06d}"
