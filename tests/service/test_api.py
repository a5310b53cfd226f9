"""The JSON routes in-process, each test over a real SQLite ledger and the real PostgreSQL."""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any, get_args

import pytest
from fastapi.testclient import TestClient

from completion_claim import parse_policy
from completion_claim.gate.run import policy_json
from completion_claim.model import BUILTIN_POLICY
from completion_claim.service import merkle
from completion_claim.service.api import StateName
from completion_claim.service.ledger import Ledger
from completion_claim.service.records import (
    DERIVED_MEMBERS,
    STATES,
    ConsistencyProof,
    InclusionProof,
    NewStart,
)
from completion_claim.service.tokens import add_token
from completion_claim.service.tree_head import check_tree_head, tree_head_from_json
from completion_claim.timefmt import format_time
from completion_claim.trust.canonical import canonical_bytes
from tests.service.conftest import fresh_entry
from tests.signing import CI, policy_doc, sign

from ._api import JSON, KEY, ago, fresh_claim, post, serving, with_member

Service = tuple[TestClient, Ledger]


@pytest.fixture
def service(ledger_url: str) -> Iterator[Service]:
    """Every test here runs on a SQLite file and on the real PostgreSQL (conftest's
    ``ledger_url``)."""
    with serving(ledger_url) as running:
        yield running


@pytest.fixture
def client(service: Service) -> TestClient:
    return service[0]


def size(client: TestClient) -> int:
    head = client.get("/v1/tree-head")
    assert head.status_code == 200
    return int(head.json()["size"])


# --- POST /v1/claims ---------------------------------------------------------------------------


def test_a_posted_claim_is_verified_recorded_and_linked(ledger_url: str) -> None:
    doc = fresh_claim("verified")
    with serving(ledger_url) as (client, _):
        answer = post(client, doc)
        assert answer.status_code == 201, answer.text
        body = answer.json()
        assert body["index"] == 0
        assert body["verdict"]["state"] == "verified"
        assert body["url"] == "http://testserver/claims/0"
        assert body["entry_url"] == "http://testserver/v1/claims/0"
        assert body["proof_url"] == "http://testserver/v1/proof/0"
        entry = client.get("/v1/claims/0").json()
        assert entry["index"] == 0
        assert entry["leaf_hash"] == body["leaf_hash"]
        assert entry["verdict"] == body["verdict"]
        assert entry["claim"] == doc
        assert entry["submitted_by"] == "anonymous"
        assert entry["via"] == "api"
        assert entry["policy"] == policy_json(BUILTIN_POLICY)
        second = post(client, fresh_claim("refuted"))
        assert second.json()["index"] == 1
        assert size(client) == 2


def test_attack_15_the_claims_own_verdict_and_lax_policy_are_ignored(client: TestClient) -> None:
    """The claim says it was verified under a policy allowing a day-old observation, with a
    signature over that verdict; under the operator's (built-in, 300 s) the observation is
    stale, and a contradiction refutes. None of what the claim said of itself is kept."""
    stale = fresh_claim("verified")
    stale["mutations"][0]["at"] = ago(3600)
    stale["evidence"][0]["at"] = ago(1800)
    lax = {"id": "lax", "requires": [], "max_age_s": 86400}
    said = {"state": "verified", "reason": "trust me"}
    signed_by_itself = {"payloadType": "application/json", "payload": "e30=", "signatures": []}
    answer = post(
        client, with_member(stale, policy=lax, verdict=said, verdict_attestation=signed_by_itself)
    )
    assert answer.status_code == 201, answer.text
    assert answer.json()["verdict"]["state"] == "unverified"
    assert answer.json()["verdict"]["policy_id"] == BUILTIN_POLICY.id
    refuted = post(client, with_member(fresh_claim("refuted"), policy=lax, verdict=said))
    assert refuted.json()["verdict"]["state"] == "refuted"
    for index, state in ((0, "unverified"), (1, "refuted")):
        entry = client.get(f"/v1/claims/{index}").json()
        assert entry["verdict"]["state"] == state
        assert not {"policy", "verdict", "verdict_attestation"} & set(entry["claim"])
        assert entry["policy"]["id"] == BUILTIN_POLICY.id


