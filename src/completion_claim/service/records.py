"""What the ledger stores and answers: plain values shared by the API, the dashboard and the CLI.

An entry is one decided claim. Its leaf in the Merkle log is the canonical JSON (RFC 8785) of
``Entry.leaf_document()``: the claim as submitted (without its own ``policy`` and ``verdict``,
which the service ignores), the operator's policy and the verdict the service reached, who
submitted it and when. Everything a page or a filter shows is derived from those bytes.

How an entry was decided (``decided_by``) follows from ``via``: ``gate`` (the service ran the
operator's checks itself), ``post`` (``POST /v1/claims``: the requester sent the evidence, and
the verdict weighed it under the operator's policy) or ``start``. A claim's ``independence`` is
its verdict's: ``proven`` when evidence signed by an observer the operator trusts counted,
``declared`` when the claim itself said its verifier was independent. Both are read from the
leaf, never stored beside it, so the leaf hash covers them.

A session's start is an entry of the same log (``via: "start"``): which repository and session,
the base commit and when the start record was taken, and whose token started it. It is not a
claim: the claim listings, counts and pages leave starts out. A gate run whose session has a
start in the log names that entry's index (``start_index``), so the history shows which start
the decision measured from.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import Any, Literal

from ..timefmt import format_time

Via = Literal["api", "gate"]
START_VIA = "start"
IGNORED_MEMBERS = ("policy", "verdict", "verdict_attestation")
"""What a submitted claim may say about its own judgement; the service decides that itself."""
STATES = ("verified", "unverified", "refuted")
LEAF_MEMBERS = frozenset(("claim", "policy", "verdict", "submitted_by", "via", "recorded_at"))
"""The members of every claim's leaf document (``Entry.leaf_document``); a gate run's may add
``start_index``, and no other."""
OPTIONAL_LEAF_MEMBERS = frozenset(("start_index",))
START_MEMBERS = frozenset(("start", "submitted_by", "via", "recorded_at"))
"""The members of a start's leaf document (``Start.leaf_document``), and no others."""
DECIDED_BY = {"api": "post", "gate": "gate", START_VIA: "start"}
"""How an entry of each ``via`` was decided, as the API and the dashboard name it."""
DERIVED_MEMBERS = ("index", "leaf_hash", "decided_by", "independence")
"""What ``to_json`` adds to a leaf document; a client leaves them out to recompute the leaf."""


def is_leaf_document(document: object) -> bool:
    """Whether ``document`` has the members of a claim's leaf or a start's, and no others."""
    if not isinstance(document, dict):
        return False
    members = set(document)
    if document.get("via") == START_VIA:
        return members == START_MEMBERS
    return LEAF_MEMBERS <= members <= LEAF_MEMBERS | OPTIONAL_LEAF_MEMBERS


def judged_part(document: dict[str, Any]) -> dict[str, Any]:
    """The submitted document as an entry keeps it: without its own policy, verdict and the
    verdict's signature, which the service never reads."""
    return {key: value for key, value in document.items() if key not in IGNORED_MEMBERS}


@dataclass(frozen=True)
class NewEntry:
    """A decision about to be appended."""

    claim: dict[str, Any]  # the submitted document without its ``policy`` and ``verdict``
    policy: dict[str, Any]  # the operator's policy, as ``gate.run.policy_json`` writes it
    verdict: dict[str, Any]  # ``Verdict.to_json()``
    submitted_by: str  # the bearer token's name, or the gate's own name
    via: Via
    recorded_at: datetime  # aware, UTC; passed in, never a column default
    start_index: int | None = field(default=None, kw_only=True)  # the session's start, if logged

    def leaf_document(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "claim": self.claim,
            "policy": self.policy,
            "verdict": self.verdict,
            "submitted_by": self.submitted_by,
            "via": self.via,
            "recorded_at": format_time(self.recorded_at),
        }
        if self.start_index is not None:
            document["start_index"] = self.start_index
        return document


@dataclass(frozen=True)
class Entry(NewEntry):
    """An appended decision: its place in the log and its leaf hash (hex of RFC 6962 leaf)."""

    index: int
    leaf_hash: str

    def to_json(self) -> dict[str, Any]:
        """``GET /v1/claims/{index}``: the leaf document plus its place; a client recomputes the
        leaf hash from the leaf document's canonical bytes, never trusting ``leaf_hash``."""
        return {
            "index": self.index,
            "leaf_hash": self.leaf_hash,
            **self.leaf_document(),
            "decided_by": self.decided_by,
            "independence": self.independence,
        }

    @property
    def decided_by(self) -> str:
        return DECIDED_BY[self.via]

    @property
    def independence(self) -> str:
        """The verdict's; anything but ``proven`` reads as ``declared`` (never the stronger)."""
        return "proven" if self.verdict.get("independence") == "proven" else "declared"

    @property
    def state(self) -> str:
        return str(self.verdict["state"])

    @property
    def task_id(self) -> str:
        return str(self.claim["task"]["id"])

    @property
    def policy_id(self) -> str:
        return str(self.verdict["policy_id"])

    @property
    def outcome(self) -> str:
        return str(self.claim.get("claimed_outcome", ""))

    @property
    def unmet_codes(self) -> tuple[str, ...]:
        return tuple(str(item["code"]) for item in self.verdict.get("unmet", ()))


