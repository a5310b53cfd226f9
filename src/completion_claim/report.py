"""The readable report of a verdict. Pure text formatting: no I/O."""

from __future__ import annotations

import shlex
from collections.abc import Iterator
from typing import Any

from .model import (
    BUILTIN_POLICY,
    ENDPOINT_HEALTH,
    SIGNED,
    STATE_READBACK,
    TEST_RUN,
    UNCAPTURED,
    Claim,
    Evidence,
    Policy,
)
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
    "signatures_not_checked": "signed mode, but the verifier was given no way to check "
    "signatures (a library caller passes signatures=check_signatures)",
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
    "(a misspelt kind, one the policy's covered_by does not map, or a change that could not be "
    "captured)",
    "requirement_unmet": "the policy requires a supporting {check_type} observation",
    "no_mutations": "the claim records no change, and the policy requires one",
    "protected_target_changed": "mutation {mutation} changes a target the policy protects",
}


# --- a verdict the document records (``claim verify``, ``claim explain``, the service) -----------

DIFFERS_MEMBER = "recorded_verdict_differs"
"""Where a JSON answer names the document's own verdict when it disagrees with the one reached."""


def recorded_verdict_differs(claim: Claim, verdict: Verdict) -> dict[str, Any] | None:
    """``{state, unmet}`` of the document's own ``verdict`` when it disagrees with ``verdict``
    in state or unmet list, else None. It is compared, never used to decide: whoever wrote it
    may have judged under another policy or at another time, or written it by hand."""
    if claim.verdict is None:
        return None
    recorded = {"state": claim.verdict.get("state"), "unmet": claim.verdict.get("unmet")}
    reached = {"state": verdict.state, "unmet": [u.to_json() for u in verdict.unmet]}
    return None if recorded == reached else recorded


def disagreement_line(recorded: dict[str, Any]) -> str:
    """One line saying that the document's verdict differs, and which one decides."""
    unmet = recorded["unmet"]
    if isinstance(unmet, list):
        codes = [str(u.get("code"))[:40] if isinstance(u, dict) else "?" for u in unmet]
        shown = ", ".join(dict.fromkeys(codes[:8])) or "none"
    else:
        shown = "not a list"
    return (
        f"note: the document records another verdict ({str(recorded['state'])[:20]}; unmet: "
        f"{shown}); the verdict above, reached now under the policy applied, is the one that "
        "counts"
    )


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


