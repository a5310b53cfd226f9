"""The readable report of a verdict. Pure text formatting: no I/O."""

from __future__ import annotations

from .model import Claim
from .timefmt import format_time
from .verify import EvidenceResult, Finding, Unmet, Verdict, evidence_ref

_FINDING_TEXT = {
    "self_attested": "self-attested: the agent's own report never satisfies a requirement",
    "no_observation": "no observation: the attempt to observe did not produce one",
    "unknown_check_type": "unknown check type",
    "experimental_off": "switched off: the policy does not count experimental check types",
    "premature": "not collected strictly after mutation {mutation}, which it covers",
    "superseded": "superseded by mutation {mutation}, made at or after it",
    "from_future": "dated after the decision time",
    "stale": "stale: older than the policy's max_age_s at decision time",
    "not_discriminating": "could not have failed",
    "test_config_changed": "the observer saw the protected test files or test settings changed, "
    "so the agent's own code may have decided the run (the policy's allow_test_changes is off)",
    "kind_not_covered": "its check type may not cover mutation {mutation}'s kind",
    # Signed mode: why no trusted observer's signature proves the item independent.
    "no_attestation": "not signed: signed mode counts only evidence a trusted observer signed",
    "attestation_malformed": "attestation is not a readable DSSE envelope",
    "payload_type_wrong": "attestation has the wrong payload type",
    "signature_invalid": "no valid signature by the observer it names",
    "unknown_observer": "signed mode: the observer it names is not trusted by the policy",
    "check_type_not_allowed": "the policy does not let this observer attest this check type",
    "agent_key": "signed with a key the agent holds",
    "payload_malformed": "the signed payload is not an evidence payload",
    "payload_mismatch": "edited after signing",
    "bound_to_other_task": "signed for another task",
    "mutation_digest_changed": "mutation {mutation} changed after it was observed",
    "mutation_label_changed": "mutation {mutation} is not described as it was when observed",
}

_UNMET_TEXT = {
    "contradicted": "evidence {evidence} contradicts the claim",
    "no_evidence": "the claim has no evidence at all",
    "no_supporting_evidence": "no evidence qualifies and supports the claim",
    "mutation_uncovered": "mutation {mutation} is not covered by qualifying evidence",
    "mutation_kind_unmapped": "mutation {mutation} is of a kind no check type may cover "
    "(a misspelt kind, or one the policy's covered_by does not map)",
    "requirement_unmet": "the policy requires a supporting {check_type} observation",
}


def describe_finding(finding: Finding) -> str:
    text = _FINDING_TEXT.get(finding.code, finding.code).format(mutation=finding.mutation)
    if finding.detail:
        text = f"{text} ({finding.detail})"
    return text


def describe_unmet(unmet: Unmet) -> str:
    template = _UNMET_TEXT.get(unmet.code, unmet.code)
    return template.format(
        mutation=unmet.mutation, check_type=unmet.check_type, evidence=unmet.evidence
    )


def render_report(claim: Claim, verdict: Verdict, source: str = "") -> str:
    items = {evidence_ref(item, i): item for i, item in enumerate(claim.evidence)}
    results = {result.evidence: result for result in verdict.evidence}
    lines = [
        f"{verdict.state.upper()}  {source}".rstrip(),
        f"  task {claim.task.id}: {claim.claimed_outcome}",
        f"  policy {verdict.policy_id}, independence {verdict.independence}, "
        f"decided at {format_time(verdict.decided_at)}",
        f"  {verdict.reason}",
        "",
        "Mutations",
    ]
    if not claim.mutations:
        lines.append("  (none)")
    coverage = {c.mutation: c for c in verdict.coverage}
    for mutation in claim.mutations:
        lines.append(
            f"  {mutation.id}  {mutation.kind} {mutation.target} at {format_time(mutation.at)}"
        )
        cover = coverage[mutation.id]
        if cover.covered_by:
            lines.append(f"      covered by {_refs(cover.covered_by, results)}")
        if cover.contradicted_by:
            lines.append(f"      contradicted by {_refs(cover.contradicted_by, results)}")
        if not cover.covered_by and not cover.contradicted_by:
            lines.append("      NOT COVERED")
            # An item can count and still not cover this mutation: say why here, once.
            lines += [
                f"      - {r.evidence}: {describe_finding(f)}"
                for r in cover.not_counted
                for f in r.reasons
                if f.code == "kind_not_covered"
            ]
    uncounted = [r for r in verdict.evidence if not r.counts]
    task_level = [r for r in verdict.evidence if r.counts and not items[r.evidence].covers]
    if task_level:
        lines += ["", "Task-level evidence that counts"]
        lines += [f"  {r.evidence}  {r.check_type}: {_observation(r)}" for r in task_level]
    if uncounted:
        lines += ["", "Evidence that does not count"]
        for result in uncounted:
            item = items[result.evidence]
            lines.append(
                f"  {result.evidence}  {result.check_type} by {item.verifier.id} "
                f"({_kind(item.verifier.kind, verdict)}), {_observation(result)}"
            )
            lines += [f"      - {describe_finding(f)}" for f in result.reasons]
            error = (item.details or {}).get("error")
            if not item.observed and isinstance(error, str):
                # A recorded failed attempt (``--record-failure``): why nothing was observed.
                lines.append(f"      could not observe: {' '.join(error.split())[:300]}")
            if result.mismatch:
                lines.append(f"      differs at {result.mismatch}")
    if verdict.unmet:
        lines += ["", "Unmet"]
        lines += [f"  - {describe_unmet(u)}" for u in verdict.unmet]
    return "\n".join(lines) + "\n"


def _kind(kind: str, verdict: Verdict) -> str:
    # In signed mode the written kind is not read; say so rather than seem to endorse it.
    return kind if verdict.independence == "declared" else f"declares {kind}"


def _refs(refs: tuple[str, ...], results: dict[str, EvidenceResult]) -> str:
    return ", ".join(f"{ref} ({results[ref].check_type})" for ref in refs)


def _observation(result: EvidenceResult) -> str:
    return {
        "matches": "observation matches the expectation",
        "differs": "observation CONTRADICTS the expectation",
        "absent": "no observation",
    }[result.observation]
