"""The verifier: a pure function of (claim, policy, decision time).

Each rule is a small named function that returns why an evidence item does not count, or None.
``verify`` composes them; it never reads the document's own verdict and never does I/O.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta, Struct

from ._json import cycle_collection_paused
from .checks import CHECK_TYPES, why_not_discriminating, why_switched_off
from .checks.test_run import changed_test_config
from .match import first_mismatch, satisfies
from .model import (
    ABSENT,
    BUILTIN_POLICY,
    FILE_WRITE,
    INDEPENDENT,
    SIGNED,
    TEST_RUN,
    UNCAPTURED,
    Claim,
    Evidence,
    Mutation,
    Policy,
    Trust,
)

State = Literal["verified", "unverified", "refuted"]
Observation = Literal["matches", "differs", "absent"]


_ENCODE = msgspec.json.Encoder().encode


class _Result(Struct, frozen=True, gc=False, omit_defaults=True, forbid_unknown_fields=True):
    """A part of the verdict: immutable, a tree, written as JSON without its unset members."""

    def to_json(self) -> dict[str, Any]:
        """The JSON value, as Python objects: exactly what ``encode`` writes, decoded (with the
        cycle collector paused: it would re-scan a large verdict's growing tree)."""
        with cycle_collection_paused():
            out: dict[str, Any] = msgspec.json.decode(_ENCODE(self))
        return out


class Finding(_Result, frozen=True):
    """One reason an evidence item does not count."""

    code: str
    mutation: str | None = None
    detail: str | None = None


class Unmet(_Result, frozen=True):
    """One thing the claim still lacks; ``code`` is stable, the ids say where.

    The verifier's codes: contradicted, no_evidence, no_supporting_evidence, no_mutations,
    mutation_uncovered, mutation_kind_unmapped, protected_target_changed, requirement_unmet.
    """

    code: str
    mutation: str | None = None
    check_type: str | None = None
    evidence: str | None = None


class EvidenceResult(_Result, frozen=True):
    """How one evidence item was judged: it ``counts`` when no rule found a reason against it."""

    evidence: str
    check_type: str
    counts: bool
    observation: Observation
    reasons: tuple[Finding, ...]
    mismatch: str | None = None  # where the observation differs, when it does

    @property
    def supports(self) -> bool:
        return self.counts and self.observation == "matches"

    @property
    def contradicts(self) -> bool:
        return self.counts and self.observation == "differs"


class NotCounted(_Result, frozen=True):
    """An evidence item naming a mutation that does not count for it, and why."""

    evidence: str
    reasons: tuple[Finding, ...]


class Coverage(_Result, frozen=True):
    """Which evidence covers one mutation, and why each other item naming it does not count for
    it: its own findings, and ``kind_not_covered`` when its check type may not cover the
    mutation's kind (such an item may still count, and cover other mutations)."""

    mutation: str
    covered_by: tuple[str, ...]
    contradicted_by: tuple[str, ...]
    not_counted: tuple[NotCounted, ...]


class Verdict(_Result, frozen=True):
    """The verifier's decision, as ``claim verify --json`` prints it."""

    state: State
    unmet: tuple[Unmet, ...]
    reason: str
    decided_at: Annotated[datetime, Meta(tz=True)]  # in UTC
    policy_id: str
    independence: Literal["declared", "proven"]
    coverage: tuple[Coverage, ...]
    evidence: tuple[EvidenceResult, ...]

    def encode(self) -> bytes:
        """The verdict as compact UTF-8 JSON, straight from the objects (``to_json`` builds
        the same value as Python objects)."""
        return _ENCODE(self)


Independence = Callable[[Evidence], Finding | None]
"""Decides rule 1 for one item: None when it is independent, else why not."""
SignatureCheck = Callable[[Claim, Trust], Independence]
"""Builds rule 1's judge in signed mode for one claim: checks each item's signature against the
policy's trusted observers (``completion_claim.trust.check_signatures``). The verifier receives
it, as it receives the clock, so that the core holds no cryptography."""


def declared_independence(item: Evidence) -> Finding | None:
    """Rule 1 in declared mode: read ``verifier.kind`` as written."""
    if item.verifier.kind != INDEPENDENT:
        return Finding("self_attested")
    return None


def signatures_not_checked(_item: Evidence) -> Finding | None:
    """Rule 1 in signed mode when the caller gave no way to check signatures: nothing counts."""
    return Finding("signatures_not_checked")


class _Timeline:
    """Mutation times indexed for the ordering rules, so large claims stay near-linear: each
    series holds the times and the mutations of one target (or of every file write), in
    chronological order, ties broken by id."""

    def __init__(self, mutations: Iterable[Mutation]) -> None:
        ordered = sorted(mutations, key=_chronological)
        self.by_id = {mutation.id: mutation for mutation in ordered}
        self.by_target: dict[str, tuple[list[datetime], list[Mutation]]] = {}
        self.file_writes: tuple[list[datetime], list[Mutation]] = ([], [])
        for mutation in ordered:
            series = self.by_target.get(mutation.target)
            if series is None:
                series = self.by_target[mutation.target] = ([], [])
            series[0].append(mutation.at)
            series[1].append(mutation)
            if mutation.kind == FILE_WRITE:
                self.file_writes[0].append(mutation.at)
                self.file_writes[1].append(mutation)
        self.last = ordered[-1] if ordered else None


def _chronological(mutation: Mutation) -> tuple[datetime, str]:
    return mutation.at, mutation.id


def _first_not_covered(
    series: tuple[list[datetime], list[Mutation]], since: datetime, covers: Collection[str]
) -> Mutation | None:
    times, ordered = series
    start = bisect_left(times, since)
    for i in range(start, len(ordered)):
        if ordered[i].id not in covers:
            return ordered[i]
    return None


# --- the rules ---------------------------------------------------------------------------------


def rule_independent(item: Evidence, independence: Independence) -> Finding | None:
    """Rule 1: self-attested evidence never satisfies anything (it may be recorded)."""
    return independence(item)


def rule_observed(item: Evidence) -> Finding | None:
    """A failed attempt to observe is not an observation: it neither supports nor contradicts."""
    return None if item.observed else Finding("no_observation")


def rule_known_check_type(item: Evidence) -> Finding | None:
    return None if item.check_type in CHECK_TYPES else Finding("unknown_check_type")


def rule_check_type_enabled(item: Evidence, policy: Policy) -> Finding | None:
    why = why_switched_off(item, policy)
    return None if why is None else Finding("experimental_off", detail=why)


def rule_after_mutations(item: Evidence, timeline: _Timeline) -> Finding | None:
    """Rule 2: strictly after the latest mutation it covers; task-level: after every mutation."""
    if len(item.covers) == 1:
        latest = timeline.by_id[item.covers[0]]
    elif item.covers:
        latest = max((timeline.by_id[m] for m in item.covers), key=_chronological)
    elif timeline.last is not None:
        latest = timeline.last
    else:
        return None
    if item.at <= latest.at:
        return Finding("premature", mutation=latest.id)
    return None


def rule_not_superseded(item: Evidence, timeline: _Timeline) -> Finding | None:
    """A later change to what it observed makes it stale in content; a test run counts only
    after the claim's final file modification."""
    # A handful of ids is searched fastest as it is; many are worth a set.
    covers: Collection[str] = item.covers if len(item.covers) < 8 else frozenset(item.covers)
    if len(item.covers) == 1:  # most items: one target, nothing to order
        targets: Iterable[str] = (timeline.by_id[item.covers[0]].target,)
    else:
        targets = sorted({timeline.by_id[m].target for m in item.covers})
    for target in targets:
        later = _first_not_covered(timeline.by_target[target], item.at, covers)
        if later is not None:
            return Finding("superseded", mutation=later.id, detail="a later change to the target")
    if item.check_type == TEST_RUN:
        later = _first_not_covered(timeline.file_writes, item.at, covers)
        if later is not None:
            return Finding("superseded", mutation=later.id, detail="a file changed after the run")
    return None


def rule_not_in_future(item: Evidence, decided_at: datetime) -> Finding | None:
    return Finding("from_future") if item.at > decided_at else None


def rule_fresh(item: Evidence, oldest_allowed: datetime | None) -> Finding | None:
    """Rule 5: older than max_age_s at decision time is treated as absent (equal counts).
    ``None``: the limit lies before the first representable instant, so nothing is too old."""
    return Finding("stale") if oldest_allowed is not None and item.at < oldest_allowed else None


def rule_discriminating(item: Evidence, policy: Policy) -> Finding | None:
    """An observation that could not have failed proves nothing."""
    why = why_not_discriminating(item, policy)
    return None if why is None else Finding("not_discriminating", detail=why)


def rule_test_config_unchanged(item: Evidence, policy: Policy) -> Finding | None:
    """A test run whose protected test paths (conftest.py, test settings, test files) the agent
    changed was decided by the agent's own code, unless the policy allows test changes."""
    if item.check_type != TEST_RUN or policy.allow_test_changes:
        return None
    changed = changed_test_config(item)
    return None if changed is None else Finding("test_config_changed", detail=changed)


# --- the rules about the claim as a whole (the policy's own demands) ------------------------------


def rule_changes_recorded(claim: Claim, policy: Policy) -> Unmet | None:
    """``require_mutations``: a claim that records no change has nothing for evidence to be
    about, however green its checks (a gate run on an untouched work tree)."""
    if policy.require_mutations and not claim.mutations:
        return Unmet("no_mutations")
    return None


def rule_protected_targets(mutations: Iterable[Mutation], policy: Policy) -> list[Unmet]:
    """``protected_targets``: a change to one of them (the gate's own configuration) is not the
    agent's to make, so no evidence can make the claim verified; by mutation id."""
    if not policy.protected_targets:
        return []
    protected = frozenset(policy.protected_targets)
    return [
        Unmet("protected_target_changed", mutation=mutation.id)
        for mutation in sorted(mutations, key=_by_id)
        if mutation.target in protected
    ]


def _by_id(mutation: Mutation) -> str:
    return mutation.id


def judge_evidence(
    item: Evidence,
    ref: str,
    timeline: _Timeline,
    decided_at: datetime,
    oldest_allowed: datetime | None,
    policy: Policy,
    independence: Independence,
) -> EvidenceResult:
    reasons = [
        rule_independent(item, independence),
        rule_observed(item),
        rule_known_check_type(item),
        rule_check_type_enabled(item, policy),
        rule_after_mutations(item, timeline),
        rule_not_superseded(item, timeline),
        rule_not_in_future(item, decided_at),
        rule_fresh(item, oldest_allowed),
        rule_test_config_unchanged(item, policy),
    ]
    observed = item.observed
    if observed and item.check_type in CHECK_TYPES:
        reasons.append(rule_discriminating(item, policy))
    mismatch = None
    if not observed:
        observation: Observation = "absent"
    elif item.expected is ABSENT or satisfies(item.expected, item.observed_value):
        observation = "matches"  # nothing expected is trivially met (and not discriminating)
    else:
        observation = "differs"
        mismatch = first_mismatch(item.expected, item.observed_value)
    found = tuple([reason for reason in reasons if reason is not None])
    return EvidenceResult(ref, item.check_type, not found, observation, found, mismatch)


def _oldest_allowed(decided_at: datetime, policy: Policy) -> datetime | None:
    try:
        return decided_at - timedelta(seconds=policy.max_age_s)
    except OverflowError:  # a decision in the first years of the calendar
        return None


# --- the verdict -------------------------------------------------------------------------------


def verify(
    claim: Claim,
    at: datetime,
    policy: Policy | None = None,
    *,
    signatures: SignatureCheck | None = None,
) -> Verdict:
    """Decide the claim at instant ``at`` under ``policy`` (else the claim's, else the built-in).

    In signed mode, ``signatures`` checks each item's signature (pass
    ``completion_claim.trust.check_signatures``); without it no item is independent, so nothing
    signed mode would demand proof for can be verified. Rule 3 (coverage), rule 4 (absence is
    unverified) and rule 6 (only a qualifying contradiction refutes) are applied here, over the
    per-item judgements.
    """
    if at.tzinfo is None:
        raise ValueError("the decision time must carry a UTC offset")
    with cycle_collection_paused():  # the judgements form an acyclic tree, like the document
        return _decide(claim, at, policy, signatures)


def _decide(
    claim: Claim, at: datetime, policy: Policy | None, signatures: SignatureCheck | None
) -> Verdict:
    chosen = policy or claim.policy or BUILTIN_POLICY
    independence, independence_mode = _independence(claim, chosen, policy is not None, signatures)
    timeline = _Timeline(claim.mutations)
    oldest_allowed = _oldest_allowed(at, chosen)
    results = [
        judge_evidence(
            item, evidence_ref(item, i), timeline, at, oldest_allowed, chosen, independence
        )
        for i, item in enumerate(claim.evidence)
    ]
    by_ref = list(zip(results, claim.evidence, strict=True))
    if len(by_ref) > 1:
        by_ref.sort(key=lambda pair: _ref_key(pair[0]))
    naming = _naming(by_ref)
    may_cover = chosen.coverage
    coverage = tuple(
        _coverage(timeline.by_id[mutation_id], naming.get(mutation_id, ()), may_cover)
        for mutation_id in sorted(timeline.by_id)
    )
    unmapped = frozenset(m.id for m in claim.mutations if not may_cover.get(m.kind))
    unmet = _unmet(claim, chosen, by_ref, coverage, unmapped)
    state: State
    if any(u.code == "contradicted" for u in unmet):
        state = "refuted"
    elif unmet:
        state = "unverified"
    else:
        state = "verified"
    judged = [result for result, _ in by_ref]
    return Verdict(
        state=state,
        unmet=unmet,
        reason=_reason(state, unmet, judged, coverage, timeline),
        decided_at=at.astimezone(UTC),
        policy_id=chosen.id,
        independence=independence_mode,
        coverage=coverage,
        evidence=tuple(judged),
    )


def _independence(
    claim: Claim, chosen: Policy, from_operator: bool, signatures: SignatureCheck | None
) -> tuple[Independence, Literal["declared", "proven"]]:
    """Rule 1's judge: kinds as written, or signatures checked against the policy's observers.

    Signatures prove independence only against trust roots the operator chose. A claim's own
    trust section is still applied (it can only make evidence count less), but whoever wrote
    the claim chose its keys, so the verdict does not call that proof.
    """
    if chosen.trust is None or chosen.trust.mode != SIGNED:
        return declared_independence, "declared"
    if signatures is None:
        return signatures_not_checked, "declared"
    return signatures(claim, chosen.trust), "proven" if from_operator else "declared"


def evidence_ref(item: Evidence, index: int) -> str:
    """How the verdict names an evidence item: its id, else its place in the list."""
    return item.id if item.id is not None else f"evidence[{index}]"


def _ref_key(result: EvidenceResult) -> tuple[int, str, int]:
    ref = result.evidence
    position = ref[9:-1]
    # ASCII digits only: an id such as "evidence[²]" is a name, not a position to convert.
    if (
        ref.startswith("evidence[")
        and ref.endswith("]")
        and position.isascii()
        and position.isdigit()
    ):
        return (1, "", int(ref[9:-1]))
    return (0, ref, 0)


def _naming(judged: list[tuple[EvidenceResult, Evidence]]) -> dict[str, list[EvidenceResult]]:
    """For each mutation id, the items whose ``covers`` name it, in verdict order (one pass, so
    coverage stays linear in the size of the claim)."""
    naming: dict[str, list[EvidenceResult]] = {}
    for result, item in judged:
        covers = item.covers if len(item.covers) < 2 else dict.fromkeys(item.covers)
        for mutation_id in covers:
            naming.setdefault(mutation_id, []).append(result)
    return naming


def _coverage(
    mutation: Mutation, naming: Sequence[EvidenceResult], may_cover: Mapping[str, frozenset[str]]
) -> Coverage:
    """Kind decides coverage only: a contradiction refutes whatever it names, of any kind."""
    allowed = may_cover.get(mutation.kind, frozenset())
    covered_by: list[str] = []
    contradicted_by: list[str] = []
    not_counted: list[NotCounted] = []
    for result in naming:  # one pass; ``supports`` and ``contradicts`` spelt out, this is hot
        contradicts = result.counts and result.observation == "differs"
        if contradicts:
            contradicted_by.append(result.evidence)
        if result.check_type not in allowed and not contradicts:
            not_counted.append(_kind_not_covered(result, mutation, allowed))
        elif not result.counts:
            not_counted.append(NotCounted(result.evidence, result.reasons))
        elif result.observation == "matches":  # counts, and of a check type that may cover
            covered_by.append(result.evidence)
    return Coverage(
        mutation=mutation.id,
        covered_by=tuple(covered_by),
        contradicted_by=tuple(contradicted_by),
        not_counted=tuple(not_counted),
    )


def _kind_not_covered(
    result: EvidenceResult, mutation: Mutation, allowed: frozenset[str]
) -> NotCounted:
    """The item as judged for this one mutation: its findings plus why its kind does not fit."""
    may = " or ".join(sorted(allowed)) if allowed else "no check type (the policy maps none)"
    detail = f"{result.check_type} may not cover a {mutation.kind[:40]!r} mutation, only {may}"
    finding = Finding("kind_not_covered", mutation=mutation.id, detail=detail)
    return NotCounted(result.evidence, (*result.reasons, finding))


def _unmet(
    claim: Claim,
    policy: Policy,
    judged: list[tuple[EvidenceResult, Evidence]],
    coverage: tuple[Coverage, ...],
    unmapped: frozenset[str],
) -> tuple[Unmet, ...]:
    unmet = [Unmet("contradicted", evidence=r.evidence) for r, _ in judged if r.contradicts]
    supporting_types = {r.check_type for r, _ in judged if r.supports}
    if not claim.evidence:
        unmet.append(Unmet("no_evidence"))
    elif not supporting_types:
        unmet.append(Unmet("no_supporting_evidence"))
    nothing_changed = rule_changes_recorded(claim, policy)
    if nothing_changed is not None:
        unmet.append(nothing_changed)
    # A mutation of a kind nothing may cover gets its own code: no evidence could fix it, only
    # the policy (or a misspelt kind in the claim).
    unmet.extend(
        Unmet(
            "mutation_kind_unmapped" if c.mutation in unmapped else "mutation_uncovered",
            mutation=c.mutation,
        )
        for c in coverage
        if not c.covered_by
    )
    unmet.extend(rule_protected_targets(claim.mutations, policy))
    unmet.extend(
        Unmet("requirement_unmet", check_type=check_type)
        for check_type in sorted(set(policy.requires) - supporting_types)
    )
    return tuple(unmet)


def _reason(
    state: State,
    unmet: tuple[Unmet, ...],
    results: list[EvidenceResult],
    coverage: tuple[Coverage, ...],
    timeline: _Timeline,
) -> str:
    if state == "verified":
        supporting = sum(1 for r in results if r.supports)
        return (
            f"Verified: {_count(supporting, 'qualifying observation')} "
            f"{_verb(supporting)} the claim, covering {_count(len(coverage), 'mutation')}; "
            "the policy's requirements are met."
        )
    first = unmet[0]
    if state == "refuted":
        culprit = next(r for r in results if r.evidence == first.evidence)
        return (
            f"Evidence {culprit.evidence} ({culprit.check_type}) contradicts the claim: "
            f"{culprit.mismatch}."
        )
    uncaptured = [
        u.mutation
        for u in unmet
        if u.code == "mutation_kind_unmapped" and timeline.by_id[str(u.mutation)].kind == UNCAPTURED
    ]
    if first.code == "no_evidence":
        # A plain unmapped kind waits for evidence to matter; these do not.
        said = _claim_level_parts(unmet, uncaptured, timeline)
        return " ".join(
            [
                "No evidence was recorded, so nothing proves the claim.",
                *(f"{_capital(p)}." for p in said),
            ]
        )
    parts = []
    if first.code == "no_supporting_evidence":
        codes = sorted({f.code for r in results for f in r.reasons})
        parts.append(f"no evidence counts ({', '.join(codes) or 'none supports'})")
    if any(u.code == "no_mutations" for u in unmet):
        parts.append(_NO_MUTATIONS)
    uncovered = [u.mutation for u in unmet if u.code == "mutation_uncovered"]
    if uncovered and first.code != "no_supporting_evidence":
        text = f"{_list(uncovered, 'mutation')} not covered by qualifying evidence"
        parts.append(
            text
            + _kind_mismatches(
                coverage,
                frozenset(uncovered),
                timeline,
                {r.evidence: r.check_type for r in results},
            )
        )
    unmapped = [
        u.mutation
        for u in unmet
        if u.code == "mutation_kind_unmapped" and u.mutation not in uncaptured
    ]
    if unmapped:
        kinds = sorted({timeline.by_id[str(m)].kind for m in unmapped})
        shown = ", ".join(repr(kind[:40]) for kind in kinds[:3])
        parts.append(
            f"{_list(unmapped, 'mutation')} of a kind no check type may cover ({shown}); "
            "the policy's covered_by says which check types may cover each kind"
        )
    parts += _claim_level_parts(unmet, uncaptured, timeline, with_no_mutations=False)
    missing = [u.check_type for u in unmet if u.code == "requirement_unmet"]
    if missing:
        parts.append(f"the policy requires {', '.join(str(m) for m in missing)}")
    return "Unverified: " + "; ".join(parts) + "."


_NO_MUTATIONS = "the claim records no change, and the policy requires one (require_mutations)"


def _claim_level_parts(
    unmet: tuple[Unmet, ...],
    uncaptured: list[str | None],
    timeline: _Timeline,
    *,
    with_no_mutations: bool = True,
) -> list[str]:
    """What no evidence could fix: nothing changed, a change that could not be captured, a
    protected target changed."""
    parts = []
    if with_no_mutations and any(u.code == "no_mutations" for u in unmet):
        parts.append(_NO_MUTATIONS)
    if uncaptured:
        targets = ", ".join(sorted({timeline.by_id[str(m)].target[:80] for m in uncaptured})[:3])
        parts.append(
            f"{_list(uncaptured, 'mutation')} a change that could not be captured ({targets}), "
            "which nothing may cover"
        )
    protected = [u.mutation for u in unmet if u.code == "protected_target_changed"]
    if protected:
        targets = ", ".join(sorted({timeline.by_id[str(m)].target[:80] for m in protected})[:3])
        parts.append(
            f"{_list(protected, 'mutation')} a change to a target the policy protects ({targets})"
        )
    return parts


def _capital(text: str) -> str:
    return text[:1].upper() + text[1:]


def _kind_mismatches(
    coverage: tuple[Coverage, ...],
    uncovered: frozenset[str | None],
    timeline: _Timeline,
    check_types: dict[str, str],
) -> str:
    """Says which check types named an uncovered mutation but may not cover its kind."""
    pairs = sorted(
        {
            (check_types[result.evidence], timeline.by_id[c.mutation].kind)
            for c in coverage
            if c.mutation in uncovered
            for result in c.not_counted
            if any(f.code == "kind_not_covered" for f in result.reasons)
        }
    )
    if not pairs:
        return ""
    said = ", ".join(f"{check} may not cover a {kind[:40]}" for check, kind in pairs[:3])
    return f" (by kind: {said})"


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


def _list(ids: list[str | None], noun: str) -> str:
    shown = ", ".join(str(i) for i in ids[:5])
    if len(ids) > 5:
        shown += f" and {len(ids) - 5} more"
    return f"{noun}{'' if len(ids) == 1 else 's'} {shown} {'is' if len(ids) == 1 else 'are'}"


def _verb(n: int) -> str:
    return "supports" if n == 1 else "support"