@dataclass(frozen=True)
class NewStart:
    """A session's start about to be appended: what the start record holds, and who asked."""

    repo: str  # the work tree's real path
    session: str | None  # None: the repository's own start
    base: str | None  # the commit the session's changes are measured from (None: no commit yet)
    taken_at: str  # the start record's ``taken_at``, as written there
    submitted_by: str  # the token's name
    recorded_at: datetime

    def leaf_document(self) -> dict[str, Any]:
        return {
            "start": {
                "repo": self.repo,
                "session": self.session,
                "base": self.base,
                "taken_at": self.taken_at,
            },
            "submitted_by": self.submitted_by,
            "via": START_VIA,
            "recorded_at": format_time(self.recorded_at),
        }

    @property
    def key(self) -> str:
        return start_key(self.repo, self.session)


@dataclass(frozen=True)
class Start(NewStart):
    index: int
    leaf_hash: str

    def to_json(self) -> dict[str, Any]:
        """``GET /v1/starts/{index}``: the leaf document plus its place."""
        return {
            "index": self.index,
            "leaf_hash": self.leaf_hash,
            **self.leaf_document(),
            "decided_by": DECIDED_BY[START_VIA],
        }


def start_key(repo: str, session: str | None) -> str:
    """What the ledger looks a start up by: a digest of its repository and session (a path has
    no length bound an index column could hold)."""
    named = json.dumps([repo, session], ensure_ascii=False).encode("utf-8", "surrogatepass")
    return "start:" + hashlib.sha256(named).hexdigest()


@dataclass(frozen=True)
class EntryFilter:
    """``GET /v1/claims`` filters; each None means "any". Times bound ``recorded_at``:
    ``since`` inclusive, ``until`` exclusive."""

    state: str | None = None
    policy: str | None = None
    agent: str | None = None  # submitted_by
    task: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    unmet: str | None = None  # an unmet code the verdict names (the dashboard's drill-down)


@dataclass(frozen=True)
class Page:
    """Newest first. ``next_before`` is the index to pass as ``before`` for the next page."""

    items: tuple[Entry, ...]
    next_before: int | None


@dataclass(frozen=True)
class StateCounts:
    verified: int = 0
    unverified: int = 0
    refuted: int = 0

    @property
    def total(self) -> int:
        return self.verified + self.unverified + self.refuted


@dataclass(frozen=True)
class Stats:
    """The verdict mix over the filtered entries.

    The false-success rate is ``said_done_refuted / said_done``: among claims whose outcome said
    the work was done (every claim with a non-empty ``claimed_outcome``), those an observation
    contradicted.
    """

    total: StateCounts
    by_day: tuple[tuple[date, StateCounts], ...]  # oldest first, UTC days with entries
    by_agent: tuple[tuple[str, StateCounts], ...]  # most entries first
    by_policy: tuple[tuple[str, StateCounts], ...]  # most entries first
    top_unmet: tuple[tuple[str, int], ...]  # (code, entries naming it), most first, at most 10
    said_done: int = 0
    said_done_refuted: int = 0
    # (gate or post, counts): a posted verdict is the poster's evidence, never counted as the
    # gate's; the gate first
    by_decided_by: tuple[tuple[str, StateCounts], ...] = ()

    @property
    def false_success_rate(self) -> float | None:
        return None if self.said_done == 0 else self.said_done_refuted / self.said_done


@dataclass(frozen=True)
class TreeHead:
    """A signed tree head: the log's size and root, signed by the service's Ed25519 key as a
    DSSE envelope over the canonical JSON of ``payload()``."""

    size: int
    root_hash: str  # hex
    timestamp: datetime
    log_key: str  # "ed25519:..." of the key that signed
    envelope: dict[str, Any] = field(compare=False)

    def to_json(self) -> dict[str, Any]:
        """``GET /v1/tree-head`` and the file ``claim ledger verify --since`` reads."""
        return {**self.payload(), "envelope": self.envelope}

    def payload(self) -> dict[str, Any]:
        return {
            "_type": TREE_HEAD_TYPE,
            "size": self.size,
            "root_hash": self.root_hash,
            "timestamp": format_time(self.timestamp),
            "log_key": self.log_key,
        }


TREE_HEAD_TYPE = "https://completion-claim.dev/tree-head/v1"
TREE_HEAD_PAYLOAD_TYPE = "application/vnd.completion-claim.tree-head+json"


@dataclass(frozen=True)
class InclusionProof:
    index: int
    tree_size: int
    leaf_hash: str  # hex
    path: tuple[str, ...]  # hex, RFC 6962 audit path, leaf side first

    def to_json(self) -> dict[str, Any]:
        return {
            "index": self.index,
            "tree_size": self.tree_size,
            "leaf_hash": self.leaf_hash,
            "path": list(self.path),
        }


@dataclass(frozen=True)
class ConsistencyProof:
    old_size: int
    new_size: int
    path: tuple[str, ...]  # hex, RFC 6962 consistency proof

    def to_json(self) -> dict[str, Any]:
        return {"old_size": self.old_size, "new_size": self.new_size, "path": list(self.path)}
