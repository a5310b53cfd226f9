"""The JSON routes under ``/v1``: thin handlers over plain functions of the ledger and settings.

Writes need a bearer token when the service has a token file, with the scope the route names
(``POST /v1/claims``: ``post``); reads are open, as a transparency log's are: anyone may audit
it. Starting a session (``start``) needs a token file: without one, nobody may start.
"""

from __future__ import annotations

import logging
import time
from datetime import UTC, datetime
from typing import Annotated, Any, Literal

import anyio
from fastapi import APIRouter, Depends, Path, Query, Request
from msgspec.structs import replace
from pydantic import BaseModel, ConfigDict, Field
from starlette.concurrency import run_in_threadpool

from .._json import cycle_collection_paused, decode_bytes, loads
from ..errors import InvalidDocument
from ..gate.run import policy_json
from ..model import parse_claim
from ..report import recorded_verdict_differs
from ..timefmt import parse_time
from ..trust import check_signatures
from ..verify import verify
from .errors import BadParameter, BodyTooLarge, MalformedBody, NotFound, WrongContentType
from .ledger import Ledger
from .ledger_errors import NotYetIntegrated
from .metrics import metrics_of
from .records import (
    START_VIA,
    Entry,
    EntryFilter,
    NewEntry,
    StateCounts,
    Stats,
    TreeHead,
    judged_part,
)
from .settings import ServiceSettings
from .tokens import ScopeMissing, TokenStore

_log = logging.getLogger("completion_claim.service.api")

ANONYMOUS = "anonymous"  # ``submitted_by`` when the service has no token file
# Indexes and sizes are 64-bit signed integers in both databases; a larger number names no
# entry, and is refused here rather than overflowing the driver.
MAX_INDEX = 2**63 - 1
DEFAULT_LIMIT = 50
MAX_LIMIT = 200
# How often a proof request waiting for its entry's integration looks for a new head: the head
# may come from another process, so it is read from the database, not awaited in memory.
INTEGRATION_POLL_S = 0.02

# --- response models (they are what /openapi.json documents) -----------------------------------


class ErrorOut(BaseModel):
    error: str = Field(description="What was wrong, in one line.")


class EntryOut(BaseModel):
    index: int
    leaf_hash: str = Field(description="Hex RFC 6962 leaf hash; recompute it, never trust it.")
    claim: dict[str, Any] = Field(
        description="The submitted claim without its own policy, verdict and verdict_attestation."
    )
    policy: dict[str, Any] = Field(description="The operator's policy the verdict applied.")
    verdict: dict[str, Any]
    submitted_by: str
    via: Literal["api", "gate"]
    recorded_at: str
    start_index: int | None = Field(
        None, description="A gate run's: the ledger index of its session's start (absent: none)."
    )
    decided_by: Literal["gate", "post"] = Field(
        description="gate: the service ran the operator's checks (POST /v1/gate); post: the "
        "requester sent the claim and its evidence (POST /v1/claims). Read from via."
    )
    independence: Literal["proven", "declared"] = Field(
        description="The verdict's: proven when evidence signed by an observer the operator "
        "trusts counted; declared when the claim itself said its verifier was independent."
    )


class StartedOut(BaseModel):
    repo: str = Field(description="The work tree's real path.")
    session: str | None = Field(description="The session (null: the repository's own start).")
    base: str | None = Field(description="The commit the session's changes are measured from.")
    taken_at: str = Field(description="When the start record was taken.")


class StartOut(BaseModel):
    index: int
    leaf_hash: str = Field(description="Hex RFC 6962 leaf hash; recompute it, never trust it.")
    start: StartedOut
    submitted_by: str = Field(description="The name of the token that started the session.")
    via: Literal["start"]
    recorded_at: str
    decided_by: Literal["start"]


