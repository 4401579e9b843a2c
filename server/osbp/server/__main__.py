"""`python -m osbp.server` is `osbp mcp`."""

from osbp.server.cli import main

raise SystemExit(main())
