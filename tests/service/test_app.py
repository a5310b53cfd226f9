"""``create_app``: its state, and the OpenAPI document it publishes."""

from __future__ import annotations

import json
from collections.abc import Iterator
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from fastapi.testclient import TestClient

from completion_claim.service.app import claim_components
from completion_claim.service.tokens import TokenStore, add_token

from ._api import fresh_claim, serving


@pytest.fixture
def client(tmp_path: Path) -> Iterator[TestClient]:
    with serving(f"sqlite:///{tmp_path / 'l.sqlite'}") as (client, _):
        yield client


@pytest.fixture
def document(client: TestClient) -> dict[str, Any]:
    answer = client.get("/openapi.json")
    assert answer.status_code == 200
    body: dict[str, Any] = answer.json()
    return body


def test_the_app_holds_its_settings_ledger_and_tokens(tmp_path: Path) -> None:
    tokens = tmp_path / "tokens.jsonl"
    add_token(tokens, "ci")
    url = f"sqlite:///{tmp_path / 'l.sqlite'}"
    with serving(url, tokens_path=tokens, max_body_bytes=10) as (client, ledger):
        state = client.app.state  # type: ignore[attr-defined]
        assert state.ledger is ledger
        assert state.settings.ledger_url == url
        assert state.settings.max_body_bytes == 10
        assert isinstance(state.tokens, TokenStore)
        assert state.tokens.path == tokens
    with serving(url) as (client, _):
        assert client.app.state.tokens is None  # type: ignore[attr-defined]


def test_the_claim_body_is_documented_by_the_shipped_schema(document: dict[str, Any]) -> None:
    body = document["paths"]["/v1/claims"]["post"]["requestBody"]
    assert body["required"] is True
    assert body["content"]["application/json"]["schema"] == {"$ref": "#/components/schemas/Claim"}
    shipped = json.loads(
        resources.files("completion_claim.schema").joinpath("claim.schema.json").read_text()
    )
    components = document["components"]["schemas"]
    claim = components["Claim"]
    assert claim["properties"].keys() == shipped["properties"].keys()
    assert claim["required"] == shipped["required"]
    for name in shipped["$defs"]:
        assert components["Claim" + name]["properties"].keys() == (
            shipped["$defs"][name]["properties"].keys()
        )
    assert "$defs" not in json.dumps(components)


def test_the_documented_schema_accepts_a_claim_and_refuses_a_broken_one(
    document: dict[str, Any],
) -> None:
    """Validated as a client would: the components resolve, and they say what the service does."""
    root = {"$ref": "#/components/schemas/Claim", "components": document["components"]}
    validator = jsonschema.Draft202012Validator(root)
    assert list(validator.iter_errors(fresh_claim())) == []
    broken = fresh_claim()
    del broken["task"]["id"]
    assert list(validator.iter_errors(broken)) != []
    assert claim_components()["Claim"] == document["components"]["schemas"]["Claim"]


def test_every_operation_documents_its_answers(document: dict[str, Any]) -> None:
    operations = [
        (path, method, operation)
        for path, methods in document["paths"].items()
        for method, operation in methods.items()
    ]
    assert {(path, method) for path, method, _ in operations} == {
        ("/v1/claims", "post"),
        ("/v1/claims", "get"),
        ("/v1/claims/{index}", "get"),
        ("/v1/starts/{index}", "get"),
        ("/v1/stats", "get"),
        ("/v1/tree-head", "get"),
        ("/v1/proof/{index}", "get"),
        ("/v1/consistency", "get"),
    }
    for path, method, operation in operations:
        responses = operation["responses"]
        for status in ("500", "503"):
            assert responses[status]["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/ErrorOut"
            }, (path, method, status)
        success = "201" if method == "post" else "200"
        assert "$ref" in responses[success]["content"]["application/json"]["schema"]
    post = document["paths"]["/v1/claims"]["post"]["responses"]
    assert {"400", "401", "403", "413", "415", "422"} <= post.keys()


def test_the_dashboard_is_mounted_and_the_gate_only_where_enabled(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'l.sqlite'}"
    with serving(url) as (client, _):
        page = client.get("/")
        assert page.status_code == 200
        assert page.headers["content-type"].startswith("text/html")
        paths = client.get("/openapi.json").json()["paths"]
        assert not any(path.startswith("/v1/gate") for path in paths)
        assert client.post("/v1/gate", json={}).status_code == 404
    config = tmp_path / "claim.toml"
    config.write_text('[policy]\nid = "ops"\n')
    with serving(url, observe_root=tmp_path, gate_config=config) as (client, _):
        paths = client.get("/openapi.json").json()["paths"]
        assert {"/v1/gate", "/v1/gate/start"} <= paths.keys()


def test_no_pages_that_need_a_cdn(client: TestClient) -> None:
    assert client.get("/docs").status_code == 404
    assert client.get("/redoc").status_code == 404
