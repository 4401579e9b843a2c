"""A wire-level conformance battery that grades any OSBP stdio MCP server.

The battery starts the server as a subprocess, talks to it only through the MCP SDK's stdio client, and
grades only what comes back, against the OSBP v0.1.0 specification:

    from osbp.conformance import ServerTarget, load_fixtures, run_battery
    report = await run_battery(ServerTarget(["my-osbp-server"]), load_fixtures("fixtures.json"))

It imports nothing of this project's protocol, adapter or server, so it grades any implementation.
"""

from osbp.conformance.battery import CheckReport, Report, Summary, run_battery
from osbp.conformance.checks import CATALOG, Check
from osbp.conformance.fixtures import Fixtures, load_fixtures, reference_fixtures_path
from osbp.conformance.grading import Verdict
from osbp.conformance.wire import ServerTarget, server_env

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
