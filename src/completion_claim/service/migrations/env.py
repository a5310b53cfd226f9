"""Alembic's entry point for the ledger's migrations. ``Ledger.open`` runs them on the connection
it already holds (in ``config.attributes["connection"]``), inside its own transaction and lock,
so two processes opening a new database at once do not both create it."""

from __future__ import annotations

from alembic import context
from sqlalchemy.engine import Connection

from completion_claim.service.tables import metadata

connection: Connection = context.config.attributes["connection"]
context.configure(connection=connection, target_metadata=metadata)
with context.begin_transaction():
    context.run_migrations()