class PostedOut(BaseModel):
    index: int
    verdict: dict[str, Any]
    leaf_hash: str
    url: str = Field(description="The claim's dashboard page.")
    entry_url: str
    proof_url: str
    recorded_verdict_differs: dict[str, Any] | None = Field(
        description="The claim's own verdict ({state, unmet}) when it disagrees with the one "
        "recorded here, which the service reached under its own policy; else null."
    )


class PageOut(BaseModel):
    items: list[EntryOut] = Field(description="Newest first.")
    next: str | None = Field(description="The next (older) page, or null on the last.")


class CountsOut(BaseModel):
    verified: int
    unverified: int
    refuted: int
    total: int


# Each group's key is a base of its own, listed last, so that it comes first in the answer.
class _DayKey(BaseModel):
    day: str = Field(description="A UTC day, YYYY-MM-DD.")


class _AgentKey(BaseModel):
    agent: str = Field(description="The token name that submitted (or 'anonymous').")


class _PolicyKey(BaseModel):
    policy: str = Field(description="The id of the operator's policy that decided.")


class DayCountsOut(CountsOut, _DayKey):
    pass


class AgentCountsOut(CountsOut, _AgentKey):
    pass


class PolicyCountsOut(CountsOut, _PolicyKey):
    pass


class _DecidedKey(BaseModel):
    decided_by: Literal["gate", "post"] = Field(
        description="gate: the service ran the checks; post: the poster sent the evidence."
    )


class DecidedCountsOut(CountsOut, _DecidedKey):
    pass


class UnmetCountOut(BaseModel):
    code: str
    count: int


class FalseSuccessOut(BaseModel):
    said_done: int = Field(description="Claims whose outcome said the work was done.")
    refuted: int = Field(description="Of those, the ones an observation contradicted.")
    rate: float | None = Field(description="refuted / said_done; null when said_done is 0.")


class StatsOut(BaseModel):
    total: CountsOut
    by_day: list[DayCountsOut]
    by_agent: list[AgentCountsOut]
    by_policy: list[PolicyCountsOut]
    by_decided_by: list[DecidedCountsOut] = Field(
        description="The gate's verdicts apart from posted ones (the gate first)."
    )
    top_unmet: list[UnmetCountOut]
    false_success: FalseSuccessOut


class TreeHeadOut(BaseModel):
    model_config = ConfigDict(populate_by_name=True)

    type_: str = Field(alias="_type")
    size: int
    root_hash: str
    timestamp: str
    log_key: str
    envelope: dict[str, Any] = Field(description="DSSE envelope over the canonical payload.")


class InclusionProofOut(BaseModel):
    index: int
    tree_size: int
    leaf_hash: str
    path: list[str]


class ProofOut(BaseModel):
    proof: InclusionProofOut
    tree_head: TreeHeadOut


class ConsistencyOut(BaseModel):
    old_size: int
    new_size: int
    path: list[str]


def _errors(*statuses: int) -> dict[int | str, dict[str, Any]]:
    return {status: {"model": ErrorOut} for status in (*statuses, 500, 503)}


# The shipped claim JSON Schema, registered as a component by ``app.openapi_document``.
CLAIM_BODY: dict[str, Any] = {
    "requestBody": {
        "required": True,
        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Claim"}}},
    }
}

router = APIRouter(prefix="/v1")

# --- writing -----------------------------------------------------------------------------------


@router.post(
    "/claims",
    status_code=201,
    response_model=PostedOut,
    responses=_errors(400, 401, 403, 413, 415, 422),
    openapi_extra=CLAIM_BODY,
    summary="Verify a claim under the operator's policy and append the verdict to the ledger",
)
async def post_claim(request: Request) -> dict[str, Any]:
    settings: ServiceSettings = request.app.state.settings
    submitted_by = await requester(request, "post")
    require_json(request.headers.get("content-type"))
    body = await read_capped(request, settings.max_body_bytes)
    entry, differs = await run_in_threadpool(
        decide_and_append,
        body,
        settings,
        request.app.state.ledger,
        submitted_by,
        datetime.now(UTC),
    )
    metrics_of(request.app).claim_recorded(entry.verdict["state"], "api")
    base = str(request.base_url).rstrip("/")
    return {
        "index": entry.index,
        "verdict": entry.verdict,
        "leaf_hash": entry.leaf_hash,
        "url": f"{base}/claims/{entry.index}",
        "entry_url": f"{base}/v1/claims/{entry.index}",
        "proof_url": f"{base}/v1/proof/{entry.index}",
        "recorded_verdict_differs": differs,
    }