def test_attack_48_a_claim_whose_own_verdict_disagrees_is_recorded_as_decided_and_said(
    ledger_url: str,
) -> None:
    """A gate's claim of an untouched work tree: a green task-level run, no mutation, its own
    verdict unverified (no_mutations). The service records what its operator's policy decides,
    and says that the claim's own verdict differs; under a policy that requires a change, as
    the gate's does, it records the gate's verdict."""
    green = fresh_claim("verified")
    green["mutations"] = []
    green["evidence"][0]["covers"] = []
    said = {"state": "unverified", "unmet": [{"code": "no_mutations"}]}
    gates = with_member(green, verdict=said)
    with serving(ledger_url) as (client, _):
        answer = post(client, gates).json()
        assert answer["verdict"]["state"] == "verified"
        assert answer["recorded_verdict_differs"] == said
        agrees = with_member(fresh_claim("verified"), verdict={"state": "verified", "unmet": []})
        agreeing = post(client, agrees)
        assert agreeing.json()["recorded_verdict_differs"] is None
    operator = parse_policy({"id": "ops/gate", "requires": [], "max_age_s": 300,
                             "require_mutations": True})  # fmt: skip
    with serving(ledger_url, policy=operator) as (client, _):
        answer = post(client, gates).json()
        assert (answer["verdict"]["state"], answer["recorded_verdict_differs"]) == (
            "unverified",
            None,
        )
        entry = client.get(f"/v1/claims/{answer['index']}").json()
        assert entry["policy"]["require_mutations"] is True


def test_a_signed_operator_policy_checks_the_evidence_signatures(ledger_url: str) -> None:
    operator = parse_policy(policy_doc())
    with serving(ledger_url, policy=operator) as (client, _):
        genuine = post(client, sign(fresh_claim("verified"), CI))
        assert genuine.status_code == 201, genuine.text
        assert genuine.json()["verdict"]["state"] == "verified"
        assert genuine.json()["verdict"]["independence"] == "proven"
        unsigned = post(client, fresh_claim("verified"))
        assert unsigned.json()["verdict"]["state"] == "unverified"
        stored = client.get("/v1/claims/0").json()
        assert stored["policy"] == policy_json(operator)
        assert "attestation" in stored["claim"]["evidence"][0]


def test_an_invalid_claim_is_refused_naming_the_place(client: TestClient) -> None:
    doc = fresh_claim()
    doc["evidence"][0]["at"] = "yesterday"
    answer = post(client, doc)
    assert answer.status_code == 422
    assert answer.json() == {"error": "evidence[0].at: not an RFC 3339 date-time: 'yesterday'"}
    own_policy = with_member(fresh_claim(), policy={"id": "p", "requires": "all"})
    assert post(client, own_policy).status_code == 422  # ignored, but still checked
    assert post(client, [1, 2]).status_code == 422
    assert size(client) == 0


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (b'{"spec_version": "0.1",', "not JSON: Expecting"),
        (b'{"a": 1, "a": 2}', "not JSON: duplicate key 'a'"),
        (b'{"a": NaN}', "not JSON: NaN is not a JSON value"),
        (b'{"a": 1e999}', "not JSON: number '1e999' is out of range"),
        (b'{"a": "\\ud800"}', "a: lone surrogate U+D800"),
        (b'{"a": "\xff"}', "not UTF-8"),
        (b"", "not JSON: Expecting value"),
    ],
)
def test_a_body_that_is_not_strict_json_is_a_400(
    client: TestClient, body: bytes, problem: str
) -> None:
    answer = client.post("/v1/claims", content=body, headers=JSON)
    assert answer.status_code == 400
    assert problem in answer.json()["error"]
    assert size(client) == 0


@pytest.mark.parametrize(
    "content_type",
    [None, "text/plain", "application/x-www-form-urlencoded", "application/json; charset=latin-1"],
)
def test_only_a_json_body_is_read(client: TestClient, content_type: str | None) -> None:
    headers = {} if content_type is None else {"Content-Type": content_type}
    answer = client.post("/v1/claims", content=json.dumps(fresh_claim()), headers=headers)
    assert answer.status_code == 415
    assert "application/json" in answer.json()["error"] or "utf-8" in answer.json()["error"]
    assert size(client) == 0


