"""``create_app``: the FastAPI application over one ledger and one set of settings.

The app keeps nothing between requests but what the settings name (the ledger it is handed, the
token file it rereads), so several processes with the same settings serve one log.
"""

from __future__ import annotations

import json
from functools import cache
from importlib import resources
from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from .. import __version__
from . import api, dashboard, errors, gate_api, metrics
from .ledger import Ledger
from .settings import ServiceSettings
from .tokens import TokenStore

TITLE = "completion-claim verification service"
DESCRIPTION = (
    "Verifies completion claims under the operator's policy and records every verdict in an "
    "append-only RFC 6962 Merkle log with signed tree heads. Every error answer is "
    '`{"error": "one line"}`.'
)
# The claim schema's own definitions become components under these prefixed names, so they
# cannot collide with the response models' names.
_CLAIM = "Claim"


def create_app(settings: ServiceSettings, ledger: Ledger) -> FastAPI:
    # No Swagger or ReDoc pages: they load scripts from a CDN, and the service works offline.
    app = FastAPI(title=TITLE, version=__version__, docs_url=None, redoc_url=None)
    app.state.settings = settings
    app.state.ledger = ledger
    app.state.tokens = None if settings.tokens_path is None else TokenStore(settings.tokens_path)
    errors.install(app)
    metrics.install(app, ledger)
    app.include_router(api.router)
    app.include_router(dashboard.router)
    if settings.observe_root is not None:  # the gate runs only where the operator enabled it
        app.include_router(gate_api.router)

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            app.openapi_schema = openapi_document(app)
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]
    return app


def openapi_document(app: FastAPI) -> dict[str, Any]:
    """FastAPI's document plus the shipped claim JSON Schema as the POST body's schema."""
    document = get_openapi(
        title=TITLE, version=__version__, description=DESCRIPTION, routes=app.routes
    )
    document.setdefault("components", {}).setdefault("schemas", {}).update(claim_components())
    return document


@cache
def claim_components() -> dict[str, Any]:
    """The claim schema (as ``claim schema`` prints it) split into OpenAPI components: its
    ``$defs`` move under ``components/schemas`` and every reference follows them."""
    text = resources.files("completion_claim.schema").joinpath("claim.schema.json").read_text()
    schema = json.loads(text)
    definitions = schema.pop("$defs", {})
    for keyword in ("$schema", "$id"):
        schema.pop(keyword, None)
    components = {_CLAIM: schema} | {_CLAIM + name: body for name, body in definitions.items()}
    return {name: _rereference(body) for name, body in components.items()}


def _rereference(node: Any) -> Any:
    if isinstance(node, dict):
        return {
            key: (
                "#/components/schemas/" + _CLAIM + value.removeprefix("#/$defs/")
                if key == "$ref" and isinstance(value, str) and value.startswith("#/$defs/")
                else _rereference(value)
            )
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_rereference(item) for item in node]
    return node
