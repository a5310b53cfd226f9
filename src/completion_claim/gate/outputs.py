"""What CI systems read from a gate run: a Markdown summary (GitHub's job summary), a JUnit XML
report (GitLab's and Jenkins' test widgets), a dotenv file (GitLab's ``reports: dotenv``) and a
SARIF 2.1.0 log (GitHub code scanning, and any SARIF viewer).

Each is written atomically. The summary is appended to (GitHub's ``$GITHUB_STEP_SUMMARY`` is
one file shared by every step of the job): the old content and the new are written together in
one replacement.

Everything they quote is the agent's to choose (a refuted value, a test's failure message, a
file name), so each format escapes it in its own terms: the summary's Markdown text has every
ASCII punctuation character backslash-escaped (no heading, emphasis, link or HTML tag can start
in it), its code spans and fenced block hold it literally; JUnit XML holds no character XML 1.0
forbids; SARIF message text has its embedded-link brackets escaped (SARIF 2.1.0, 3.11.6). The
dotenv file follows GitLab's rules, the strictest reader: one ``NAME=value`` per line, no
quoting (GitLab keeps quote characters as part of the value), no multi-line values, under 5 KB.
A value is therefore made one line of printable text, so nothing in a reason can start a line
of its own and set another variable.
"""

from __future__ import annotations

import hashlib
import re
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any
from urllib.parse import quote

from .. import __version__
from .._files import write_atomic
from .._json import dumps
from ..model import FILE_WRITE, TEST_RUN, Claim, Evidence
from ..report import describe_finding, describe_unmet
from ..verify import Unmet, evidence_ref
from .reason import node_id
from .run import GateResult

DOTENV_REASON_LIMIT = 1000
_SUITE = "claim-gate"


def summary_markdown(result: GateResult, claim: Claim) -> str:
    verdict = result.verdict
    lines = [
        f"### claim gate: {verdict.state.upper()}",
        "",
        f"{_markdown(verdict.reason)}",
        "",
        "| mutation | kind | target | covered by |",
        "| --- | --- | --- | --- |",
    ]
    coverage = {c.mutation: c for c in verdict.coverage}
    for mutation in claim.mutations:
        cover = coverage[mutation.id]
        if cover.contradicted_by:
            by = "contradicted by " + _markdown(", ".join(cover.contradicted_by))
        else:
            by = _markdown(", ".join(cover.covered_by)) or "**not covered**"
        cells = (_markdown(mutation.id), _markdown(mutation.kind), _code(mutation.target), by)
        lines.append("| {} | {} | `{}` | {} |".format(*cells))
    if not claim.mutations:
        lines.append("| (none) | | | |")
    if result.agent_reason:
        reason = result.agent_reason.replace("```", "'''")
        lines += ["", "Why:", "", "```text", *reason.splitlines(), "```"]
    lines += [
        "",
        f"Policy `{_code(verdict.policy_id)}`, independence {verdict.independence}. "
        f"Claim: `{_code(str(result.claim_path))}`",
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
        # Its own lines only: the agent's whole reason, repeated in every failure, buried them.
        failure.text = "\n".join(
            dict.fromkeys([message, *why, *_reason_lines(result, mutation.target)])
        )
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
            ).text = describe_unmet(Unmet("requirement_unmet", check_type=check_type))  # fmt: skip
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
    for element in root.iter():
        # ElementTree escapes markup but writes any character as it is: one XML 1.0 forbids
        # (a test's ANSI colour, a NUL) would leave the CI system no report to read at all.
        element.text = None if element.text is None else _xml_text(element.text)
        for name, value in element.attrib.items():
            element.set(name, _xml_text(value))
    text: bytes = ET.tostring(root, encoding="utf-8", xml_declaration=True)
    return text + b"\n"