def test_json_with_a_utf8_charset_is_read(client: TestClient) -> None:
    headers = {"Content-Type": "Application/JSON; charset=UTF-8"}
    answer = client.post("/v1/claims", content=json.dumps(fresh_claim()), headers=headers)
    assert answer.status_code == 201


def test_an_oversize_body_is_a_413_and_nothing_is_appended(ledger_url: str) -> None:
    with serving(ledger_url, max_body_bytes=2000) as (client, _):
        big = fresh_claim(outcome="x" * 2000)
        announced = post(client, big)
        assert announced.status_code == 413
        assert announced.json() == {"error": "the body is over the service's limit of 2000 bytes"}
        data = json.dumps(big).encode()

        def chunks() -> Iterator[bytes]:  # no Content-Length: only counting can catch it
            yield from (data[i : i + 500] for i in range(0, len(data), 500))

        streamed = client.post("/v1/claims", content=chunks(), headers=JSON)
        assert "content-length" not in streamed.request.headers
        assert streamed.status_code == 413
        assert size(client) == 0
        assert post(client, fresh_claim()).status_code == 201  # just under the cap is fine


def test_a_lying_content_length_is_refused(client: TestClient) -> None:
    answer = client.post("/v1/claims", content=b"{}", headers={**JSON, "Content-Length": "two"})
    assert answer.status_code == 400
    assert "Content-Length" in answer.json()["error"]


# --- authentication ----------------------------------------------------------------------------


@pytest.fixture
def guarded(tmp_path: Path, ledger_url: str) -> Iterator[tuple[TestClient, Path, str]]:
    tokens = tmp_path / "tokens.jsonl"
    token = add_token(tokens, "ci-runner-1", ["post"])
    add_token(tokens, "agent-7", ["post"])
    with serving(ledger_url, tokens_path=tokens) as (client, _):
        yield client, tokens, token


def test_a_token_names_who_submitted(guarded: tuple[TestClient, Path, str]) -> None:
    client, _, token = guarded
    answer = post(client, fresh_claim(), token=token)
    assert answer.status_code == 201, answer.text
    assert client.get("/v1/claims/0").json()["submitted_by"] == "ci-runner-1"


@pytest.mark.parametrize(
    ("authorization", "problem"),
    [
        (None, "missing bearer token"),
        ("", "missing bearer token"),
        ("Basic dXNlcjpwYXNz", "malformed Authorization header"),
        ("Bearer", "malformed Authorization header"),
        ("Bearer two words", "malformed Authorization header"),
        ("Bearer not-a-token-anyone-was-given", "unknown bearer token"),
    ],
)
def test_bad_credentials_are_a_401_and_nothing_is_appended(
    guarded: tuple[TestClient, Path, str], authorization: str | None, problem: str
) -> None:
    client, _, _ = guarded
    headers = dict(JSON)
    if authorization is not None:
        headers["Authorization"] = authorization
    answer = client.post("/v1/claims", content=json.dumps(fresh_claim()), headers=headers)
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == "Bearer"
    assert answer.json()["error"].startswith(problem)
    assert size(client) == 0


def test_a_removed_name_token_stops_working_at_once(guarded: tuple[TestClient, Path, str]) -> None:
    client, tokens, token = guarded
    assert post(client, fresh_claim(), token=token).status_code == 201
    kept = [line for line in tokens.read_text().splitlines() if "ci-runner-1" not in line]
    tokens.write_text("\n".join(kept) + "\n")
    answer = post(client, fresh_claim(), token=token)
    assert answer.status_code == 401
    assert answer.json() == {"error": "unknown bearer token"}
    assert size(client) == 1


def test_reads_need_no_token(guarded: tuple[TestClient, Path, str]) -> None:
    client, _, _ = guarded
    assert client.get("/v1/claims").status_code == 200


# --- GET /v1/claims/{index} --------------------------------------------------------------------


