"""The MCP SDK, imported without uvicorn (the package ``__init__`` imports this module first).

Importing ``mcp`` pulls in ``mcp.server``, which imports ``sse_starlette``, which imports uvicorn when it is
installed, only to patch uvicorn's exit handler for server-sent events. The stdio server never runs
uvicorn and loading it costs start-up time, so the SDK is imported here with uvicorn made unimportable
for that moment only: if uvicorn or the SDK is already loaded nothing changes, and afterwards uvicorn is
importable again for anyone who needs it.
"""

from __future__ import annotations

import sys
from typing import Any

_modules: dict[str, Any] = sys.modules  # typed loosely: a None entry is how an import is refused
_guard = "uvicorn" not in _modules and "mcp" not in _modules
if _guard:
    _modules["uvicorn"] = None
try:
    from mcp.server.context import ServerRequestContext
    from mcp.server.lowlevel import Server
    from mcp.server.stdio import stdio_server
finally:
    if _guard and "uvicorn" in _modules and _modules["uvicorn"] is None:
        del _modules["uvicorn"]

__all__ = ["Server", "ServerRequestContext", "stdio_server"]