# What XML 1.0 allows (section 2.2): tab, newline, carriage return, and the rest from U+0020 but
# the surrogates and U+FFFE, U+FFFF.
_XML_FORBIDDEN = re.compile("[^\t\n\r\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def _xml_text(text: str) -> str:
    return _XML_FORBIDDEN.sub("\ufffd", text)


def _reason_lines(result: GateResult, target: str) -> list[str]:
    """The lines of the agent's reason that name ``target``."""
    return [line for line in result.agent_reason.splitlines() if target in line]


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


SARIF_SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
# What each stable unmet code means, for a SARIF viewer's rule help.
_RULE_HELP = {
    "contradicted": "An independent observation that counts contradicts the claim: a test the "
    "change was judged by failed, or a record does not hold what the claim says.",
    "no_evidence": "The claim holds no observation at all: nothing was checked.",
    "no_supporting_evidence": "No observation counts and supports the claim.",
    "no_mutations": "The gate found no change in the work tree, and the policy requires one.",
    "mutation_uncovered": "A change is covered by no independent, recent observation made after "
    "it that could have failed: a changed file by a passing test run, a record by a readback.",
    "mutation_kind_unmapped": "A change is of a kind no check type of the policy may cover, or "
    "the gate could not capture it.",
    "protected_target_changed": "A change touches a target the policy protects (the gate's own "
    "configuration): the operator's, not the agent's, to change.",
    "requirement_unmet": "The policy requires a supporting observation of a check type, and "
    "none counted.",
}
_GENERIC_HELP = "A requirement of the operator's policy is not met."


def sarif_report(
    result: GateResult, claim: Claim, root: Path, config: Path | None = None
) -> dict[str, Any]:
    """One SARIF result per unmet requirement of the verdict: an uncovered or unmapped change,
    a contradiction, a missing requirement. ``root`` is the repository's root, for the test
    files a failing test's name maps to; ``config`` the gate's claim.toml, where a result with
    no file of its own is located when the file is in the repository (GitHub code scanning
    refuses a result without a location)."""
    fallback = _inside(config, root)
    verdict = result.verdict
    level = "error" if verdict.state == "refuted" else "warning"
    mutations = {m.id: m for m in claim.mutations}
    items = {evidence_ref(item, i): item for i, item in enumerate(claim.evidence)}
    coverage = {c.mutation: c for c in verdict.coverage}
    codes = list(dict.fromkeys(u.code for u in verdict.unmet))
    results = []
    for unmet in verdict.unmet:
        lines = [describe_unmet(unmet)]
        paths: list[str] = []
        subject = unmet.check_type or ""
        mutation = mutations.get(unmet.mutation or "")
        if mutation is not None:
            subject = f"{mutation.kind} {mutation.target}"
            if mutation.kind == FILE_WRITE:
                paths.append(mutation.target)
            cover = coverage.get(mutation.id)
            if cover is not None:
                lines += [describe_finding(f) for r in cover.not_counted for f in r.reasons]
            lines += _reason_lines(result, mutation.target)
        item = items.get(unmet.evidence or "")
        if item is not None:
            subject = f"{item.check_type} {item.target}"
            failed = _failed_tests(item, root)
            lines += [f"{name} {message}" for name, message in failed]
            paths += [name.partition("::")[0] for name, _ in failed if "::" in name]
        results.append(
            {
                "ruleId": unmet.code,
                "ruleIndex": codes.index(unmet.code),
                "level": level,
                "message": {"text": _sarif_text("\n".join(dict.fromkeys(lines)))},
                "locations": [_location(path) for path in dict.fromkeys(paths or fallback)],
                # The same unmet requirement on the same subject is the same alert from one run
                # to the next: code scanning closes it when a run no longer reports it.
                "partialFingerprints": {
                    "claimGate/v1": hashlib.sha256(f"{unmet.code}\0{subject}".encode()).hexdigest()
                },
            }
        )
    rules = [
        {
            "id": code,
            "name": "".join(part.title() for part in code.split("_")),
            "shortDescription": {"text": _RULE_SHORT.get(code, code)},
            "help": {"text": _RULE_HELP.get(code, _GENERIC_HELP)},
            "defaultConfiguration": {"level": "warning"},
        }
        for code in codes
    ]
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "claim gate",
                        "version": __version__,
                        "informationUri": "https://github.com/completion-claim/completion-claim",
                        "rules": rules,
                    }
                },
                "automationDetails": {"id": f"claim-gate/{verdict.policy_id}/"},
                "results": results,
                "properties": {
                    "verdict": verdict.state,
                    "policy": verdict.policy_id,
                    "claim": str(result.claim_path),
                },
            }
        ],
    }


_RULE_SHORT = {
    "contradicted": "An observation contradicts the claim",
    "no_evidence": "No evidence",
    "no_supporting_evidence": "No supporting evidence",
    "no_mutations": "No change",
    "mutation_uncovered": "A change no observation covers",
    "mutation_kind_unmapped": "A change no check type may cover",
    "protected_target_changed": "A protected target changed",
    "requirement_unmet": "A required observation is missing",
}


def _failed_tests(item: Evidence, root: Path) -> list[tuple[str, str]]:
    """A test run's failed tests as (node id, "failed: first line")."""
    failures = (item.details or {}).get("failures")
    if item.check_type != TEST_RUN or not isinstance(failures, list):
        return []
    found = []
    for failure in failures:
        if isinstance(failure, dict):
            verb = "failed" if failure.get("outcome") == "failed" else "errored"
            message = failure.get("message") or "no message"
            found.append((node_id(str(failure.get("test", "")), root), f"{verb}: {message}"))
    return found


def _inside(path: Path | None, root: Path) -> list[str]:
    """``path`` relative to ``root`` when it lies in it: [] otherwise."""
    if path is None:
        return []
    try:
        return [path.resolve().relative_to(root.resolve()).as_posix()]
    except ValueError:
        return []


def _location(path: str) -> dict[str, Any]:
    return {"physicalLocation": {"artifactLocation": {"uri": _uri(path), "uriBaseId": "%SRCROOT%"}}}


def _uri(path: str) -> str:
    """A work-tree path as a relative URI reference: percent-encoded, never absolute."""
    return quote(path.lstrip("/"), safe="/-._~")


def write_sarif(
    path: Path, result: GateResult, claim: Claim, root: Path, config: Path | None = None
) -> None:
    log = sarif_report(result, claim, root, config)
    write_atomic(path, dumps(log, indent=2).encode() + b"\n")


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


def _code(text: str) -> str:
    """Text safe inside a Markdown code span in a table cell or paragraph: one line, no backtick
    to end the span, no pipe to end the cell (GFM splits cells before it reads code spans)."""
    return _one_line(text).replace("|", "\\|").replace("`", "'")


_MARKDOWN_SPECIAL = re.compile(r"([!-/:-@\[-`{-~])")


def _markdown(text: str) -> str:
    """Text safe as Markdown text in a table cell or paragraph: one line, and every ASCII
    punctuation character backslash-escaped (CommonMark reads each as itself), so no tag, heading,
    emphasis, link or cell boundary can start in it."""
    return _MARKDOWN_SPECIAL.sub(r"\\\1", _one_line(text))


def _sarif_text(text: str) -> str:
    """A SARIF message's plain text: a backslash and the brackets of an embedded link escaped
    (SARIF 2.1.0, 3.11.6), so a quoted ``[text](url)`` is never a link a viewer follows."""
    return re.sub(r"([\\\[\]])", r"\\\1", text)