def test_each_entry_says_how_it_was_decided(service: Service) -> None:
    """``decided_by`` and ``independence`` are read from each entry's leaf, on both backends:
    a post, a gate run and a session's start; a client leaves them out to recompute the leaf."""
    client, ledger = service
    assert post(client, fresh_claim()).status_code == 201
    gated = ledger.append(fresh_entry(via="gate"))
    started = ledger.append_start(
        NewStart(repo="/srv/repo", session="s1", base=None, taken_at="2026-08-27T18:00:00Z",
                 submitted_by="orchestrator", recorded_at=datetime.now(UTC))
    )  # fmt: skip
    posted = client.get("/v1/claims/0").json()
    assert (posted["decided_by"], posted["independence"]) == ("post", "declared")
    by_gate = client.get(f"/v1/claims/{gated.index}").json()
    assert (by_gate["decided_by"], by_gate["independence"]) == ("gate", "declared")
    start = client.get(f"/v1/starts/{started.index}").json()
    assert start["decided_by"] == "start"
    assert "independence" not in start
    listed = client.get("/v1/claims").json()["items"]
    assert [item["decided_by"] for item in listed] == ["gate", "post"]
    for entry in (posted, by_gate, start):
        leaf = {key: value for key, value in entry.items() if key not in DERIVED_MEMBERS}
        assert merkle.leaf_hash(canonical_bytes(leaf)).hex() == entry["leaf_hash"]


def test_an_absent_entry_is_a_404(client: TestClient) -> None:
    answer = client.get("/v1/claims/0")
    assert answer.status_code == 404
    assert answer.json() == {"error": "no entry 0 in the ledger"}
    negative = client.get("/v1/claims/-1")
    assert negative.status_code == 422
    assert negative.json()["error"].startswith("index: ")


# --- GET /v1/claims: paging and filters --------------------------------------------------------


def indexes(answer: Any) -> list[int]:
    assert answer.status_code == 200, answer.text
    return [item["index"] for item in answer.json()["items"]]


def test_pages_run_newest_first_and_link_to_the_next(client: TestClient) -> None:
    for _ in range(5):
        assert post(client, fresh_claim()).status_code == 201
    first = client.get("/v1/claims", params={"limit": 2})
    assert indexes(first) == [4, 3]
    following = first.json()["next"]
    assert following.startswith("http://testserver/v1/claims?")
    second = client.get(following)
    assert indexes(second) == [2, 1]
    last = client.get(second.json()["next"])
    assert indexes(last) == [0]
    assert last.json()["next"] is None
    assert indexes(client.get("/v1/claims")) == [4, 3, 2, 1, 0]
    assert indexes(client.get("/v1/claims", params={"before": 2})) == [1, 0]


def test_a_next_link_keeps_the_filters(client: TestClient) -> None:
    for state in ("refuted", "verified", "refuted", "refuted"):
        post(client, fresh_claim(state))
    first = client.get("/v1/claims", params={"state": "refuted", "limit": 2})
    assert indexes(first) == [3, 2]
    assert indexes(client.get(first.json()["next"])) == [0]


def test_each_filter_narrows_the_list(tmp_path: Path, ledger_url: str) -> None:
    tokens = tmp_path / "tokens.jsonl"
    ci, agent = add_token(tokens, "ci", ["post"]), add_token(tokens, "agent", ["post"])
    strict = parse_policy({"id": "strict", "requires": ["state_readback"], "max_age_s": 300})
    with serving(ledger_url, tokens_path=tokens) as (client, _):
        post(client, fresh_claim("verified", task="t1"), token=ci)
        post(client, fresh_claim("refuted", task="t2"), token=agent)
        post(client, fresh_claim("unverified", task="t1"), token=agent)
        assert indexes(client.get("/v1/claims", params={"state": "refuted"})) == [1]
        assert indexes(client.get("/v1/claims", params={"agent": "agent"})) == [2, 1]
        assert indexes(client.get("/v1/claims", params={"task": "t1"})) == [2, 0]
        assert indexes(client.get("/v1/claims", params={"task": "t1", "agent": "ci"})) == [0]
        assert indexes(client.get("/v1/claims", params={"policy": BUILTIN_POLICY.id})) == [2, 1, 0]
        assert indexes(client.get("/v1/claims", params={"policy": strict.id})) == []
        now = datetime.now(UTC)
        hour = timedelta(hours=1)
        assert indexes(client.get("/v1/claims", params={"since": format_time(now - hour)})) == [
            2,
            1,
            0,
        ]
        assert indexes(client.get("/v1/claims", params={"since": format_time(now + hour)})) == []
        assert indexes(client.get("/v1/claims", params={"until": format_time(now - hour)})) == []
        offset = (now + hour).astimezone().isoformat()  # any offset, not only Z
        assert indexes(client.get("/v1/claims", params={"until": offset})) == [2, 1, 0]


