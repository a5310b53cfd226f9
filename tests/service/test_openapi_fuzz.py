"""Schemathesis fuzzes every operation from the published ``/openapi.json``: no 5xx, and every
answer matches its documented status, content type and schema.

The app runs in-process over a real SQLite ledger holding a few entries, so the reads have
something to page, count and prove. Examples are bounded so the whole run stays short.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import (
    content_type_conformance,
    not_a_server_error,
    response_schema_conformance,
    status_code_conformance,
)
from schemathesis.core.result import Err
from schemathesis.specs.openapi.schemas import OpenApiSchema

from ._api import fresh_claim, post, serving

MAX_EXAMPLES = 25
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module")
def api_schema(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenApiSchema]:
    folder: Path = tmp_path_factory.mktemp("fuzz")
    with serving(f"sqlite:///{folder / 'ledger.sqlite'}") as (client, _):
        for state in ("verified", "refuted", "unverified"):
            assert post(client, fresh_claim(state)).status_code == 201
        yield schemathesis.openapi.from_asgi("/openapi.json", client.app)


def test_the_api_keeps_its_published_contract(api_schema: OpenApiSchema) -> None:
    """Every operation the document lists, each fuzzed with hypothesis; the operations are read
    from the document itself, so a new route is fuzzed without touching this test."""
    fuzzed = []
    for result in api_schema.get_all_operations():
        if isinstance(result, Err):
            pytest.fail(
                f"the published document has an operation schemathesis cannot read: {result.err()}"
            )
        operation = result.ok()
        fuzzed.append(f"{operation.method.upper()} {operation.path}")

        @given(case=operation.as_strategy())
        @settings(
            max_examples=MAX_EXAMPLES,
            deadline=None,
            derandomize=True,  # the same examples on every run: a failure here reproduces
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        def call(case: schemathesis.Case[Any]) -> None:
            case.call_and_validate(checks=CHECKS)

        call()
    assert "POST /v1/claims" in fuzzed
    assert len(fuzzed) >= 7
