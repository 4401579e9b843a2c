"""The MCP SDK, imported for the stdio server only (the package ``__init__`` imports this module first).

Spawn to first tool result is mostly the SDK's import (its pydantic models are built at import), so the
server imports only the parts it runs, each for a reason measured with ``python -X importtime``:

* **uvicorn stays out.** ``mcp.server`` imports ``sse_starlette``, which imports uvicorn when it is
  installed, only to patch uvicorn's exit handler for server-sent events. uvicorn is made unimportable
  for that moment only, and is importable again afterwards for anyone who needs it.
* **The packages' ``__init__`` run only when asked for.** ``mcp/__init__`` imports the whole client
  (``mcp.client``, for the re-exported ``Client``) and ``mcp/server/__init__`` the high-level
  ``MCPServer``: about a quarter of the SDK's import, and the stdio server uses neither. The two package
  modules are created from their real specs, so their submodules (``mcp.server.lowlevel``,
  ``mcp.server.stdio``, ``mcp.types``) import as usual, but their own ``__init__`` code runs on the first
  access to a name it defines (PEP 562 ``__getattr__``): ``from mcp import Client`` in the same process
  (an in-memory test client) still gets the real package, just later.
* **No garbage collection while the models are built.** Import creates hundreds of thousands of objects
  and next to no garbage; the collector's passes over them are pure cost, so it is paused for the
  import, and the objects are then frozen (``gc.freeze``: never traversed again, as they live as long
  as the process).

If the SDK or uvicorn is already loaded nothing of this happens.
"""

from __future__ import annotations

import importlib.util
import sys
from typing import Any

from osbp.collector import collector_paused

_modules: dict[str, Any] = sys.modules  # typed loosely: a None entry is how an import is refused
#: The SDK packages whose own ``__init__`` is deferred to the first use of a name it defines.
_DEFERRED = ("mcp", "mcp.server")


def defer_init(name: str) -> None:
    """Register package ``name`` from its real spec without running its ``__init__`` yet (nothing happens
    when it is imported already)."""
    if name in _modules:
        return
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None or spec.submodule_search_locations is None:
        return  # not a package we know how to defer: the plain import below runs it
    module = importlib.util.module_from_spec(spec)
    loader = spec.loader

    def complete(attribute: str) -> Any:
        # Runs the package's own code in its module once, then answers as the real package would.
        del module.__getattr__
        loader.exec_module(module)
        try:
            return module.__dict__[attribute]
        except KeyError:
            raise AttributeError(f"module {name!r} has no attribute {attribute!r}") from None

    module.__getattr__ = complete  # type: ignore[method-assign]  # PEP 562 module __getattr__
    _modules[name] = module
    parent, _, child = name.rpartition(".")
    if parent:
        setattr(_modules[parent], child, module)


_guard = "uvicorn" not in _modules and "mcp" not in _modules
if _guard:
    _modules["uvicorn"] = None
    for _name in _DEFERRED:
        defer_init(_name)
try:
    # Frozen, the SDK's long-lived objects are skipped by every later collection, instead of being
    # traversed by the first ones after the pause (which would give back most of what it saved).
    with collector_paused():
        from mcp.server.context import ServerRequestContext
        from mcp.server.lowlevel import Server
        from mcp.server.stdio import stdio_server
finally:
    if _guard and "uvicorn" in _modules and _modules["uvicorn"] is None:
        del _modules["uvicorn"]

__all__ = ["Server", "ServerRequestContext", "defer_init", "stdio_server"]
