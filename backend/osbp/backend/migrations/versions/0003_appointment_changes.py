"""Customer changes: the appointment's version and charged cancellation fee, the service's reschedule fee.

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-03

Every change of an appointment's status or time bumps `version` (its `ETag`, checked by `If-Match` on the
customer's cancel and reschedule); an existing appointment starts at 1.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision: str | None = "0002"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Add the three columns (nullable, or with a default for the rows already there)."""
    op.add_column("appointment", sa.Column("version", sa.Integer(), nullable=False, server_default="1"))
    op.add_column("appointment", sa.Column("cancellation_fee_charged", sa.String(), nullable=True))
    op.add_column("service", sa.Column("reschedule_fee", sa.String(), nullable=True))


def downgrade() -> None:
    """Drop them again (a plain DROP COLUMN: a batch copy of `service` would lose its revision triggers)."""
    op.drop_column("service", "reschedule_fee")
    op.drop_column("appointment", "cancellation_fee_charged")
    op.drop_column("appointment", "version")
