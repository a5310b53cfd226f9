"""The ledger's tables (SQLAlchemy Core), the same on SQLite and PostgreSQL.

``entries.leaf`` holds the canonical bytes that were hashed into the log; every other column of
``entries`` and all of ``entry_unmet`` is derived from them, only so that filters and counts run
in SQL (the audit checks that they still agree with the bytes). ``nodes`` keeps the hash of
every complete subtree (2**level leaves from position * 2**level), so a proof reads O(log n)
rows instead of every leaf. Times are integers (microseconds since the epoch, UTC), which sort
and compare the same in both databases; ``recorded_day`` is the UTC day, for the daily counts.
Nothing has a default: every value is passed in. A session's start (``via`` and ``state``
``start``) holds in ``task_id`` the digest of its repository and session it is looked up by
(``records.start_key``), and an empty ``policy_id``. ``batches`` seals the entries sequenced
but not yet integrated.
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Date,
    ForeignKey,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
)

metadata = MetaData()
# Every name starts with ``ledger_``, Alembic's own table included, so the ledger can share a
# database (or schema) with an application that has tables, and Alembic migrations, of its own.
VERSION_TABLE = "ledger_alembic_version"

entries = Table(
    "ledger_entries",
    metadata,
    Column("entry_index", BigInteger, primary_key=True, autoincrement=False),
    Column("leaf_hash", LargeBinary(32), nullable=False),
    Column("leaf", LargeBinary, nullable=False),
    Column("recorded_us", BigInteger, nullable=False),
    Column("recorded_day", Date, nullable=False),
    Column("state", String(16), nullable=False),
    Column("policy_id", Text, nullable=False),
    Column("task_id", Text, nullable=False),
    Column("submitted_by", Text, nullable=False),
    Column("via", String(8), nullable=False),
    Column("said_done", Boolean, nullable=False),
    Index("ledger_entries_state", "state", "entry_index"),
    Index("ledger_entries_policy", "policy_id", "entry_index"),
    Index("ledger_entries_agent", "submitted_by", "entry_index"),
    Index("ledger_entries_task", "task_id", "entry_index"),
    Index("ledger_entries_recorded", "recorded_us"),
)

entry_unmet = Table(
    "ledger_unmet",
    metadata,
    Column(
        "entry_index",
        BigInteger,
        ForeignKey("ledger_entries.entry_index"),
        primary_key=True,
        autoincrement=False,
    ),
    Column("code", Text, primary_key=True),
    Index("ledger_unmet_code", "code"),
)

nodes = Table(
    "ledger_nodes",
    metadata,
    Column("level", Integer, primary_key=True, autoincrement=False),
    Column("position", BigInteger, primary_key=True, autoincrement=False),
    Column("hash", LargeBinary(32), nullable=False),
)

tree_heads = Table(
    "ledger_heads",
    metadata,
    Column("size", BigInteger, primary_key=True, autoincrement=False),
    Column("root_hash", LargeBinary(32), nullable=False),
    Column("envelope", Text, nullable=False),  # the signed head, as JSON (TreeHead.to_json())
)

batches = Table(
    "ledger_batches",
    metadata,
    Column("first_index", BigInteger, primary_key=True, autoincrement=False),
    Column("size", Integer, nullable=False),
    # The log key's Ed25519 signature over the batch's place and leaf hashes (ledger.batch_seal):
    # what lets an integrator tell entries a keyholder sequenced from rows written behind its
    # back. A batch's row is deleted when its entries are integrated; a signed head covers them.
    Column("seal", LargeBinary(64), nullable=False),
)
