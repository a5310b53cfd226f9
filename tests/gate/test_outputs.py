"""CI outputs: a Markdown summary, JUnit XML and dotenv lines, as CI systems read them."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

from completion_claim import parse_claim, verify
from completion_claim.gate import outputs
from completion_claim.gate.run import EXIT_FOR_STATE, GateResult
from tests.builders import at, claim_doc, evidence, mutation

POLICY = {"id": "ops/gate", "requires": ["state_readback", "test_run"], "max_age_s": 600}


def result_for(document: dict[str, Any], agent_reason: str = "") -> GateResult:
    claim = parse_claim(document)
    verdict = verify(claim, at(20))
    return GateResult(
        verdict=verdict,
        claim_path=Path("/runs/repo-1/20260827T180020Z-abcd/claim.json"),
        document=document,
        agent_reason=agent_reason,
        exit_code=EXIT_FOR_STATE[verdict.state],
    )


def covered_and_not() -> dict[str, Any]:
    """m1 is covered by a readback; m2 (a file) by nothing; no test_run, which is required."""
    return claim_doc(
        [mutation("m1"), mutation("m2", kind="file_write", target="calc.py", digest="sha256:0")],
        [evidence(covers=["m1"], id="e1")],
        policy=POLICY,
    )


def junit_cases(data: bytes) -> dict[str, ET.Element]:
    root = ET.fromstring(data)
    assert root.tag == "testsuites"
    (suite,) = root
    assert suite.get("tests") == str(len(suite))
    assert suite.get("failures") == str(sum(1 for c in suite if c.find("failure") is not None))
    return {f"{case.get('classname')}/{case.get('name')}": case for case in suite}


def test_junit_has_a_case_per_mutation_and_per_requirement() -> None:
    result = result_for(covered_and_not(), agent_reason="calc.py (file_write) is covered by no")
    cases = junit_cases(outputs.junit_report(result, parse_claim(result.document)))

    assert sorted(cases) == [
        "claim-gate.mutations/file_write calc.py",
        "claim-gate.mutations/state_write accounts/4471",
        "claim-gate.policy/ops/gate requires state_readback",
        "claim-gate.policy/ops/gate requires test_run",
        "claim-gate.verdict/verdict",
    ]
    covered = cases["claim-gate.mutations/state_write accounts/4471"]
    assert covered.find("failure") is None
    assert covered.findtext("system-out") == "covered by e1"
    uncovered = cases["claim-gate.mutations/file_write calc.py"].find("failure")
    assert uncovered is not None
    assert uncovered.get("message") == "not covered by qualifying evidence"
    assert "calc.py (file_write) is covered by no" in (uncovered.text or "")
    assert cases["claim-gate.policy/ops/gate requires state_readback"].find("failure") is None
    assert cases["claim-gate.policy/ops/gate requires test_run"].find("failure") is not None
    verdict = cases["claim-gate.verdict/verdict"].find("failure")
    assert verdict is not None
    assert verdict.get("message") == "unverified"


def test_junit_of_a_verified_claim_has_no_failure() -> None:
    document = claim_doc(policy={**POLICY, "requires": ["state_readback"]})
    result = result_for(document)
    cases = junit_cases(outputs.junit_report(result, parse_claim(document)))
    assert [c.find("failure") for c in cases.values()] == [None] * len(cases)


def test_junit_escapes_what_a_target_or_reason_holds() -> None:
    document = covered_and_not()
    document["mutations"][1]["target"] = 'a<b>&"c".py'
    result = result_for(document, agent_reason="<![CDATA[ ]]> & </failure>")
    cases = junit_cases(outputs.junit_report(result, parse_claim(document)))
    failure = cases['claim-gate.mutations/file_write a<b>&"c".py'].find("failure")
    assert failure is not None
    assert "<![CDATA[ ]]> & </failure>" in (failure.text or "")


def parse_dotenv(text: str) -> dict[str, str]:
    """As GitLab reads it: NAME=value per line, nothing else."""
    values = {}
    for line in text.splitlines():
        match = re.fullmatch(r"([A-Za-z_][A-Za-z0-9_]*)=(.*)", line)
        assert match is not None, line
        values[match.group(1)] = match.group(2)
    return values


def test_dotenv_holds_the_state_the_claim_path_and_the_reason() -> None:
    result = result_for(covered_and_not(), agent_reason="first\nsecond")
    assert parse_dotenv(outputs.dotenv(result)) == {
        "CLAIM_STATE": "unverified",
        "CLAIM_CLAIM_PATH": "/runs/repo-1/20260827T180020Z-abcd/claim.json",
        "CLAIM_REASON": "first | second",
    }


def test_a_reason_cannot_set_another_variable_in_the_dotenv_file() -> None:
    result = result_for(covered_and_not(), agent_reason="x\nCLAIM_STATE=verified\r\x00")
    values = parse_dotenv(outputs.dotenv(result))
    assert values["CLAIM_STATE"] == "unverified"
    assert len(values) == 3
    assert len(outputs.dotenv(result_for(covered_and_not(), "y" * 10_000))) < 5 * 1024


def test_the_summary_is_appended_to_what_the_job_wrote_before(tmp_path: Path) -> None:
    summary = tmp_path / "step_summary.md"
    summary.write_text("## earlier step\n")
    result = result_for(covered_and_not(), agent_reason="calc.py is not covered")
    outputs.write_summary(summary, outputs.summary_markdown(result, parse_claim(result.document)))

    text = summary.read_text()
    assert text.startswith("## earlier step\n### claim gate: UNVERIFIED\n")
    assert "| m2 | file_write | `calc.py` | **not covered** |" in text
    assert "| m1 | state_write | `accounts/4471` | e1 |" in text
    assert "```text\ncalc.py is not covered\n```" in text


def test_a_table_cell_cannot_break_the_summary_table() -> None:
    document = covered_and_not()
    document["mutations"][1]["target"] = "a|b`c\nd"
    result = result_for(document)
    text = outputs.summary_markdown(result, parse_claim(document))
    assert "| m2 | file_write | `a\\|b'c \\| d` | **not covered** |" in text


def test_outputs_are_written_whole(tmp_path: Path) -> None:
    result = result_for(covered_and_not())
    claim = parse_claim(result.document)
    outputs.write_junit(tmp_path / "junit.xml", result, claim)
    outputs.write_dotenv(tmp_path / "claim.env", result)
    junit_cases((tmp_path / "junit.xml").read_bytes())
    assert parse_dotenv((tmp_path / "claim.env").read_text())["CLAIM_STATE"] == "unverified"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["claim.env", "junit.xml"]


def test_a_refuted_mutation_says_what_contradicted_it() -> None:
    document = claim_doc(evidence_items=[evidence(id="e1")], policy=POLICY)
    document["evidence"][0]["observed_value"] = {"billing_zip": "10001"}
    result = result_for(document)
    assert result.verdict.state == "refuted"
    cases = junit_cases(outputs.junit_report(result, parse_claim(document)))
    failure = cases["claim-gate.mutations/state_write accounts/4471"].find("failure")
    assert failure is not None
    assert failure.get("message") == "contradicted by e1"
    assert replace(result, agent_reason="").exit_code == 2