@pytest.mark.parametrize(
    ("params", "problem"),
    [
        ({"state": "done"}, "state: "),
        ({"since": "2026-01-01T00:00:00"}, "since: no UTC offset"),
        ({"until": "tomorrow"}, "until: not an RFC 3339 date-time: 'tomorrow'"),
        ({"limit": 0}, "limit: "),
        ({"limit": 201}, "limit: "),
        ({"before": -1}, "before: "),
        ({"limit": "many"}, "limit: "),
    ],
)
def test_a_bad_filter_is_a_422_naming_the_parameter(
    client: TestClient, params: dict[str, Any], problem: str
) -> None:
    answer = client.get("/v1/claims", params=params)
    assert answer.status_code == 422
    assert answer.json()["error"].startswith(problem)
    assert "\n" not in answer.json()["error"]


def test_the_state_parameter_takes_exactly_the_ledgers_states() -> None:
    assert get_args(StateName) == STATES


def test_limit_allows_up_to_200(client: TestClient) -> None:
    assert client.get("/v1/claims", params={"limit": 200}).status_code == 200


# --- GET /v1/stats -----------------------------------------------------------------------------


def test_stats_on_a_known_set(tmp_path: Path, ledger_url: str) -> None:
    tokens = tmp_path / "tokens.jsonl"
    ci, agent = add_token(tokens, "ci", ["post"]), add_token(tokens, "agent", ["post"])
    with serving(ledger_url, tokens_path=tokens) as (client, _):
        post(client, fresh_claim("verified"), token=ci)
        post(client, fresh_claim("verified"), token=agent)
        post(client, fresh_claim("refuted"), token=agent)
        post(client, fresh_claim("unverified", outcome=""), token=agent)
        stats = client.get("/v1/stats").json()
        today = datetime.now(UTC).date().isoformat()
        counts = {"verified": 2, "unverified": 1, "refuted": 1, "total": 4}
        assert stats["total"] == counts
        assert stats["by_day"] == [{"day": today, **counts}]
        assert stats["by_agent"] == [
            {"agent": "agent", "verified": 1, "unverified": 1, "refuted": 1, "total": 3},
            {"agent": "ci", "verified": 1, "unverified": 0, "refuted": 0, "total": 1},
        ]
        assert stats["by_policy"] == [{"policy": BUILTIN_POLICY.id, **counts}]
        assert stats["by_decided_by"] == [{"decided_by": "post", **counts}]
        codes = {item["code"]: item["count"] for item in stats["top_unmet"]}
        assert codes["contradicted"] == 1
        assert stats["false_success"] == {"said_done": 3, "refuted": 1, "rate": 1 / 3}
        narrowed = client.get("/v1/stats", params={"agent": "ci"}).json()
        assert narrowed["total"] == {"verified": 1, "unverified": 0, "refuted": 0, "total": 1}
        assert narrowed["false_success"] == {"said_done": 1, "refuted": 0, "rate": 0.0}


def test_stats_of_an_empty_ledger(client: TestClient) -> None:
    stats = client.get("/v1/stats").json()
    assert stats["total"] == {"verified": 0, "unverified": 0, "refuted": 0, "total": 0}
    assert stats["by_day"] == stats["by_agent"] == stats["top_unmet"] == []
    assert stats["false_success"] == {"said_done": 0, "refuted": 0, "rate": None}
    assert client.get("/v1/stats", params={"since": "now"}).status_code == 422


# --- tree head and proofs ----------------------------------------------------------------------


