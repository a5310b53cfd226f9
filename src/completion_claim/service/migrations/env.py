"""Alembic's entry point for the ledger's migrations. ``Ledger.open`` runs them on the connection
it already holds (in ``config.attributes["connection"]``), inside its own transaction and lock,
so two processes opening a new database at once do not both create it."""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from completion_claim.service.tables import VERSION_TABLE, metadata

connection: Connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata, version_table=VERSION_TABLE)
with context.begin_transaction():
    context.run_migrations()
