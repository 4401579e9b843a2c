"""osbp: the Python implementation of the Open Service Booking Protocol (OSBP v0.1.0).

The subpackages are the architecture, and their imports point one way:

    osbp.backend        a synthetic merchant booking platform (a foreign system: imports nothing of ours)
    osbp.protocol       the platform-neutral OSBP core (models, mandate, approval gate, money, time)
    osbp.adapter        the reference adapter: the platform's native dialect -> exact OSBP results
    osbp.server         the MCP stdio server exposing OSBP's eight tools, with the audit trail
    osbp.demo           `make demo`: the whole stack end to end, and the trace gallery
    osbp.conformance    a wire-level battery that grades any OSBP MCP server

Beside them, outside the components and free to import them all: ``osbp.cli`` (the ``osbp`` command) and
``osbp.bench`` (the benchmarks, ``osbp bench``); ``osbp.collector`` is the start-up garbage-collector
pause the command, the MCP server and the demo share.
"""

__all__ = ["OSBP_VERSION", "__version__"]

__version__ = "0.1.0"
#: The protocol version this package implements.
OSBP_VERSION = "0.1.0"
