"""How a platform setting is spelled outside Python: its `osbp backend` flag and its environment variable.

Derived from the `BackendSettings` field name, never written by hand: `rate_limit_quota` is
`--rate-limit-quota` and `OSBP_BACKEND_RATE_LIMIT_QUOTA`. A module of its own, importing nothing, so a
parent that only starts the platform (`backend.process`) names its variables without loading the settings.
"""

from __future__ import annotations

__all__ = ["ENV_PREFIX", "env_var", "flag"]

ENV_PREFIX = "OSBP_BACKEND_"


def flag(field: str) -> str:
    """The `osbp backend` flag for a settings field: `log_level` → `--log-level`."""
    return "--" + field.replace("_", "-")


def env_var(field: str) -> str:
    """The environment variable for a settings field: `log_level` → `OSBP_BACKEND_LOG_LEVEL`."""
    return ENV_PREFIX + field.upper()
