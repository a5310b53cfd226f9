"""What CI systems read from a gate run: a Markdown summary (GitHub's job summary), a JUnit XML
report (GitLab's and Jenkins' test widgets) and a dotenv file (GitLab's ``reports: dotenv``).

Each is written atomically. The summary is appended to (GitHub's ``$GITHUB_STEP_SUMMARY`` is
one file shared by every step of the job): the old content and the new are written together in
one replacement.

The dotenv file follows GitLab's rules, the strictest reader: one ``NAME=value`` per line, no
quoting (GitLab keeps quote characters as part of the value), no multi-line values, under 5 KB.
A value is therefore made one line of printable text, so nothing in a reason can start a line
of its own and set another variable.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from pathlib import Path

from .._files import write_atomic
from ..model import Claim
from ..report import describe_finding, describe_unmet
from .run import GateResult

DOTENV_REASON_LIMIT = 1000
_SUITE = "claim-gate"


def summary_markdown(result: GateResult, claim: Claim) -> str:
    verdict = result.verdict
    lines = [
        f"### claim gate: {verdict.state.upper()}",
        "",
        f"{_cell(verdict.reason)}",
        "",
        "| mutation | kind | target | covered by |",
        "| --- | --- | --- | --- |",
    ]
    coverage = {c.mutation: c for c in verdict.coverage}
    for mutation in claim.mutations:
        cover = coverage[mutation.id]
        if cover.contradicted_by:
            by = "contradicted by " + ", ".join(cover.contradicted_by)
        else:
            by = ", ".join(cover.covered_by) or "**not covered**"
        lines.append(
            f"| {mutation.id} | {mutation.kind} | `{_cell(mutation.target)}` | {_cell(by)} |"
        )
    if not claim.mutations:
        lines.append("| (none) | | | |")
    if result.agent_reason:
        reason = result.agent_reason.replace("```", "'''")
        lines += ["", "Why:", "", "```text", *reason.splitlines(), "```"]
    lines += [
        "",
        f"Policy `{_cell(verdict.policy_id)}`, independence {verdict.independence}. "
        f"Claim: `{_cell(str(result.claim_path))}`",
        "",
    ]
    return "\n".join(lines)


def junit_report(result: GateResult, claim: Claim) -> bytes:
    """One test case per mutation (covered, and by what) and per policy requirement."""
    verdict = result.verdict
    suite = ET.Element("testsuite", name=_SUITE)
    coverage = {c.mutation: c for c in verdict.coverage}
    failures = 0
    for mutation in claim.mutations:
        cover = coverage[mutation.id]
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"{_SUITE}.mutations",
            name=f"{mutation.kind} {mutation.target}",
        )
        if cover.covered_by and not cover.contradicted_by:
            ET.SubElement(case, "system-out").text = "covered by " + ", ".join(cover.covered_by)
            continue
        failures += 1
        why = [describe_finding(f) for r in cover.not_counted for f in r.reasons]
        if cover.contradicted_by:
            message = "contradicted by " + ", ".join(cover.contradicted_by)
        else:
            message = "not covered by qualifying evidence"
        failure = ET.SubElement(case, "failure", message=message, type="not_covered")
        failure.text = "\n".join([message, *why, result.agent_reason]).strip()
    met = {u.check_type for u in verdict.unmet if u.code == "requirement_unmet" and u.check_type}
    policy = verdict.policy_id
    # The requirements the verdict names as unmet, and those of the policy it was decided by.
    required = sorted({*met, *_required(claim)})
    for check_type in required:
        case = ET.SubElement(
            suite, "testcase", classname=f"{_SUITE}.policy", name=f"{policy} requires {check_type}"
        )
        if check_type in met:
            failures += 1
            ET.SubElement(
                case, "failure", message=f"no supporting {check_type} observation counted",
                type="requirement_unmet",
            ).text = verdict.reason  # fmt: skip
    case = ET.SubElement(suite, "testcase", classname=f"{_SUITE}.verdict", name="verdict")
    if verdict.state != "verified":
        failures += 1
        ET.SubElement(case, "failure", message=verdict.state, type=verdict.state).text = "\n".join(
            [verdict.reason, *(describe_unmet(u) for u in verdict.unmet)]
        )
    suite.set("tests", str(len(suite)))
    suite.set("failures", str(failures))
    suite.set("errors", "0")
    root = ET.Element("testsuites")
    root.append(suite)
    text: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return text + b"\n"


def _required(claim: Claim) -> tuple[str, ...]:
    return claim.policy.requires if claim.policy is not None else ()


def dotenv(result: GateResult) -> str:
    reason = _one_line(result.agent_reason or result.verdict.reason)
    if len(reason) > DOTENV_REASON_LIMIT:
        reason = reason[: DOTENV_REASON_LIMIT - 3] + "..."
    values = {
        "CLAIM_STATE": result.verdict.state,
        "CLAIM_CLAIM_PATH": _one_line(str(result.claim_path)),
        "CLAIM_REASON": reason,
    }
    return "".join(f"{name}={value}\n" for name, value in values.items())


def write_summary(path: Path, text: str) -> None:
    try:
        before = path.read_bytes()
    except FileNotFoundError:
        before = b""
    separator = b"\n" if before and not before.endswith(b"\n") else b""
    write_atomic(path, before + separator + text.encode())


def write_junit(path: Path, result: GateResult, claim: Claim) -> None:
    write_atomic(path, junit_report(result, claim))


def write_dotenv(path: Path, result: GateResult) -> None:
    write_atomic(path, dotenv(result).encode())


def _one_line(text: str) -> str:
    printable = "".join(ch if ch.isprintable() else " " for ch in text.replace("\n", " | "))
    return " ".join(printable.split())


def _cell(text: str) -> str:
    """Text safe inside a Markdown table cell or paragraph."""
    return _one_line(text).replace("|", "\\|").replace("`", "'")
