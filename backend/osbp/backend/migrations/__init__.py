"""The platform's schema migrations (Alembic), shipped with the package and run by `osbp.backend.schema`."""
