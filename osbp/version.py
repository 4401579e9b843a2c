"""The package's and the protocol's versions, each written once (the build reads ``__version__``).

``osbp`` is a namespace package whose parts are the top-level folders, each holding ``osbp/<name>/``; their
imports point one way:

    osbp.backend        a synthetic merchant booking platform (a foreign system: imports nothing of ours)
    osbp.protocol       the platform-neutral OSBP core (models, mandate, approval gate, money, time)
    osbp.adapter        the reference adapter: the platform's native dialect -> exact OSBP results
    osbp.server         the MCP server exposing OSBP's eight tools, with the audit trail
    osbp.demo           `make demo`: the whole stack end to end, and the trace gallery
    osbp.conformance    a wire-level battery that grades any OSBP MCP server

Beside them, in the repository's own ``osbp/`` folder and free to import them all: ``osbp.cli`` (the ``osbp``
command), ``osbp.bench`` (the benchmarks) and ``osbp.collector`` (the start-up garbage-collector pause the
command, the MCP server and the demo share).
"""

__all__ = ["OSBP_VERSION", "__version__"]

__version__ = "0.1.0"
#: The protocol version this package implements.
OSBP_VERSION = "0.1.0"
