"""A wire-level conformance battery that grades any OSBP stdio MCP server."""
