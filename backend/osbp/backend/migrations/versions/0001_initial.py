"""The first schema: the catalog, customers, appointments, verification, idempotency, outbox.

Revision ID: 0001
Revises:
Create Date: 2026-12-01

Also the catalog revision counter (`osbp.backend.catalog_cache`) with the triggers that bump it, written
per engine, and on PostgreSQL the btree_gist exclusion constraint no two overlapping active exclusive
appointments of one provider can pass (`osbp.backend.models`).
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision: str | None = None
branch_labels: str | None = None
depends_on: str | None = None

_CATALOG_TABLES = ("organization", "location", "provider", "service")
_HOLDS_TIME = "exclusive AND status IN ('pending', 'confirmed')"


def upgrade() -> None:
    """Create every table, index, constraint and trigger of the first schema."""
    postgres = op.get_bind().dialect.name == "postgresql"
    if postgres:
        op.execute("CREATE EXTENSION IF NOT EXISTS btree_gist")
    op.create_table(
        "idempotencyrecord",
        sa.Column("organization_id", sa.String(), nullable=False),
        sa.Column("key", sa.String(), nullable=False),
        sa.Column("fingerprint", sa.String(), nullable=False),
        sa.Column("state", sa.String(), nullable=False),
        sa.Column("status_code", sa.Integer(), nullable=True),
        sa.Column("response_body", sa.String(), nullable=True),
        sa.Column("created_utc", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("organization_id", "key"),
    )
    op.create_table(
        "organization",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("slug", sa.String(), nullable=False),
        sa.Column("domain", sa.String(), nullable=False),
        sa.Column("phone", sa.String(), nullable=False),
        sa.Column("support_email", sa.String(), nullable=False),
        sa.Column("time_zone", sa.String(), nullable=False),
        sa.Column("currency", sa.String(), nullable=False),
        sa.Column("country", sa.String(), nullable=False),
        sa.Column("slot_interval_minutes", sa.Integer(), nullable=False),
        sa.Column("verification_sandbox", sa.Boolean(), nullable=False),
        sa.Column("parallel_bookings", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "outboxmessage",
        sa.Column("seq", sa.Integer(), nullable=False),
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("organization_id", sa.String(), nullable=False),
        sa.Column("channel", sa.String(), nullable=False),
        sa.Column("to", sa.String(), nullable=False),
        sa.Column("purpose", sa.String(), nullable=False),
        sa.Column("body", sa.String(), nullable=False),
        sa.Column("code", sa.String(), nullable=False),
        sa.Column("sent_utc", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("seq"),
    )
    op.create_index(op.f("ix_outboxmessage_id"), "outboxmessage", ["id"], unique=False)
    op.create_index(
        op.f("ix_outboxmessage_organization_id"), "outboxmessage", ["organization_id"], unique=False
    )
    op.create_table(
        "appointment",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("organization_id", sa.String(), nullable=False),
        sa.Column("service_id", sa.String(), nullable=False),
        sa.Column("location_id", sa.String(), nullable=False),
        sa.Column("provider_id", sa.String(), nullable=False),
        sa.Column("customer_id", sa.String(), nullable=False),
        sa.Column("customer_display_name", sa.String(), nullable=False),
        sa.Column("customer_given_name", sa.String(), nullable=True),
        sa.Column("customer_family_name", sa.String(), nullable=True),
        sa.Column("customer_phone", sa.String(), nullable=True),
        sa.Column("customer_email", sa.String(), nullable=True),
        sa.Column("local_date", sa.String(), nullable=False),
        sa.Column("local_time", sa.String(), nullable=False),
        sa.Column("end_date", sa.String(), nullable=False),
        sa.Column("end_time", sa.String(), nullable=False),
        sa.Column("time_zone", sa.String(), nullable=False),
        sa.Column("duration_minutes", sa.Integer(), nullable=False),
        sa.Column("price_kind", sa.String(), nullable=False),
        sa.Column("price_amount", sa.String(), nullable=True),
        sa.Column("currency", sa.String(), nullable=False),
        sa.Column("starts_utc", sa.BigInteger(), nullable=False),
        sa.Column("ends_utc", sa.BigInteger(), nullable=False),
        sa.Column("status", sa.String(), nullable=False),
        sa.Column("exclusive", sa.Boolean(), nullable=False),
        sa.Column("verified_by", sa.String(), nullable=True),
        sa.Column("client_metadata", sa.JSON(), nullable=False),
        sa.Column("created_utc", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organization.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_appointment_organization_id"), "appointment", ["organization_id"], unique=False)
    op.create_index(
        "ix_appointment_provider_start", "appointment", ["provider_id", "starts_utc"], unique=False
    )
    op.create_index(
        "ux_appointment_provider_active_start",
        "appointment",
        ["provider_id", "starts_utc"],
        unique=True,
        sqlite_where=sa.text("exclusive = 1 AND status IN ('pending', 'confirmed')"),
        postgresql_where=sa.text("exclusive AND status IN ('pending', 'confirmed')"),
    )
    op.create_table(
        "customer",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("organization_id", sa.String(), nullable=False),
        sa.Column("display_name", sa.String(), nullable=False),
        sa.Column("given_name", sa.String(), nullable=True),
        sa.Column("family_name", sa.String(), nullable=True),
        sa.Column("phone", sa.String(), nullable=True),
        sa.Column("email", sa.String(), nullable=True),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organization.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_customer_email"), "customer", ["email"], unique=False)
    op.create_index(op.f("ix_customer_organization_id"), "customer", ["organization_id"], unique=False)
    op.create_index(op.f("ix_customer_phone"), "customer", ["phone"], unique=False)
    op.create_table(
        "location",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("organization_id", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("kind", sa.String(), nullable=False),
        sa.Column("time_zone", sa.String(), nullable=False),
        sa.Column("address", sa.JSON(), nullable=True),
        sa.Column("latitude", sa.Float(), nullable=True),
        sa.Column("longitude", sa.Float(), nullable=True),
        sa.Column("hours", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organization.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_location_organization_id"), "location", ["organization_id"], unique=False)
    op.create_table(
        "provider",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("organization_id", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("title", sa.String(), nullable=True),
        sa.Column("image_url", sa.String(), nullable=True),
        sa.Column("location_ids", sa.JSON(), nullable=False),
        sa.Column("service_ids", sa.JSON(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organization.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_provider_organization_id"), "provider", ["organization_id"], unique=False)
    op.create_table(
        "service",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("organization_id", sa.String(), nullable=False),
        sa.Column("name", sa.String(), nullable=False),
        sa.Column("description", sa.String(), nullable=False),
        sa.Column("duration_minutes", sa.Integer(), nullable=False),
        sa.Column("price_kind", sa.String(), nullable=False),
        sa.Column("price_amount", sa.String(), nullable=True),
        sa.Column("currency", sa.String(), nullable=False),
        sa.Column("requires_consultation", sa.Boolean(), nullable=False),
        sa.Column("location_ids", sa.JSON(), nullable=False),
        sa.Column("options", sa.JSON(), nullable=False),
        sa.Column("cancellation_allowed", sa.Boolean(), nullable=False),
        sa.Column("cancellation_window_minutes", sa.Integer(), nullable=True),
        sa.Column("cancellation_fee", sa.String(), nullable=True),
        sa.Column("cancellation_note", sa.String(), nullable=False),
        sa.Column("late_grace_minutes", sa.Integer(), nullable=True),
        sa.Column("no_show_fee", sa.String(), nullable=True),
        sa.Column("payment_requirement", sa.String(), nullable=False),
        sa.Column("deposit_amount", sa.String(), nullable=True),
        sa.Column("verification", sa.String(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organization.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(op.f("ix_service_organization_id"), "service", ["organization_id"], unique=False)
    op.create_table(
        "verificationchallenge",
        sa.Column("id", sa.String(), nullable=False),
        sa.Column("organization_id", sa.String(), nullable=False),
        sa.Column("purpose", sa.String(), nullable=False),
        sa.Column("channel", sa.String(), nullable=False),
        sa.Column("contact", sa.String(), nullable=False),
        sa.Column("code_hash", sa.String(), nullable=False),
        sa.Column("created_utc", sa.BigInteger(), nullable=False),
        sa.Column("expires_utc", sa.BigInteger(), nullable=False),
        sa.Column("attempts", sa.Integer(), nullable=False),
        sa.Column("state", sa.String(), nullable=False),
        sa.ForeignKeyConstraint(
            ["organization_id"],
            ["organization.id"],
        ),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_challenge_lookup",
        "verificationchallenge",
        ["organization_id", "purpose", "contact"],
        unique=False,
    )
    if postgres:
        op.execute(
            "ALTER TABLE appointment ADD CONSTRAINT ex_appointment_provider_active_overlap EXCLUDE USING "
            f"gist (provider_id WITH =, int8range(starts_utc, ends_utc) WITH &&) WHERE ({_HOLDS_TIME})"
        )
    _catalog_revision(postgres)


def _catalog_revision(postgres: bool) -> None:
    """The revision counter, the per-database epoch, and a trigger per catalog table and change."""
    op.create_table(
        "catalog_revision",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("revision", sa.BigInteger(), nullable=False),
        sa.CheckConstraint("id = 1", name="ck_catalog_revision_one_row"),
    )
    op.create_table(
        "catalog_epoch",
        sa.Column("id", sa.Integer(), primary_key=True, autoincrement=False),
        sa.Column("epoch", sa.String(), nullable=False),
        sa.CheckConstraint("id = 1", name="ck_catalog_epoch_one_row"),
    )
    op.execute("INSERT INTO catalog_revision (id, revision) VALUES (1, 0)")
    bump = "UPDATE catalog_revision SET revision = revision + 1 WHERE id = 1"
    if postgres:
        op.execute("INSERT INTO catalog_epoch (id, epoch) VALUES (1, substr(md5(random()::text), 1, 12))")
        op.execute(
            "CREATE FUNCTION bump_catalog_revision() RETURNS trigger LANGUAGE plpgsql AS "
            f"$$ BEGIN {bump}; RETURN NULL; END $$"
        )
    else:
        op.execute("INSERT INTO catalog_epoch (id, epoch) VALUES (1, lower(hex(randomblob(6))))")
    for table in _CATALOG_TABLES:
        for event in ("INSERT", "UPDATE", "DELETE"):
            name = f"{table}_{event.lower()}_bumps_catalog_revision"
            if postgres:
                op.execute(
                    f"CREATE TRIGGER {name} AFTER {event} ON {table} "
                    "FOR EACH ROW EXECUTE FUNCTION bump_catalog_revision()"
                )
            else:
                op.execute(f"CREATE TRIGGER {name} AFTER {event} ON {table} BEGIN {bump}; END")


def downgrade() -> None:
    """Drop everything the first schema created."""
    for table in (
        "catalog_epoch",
        "catalog_revision",
        "verificationchallenge",
        "service",
        "provider",
        "location",
        "customer",
        "appointment",
        "outboxmessage",
        "organization",
        "idempotencyrecord",
    ):
        op.drop_table(table)
    if op.get_bind().dialect.name == "postgresql":
        op.execute("DROP FUNCTION IF EXISTS bump_catalog_revision()")