def render_report(
    claim: Claim,
    verdict: Verdict,
    source: str = "",
    policy: Policy | None = None,
    *,
    steps: bool = True,
) -> str:
    """The verdict in words; ``policy`` is the operator's, as given to ``verify`` (the next steps
    read its covered_by). ``steps=False`` leaves the next steps out, for a caller that says what
    to do in its own terms (the gate observes by itself)."""
    items = {evidence_ref(item, i): item for i, item in enumerate(claim.evidence)}
    results = {result.evidence: result for result in verdict.evidence}
    lines = [
        f"{verdict.state.upper()}  {source}".rstrip(),
        f"  task {claim.task.id}: {claim.claimed_outcome}",
        f"  policy {verdict.policy_id}, {independence_text(verdict)}, "
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
    wanted = next_steps(claim, verdict, source, policy) if steps else []
    if wanted:
        lines += ["", "Next steps"]
        lines += [f"  - {step}" for step in wanted]
    return "\n".join(lines) + "\n"


# The findings of rule 1: why an item is not (proven) independent.
INDEPENDENCE_CODES = frozenset(
    {
        "self_attested",
        "signatures_not_checked",
        "no_attestation",
        "attestation_malformed",
        "payload_type_wrong",
        "signature_invalid",
        "unknown_observer",
        "check_type_not_allowed",
        "agent_key",
        "payload_malformed",
        "payload_mismatch",
        "bound_to_other_task",
        "mutation_digest_changed",
        "mutation_label_changed",
    }
)


def independence_text(verdict: Verdict) -> str:
    """How independence was established. A verdict that is not verified says how many items a
    trusted signature proved: "independence proven" would claim more than was shown when none
    was."""
    if verdict.independence != "proven" or verdict.state == "verified":
        return f"independence {verdict.independence}"
    proven = sum(
        1
        for result in verdict.evidence
        if not any(f.code in INDEPENDENCE_CODES for f in result.reasons)
    )
    total = len(verdict.evidence)
    return f"signed mode; {proven} of {total} {'item' if total == 1 else 'items'} proven"


def next_steps(
    claim: Claim, verdict: Verdict, source: str = "", policy: Policy | None = None
) -> list[str]:
    """What would move an unverified or refuted verdict on: what to look at, from the unmet codes
    and the findings, then for each check type still wanted the one ``claim observe`` command that
    would record it for every mutation that needs it. Empty when verified."""
    if verdict.state == "verified":
        return []
    steps = _Steps(claim, verdict, source, policy or claim.policy or BUILTIN_POLICY)
    looks = list(dict.fromkeys(steps.look()))
    return looks + [f"observe: {command}" for command in steps.commands()]


class _Steps:
    def __init__(self, claim: Claim, verdict: Verdict, source: str, policy: Policy) -> None:
        self.claim = claim
        self.verdict = verdict
        self.path = shlex.quote(source) if source and source != "stdin" else "CLAIM"
        self.items = {evidence_ref(item, i): item for i, item in enumerate(claim.evidence)}
        self.may_cover = policy.coverage
        self.signed = policy.trust is not None and policy.trust.mode == SIGNED
        self.kinds = {m.id: m.kind for m in claim.mutations}
        self.targets = {m.id: m.target for m in claim.mutations}
        # check type -> the mutations a new observation of that type should cover
        self.wanted: dict[str, dict[str, None]] = {}

    def want(self, check_type: str, covers: tuple[str, ...]) -> None:
        self.wanted.setdefault(check_type, {}).update(dict.fromkeys(covers))

    def look(self) -> Iterator[str]:
        for unmet in self.verdict.unmet:
            if unmet.code == "contradicted" and unmet.evidence is not None:
                yield self.contradicted(unmet.evidence)
        for result in self.verdict.evidence:
            for finding in result.reasons:
                yield self.finding(result.evidence, finding)
        for cover in self.verdict.coverage:
            if not cover.covered_by and not cover.contradicted_by:
                for named in cover.not_counted:
                    for finding in named.reasons:
                        if finding.code == "kind_not_covered":
                            yield self.finding(named.evidence, finding)
        for unmet in self.verdict.unmet:
            yield from self.unmet(unmet)

    def contradicted(self, ref: str) -> str:
        result = next(r for r in self.verdict.evidence if r.evidence == ref)
        item = self.items[ref]
        self.want(item.check_type, item.covers)
        return (
            f"look at {ref}: its {result.check_type} observation of {item.target} differs at "
            f"{result.mismatch}; fix that, then observe again"
        )

    def finding(self, ref: str, finding: Finding) -> str:
        code = finding.code
        item = self.items[ref]
        if code != "kind_not_covered":
            self.want(item.check_type, item.covers)
        if code == "no_observation":
            error = (item.details or {}).get("error")
            why = f" ({' '.join(error.split())[:120]})" if isinstance(error, str) else ""
            return f"{ref} could not observe{why}: make {item.target} reachable, observe again"
        if code == "stale":
            return f"{ref} is older than the policy's max_age_s: observe again"
        if code in ("premature", "superseded"):
            return f"{ref} predates mutation {finding.mutation}: observe after the last change"
        if code == "kind_not_covered":
            kind = self.kinds.get(finding.mutation or "", "")
            return (
                f"{ref} may not cover mutation {finding.mutation} ({finding.detail}); the "
                f"policy's covered_by says which check types may cover a {kind[:40]!r} mutation"
            )
        if code == "self_attested":
            return f"{ref} is the agent's own report: observe from outside the agent"
        if code == "from_future":
            return f"{ref} is dated after the decision time: check the observer's clock"
        if code == "not_discriminating":
            return (
                f"{ref} could not have failed ({finding.detail}): observe with an expectation "
                "that only the change makes true"
            )
        if code == "test_config_changed":
            return (
                f"{ref}: the agent changed the test setup ({finding.detail}); undo that and "
                "observe again, or ask the operator for a policy with allow_test_changes"
            )
        if code == "unknown_check_type":
            return f"{ref}: no rule knows check type {item.check_type[:40]!r}"
        if code in INDEPENDENCE_CODES:
            return (
                f"{ref}: {describe_finding(finding)}: an observer the policy trusts must observe "
                "and sign it"
            )
        return f"{ref}: {describe_finding(finding)}"

    def unmet(self, unmet: Unmet) -> Iterator[str]:
        if unmet.code == "no_evidence" and not self.claim.mutations:
            yield f"record what the agent changed (claim mutate {self.path} ...), then observe"
        if unmet.code == "no_evidence":
            for mutation in self.claim.mutations:
                self.cover(mutation.id)
        elif unmet.code == "mutation_uncovered" and unmet.mutation is not None:
            self.cover(unmet.mutation)
        elif unmet.code == "no_mutations":
            yield (
                "nothing was changed, and the policy requires a change: make the change the "
                "task asks for (or record it: claim mutate / claim capture-git), then observe"
            )
        elif unmet.code == "protected_target_changed" and unmet.mutation is not None:
            yield (
                f"mutation {unmet.mutation} changed {self.targets.get(unmet.mutation, '')[:80]}, "
                "which the policy protects: undo that change; no evidence can cover it"
            )
        elif (
            unmet.code == "mutation_kind_unmapped"
            and self.kinds.get(unmet.mutation or "") == UNCAPTURED
        ):
            yield (
                f"mutation {unmet.mutation}: the change to "
                f"{self.targets.get(unmet.mutation or '', '')[:80]} could not be captured; make "
                "it readable (no link out of the work tree, file names git can record), then "
                "capture and observe again"
            )
        elif unmet.code == "mutation_kind_unmapped" and unmet.mutation is not None:
            kind = self.kinds.get(unmet.mutation, "")
            yield (
                f"mutation {unmet.mutation} is of kind {kind[:40]!r}, which no check type may "
                "cover: correct the kind, or map it in the policy's covered_by"
            )
        elif unmet.code == "requirement_unmet" and unmet.check_type is not None:
            self.want(
                unmet.check_type,
                tuple(
                    m.id
                    for m in self.claim.mutations
                    if unmet.check_type in self.may_cover.get(m.kind, ())
                ),
            )

    def cover(self, mutation_id: str) -> None:
        """Wants the first check type (by name) the policy lets cover the mutation's kind."""
        allowed = sorted(self.may_cover.get(self.kinds.get(mutation_id, ""), ()))
        check_type = next((c for c in allowed if c in _COMMANDS), None)
        if check_type is not None:
            self.want(check_type, (mutation_id,))

    def commands(self) -> Iterator[str]:
        order = {m.id: i for i, m in enumerate(self.claim.mutations)}
        for check_type in sorted(self.wanted):
            covers = sorted(self.wanted[check_type], key=lambda m: order.get(m, len(order)))
            command = self.command(check_type, covers)
            if command is not None:
                yield command

    def command(self, check_type: str, covers: list[str]) -> str | None:
        """The ``claim observe`` command that records ``check_type`` evidence for ``covers``; what
        only the operator knows stays a placeholder in capitals, unless an earlier item of the
        same check type shows it (its test command, its URL)."""
        shape = _COMMANDS.get(check_type)
        if shape is None:
            return None
        example = next((e for e in self.claim.evidence if e.check_type == check_type), None)
        if check_type == TEST_RUN:
            target = example.target if example is not None else "TEST-COMMAND"
        else:
            # An earlier item's target names its URL ("GET https://...", "sqlite:///... table").
            words = example.target.split() if example is not None else []
            target = next((shlex.quote(w) for w in words if "://" in w), "URL")
        covers_option = f"--covers {shlex.quote(','.join(covers))}"
        if self.signed:
            covers_option += " --sign-key OBSERVER-KEY"
        return shape.format(path=self.path, covers=covers_option, target=target)


_COMMANDS = {
    TEST_RUN: "claim observe test-run {path} {covers} -- {target}",
    ENDPOINT_HEALTH: "claim observe endpoint {path} {target} --expect-json POINTER=VALUE {covers}",
    STATE_READBACK: "claim observe readback {path} {target} --table TABLE --key COLUMN=VALUE "
    "--expect FIELD=VALUE {covers}",
}


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


# --- every rule per evidence item (``claim explain``, ``claim -v verify``) ----------------------

RULES: tuple[tuple[str, frozenset[str]], ...] = (
    ("independent", INDEPENDENCE_CODES),
    ("observed", frozenset({"no_observation"})),
    ("known check type", frozenset({"unknown_check_type"})),
    ("after its mutations", frozenset({"premature"})),
    ("not superseded", frozenset({"superseded"})),
    ("not dated in the future", frozenset({"from_future"})),
    ("fresh", frozenset({"stale"})),
    ("test setup unchanged", frozenset({"test_config_changed"})),
    ("could have failed", frozenset({"not_discriminating"})),
    ("kind may be covered", frozenset({"kind_not_covered"})),
)
"""The rules an evidence item is judged by, in the order the verifier applies them, with the
finding codes each gives."""


def rule_results(claim: Claim, verdict: Verdict) -> list[dict[str, Any]]:
    """For each evidence item, every rule's outcome: ``pass``, ``fail`` with its findings, or
    ``n/a`` when the rule does not apply to the item (a test-setup check on a readback, whether
    an item that observed nothing could have failed)."""
    items = {evidence_ref(item, i): item for i, item in enumerate(claim.evidence)}
    by_kind: dict[str, list[Finding]] = {}
    for cover in verdict.coverage:
        for named in cover.not_counted:
            by_kind.setdefault(named.evidence, []).extend(
                f for f in named.reasons if f.code == "kind_not_covered"
            )
    out = []
    for result in verdict.evidence:
        item = items[result.evidence]
        findings = [*result.reasons, *by_kind.get(result.evidence, [])]
        rules = []
        for name, codes in RULES:
            failed = [f for f in findings if f.code in codes]
            if failed:
                outcome = "fail"
            elif not _applies(name, item, findings):
                outcome = "n/a"
            else:
                outcome = "pass"
            rules.append(
                {
                    "rule": name,
                    "result": outcome,
                    "findings": [{**f.to_json(), "text": describe_finding(f)} for f in failed],
                }
            )
        out.append(
            {
                "evidence": result.evidence,
                "check_type": result.check_type,
                "observation": result.observation,
                "counts": result.counts,
                "rules": rules,
                **({"mismatch": result.mismatch} if result.mismatch is not None else {}),
            }
        )
    return out


def _applies(rule: str, item: Evidence, findings: list[Finding]) -> bool:
    if rule == "test setup unchanged":
        return item.check_type == TEST_RUN
    if rule == "could have failed":
        # The verifier asks this only of an observation of a check type it knows.
        return item.observed and not any(f.code == "unknown_check_type" for f in findings)
    if rule == "kind may be covered":
        return bool(item.covers)
    return True
