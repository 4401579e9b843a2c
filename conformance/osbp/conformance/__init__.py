"""A wire-level conformance battery that grades any OSBP MCP server (stdio or Streamable HTTP).

The battery starts the server as a subprocess, talks to it only through the MCP SDK's stdio client, and
grades only what comes back, against the OSBP v0.1.0 specification:

    from osbp.conformance import ServerTarget, load_fixtures, run_battery
    report = await run_battery(ServerTarget(["my-osbp-server"]), load_fixtures("fixtures.json"))

It imports nothing of this project's protocol, adapter or server, so it grades any implementation.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from osbp.conformance.battery import CheckReport, Report, Summary, run_battery
    from osbp.conformance.checks import CATALOG, Check
    from osbp.conformance.fixtures import Fixtures, load_fixtures, reference_fixtures_path
    from osbp.conformance.grading import Verdict
    from osbp.conformance.wire import ServerTarget, server_env

#: Each public name and the module that defines it, imported on first use: `osbp conformance --help`
#: (which imports this package) pays for none of the battery.
_HOMES = {
    "CheckReport": "battery",
    "Report": "battery",
    "Summary": "battery",
    "run_battery": "battery",
    "CATALOG": "checks",
    "Check": "checks",
    "Fixtures": "fixtures",
    "load_fixtures": "fixtures",
    "reference_fixtures_path": "fixtures",
    "Verdict": "grading",
    "ServerTarget": "wire",
    "server_env": "wire",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f"{__name__}.{home}"), name)
    globals()[name] = value
    return value


__all__ = [
    "CATALOG",
    "Check",
    "CheckReport",
    "Fixtures",
    "Report",
    "ServerTarget",
    "Summary",
    "Verdict",
    "load_fixtures",
    "reference_fixtures_path",
    "run_battery",
    "server_env",
]
