"""``POST /v1/gate`` and ``POST /v1/gate/start``: the gate as a service (mounted by ``create_app``
when the service has an observe root). Thin handlers over :mod:`.gate_service`; the gate runs in
a worker thread, since it runs tests for minutes."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import partial
from typing import Any

from anyio import CapacityLimiter, to_thread
from fastapi import APIRouter, Request
from pydantic import BaseModel, Field

from . import gate_service
from .api import read_capped, requester, require_json, strict_json
from .metrics import metrics_of
from .settings import ServiceSettings

router = APIRouter(prefix="/v1", tags=["gate"])

# Gate runs at once; more wait their turn. A run holds a worker thread for as long as the
# operator's checks take, and every other route shares those threads (40): unbounded, one token
# holder asking for many runs would stop the service answering anything else.
GATE_RUNS_AT_ONCE = 4

_ERRORS: dict[int | str, dict[str, Any]] = {
    status: {"description": why, "content": {"application/json": {"example": {"error": "..."}}}}
    for status, why in (
        (400, "The body is not strict JSON."),
        (401, "A token is needed and was missing or unknown."),
        (403, "The token lacks the route's scope, or the repository is outside the observe root."),
        (409, "POST /v1/gate/start: the session was started already (a start is taken once)."),
        (413, "The body is over the size limit."),
        (415, "The body is not application/json."),
        (422, "A member is missing or wrong, or the path is not a git work tree."),
    )
}


class GateIn(BaseModel):
    repo: str = Field(description="Absolute path of the work tree, under the observe root.")
    outcome: str | None = Field(None, description="What the agent says it achieved.")
    session: str | None = Field(None, description="The agent session (its baselines).")
    task_id: str | None = Field(None, description="The claim's task id.")


class GateStartIn(BaseModel):
    repo: str
    session: str | None = None


class GateOut(BaseModel):
    index: int = Field(description="The decision's place in the ledger.")
    verdict: dict[str, Any]
    agent_reason: str = Field(description="What to tell the agent when it is sent back.")
    exit_code: int = Field(description="claim gate's exit code for this verdict.")
    report: str
    url: str = Field(description="The decision's dashboard page.")
    max_blocks: int = Field(description="The operator's bound on stops sent back in a row.")


class GateStartOut(BaseModel):
    repo: str = Field(description="The work tree's root whose baselines were taken.")
    index: int = Field(description="The start's place in the ledger.")


def _body_schema(model: type[BaseModel]) -> dict[str, Any]:
    """The body is read and checked by hand (strict JSON, capped); this only documents it."""
    return {
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": model.model_json_schema()}},
        }
    }


@router.post(
    "/gate",
    response_model=GateOut,
    responses=_ERRORS,
    openapi_extra=_body_schema(GateIn),
    summary="Run the gate on a repository under the observe root and record its decision",
)
async def post_gate(request: Request) -> dict[str, Any]:
    settings: ServiceSettings = request.app.state.settings
    submitted_by = await requester(request, "gate")
    asked = gate_service.gate_request(await _read(request, settings))
    decide = partial(
        gate_service.decide,
        settings,
        request.app.state.ledger,
        asked,
        submitted_by=submitted_by,
        now=datetime.now(UTC),
    )
    metrics = metrics_of(request.app)

    def timed() -> gate_service.GateDecision:
        # Timed in the worker thread: a run waiting its turn is not yet running.
        with metrics.gate_run() as outcome:
            made = decide()
            outcome.append(made.entry.verdict["state"])
        return made

    decision = await to_thread.run_sync(timed, limiter=_gate_runs(request))
    result = decision.result
    return {
        "index": decision.entry.index,
        "verdict": decision.entry.verdict,
        "agent_reason": result.agent_reason,
        "exit_code": result.exit_code,
        "report": result.report,
        "url": f"{str(request.base_url).rstrip('/')}/claims/{decision.entry.index}",
        "max_blocks": decision.max_blocks,
    }


@router.post(
    "/gate/start",
    response_model=GateStartOut,
    responses=_ERRORS,
    openapi_extra=_body_schema(GateStartIn),
    summary="Take a session's baselines (base commit, state snapshots) at its start, once",
)
async def post_gate_start(request: Request) -> dict[str, Any]:
    settings: ServiceSettings = request.app.state.settings
    submitted_by = await requester(request, "start")
    asked = gate_service.gate_request(await _read(request, settings), start=True)
    start = partial(
        gate_service.start,
        settings,
        request.app.state.ledger,
        asked,
        submitted_by=submitted_by,
        now=datetime.now(UTC),
    )
    root, entry = await to_thread.run_sync(start, limiter=_gate_runs(request))
    return {"repo": str(root), "index": entry.index}


def _gate_runs(request: Request) -> CapacityLimiter:
    """The app's own limiter for gate runs, made on first use inside its event loop."""
    limiter: CapacityLimiter | None = getattr(request.app.state, "gate_runs", None)
    if limiter is None:
        limiter = request.app.state.gate_runs = CapacityLimiter(GATE_RUNS_AT_ONCE)
    return limiter


async def _read(request: Request, settings: ServiceSettings) -> Any:
    require_json(request.headers.get("content-type"))
    limit = max(settings.max_body_bytes, gate_service.MAX_BODY_BYTES)
    body = await read_capped(request, limit)
    return strict_json(body, limit)
