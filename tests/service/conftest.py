"""Shared helpers for the service tests: ledger databases on both backends and decided entries.

``ledger_url`` runs a test twice: on a SQLite file in the test's temporary folder and on the real
PostgreSQL at 127.0.0.1:5432, in a schema of its own (``ledger_<random>``) dropped afterwards.
PostgreSQL that cannot be reached skips on a developer's machine and fails under ``CI=true``.

``fresh_entry`` builds a ``NewEntry`` from a real ``verify()`` of a small claim, so entries carry
the verdicts the service would reach.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

import pytest

from completion_claim import parse_claim, verify
from completion_claim.gate.run import policy_json
from completion_claim.model import BUILTIN_POLICY
from completion_claim.service.ledger import Ledger
from completion_claim.service.records import NewEntry, Via
from completion_claim.trust.keys import SigningKey
from tests.builders import claim_doc, evidence
from tests.needs import service_unavailable, unavailable, unique

if TYPE_CHECKING:  # the browser extra is imported when a test asks for the browser
    from playwright.sync_api import Browser, Dialog
    from playwright.sync_api import Page as BrowserPage

POSTGRES_URL = "postgresql://postgres@127.0.0.1:5432/test"  # a superuser, trust auth
CONNECT_TIMEOUT = 3
LOG_KEY = SigningKey.from_seed("ledger tests: the log")
OTHER_KEY = SigningKey.from_seed("ledger tests: someone else")
T0 = datetime(2026, 8, 27, 18, 0, 0, tzinfo=UTC)

Backend = Literal["sqlite", "postgresql"]


# --- ledger databases -----------------------------------------------------------------------


@dataclass(frozen=True)
class LedgerDb:
    """A ledger database a test owns, and a way around the ledger to its rows (to tamper)."""

    url: str
    backend: Backend
    schema: str = ""  # PostgreSQL only
    path: Path | None = None  # SQLite only

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        """Run one statement directly (``?`` placeholders) and commit; its rows, if any."""
        if self.path is not None:
            with sqlite3.connect(self.path) as conn:
                rows = conn.execute(sql, params).fetchall()
            conn.close()
            return rows
        import psycopg

        with psycopg.connect(POSTGRES_URL, autocommit=True) as pg:
            pg.execute(f"SET search_path TO {self.schema}".encode())
            cursor = pg.execute(sql.replace("?", "%s").encode(), params)
            return cursor.fetchall() if cursor.description else []


def postgres_schema_url(schema: str) -> str:
    return f"{POSTGRES_URL}?options=-csearch_path%3D{schema}"


@pytest.fixture
def postgres_schema() -> Iterator[str]:
    """A fresh schema of the test's own in the real PostgreSQL, dropped afterwards."""
    import psycopg

    schema = unique("ledger")
    try:
        admin = psycopg.connect(POSTGRES_URL, autocommit=True, connect_timeout=CONNECT_TIMEOUT)
    except psycopg.Error as error:
        service_unavailable("PostgreSQL", error)
    with admin:
        admin.execute(f"CREATE SCHEMA {schema}".encode())
        try:
            yield schema
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE".encode())


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_db(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[LedgerDb]:
    if request.param == "sqlite":
        path = tmp_path / "ledger.sqlite"
        yield LedgerDb(f"sqlite:///{path}", "sqlite", path=path)
        return
    schema = request.getfixturevalue("postgres_schema")
    yield LedgerDb(postgres_schema_url(schema), "postgresql", schema=schema)


@pytest.fixture
def ledger_url(ledger_db: LedgerDb) -> str:
    """A new, empty ledger database URL: SQLite, then PostgreSQL."""
    return ledger_db.url


@pytest.fixture
def ledger(ledger_url: str) -> Iterator[Ledger]:
    """The ledger at ``ledger_url``, opened with ``LOG_KEY``, its clock fixed at ``T0``."""
    opened = Ledger.open(ledger_url, LOG_KEY, clock=lambda: T0)
    try:
        yield opened
    finally:
        opened.close()


# --- entries --------------------------------------------------------------------------------

DECIDED_AT = T0 + timedelta(seconds=20)


def fresh_entry(
    state: Literal["verified", "unverified", "refuted"] = "verified",
    *,
    agent: str = "ci-runner-1",
    task: str = "deploy-4471",
    outcome: str = "Updated the billing address on account 4471.",
    recorded_at: datetime = T0 + timedelta(seconds=30),
    via: Via = "api",
) -> NewEntry:
    """A decided claim as the service would append it, decided for real by ``verify()``.

    verified: the evidence observes what the claim expects; refuted: it observes something
    else; unverified: there is no evidence at all.
    """
    if state == "verified":
        items = [evidence()]
    elif state == "refuted":
        items = [evidence(observed_value={"billing_zip": "10001"})]
    else:
        items = []
    document = claim_doc(
        evidence_items=items,
        task={"id": task, "description": "Update the billing address"},
        claimed_outcome=outcome,
    )
    verdict = verify(parse_claim(document), DECIDED_AT, BUILTIN_POLICY)
    assert verdict.state == state, verdict.reason  # the builder must give what it is asked for
    return NewEntry(
        claim=document,
        policy=policy_json(BUILTIN_POLICY),
        verdict=verdict.to_json(),
        submitted_by=agent,
        via=via,
        recorded_at=recorded_at,
    )


# --- Debian's Chromium, for the dashboard -----------------------------------------------------

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    *("--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"),
    *("--disable-background-networking", "--disable-component-update", "--disable-sync"),
]


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    from playwright.sync_api import Error as PlaywrightError
    from playwright.sync_api import sync_playwright

    if not CHROMIUM.exists():
        unavailable(f"{CHROMIUM} is missing: apt-get install chromium (make browser)")
    with sync_playwright() as playwright:
        try:
            launched = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        except PlaywrightError as error:
            unavailable(f"Chromium did not start: {error}")
        try:
            yield launched
        finally:
            launched.close()


@pytest.fixture
def dialogs() -> list[str]:
    """The message of every dialog a page opened: none may ever open, the pages have no script."""
    return []


@pytest.fixture
def page(browser: Browser, dialogs: list[str]) -> Iterator[BrowserPage]:
    context = browser.new_context()
    opened = context.new_page()
    opened.on("dialog", lambda dialog: record_dialog(dialog, dialogs))
    try:
        yield opened
    finally:
        context.close()
    assert dialogs == []


def record_dialog(dialog: Dialog, seen: list[str]) -> None:
    seen.append(dialog.message)
    dialog.dismiss()
