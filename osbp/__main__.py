"""`python -m osbp` is the `osbp` command."""

from osbp.cli import main

raise SystemExit(main())
