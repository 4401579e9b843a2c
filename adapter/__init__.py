"""The reference OSBP adapter for the synthetic platform (osbp.backend), reached only over HTTP."""
