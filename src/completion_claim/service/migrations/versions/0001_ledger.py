"""The ledger's first tables: entries, their unmet codes, subtree nodes and signed tree heads.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    # Written out rather than taken from tables.py: a migration is a fixed step, and tables.py
    # describes only the newest schema.
    op.create_table(
        "ledger_entries",
        sa.Column("entry_index", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("leaf_hash", sa.LargeBinary(32), nullable=False),
        sa.Column("leaf", sa.LargeBinary, nullable=False),
        sa.Column("recorded_us", sa.BigInteger, nullable=False),
        sa.Column("recorded_day", sa.Date, nullable=False),
        sa.Column("state", sa.String(16), nullable=False),
        sa.Column("policy_id", sa.Text, nullable=False),
        sa.Column("task_id", sa.Text, nullable=False),
        sa.Column("submitted_by", sa.Text, nullable=False),
        sa.Column("via", sa.String(8), nullable=False),
        sa.Column("said_done", sa.Boolean, nullable=False),
    )
    for name, column in (
        ("ledger_entries_state", "state"),
        ("ledger_entries_policy", "policy_id"),
        ("ledger_entries_agent", "submitted_by"),
        ("ledger_entries_task", "task_id"),
    ):
        op.create_index(name, "ledger_entries", [column, "entry_index"])
    op.create_index("ledger_entries_recorded", "ledger_entries", ["recorded_us"])
    op.create_table(
        "ledger_unmet",
        sa.Column(
            "entry_index",
            sa.BigInteger,
            sa.ForeignKey("ledger_entries.entry_index"),
            primary_key=True,
            autoincrement=False,
        ),
        sa.Column("code", sa.Text, primary_key=True),
    )
    op.create_index("ledger_unmet_code", "ledger_unmet", ["code"])
    op.create_table(
        "ledger_nodes",
        sa.Column("level", sa.Integer, primary_key=True, autoincrement=False),
        sa.Column("position", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("hash", sa.LargeBinary(32), nullable=False),
    )
    op.create_table(
        "ledger_heads",
        sa.Column("size", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("root_hash", sa.LargeBinary(32), nullable=False),
        sa.Column("envelope", sa.Text, nullable=False),
    )


def downgrade() -> None:
    for table in ("ledger_heads", "ledger_nodes", "ledger_unmet", "ledger_entries"):
        op.drop_table(table)