async def requester(request: Request, scope: str) -> str:
    """The token's name (recorded as ``submitted_by``) when its token has ``scope``, or
    ``anonymous`` when the service has no tokens; a start always needs a token."""
    tokens: TokenStore | None = request.app.state.tokens
    if tokens is None:
        if scope == START_VIA:
            # Without tokens, whoever can connect (the agent, on its own machine) would start
            # its own sessions, and so choose the base its work is measured from.
            raise ScopeMissing(
                "this service has no token file: starting a session needs a token with the "
                "scope 'start' (claim serve --tokens FILE)",
                scope,
            )
        return ANONYMOUS
    name: str = await run_in_threadpool(
        tokens.authorize, request.headers.get("authorization"), scope
    )
    return name


def require_json(content_type: str | None) -> None:
    """Only ``application/json`` (optionally ``; charset=utf-8``): JSON is UTF-8 (RFC 8259)."""
    media_type, *parameters = (content_type or "").split(";")
    if media_type.strip().lower() != "application/json":
        shown = (content_type or "none")[:60]
        raise WrongContentType(f"expected Content-Type application/json, got {shown!r}")
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "charset" and value.strip().strip('"').lower() != "utf-8":
            raise WrongContentType(f"expected charset utf-8, got {value.strip()[:30]!r}")