def test_proof_and_consistency_parameters_are_checked(client: TestClient) -> None:
    assert client.get("/v1/proof/0").status_code == 404
    for _ in range(3):
        post(client, fresh_claim())
    assert client.get("/v1/proof/3").status_code == 404
    too_big = client.get("/v1/proof/0", params={"tree_size": 4})
    assert too_big.status_code == 422
    assert too_big.json() == {"error": "tree_size: expected more than 0 and at most 3, got 4"}
    assert client.get("/v1/proof/2", params={"tree_size": 2}).status_code == 422
    assert client.get("/v1/consistency", params={"old_size": 0}).status_code == 422
    assert client.get("/v1/consistency", params={"old_size": 4}).status_code == 422
    backwards = client.get("/v1/consistency", params={"old_size": 2, "new_size": 1})
    assert backwards.status_code == 422
    assert backwards.json()["error"].startswith("old_size and new_size: ")
    assert client.get("/v1/consistency").status_code == 422  # old_size is required


def test_the_tree_head_grows_and_its_proofs_check(client: TestClient) -> None:
    heads = []
    for state in ("verified", "refuted", "unverified"):
        assert post(client, fresh_claim(state)).status_code == 201
        head = tree_head_from_json(client.get("/v1/tree-head").json())
        check_tree_head(head, KEY.public)
        heads.append(head)
    assert [head.size for head in heads] == [1, 2, 3]
    latest = heads[-1]
    for index in range(3):
        answer = client.get(f"/v1/proof/{index}").json()
        assert tree_head_from_json(answer["tree_head"]) == latest
        proof = proof_from(answer["proof"])
        assert proof.tree_size == 3
        entry = client.get(f"/v1/claims/{index}").json()
        leaf = {key: value for key, value in entry.items() if key not in DERIVED_MEMBERS}
        assert proof.leaf_hash == merkle.leaf_hash(canonical_bytes(leaf)).hex()
        merkle.verify_inclusion(proof, latest.root_hash)
    answer = client.get("/v1/proof/0", params={"tree_size": 2}).json()
    older = proof_from(answer["proof"])
    assert tree_head_from_json(answer["tree_head"]) == heads[1]  # the head the proof is against
    merkle.verify_inclusion(older, heads[1].root_hash)
    with pytest.raises(merkle.ProofError):
        merkle.verify_inclusion(older, latest.root_hash)
    for old in heads[:2]:
        answer = client.get("/v1/consistency", params={"old_size": old.size}).json()
        consistency = ConsistencyProof(
            answer["old_size"], answer["new_size"], tuple(answer["path"])
        )
        assert consistency.new_size == 3
        merkle.verify_consistency(consistency, old.root_hash, latest.root_hash)
    pinned = client.get("/v1/consistency", params={"old_size": 1, "new_size": 2}).json()
    merkle.verify_consistency(
        ConsistencyProof(1, 2, tuple(pinned["path"])), heads[0].root_hash, heads[1].root_hash
    )


def proof_from(document: dict[str, Any]) -> InclusionProof:
    return InclusionProof(
        document["index"], document["tree_size"], document["leaf_hash"], tuple(document["path"])
    )


def test_numbers_past_64_bits_are_refused_not_overflowed(client: TestClient) -> None:
    huge = str(2**63)
    assert client.get(f"/v1/claims/{huge}").status_code == 422
    assert client.get(f"/v1/proof/{huge}").status_code == 422
    assert client.get("/v1/claims", params={"before": huge}).status_code == 422
    assert client.get("/v1/consistency", params={"old_size": huge}).status_code == 422
    assert client.get(f"/v1/claims/{2**63 - 1}").status_code == 404


def test_an_entry_is_exactly_what_was_posted(client: TestClient) -> None:
    """Key order, unicode and numbers survive: the leaf is over the document as submitted."""
    doc = fresh_claim(outcome="Größe → 4471 ✓")
    doc["evidence"][0]["expected"] = {"n": 12345678901234567890, "f": 0.5}
    doc["evidence"][0]["observed_value"] = copy.deepcopy(doc["evidence"][0]["expected"])
    assert post(client, doc).status_code == 201
    assert client.get("/v1/claims/0").json()["claim"] == doc
