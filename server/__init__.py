"""The OSBP MCP stdio server: eight tools, the result envelope and the tamper-evident audit trail."""