async def read_capped(request: Request, max_bytes: int) -> bytes:
    """The whole body, refused by its announced length before reading and counted while
    reading, so neither a lying header nor a chunked stream gets past the cap."""
    announced = request.headers.get("content-length")
    if announced is not None:
        if not (announced.strip().isascii() and announced.strip().isdigit()):
            raise MalformedBody(f"Content-Length {announced[:30]!r} is not a byte count")
        if int(announced) > max_bytes:
            raise BodyTooLarge(f"the body is over the service's limit of {max_bytes} bytes")
    chunks: list[bytes] = []
    received = 0
    async for chunk in request.stream():
        received += len(chunk)
        if received > max_bytes:
            raise BodyTooLarge(f"the body is over the service's limit of {max_bytes} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def strict_json(body: bytes, max_bytes: int) -> Any:
    """The body decoded as a claim file is (one JSON text, no duplicate member, no NaN)."""
    try:
        return loads(decode_bytes(body, max_bytes))
    except InvalidDocument as error:
        raise MalformedBody(str(error)) from None


def decide_and_append(
    body: bytes, settings: ServiceSettings, ledger: Ledger, submitted_by: str, now: datetime
) -> tuple[Entry, dict[str, Any] | None]:
    """Decode strictly, parse, verify under the operator's policy, append: one entry or none;
    with it, the claim's own verdict when that disagrees (it is never what is recorded)."""
    document = strict_json(body, settings.max_body_bytes)
    with cycle_collection_paused():
        claim = parse_claim(document)  # the whole document must be valid, policy included
    # ``verify`` given a policy never reads the claim's own, but the entry must not carry what
    # the service ignored: the leaf records exactly what was decided.
    judged = replace(claim, policy=None, verdict=None)
    verdict = verify(judged, now, settings.policy, signatures=check_signatures)
    differs = recorded_verdict_differs(claim, verdict)
    entry = ledger.append(
        NewEntry(
            claim=judged_part(document),
            policy=policy_json(settings.policy),
            verdict=verdict.to_json(),
            submitted_by=submitted_by,
            via="api",
            recorded_at=now,
        )
    )
    if differs is not None:
        _log.warning(
            "claims: entry %d recorded %s; the claim's own verdict said %s",
            entry.index, verdict.state, str(differs["state"])[:20],
        )  # fmt: skip
    return entry, differs


# --- reading -----------------------------------------------------------------------------------

StateName = Literal["verified", "unverified", "refuted"]  # records.STATES, as a type (tested)
StateParam = Annotated[StateName | None, Query(description="Verdict state.")]
TextParam = Annotated[str | None, Query(max_length=200)]
TimeParam = Annotated[
    str | None, Query(max_length=64, description="RFC 3339 date-time with a UTC offset.")
]


def entry_filter(
    state: StateParam = None,
    policy: TextParam = None,
    agent: TextParam = None,
    task: TextParam = None,
    since: TimeParam = None,
    until: TimeParam = None,
) -> EntryFilter:
    """The filters ``/v1/claims`` and ``/v1/stats`` share, as query parameters."""
    return EntryFilter(
        state=state,
        policy=policy,
        agent=agent,
        task=task,
        since=None if since is None else parse_time(since, "since"),
        until=None if until is None else parse_time(until, "until"),
    )


Filters = Annotated[EntryFilter, Depends(entry_filter)]


@router.get(
    "/claims/{index}",
    response_model=EntryOut,
    response_model_exclude_unset=True,
    responses=_errors(404, 422),
    summary="One ledger entry: the claim as decided, the operator's policy and the verdict",
)
def get_claim(request: Request, index: Annotated[int, Path(ge=0, le=MAX_INDEX)]) -> dict[str, Any]:
    ledger: Ledger = request.app.state.ledger
    entry = ledger.get(index)
    if entry is None:
        if ledger.get_start(index) is not None:
            raise NotFound(f"entry {index} is a session's start: GET /v1/starts/{index}")
        raise NotFound(f"no entry {index} in the ledger")
    return entry.to_json()


@router.get(
    "/starts/{index}",
    response_model=StartOut,
    responses=_errors(404, 422),
    summary="One session start in the ledger: repository, session, base, and who started it",
)
def get_start(request: Request, index: Annotated[int, Path(ge=0, le=MAX_INDEX)]) -> dict[str, Any]:
    ledger: Ledger = request.app.state.ledger
    start = ledger.get_start(index)
    if start is None:
        raise NotFound(f"no session start at entry {index} of the ledger")
    return start.to_json()


@router.get(
    "/claims",
    response_model=PageOut,
    response_model_exclude_unset=True,
    responses=_errors(422),
    summary="Entries, newest first, filtered and paged",
)
def list_claims(
    request: Request,
    flt: Filters,
    before: Annotated[
        int | None, Query(ge=0, le=MAX_INDEX, description="Only entries below this index.")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIMIT)] = DEFAULT_LIMIT,
) -> dict[str, Any]:
    ledger: Ledger = request.app.state.ledger
    page = ledger.page(flt, before=before, limit=limit)
    following = None
    if page.next_before is not None:
        following = str(request.url.include_query_params(before=page.next_before))
    return {"items": [entry.to_json() for entry in page.items], "next": following}


@router.get(
    "/stats",
    response_model=StatsOut,
    responses=_errors(422),
    summary="The verdict mix by day, agent and policy; top unmet codes; false-success rate",
)
def get_stats(request: Request, flt: Filters) -> dict[str, Any]:
    ledger: Ledger = request.app.state.ledger
    return stats_json(ledger.stats(flt))


def stats_json(stats: Stats) -> dict[str, Any]:
    return {
        "total": _counts(stats.total),
        "by_day": [{"day": day.isoformat(), **_counts(c)} for day, c in stats.by_day],
        "by_agent": [{"agent": agent, **_counts(c)} for agent, c in stats.by_agent],
        "by_policy": [{"policy": policy, **_counts(c)} for policy, c in stats.by_policy],
        "by_decided_by": [{"decided_by": how, **_counts(c)} for how, c in stats.by_decided_by],
        "top_unmet": [{"code": code, "count": count} for code, count in stats.top_unmet],
        "false_success": {
            "said_done": stats.said_done,
            "refuted": stats.said_done_refuted,
            "rate": stats.false_success_rate,
        },
    }


