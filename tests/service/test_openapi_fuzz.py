"""Schemathesis fuzzes every operation from the published ``/openapi.json``: no 5xx, and every
answer matches its documented status, content type and schema.

The app runs in-process over a real SQLite ledger holding a few entries, so the reads have
something to page, count and prove; a second app has the gate enabled, so its routes are fuzzed
too. Examples are bounded so the whole run stays short.
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

from tests.fixtures.gate_service import write_operator

from ._api import fresh_claim, post, serving

MAX_EXAMPLES = 25
CHECKS = [
    not_a_server_error,
    status_code_conformance,
    content_type_conformance,
    response_schema_conformance,
]


@pytest.fixture(scope="module")
def ledger_folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@pytest.fixture(scope="module")
def api_schema(ledger_folder: Path) -> Iterator[OpenApiSchema]:
    with serving(f"sqlite:///{ledger_folder / 'ledger.sqlite'}") as (client, _):
        for state in ("verified", "refuted", "unverified"):
            assert post(client, fresh_claim(state)).status_code == 201
        yield schemathesis.openapi.from_asgi("/openapi.json", client.app)


@pytest.fixture(scope="module")
def gate_schema(ledger_folder: Path) -> Iterator[OpenApiSchema]:
    """The service with its gate enabled over an observe root holding no repository: every
    request is refused, and each refusal must be a documented 4xx, never a 500."""
    ops, observed = ledger_folder / "ops", ledger_folder / "observed"
    ops.mkdir()
    observed.mkdir()
    config, _ = write_operator(ops)
    url = f"sqlite:///{ops / 'ledger.sqlite'}"
    with serving(url, observe_root=observed, gate_config=config) as (client, _):
        yield schemathesis.openapi.from_asgi("/openapi.json", client.app)


def fuzz(schema: OpenApiSchema, prefix: str = "/") -> list[str]:
    """Fuzz every operation the document lists under ``prefix``, each with a bounded hypothesis
    run; the operations are read from the document itself, so a new route is fuzzed without
    touching this test. Returns what was fuzzed."""
    fuzzed = []
    for result in schema.get_all_operations():
        if isinstance(result, Err):
            pytest.fail(
                f"the published document has an operation schemathesis cannot read: {result.err()}"
            )
        operation = result.ok()
        if not operation.path.startswith(prefix):
            continue
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
    return fuzzed


def test_the_api_keeps_its_published_contract(api_schema: OpenApiSchema) -> None:
    fuzzed = fuzz(api_schema)
    assert "POST /v1/claims" in fuzzed
    assert "POST /v1/gate" not in fuzzed  # only where the operator enables it
    assert len(fuzzed) == 8


def test_the_gate_keeps_its_published_contract(gate_schema: OpenApiSchema) -> None:
    assert fuzz(gate_schema, "/v1/gate") == ["POST /v1/gate", "POST /v1/gate/start"]
