"""The one table from errors to statuses, and the one-line bodies every failure gets."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient

from completion_claim.errors import InvalidDocument, UsageError
from completion_claim.service.errors import (
    UNEXPECTED,
    BadParameter,
    BodyTooLarge,
    MalformedBody,
    NotFound,
    WrongContentType,
    status_for,
)
from completion_claim.service.gate_service import (
    BadGateRequest,
    GateNotConfigured,
    NotARepository,
    RepoRefused,
)
from completion_claim.service.ledger import LedgerError, LedgerTampered, NotInLedger
from completion_claim.service.tokens import TokenFileError, TokenRejected

from ._api import serving


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (MalformedBody("not JSON"), 400),
        (TokenRejected("unknown bearer token"), 401),
        (RepoRefused("repo: '/x' is not under the service's observe root"), 403),
        (NotFound("no entry 3"), 404),
        (NotInLedger("no tree of size 9"), 404),
        (BodyTooLarge("too big"), 413),
        (WrongContentType("text/plain"), 415),
        (InvalidDocument("evidence[0].at", "no UTC offset"), 422),
        (BadParameter("tree_size: too big"), 422),
        (BadGateRequest("repo: required"), 422),
        (NotARepository("repo: '/x' is not a directory"), 422),
        (GateNotConfigured("the gate needs --gate-config"), None),
        (LedgerError("cannot reach the database"), 503),
        (LedgerTampered("leaf 3 differs"), 500),
        (UsageError("a server-side problem"), None),
        (TokenFileError("tokens.jsonl:1: not JSON"), None),
        (ValueError("anything"), None),
    ],
)
def test_the_table(error: Exception, status: int | None) -> None:
    assert status_for(error) == status


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    """The real app with routes that fail on purpose, answering errors as a client sees them."""
    with serving(f"sqlite:///{tmp_path / 'l.sqlite'}") as (client, _):
        app = client.app
        assert isinstance(app, FastAPI)

        def ledger_down() -> None:
            raise LedgerError("cannot open the ledger at postgresql://db.example/ledger")

        def surprise() -> None:
            raise RuntimeError("password=hunter2 in /etc/secret")

        def operator_error() -> None:
            raise TokenFileError("/etc/claim/tokens.jsonl:3: not JSON")

        def multi_line() -> None:
            raise NotFound("first\n  second")

        for path, endpoint in (
            ("/ledger-down", ledger_down),
            ("/surprise", surprise),
            ("/operator", operator_error),
            ("/multi-line", multi_line),
        ):
            app.add_api_route(path, endpoint)
        with TestClient(app, raise_server_exceptions=False) as lenient:
            yield lenient


def test_a_ledger_failure_is_a_503_in_one_line(client: TestClient) -> None:
    answer = client.get("/ledger-down")
    assert answer.status_code == 503
    assert answer.json() == {"error": "cannot open the ledger at postgresql://db.example/ledger"}


def test_an_unexpected_error_leaks_nothing(client: TestClient) -> None:
    for path in ("/surprise", "/operator"):
        answer = client.get(path)
        assert answer.status_code == 500
        assert answer.json() == {"error": UNEXPECTED}
        assert "hunter2" not in answer.text
        assert "/etc" not in answer.text


def test_an_error_of_several_lines_is_answered_in_one(client: TestClient) -> None:
    answer = client.get("/multi-line")
    assert answer.status_code == 404
    assert answer.json() == {"error": "first second"}


def test_starlettes_own_answers_take_the_same_shape(client: TestClient) -> None:
    unknown = client.get("/v1/nothing-here")
    assert unknown.status_code == 404
    assert unknown.json() == {"error": "Not Found"}
    wrong_method = client.delete("/v1/claims")
    assert wrong_method.status_code == 405
    assert wrong_method.json() == {"error": "Method Not Allowed"}


def test_validation_errors_are_one_line_naming_the_first_parameter(client: TestClient) -> None:
    answer = client.get("/v1/claims", params={"limit": "x", "before": "y"})
    assert answer.status_code == 422
    error = answer.json()["error"]
    assert error.startswith(("limit: ", "before: "))
    assert error.endswith("(and 1 more problem)")
    assert "\n" not in error
