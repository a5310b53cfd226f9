"""Helpers the API engineer's service tests share: the app over a real ledger, fresh claims.

A plain module beside ``conftest.py`` (the ledger engineer's file, whose ``ledger_url`` runs a
test on SQLite and on the real PostgreSQL); each test module states the fixtures it builds.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from completion_claim.service.app import create_app
from completion_claim.service.ledger import Ledger
from completion_claim.service.settings import ServiceSettings
from completion_claim.timefmt import format_time
from completion_claim.trust.keys import SigningKey
from tests.builders import claim_doc, evidence, mutation

KEY = SigningKey.from_seed("tests/service/api")
JSON = {"Content-Type": "application/json"}

Json = Any


@contextmanager
def serving(url: str, **settings: Any) -> Iterator[tuple[TestClient, Ledger]]:
    """The app in-process over the ledger at ``url``, with the given settings."""
    ledger = Ledger.open(url, KEY)
    try:
        app = create_app(
            ServiceSettings(ledger_url=url, key_path=Path("unused.pem"), **settings), ledger
        )
        with TestClient(app) as client:
            yield client, ledger
    finally:
        ledger.close()


def post(client: TestClient, doc: Json, token: str | None = None, **headers: str) -> Any:
    sent = dict(JSON)
    if token is not None:
        sent["Authorization"] = f"Bearer {token}"
    sent.update(headers)
    return client.post("/v1/claims", content=json.dumps(doc).encode(), headers=sent)


def ago(seconds: float) -> str:
    return format_time(datetime.now(UTC) - timedelta(seconds=seconds))


def fresh_claim(
    state: str = "verified", task: str = "deploy-4471", outcome: str = "Updated account 4471."
) -> Json:
    """A claim whose observations are a minute old, so the built-in policy (300 s) decides it
    ``state``: verified (read back as expected), refuted (read back otherwise) or unverified
    (only the agent's own word)."""
    observed = evidence(
        at=ago(30),
        observed_value={"billing_zip": "94107" if state != "refuted" else "10001"},
        verifier={
            "id": "ci/1",
            "kind": "independent" if state != "unverified" else "self_attested",
        },
    )
    return claim_doc(
        [mutation(at=ago(60))],
        [observed],
        task={"id": task, "description": "Update the billing address"},
        claimed_outcome=outcome,
    )


def with_member(doc: Json, **members: Json) -> Json:
    out = copy.deepcopy(doc)
    out.update(members)
    return out
