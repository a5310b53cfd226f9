"""CI outputs: a Markdown summary, JUnit XML and dotenv lines, as CI systems read them."""

from __future__ import annotations

import json
import re
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from completion_claim import parse_claim, verify
from completion_claim.cli import run
from completion_claim.gate import outputs
from completion_claim.gate.run import EXIT_FOR_STATE, GateResult, start_gate
from tests.builders import at, claim_doc, evidence, mutation
from tests.fixtures.projects import CALC_BUGGY, calc_project, write_files
from tests.gate.conftest import POLICY as GATE_POLICY
from tests.gate.conftest import TEST_RUN_CHECK, WriteConfig

# The official SARIF 2.1.0 schema (errata 01, OASIS): sarif-2.1/schema/sarif-schema-2.1.0.json in
# github.com/oasis-tcs/sarif-spec at e0583813964ec43cea53b6b531b402866095ed1f. No package on
# PyPI ships it (sarif-om, sarif-tools, sarif-pydantic, pysarif do not; npm's jest-sarif ships
# a pre-release draft), so the file is kept here, unchanged.
SARIF_SCHEMA = json.loads((Path(__file__).parent / "sarif-schema-2.1.0.json").read_text())

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
    reason = 'a<b>&"c".py: <![CDATA[ ]]> & </failure>'
    result = result_for(document, agent_reason=reason)
    cases = junit_cases(outputs.junit_report(result, parse_claim(document)))
    failure = cases['claim-gate.mutations/file_write a<b>&"c".py'].find("failure")
    assert failure is not None
    assert reason in (failure.text or "")


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
    assert "| m2 | file\\_write | `calc.py` | **not covered** |" in text
    assert "| m1 | state\\_write | `accounts/4471` | e1 |" in text
    assert "```text\ncalc.py is not covered\n```" in text


def test_a_table_cell_cannot_break_the_summary_table() -> None:
    document = covered_and_not()
    document["mutations"][1]["target"] = "a|b`c\nd"
    result = result_for(document)
    text = outputs.summary_markdown(result, parse_claim(document))
    assert "| m2 | file\\_write | `a\\|b'c \\| d` | **not covered** |" in text


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


def valid_sarif(log: dict[str, Any]) -> dict[str, Any]:
    """The log, after checking it against the official schema (draft 4, as it declares)."""
    assert SARIF_SCHEMA["$schema"] == "http://json-schema.org/draft-04/schema#"
    jsonschema.Draft4Validator(SARIF_SCHEMA).validate(log)
    return log


def test_sarif_has_a_result_per_unmet_requirement_with_its_rule(tmp_path: Path) -> None:
    result = result_for(covered_and_not(), agent_reason="calc.py (file_write) is covered by no")
    log = valid_sarif(outputs.sarif_report(result, parse_claim(result.document), tmp_path))

    (sarif_run,) = log["runs"]
    rules = sarif_run["tool"]["driver"]["rules"]
    found = [(r["ruleId"], r["level"], r["locations"]) for r in sarif_run["results"]]
    assert found == [
        (
            "mutation_uncovered",
            "warning",
            [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": "calc.py", "uriBaseId": "%SRCROOT%"}
                    }
                }
            ],
        ),
        ("requirement_unmet", "warning", []),
    ]
    assert [rules[r["ruleIndex"]]["id"] for r in sarif_run["results"]] == [
        "mutation_uncovered", "requirement_unmet",
    ]  # fmt: skip
    assert all(rule["help"]["text"] and rule["shortDescription"]["text"] for rule in rules)
    first, second = sarif_run["results"]
    assert first["message"]["text"].splitlines() == [
        "mutation m2 is not covered by qualifying evidence",
        "calc.py (file_write) is covered by no",
    ]
    assert second["message"]["text"] == "the policy requires a supporting test_run observation"
    assert sarif_run["properties"]["verdict"] == "unverified"


def test_a_sarif_result_with_no_file_of_its_own_is_located_at_the_gates_config(
    tmp_path: Path,
) -> None:
    """GitHub code scanning refuses a result without a location ("expected at least one
    location"): a missing requirement is placed where the policy is, claim.toml, when the
    repository holds it; a config outside the repository gives no location."""
    document = covered_and_not()
    claim = parse_claim(document)
    inside = outputs.sarif_report(result_for(document), claim, tmp_path, tmp_path / "claim.toml")
    outside = outputs.sarif_report(result_for(document), claim, tmp_path / "repo", tmp_path / "c")
    found = [
        [
            [loc["physicalLocation"]["artifactLocation"]["uri"] for loc in r["locations"]]
            for r in valid_sarif(log)["runs"][0]["results"]
        ]
        for log in (inside, outside)
    ]
    assert found == [[["calc.py"], ["claim.toml"]], [["calc.py"], []]]


