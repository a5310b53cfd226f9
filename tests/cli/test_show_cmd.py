"""``claim show`` (what a claim holds, unjudged) and ``claim explain`` (every rule per item)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from completion_claim.cli import run

from ..builders import claim_doc, evidence, mutation, ts
from ..signing import genuine_doc, policy_doc

EXAMPLES = Path(__file__).parents[2] / "examples"
DECIDE = "2026-08-27T18:04:10Z"


def write(tmp_path: Path, doc: dict[str, Any]) -> str:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(doc))
    return str(path)


def two_item_claim() -> dict[str, Any]:
    return claim_doc(
        [mutation(digest="sha256:" + "ab" * 32), mutation("m2", t=2, kind="deploy", target="web")],
        [
            evidence(id="e1"),
            evidence(id="[x]", t=11, covers=[], verifier={"id": "me", "kind": "self_attested"}),
        ],
    )


def test_show_lists_mutations_and_evidence_with_what_each_covers(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, two_item_claim())
    assert run(["show", path]) == 0
    out = capsys.readouterr().out
    assert out.startswith(
        "task deploy-4471: Updated the billing address on account 4471.\n"
        "  asked: Update the billing address\n"
        "  embedded policy: none (the built-in applies)\n"
        "Mutations\n"
    )
    assert re.search(
        r"\| m1 +\| state_write \| accounts/4471 \| .* \| sha256:abababababababa… +\| e1 ", out
    )
    assert re.search(r"\| m2 +\| deploy +\| web .*\| nothing +\|", out)
    assert re.search(
        r"\| e1 +\| state_readback \| accounts/4471 \| .*\| m1 +\| yes +\| no +\|", out
    )
    # Markup-like ids are text, not styles; a task-level item says so.
    assert re.search(r"\| \[x\] +\| .*\(self_attested\) +\| \(task-level\) \|", out)
    # Nothing is judged.
    assert not re.search(r"VERIFIED|covered by|\bcounts\b|does not count", out)
    assert "\x1b[" not in out


def test_show_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = write(tmp_path, two_item_claim())
    assert run(["show", path, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["task"] == {"id": "deploy-4471", "description": "Update the billing address"}
    assert shown["policy_id"] is None
    assert shown["mutations"][0] == {
        "id": "m1",
        "kind": "state_write",
        "target": "accounts/4471",
        "at": ts(0),
        "digest": "sha256:" + "ab" * 32,
        "named_by": ["e1"],
    }
    assert shown["mutations"][1]["named_by"] == []
    assert shown["evidence"][1] == {
        "id": "[x]",
        "check_type": "state_readback",
        "target": "accounts/4471",
        "at": ts(11),
        "verifier": {"id": "me", "kind": "self_attested"},
        "covers": [],
        "observed": True,
        "signed": False,
    }


def test_show_reads_stdin_and_names_a_bad_claim(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = claim_doc(evidence_items=[evidence(at="noon")])
    assert run(["show", write(tmp_path, bad)]) == 3
    assert capsys.readouterr().err.startswith(f"claim: {tmp_path / 'c.json'}: evidence[0].at: ")


def test_explain_shows_every_rule_per_item_and_exits_with_the_verdict(
    capsys: pytest.CaptureFixture[str],
) -> None:
    path = str(EXAMPLES / "unverified.claim.json")
    assert run(["explain", path, "--at", DECIDE]) == 1
    out = capsys.readouterr().out
    assert out.startswith(
        f"UNVERIFIED  {path}\n"
        "  policy code-change, independence declared, decided at 2026-08-27T18:04:10Z\n"
        "  Unverified: no evidence counts (self_attested, superseded); "
        "the policy requires test_run.\n"
        "Rules\n"
    )
    rows = re.findall(r"^\| ([^|]*?) +\| ([^|]*?) +\| ([^|]*?) +\| ([^|]*?) +\|", out, re.M)
    rules = [(rule, result) for _, _, rule, result in rows if result in ("pass", "fail", "n/a")]
    assert len(rules) == 20  # ten rules for each of the two items
    assert ("test setup unchanged", "pass") in rules
    assert re.search(
        r"\| agent-says \(does not count\) +\| test_run, matches +\| independent +\| fail", out
    )
    assert re.search(r"\| not superseded +\| fail +\| superseded by mutation m2", out)
    assert re.search(r"\| m1 +\| file_write \| NOT COVERED +\|", out)
    assert out.endswith(
        "Next steps\n"
        "  - agent-says is the agent's own report: observe from outside the agent\n"
        "  - ci-run predates mutation m2: observe after the last change\n"
        f"  - observe: claim observe test-run {path} --covers m1,m2 -- pytest tests/\n"
    )


def test_explain_json(capsys: pytest.CaptureFixture[str]) -> None:
    path = str(EXAMPLES / "refuted.claim.json")
    assert run(["explain", path, "--at", DECIDE, "--json"]) == 2
    explained = json.loads(capsys.readouterr().out)
    assert set(explained) == {"verdict", "rules", "next_steps"}
    assert explained["verdict"]["state"] == "refuted"
    readback = next(r for r in explained["rules"] if r["evidence"] == "readback")
    assert (readback["counts"], readback["observation"]) == (True, "differs")
    assert readback["mismatch"] == 'billing_zip: expected "94107", observed "10001"'
    assert [r["result"] for r in readback["rules"]] == ["pass"] * 7 + ["n/a", "pass", "pass"]
    agent = next(r for r in explained["rules"] if r["evidence"] == "agent-report")
    (independent,) = [r for r in agent["rules"] if r["rule"] == "independent"]
    assert independent == {
        "rule": "independent",
        "result": "fail",
        "findings": [
            {
                "code": "self_attested",
                "text": "self-attested: the agent's own report never satisfies a requirement",
            }
        ],
    }
    assert explained["next_steps"][0].startswith("look at readback: ")


def test_explain_marks_a_rule_that_does_not_apply(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A failed attempt observed nothing, so whether it could have failed was never asked."""
    failed = evidence(id="e1", details={"error": "refused"})
    del failed["observed_value"]
    path = write(tmp_path, claim_doc(evidence_items=[failed]))
    assert run(["explain", path, "--at", ts(20), "--json"]) == 1
    (judged,) = json.loads(capsys.readouterr().out)["rules"]
    results = {r["rule"]: r["result"] for r in judged["rules"]}
    assert results["observed"] == "fail"
    assert results["could have failed"] == "n/a"


