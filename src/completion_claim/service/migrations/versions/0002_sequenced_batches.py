"""Sequenced batches: the log key's seal over each batch of entries not yet integrated.

Revision ID: 0002
Revises: 0001
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "ledger_batches",
        sa.Column("first_index", sa.BigInteger, primary_key=True, autoincrement=False),
        sa.Column("size", sa.Integer, nullable=False),
        sa.Column("seal", sa.LargeBinary(64), nullable=False),
    )


def downgrade() -> None:
    op.drop_table("ledger_batches")
