"""Fixtures the command tests share with the service tests (ledger databases on both
backends: ``ledger_db`` runs a test on SQLite and on the real PostgreSQL)."""

from tests.service.conftest import ledger_db, postgres_schema  # noqa: F401 - fixtures