def test_explain_under_an_operator_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(tmp_path, claim_doc())
    policy = tmp_path / "ops.json"
    policy.write_text(json.dumps({"id": "ops", "requires": ["test_run"], "max_age_s": 300}))
    assert run(["explain", path, "--policy", str(policy), "--at", ts(20)]) == 1
    out = capsys.readouterr().out
    assert "  policy ops, independence declared" in out
    assert "observe: claim observe test-run " in out
    assert run(["-q", "explain", path, "--at", ts(20)]) == 0
    assert capsys.readouterr().out.count("\n") == 3  # the verdict and its two lines, no tables


def test_explain_names_a_recorded_verdict_that_differs(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = {"state": "verified", "unmet": []}
    path = write(tmp_path, claim_doc(evidence_items=[], verdict=said))
    assert run(["explain", path, "--at", DECIDE]) == 1
    assert "note: the document records another verdict (verified; unmet: none)" in (
        capsys.readouterr().out
    )
    assert run(["explain", path, "--at", DECIDE, "--json"]) == 1
    assert json.loads(capsys.readouterr().out)["recorded_verdict_differs"] == said


def test_explain_checks_signatures_as_verify_does(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A signed claim under a signed policy: explain reaches verify's verdict (it used to count
    no signed item, as a library caller that passes no signature check)."""
    path = write(tmp_path, genuine_doc())
    policy = tmp_path / "policy.json"
    policy.write_text(json.dumps(policy_doc()))
    decide = "2026-08-27T18:00:20Z"
    assert run(["verify", path, "--policy", str(policy), "--at", decide]) == 0
    assert run(["explain", path, "--policy", str(policy), "--at", decide]) == 0
    assert "independence proven" in capsys.readouterr().out
