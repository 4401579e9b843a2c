"""The stdio server's import of the MCP SDK: only the parts it runs, and the rest still importable."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest


def _run(code: str) -> dict[str, object]:
    command = [sys.executable, "-c", code]
    result = subprocess.run(command, capture_output=True, text=True, timeout=60, check=True)
    loaded: dict[str, object] = json.loads(result.stdout)
    return loaded


_PROBE = """
import gc, json, sys
import osbp.server.cli
print(json.dumps({
    "client": any(name.startswith("mcp.client") for name in sys.modules),
    "mcpserver": "mcp.server.mcpserver" in sys.modules,
    "uvicorn": "uvicorn" in sys.modules,
    "gc_enabled": gc.isenabled(),
}))
"""


@pytest.mark.integration
def test_the_stdio_server_imports_neither_the_sdk_client_nor_its_high_level_server():
    """Platform choice: spawn to first result is mostly the SDK's import; the server process loads the
    low-level server and the stdio transport, not the client or MCPServer, and collects garbage again."""
    assert _run(_PROBE) == {"client": False, "mcpserver": False, "uvicorn": False, "gc_enabled": True}


_LATER = """
import json
import osbp.server
import mcp
from mcp import Client
from mcp.server import MCPServer, Server
from mcp.server.lowlevel import Server as LowLevel
print(json.dumps({
    "client": Client.__module__,
    "mcpserver": MCPServer.__module__,
    "same_server": Server is LowLevel is osbp.server._sdk.Server,
    "attribute": mcp.server.lowlevel.Server is LowLevel,
}))
"""


@pytest.mark.integration
def test_the_whole_sdk_is_still_there_for_code_that_asks_for_it_after_the_server():
    """Platform choice: deferring the SDK packages' own code changes nothing for a later importer in the
    same process (an in-memory test client): the real package answers, with the same modules."""
    assert _run(_LATER) == {
        "client": "mcp.client.client",
        "mcpserver": "mcp.server.mcpserver.server",
        "same_server": True,
        "attribute": True,
    }
