"""The OSBP MCP stdio server: eight tools, the result envelope and the tamper-evident audit trail.

Public entry points: :func:`osbp.server.app.create_server`, :class:`osbp.server.audit.AuditLog`,
:class:`osbp.server.redaction.Redactor`, ``osbp mcp`` (:mod:`osbp.server.cli`) and ``osbp audit verify``
(:mod:`osbp.server.audit_cli`).
"""

# Loads the MCP SDK before any submodule does, keeping uvicorn out of this process (see _sdk).
from osbp.server import _sdk  # noqa: F401
