"""Webhooks: registered endpoints, the event outbox, its deliveries and their attempt log.

Revision ID: 0002
Revises: 0001
Create Date: 2026-12-01

An event and its deliveries are inserted in the transaction that changes the appointment
(`osbp.backend.webhook_events`), so these tables are the outbox the delivery worker drains.
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision: str | None = "0001"
branch_labels: str | None = None
depends_on: str | None = None


def upgrade() -> None:
    """Create the four webhook tables and their indexes."""
    op.create_table(
        "webhookendpoint",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("organization_id", sa.String(), nullable=False),
        sa.Column("url", sa.String(), nullable=False),
        sa.Column("description", sa.String(), nullable=False),
        sa.Column("event_types", sa.JSON(), nullable=False),
        sa.Column("secret", sa.String(), nullable=False),
        sa.Column("created_utc", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["organization_id"], ["organization.id"]),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_webhookendpoint_organization_id"), "webhookendpoint", ["organization_id"])
    op.create_table(
        "webhookevent",
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("organization_id", sa.String(), nullable=False),
        sa.Column("appointment_id", sa.String(), nullable=False),
        sa.Column("type", sa.String(), nullable=False),
        sa.Column("payload", sa.String(), nullable=False),
        sa.Column("created_utc", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("seq"),
    )
    op.create_index(op.f("ix_webhookevent_id"), "webhookevent", ["id"], unique=True)
    op.create_index(op.f("ix_webhookevent_organization_id"), "webhookevent", ["organization_id"])
    op.create_table(
        "webhookdelivery",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("organization_id", sa.String(), nullable=False),
        sa.Column("endpoint_id", sa.String(), nullable=False),
        sa.Column("event_seq", sa.Integer(), nullable=False),
        sa.Column("appointment_id", sa.String(), nullable=False),
        sa.Column("state", sa.String(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("next_attempt_utc", sa.Float(), nullable=True),
        sa.Column("last_status_code", sa.Integer(), nullable=True),
        sa.Column("last_error", sa.String(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_webhook_delivery_due", "webhookdelivery", ["state", "next_attempt_utc"])
    op.create_index(op.f("ix_webhookdelivery_endpoint_id"), "webhookdelivery", ["endpoint_id"])
    op.create_index(op.f("ix_webhookdelivery_event_seq"), "webhookdelivery", ["event_seq"])
    op.create_index(op.f("ix_webhookdelivery_organization_id"), "webhookdelivery", ["organization_id"])
    op.create_table(
        "webhookattempt",
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("delivery_id", sa.String(), nullable=False),
        sa.Column("attempt", sa.Integer(), nullable=False),
        sa.Column("attempted_utc", sa.Float(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("error", sa.String(), nullable=True),
        sa.PrimaryKeyConstraint("seq"),
    )
    op.create_index(op.f("ix_webhookattempt_delivery_id"), "webhookattempt", ["delivery_id"])


def downgrade() -> None:
    """Drop the webhook tables (their indexes go with them)."""
    for table in ("webhookattempt", "webhookdelivery", "webhookevent", "webhookendpoint"):
        op.drop_table(table)
