"""Shared fixtures for the worked examples' tests."""

from __future__ import annotations

import pytest


@pytest.fixture
def anyio_backend() -> str:
    """Async tests run on asyncio (the MCP server's loop)."""
    return "asyncio"