def test_sarif_fingerprints_follow_the_requirement_not_the_run(tmp_path: Path) -> None:
    """Code scanning matches alerts across runs by partialFingerprints: the same unmet
    requirement on the same file is the same alert, whatever the mutation's id."""
    document = covered_and_not()
    again = covered_and_not()
    again["mutations"][1]["id"] = "m9"
    again["evidence"][0]["covers"] = ["m1"]
    prints = [
        [
            r["partialFingerprints"]
            for r in outputs.sarif_report(result_for(d), parse_claim(d), tmp_path)["runs"][0][
                "results"
            ]
        ]
        for d in (document, again)
    ]
    assert prints[0] == prints[1]
    assert len({json.dumps(p) for p in prints[0]}) == 2


def test_sarif_of_a_verified_claim_has_no_result(tmp_path: Path) -> None:
    document = claim_doc(policy={**POLICY, "requires": ["state_readback"]})
    log = valid_sarif(outputs.sarif_report(result_for(document), parse_claim(document), tmp_path))
    assert log["runs"][0]["results"] == []


def test_sarif_uris_are_relative_and_encoded(tmp_path: Path) -> None:
    document = covered_and_not()
    document["mutations"][1]["target"] = "dir with space/a#b%.py"
    log = valid_sarif(outputs.sarif_report(result_for(document), parse_claim(document), tmp_path))
    location = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"]["uri"] == "dir%20with%20space/a%23b%25.py"


