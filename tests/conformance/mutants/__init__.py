"""Mutant servers that the conformance battery must kill, and the harness that runs the kill matrix.

* :mod:`.catalog`: every mutant, its one defect, and the check ids that name its rule;
* :mod:`.core` + :mod:`.serve`: mutants of the protocol core, installed at runtime in their own process;
* :mod:`.adapters`: the ``--adapter`` plug-in (a lying adapter, or a rewriting upstream transport);
* :mod:`.proxy`: a stdio proxy in front of the real server that rewrites JSON-RPC messages;
* :mod:`.platform`: one platform process shared by every run, with per-run prefixes;
* :mod:`.harness` and :mod:`.matrix`: run everything, decide the kills, render the table in
  docs/conformance.md (``python -m tests.conformance.mutants --matrix --write``).
"""
