"""Alembic's environment: run the migrations on the connection `osbp.backend.schema` hands over.

There is no alembic.ini: `osbp backend migrate` (or start-up) builds the configuration and passes an open
connection in ``config.attributes["connection"]``; offline (SQL script) mode is not offered.
"""

from __future__ import annotations

from alembic import context
from sqlmodel import SQLModel

from osbp.backend import models  # noqa: F401  registers the tables on SQLModel.metadata

connection = context.config.attributes["connection"]
context.configure(
    connection=connection,
    target_metadata=SQLModel.metadata,
    # SQLite alters a table by copying it: later migrations' ALTERs run as batch operations.
    render_as_batch=connection.dialect.name == "sqlite",
    transaction_per_migration=True,
)
with context.begin_transaction():
    context.run_migrations()
