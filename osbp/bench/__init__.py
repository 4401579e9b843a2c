"""The benchmarks, outside the component packages: one module per measured component.

``backend`` (the platform over HTTP), ``state`` (the OSBP state store across processes, SQLite and
PostgreSQL), ``adapter`` (the reference adapter against the platform), ``mcp``
(the MCP server over stdio), ``loop`` (the canonical booking loop over stdio and in process, optionally
against another checkout) and ``demo`` (``osbp demo`` and the gallery replay, as a user runs them) each
import the components they measure from outside, print a table and write ``bench-results/<name>.json``.
``osbp bench`` (:mod:`osbp.bench.cli`, ``make bench``) runs them; figures are reported, never asserted.
"""
