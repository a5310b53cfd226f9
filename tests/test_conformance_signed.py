"""The signed-mode conformance vectors: committed as generated, and obeyed by the library and by
``claim verify``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from conformance.generate_signed import HERE, SIGNED_DIR, build

from completion_claim import InvalidDocument, parse_claim, parse_policy, verify
from completion_claim.cli import run
from completion_claim.timefmt import parse_time
from completion_claim.trust import check_signatures
from completion_claim.trust.evidence import FINDING_CODES
from completion_claim.verify import Verdict

VECTORS = sorted(SIGNED_DIR.glob("*.json"))
_MEMBERS = {"description", "claim", "policy", "at", "expect"}
_EXPECT = {"state", "unmet", "independence", "findings"}
_EXPECT_INVALID = {"state", "error_path"}
VERDICT_VECTORS = [p for p in VECTORS if json.loads(p.read_text())["expect"]["state"] != "invalid"]
INVALID_VECTORS = [p for p in VECTORS if p not in VERDICT_VECTORS]


def load(path: Path) -> dict[str, Any]:
    vector: dict[str, Any] = json.loads(path.read_text(encoding="utf-8"))
    assert set(vector) == _MEMBERS, path.name
    invalid = vector["expect"]["state"] == "invalid"
    assert set(vector["expect"]) == (_EXPECT_INVALID if invalid else _EXPECT), path.name
    return vector


def outcome(verdict: Verdict) -> dict[str, Any]:
    return {
        "state": verdict.state,
        "unmet": sorted(u.code for u in verdict.unmet),
        "independence": verdict.independence,
        "findings": {r.evidence: sorted(f.code for f in r.reasons) for r in verdict.evidence},
    }


def test_committed_files_equal_the_generators_output() -> None:
    files = build()
    committed = {
        f"{folder}/{path.name}": path.read_text(encoding="utf-8")
        for folder in ("signed", "keys")
        for path in sorted((HERE / folder).iterdir())
        if path.suffix in (".json", ".key", ".pub")
    }
    assert committed == files, "run `python conformance/generate_signed.py` and commit the result"


def test_the_attacks_the_issue_names_are_all_vectors() -> None:
    names = " ".join(path.name for path in VECTORS)
    for attack in (
        "kind-edited-self-attested-to-independent",
        "observed-value-edited",
        "expected-edited",
        "at-edited",
        "covers-edited",
        "envelope-copied-into-another-task",
        "mutation-digest-changed",
        "signed-with-unknown-key",
        "trusted-key-not-allowed-for-check-type",
        "signed-with-agent-key",
        "truncated-signature",
        "non-base64-signature",
        "empty-signature",
        "two-signatures-only-untrusted-valid",
        "payload-type-changed",
        "signed-self-attested-kind",
        "mutation-kind-relabelled",
        "mutation-target-relabelled",
        "mutation-at-relabelled",
        "old-payload-version",
        "too-many-signatures",
    ):
        assert attack in names


def test_every_signed_mode_finding_is_exercised() -> None:
    codes = {
        code
        for path in VERDICT_VECTORS
        for found in load(path)["expect"]["findings"].values()
        for code in found
    }
    assert set(FINDING_CODES) <= codes


def test_invalid_input_is_a_vector_too() -> None:
    assert INVALID_VECTORS


@pytest.mark.parametrize("path", INVALID_VECTORS, ids=lambda p: p.stem)
def test_invalid_vectors_are_rejected(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vector = load(path)
    with pytest.raises(InvalidDocument) as caught:
        parse_claim(vector["claim"])
    assert caught.value.path == vector["expect"]["error_path"]
    claim, policy = tmp_path / "claim.json", tmp_path / "policy.json"
    claim.write_text(json.dumps(vector["claim"]), encoding="utf-8")
    policy.write_text(json.dumps(vector["policy"]), encoding="utf-8")
    assert run(["verify", str(claim), "--policy", str(policy), "--at", vector["at"]]) == 3
    assert f"{vector['expect']['error_path']}: " in capsys.readouterr().err


@pytest.mark.parametrize("path", VERDICT_VECTORS, ids=lambda p: p.stem)
def test_library_obeys_the_vector(path: Path) -> None:
    vector = load(path)
    verdict = verify(
        parse_claim(vector["claim"]),
        parse_time(vector["at"], "at"),
        parse_policy(vector["policy"]),
        signatures=check_signatures,
    )
    assert outcome(verdict) == vector["expect"]


@pytest.mark.parametrize("path", VERDICT_VECTORS, ids=lambda p: p.stem)
def test_cli_obeys_the_vector(
    path: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vector = load(path)
    claim, policy = tmp_path / "claim.json", tmp_path / "policy.json"
    claim.write_text(json.dumps(vector["claim"]), encoding="utf-8")
    policy.write_text(json.dumps(vector["policy"]), encoding="utf-8")
    args = ["verify", str(claim), "--policy", str(policy), "--at", vector["at"], "--json"]
    code = run(args)
    verdict = json.loads(capsys.readouterr().out)
    assert code == {"verified": 0, "unverified": 1, "refuted": 2}[vector["expect"]["state"]]
    assert {
        "state": verdict["state"],
        "unmet": sorted(u["code"] for u in verdict["unmet"]),
        "independence": verdict["independence"],
        "findings": {
            e["evidence"]: sorted(r["code"] for r in e["reasons"]) for e in verdict["evidence"]
        },
    } == vector["expect"]