def test_the_gate_writes_sarif_naming_the_failing_test_and_the_change(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    repo = calc_project(tmp_path / "repo")
    config = write_config(GATE_POLICY + TEST_RUN_CHECK)
    start_gate(config, repo)
    write_files(repo, {"calc.py": CALC_BUGGY})
    sarif = tmp_path / "out" / "gate.sarif"
    sarif.parent.mkdir()
    argv = ["gate", "--config", str(config.path), "--repo", str(repo), "--sarif", str(sarif)]
    assert run([*argv, "--outcome", "Fixed."]) == 2

    log = valid_sarif(json.loads(sarif.read_text()))
    assert [p.name for p in sarif.parent.iterdir()] == ["gate.sarif"]  # written whole
    results = log["runs"][0]["results"]
    contradiction = next(r for r in results if r["ruleId"] == "contradicted")
    assert contradiction["level"] == "error"
    assert [
        loc["physicalLocation"]["artifactLocation"]["uri"] for loc in contradiction["locations"]
    ] == ["tests/test_calc.py"]
    assert "tests/test_calc.py::test_add failed: assert -1 == 5" in contradiction["message"]["text"]
    uncovered = next(r for r in results if r["ruleId"] == "mutation_uncovered")
    assert uncovered["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "calc.py"
    assert {r["level"] for r in results} == {"error"}


def test_each_junit_failure_carries_its_own_lines() -> None:
    document = claim_doc(
        [
            mutation("m1", kind="file_write", target="calc.py", digest="sha256:0"),
            mutation("m2", kind="file_write", target="util.py", digest="sha256:1"),
        ],
        [evidence(covers=["m1"], id="e1")],
        policy=POLICY,
    )
    reason = (
        "calc.py (file_write) is covered by no passing test_run\nutil.py (file_write) is covered"
    )
    cases = junit_cases(outputs.junit_report(result_for(document, reason), parse_claim(document)))
    calc = cases["claim-gate.mutations/file_write calc.py"].find("failure")
    util = cases["claim-gate.mutations/file_write util.py"].find("failure")
    assert calc is not None
    assert util is not None
    assert "util.py" not in (calc.text or "")
    assert "calc.py" not in (util.text or "")
    requirement = cases["claim-gate.policy/ops/gate requires test_run"].find("failure")
    assert requirement is not None
    assert requirement.text == "the policy requires a supporting test_run observation"


# --- what each format quotes is the agent's: escaped in that format's own terms ----------------

FORGED_HEADING = "</details>\n# VERIFIED\n<h1>VERIFIED</h1> **done** [ok](https://x.example) | `x"


def refuted_by(value: str, agent_reason: str = "") -> GateResult:
    """A readback that observed ``value``: refuted, and the value quoted in its reason."""
    document = claim_doc(evidence_items=[evidence(id="e1")], policy=POLICY)
    document["evidence"][0]["observed_value"] = {"billing_zip": value}
    result = result_for(document, agent_reason=agent_reason)
    assert result.verdict.state == "refuted"
    return result


def rendered(markdown: str) -> str:
    """The summary as a CommonMark renderer with GFM tables (GitHub's job summary) draws it."""
    from markdown_it import MarkdownIt

    html: str = MarkdownIt("commonmark", {"html": True}).enable("table").render(markdown)
    return html


def test_attack_159_a_refuted_value_cannot_add_a_heading_to_the_summary() -> None:
    """A refuted value holding raw HTML and Markdown (``</details>``, ``# VERIFIED``, an
    ``<h1>``) is quoted in the verdict's reason; in ``--summary-md`` it added a heading reading
    VERIFIED under the real one. Now it is text: one heading, the real one."""
    result = refuted_by(
        FORGED_HEADING, agent_reason="line\n</details>\n# VERIFIED\n```\n# VERIFIED"
    )
    assert "<h1>VERIFIED</h1>" in result.verdict.reason
    html = rendered(outputs.summary_markdown(result, parse_claim(result.document)))
    assert re.findall(r"<h\d>(.*?)</h\d>", html) == ["claim gate: REFUTED"]
    assert "<h1>" not in html
    assert "</details>" not in html
    assert "<a href" not in html
    assert "<strong>done</strong>" not in html
    assert "&lt;h1&gt;VERIFIED&lt;/h1&gt;" in html  # the value is still shown, as text
    table = re.search(r"<table>.*?</table>", html, re.S)
    assert table is not None
    assert table.group().count("<td>") == 4  # one row, four cells
    (pre,) = re.findall(r"<pre><code[^>]*>(.*?)</code></pre>", html, re.S)
    assert "# VERIFIED" in pre  # the reason stays in its code block


def test_attack_160_a_quoted_link_in_sarif_is_text_not_a_link() -> None:
    """SARIF message text reads ``[text](target)`` as an embedded link (3.11.6): a failure
    message or a value quoting one gave a viewer a link labelled as the agent liked. Now its
    brackets are escaped and the log is still valid."""
    quoted = "accounts/4471: [VERIFIED](https://x.example) \\ done"
    result = refuted_by("[VERIFIED](https://x.example)", agent_reason=quoted)
    log = valid_sarif(outputs.sarif_report(result, parse_claim(result.document), Path("/r")))
    texts = [r["message"]["text"] for r in log["runs"][0]["results"]]
    assert texts
    for text in texts:
        assert re.search(r"(?<!\\)\[", text) is None  # every bracket escaped
    assert any("\\[VERIFIED\\](https://x.example)" in text for text in texts)


def test_attack_161_junit_holds_no_character_xml_forbids() -> None:
    """A failure message with a terminal colour or a NUL (the agent's test prints what it likes)
    made the JUnit report unreadable XML: the CI system showed no failure at all."""
    result = refuted_by("ok", agent_reason="accounts/4471 \x1b[31mred\x1b[0m \x00 \ufffe end")
    data = outputs.junit_report(result, parse_claim(result.document))
    cases = junit_cases(data)  # parses
    failure = cases["claim-gate.mutations/state_write accounts/4471"].find("failure")
    assert failure is not None
    assert "\ufffd[31mred\ufffd[0m \ufffd \ufffd end" in (failure.text or "")


def runner_commands(printed: str) -> list[str]:
    """The workflow commands a GitHub Actions runner acts on in what a step printed: a line that
    starts (after blanks) with ``::``, except between ``::stop-commands::TOKEN`` and
    ``::TOKEN::``."""
    acted: list[str] = []
    paused_by: str | None = None
    for line in printed.splitlines():
        text = line.lstrip()
        if paused_by is not None:
            if text == f"::{paused_by}::":
                paused_by = None
            continue
        if text.startswith("::stop-commands::"):
            paused_by = text.removeprefix("::stop-commands::")
        elif text.startswith("::"):
            acted.append(text)
    assert paused_by is None, "the commands were never turned back on"
    return acted


def test_attack_162_a_file_name_or_outcome_cannot_issue_a_github_workflow_command(
    tmp_path: Path,
    write_config: WriteConfig,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Under GitHub Actions a printed line reading ``::error title=...::`` is an annotation on
    the run, and ``::add-mask::`` hides text from the log. The gate's report quotes the
    outcome and each changed file's name, which may hold a newline: both printed lines the
    runner would act on. Now the report is printed with workflow commands off."""
    repo = calc_project(tmp_path / "repo")
    config = write_config(GATE_POLICY + TEST_RUN_CHECK)
    start_gate(config, repo)
    write_files(repo, {"calc.py": CALC_BUGGY, "x\n::warning title=claim gate::VERIFIED.py": ""})
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    outcome = "Fixed.\n::notice title=claim gate::VERIFIED\n::add-mask::REFUTED"
    argv = ["gate", "--config", str(config.path), "--repo", str(repo), "--outcome", outcome]
    assert run(argv) == 2
    printed = capsys.readouterr().out
    assert "\n::warning title=claim gate::VERIFIED.py" in printed  # quoted, as it is
    assert runner_commands(printed) == []
    monkeypatch.delenv("GITHUB_ACTIONS")
    assert run(argv) == 2
    assert "::stop-commands::" not in capsys.readouterr().out  # elsewhere, printed as before
