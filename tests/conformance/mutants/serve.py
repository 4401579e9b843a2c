"""``python -m tests.conformance.mutants.serve NAME [osbp mcp flags]``: this project's MCP server with one
core mutant installed in its own process (see :mod:`tests.conformance.mutants.core`).

The mutant is installed before the server module runs anything, then the real ``osbp mcp`` entry point
serves as usual: same settings, same stdio, same stderr logs. Nothing on disk changes.
"""

from __future__ import annotations

import sys

from tests.conformance.mutants.core import CORE_MUTANTS, install


def main(argv: list[str]) -> int:
    """Install the mutant named by ``argv[0]`` and run the server with the remaining arguments."""
    if not argv or argv[0] not in CORE_MUTANTS:
        sys.stderr.write(f"usage: serve NAME [flags]; NAME is one of {', '.join(sorted(CORE_MUTANTS))}\n")
        return 2
    install(argv[0])
    from osbp.server.cli import main as serve  # imported after the patch, like any other caller

    return serve(argv[1:])


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
