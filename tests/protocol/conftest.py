"""Shared fixtures for the protocol core tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio (the MCP server's loop)."""
    return "asyncio"