def _counts(counts: StateCounts) -> dict[str, int]:
    return {
        "verified": counts.verified,
        "unverified": counts.unverified,
        "refuted": counts.refuted,
        "total": counts.total,
    }


@router.get(
    "/tree-head",
    response_model=TreeHeadOut,
    responses=_errors(),
    summary="The latest signed tree head",
)
def get_tree_head(request: Request) -> dict[str, Any]:
    ledger: Ledger = request.app.state.ledger
    return ledger.tree_head().to_json()


@router.get(
    "/proof/{index}",
    response_model=ProofOut,
    responses=_errors(404, 422),
    summary="An inclusion proof for one entry, with the latest signed tree head",
    description="An entry sequenced but not yet under a signed tree head is waited for, up to "
    "the service's maximum merge delay; if it is still not integrated then, the answer is 503 "
    "with Retry-After (the entry stays in the log: GET /v1/claims/{index} returns it).",
)
async def get_proof(
    request: Request,
    index: Annotated[int, Path(ge=0, le=MAX_INDEX)],
    tree_size: Annotated[
        int | None,
        Query(
            ge=1,
            le=MAX_INDEX,
            description="The size of a signed tree head. Default: the latest tree head's size.",
        ),
    ] = None,
) -> dict[str, Any]:
    ledger: Ledger = request.app.state.ledger
    head = await integrated_head(ledger, index)
    size = head.size if tree_size is None else tree_size
    if not index < size <= head.size:
        raise BadParameter(
            f"tree_size: expected more than {index} and at most {head.size}, got {size}"
        )
    proof = await run_in_threadpool(ledger.inclusion_proof, index, size)
    # The head the proof is against: an earlier size's own signed head, not the latest.
    signed = head if size == head.size else await run_in_threadpool(ledger.tree_head, size)
    return {"proof": proof.to_json(), "tree_head": signed.to_json()}


async def integrated_head(ledger: Ledger, index: int) -> TreeHead:
    """The latest signed head once it covers entry ``index``: an entry sequenced but not yet
    integrated is waited for, up to the ledger's merge delay."""
    deadline = time.monotonic() + ledger.merge_delay
    while True:
        head = await run_in_threadpool(ledger.tree_head)
        if index < head.size:
            return head
        _, sequenced = await run_in_threadpool(ledger.sizes)
        if index >= sequenced:
            raise NotFound(f"no entry {index} in the ledger (its size is {sequenced})")
        if time.monotonic() >= deadline:
            raise NotYetIntegrated(
                f"entry {index} is sequenced but no signed tree head covers it yet (the latest "
                f"has size {head.size}); it is integrated within the service's merge delay "
                f"of {ledger.merge_delay:g} s: ask again"
            )
        await anyio.sleep(INTEGRATION_POLL_S)


@router.get(
    "/consistency",
    response_model=ConsistencyOut,
    responses=_errors(422),
    summary="A consistency proof between two tree sizes",
)
def get_consistency(
    request: Request,
    old_size: Annotated[int, Query(ge=1, le=MAX_INDEX)],
    new_size: Annotated[
        int | None, Query(ge=1, le=MAX_INDEX, description="Default: the latest tree head's size.")
    ] = None,
) -> dict[str, Any]:
    ledger: Ledger = request.app.state.ledger
    head = ledger.tree_head()
    size = head.size if new_size is None else new_size
    if not old_size <= size <= head.size:
        raise BadParameter(
            f"old_size and new_size: expected 1 <= old_size <= new_size <= {head.size}, "
            f"got {old_size} and {size}"
        )
    return ledger.consistency_proof(old_size, size).to_json()
