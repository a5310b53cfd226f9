"""``claim show`` (what a claim holds) and ``claim explain`` (how each rule judged it)."""

from __future__ import annotations

from typing import Any

import click

from .._files import read_limited, source_name
from .._json import DEFAULT_MAX_BYTES
from ..errors import InvalidDocument
from ..model import Claim, load_claim
from ..report import (
    DIFFERS_MEMBER,
    disagreement_line,
    independence_text,
    next_steps,
    recorded_verdict_differs,
    render_report,
    rule_results,
)
from ..timefmt import format_time
from ..trust import check_signatures
from ..verify import Verdict, evidence_ref, verify
from . import EXIT_VERIFIED, app
from ._output import emit_json, output, paint_state, print_table, quotes_agent_text
from .verify_cmd import at_option, decision_time, exit_code, policy_option, read_policy


def read_claim_file(path: str) -> Claim:
    try:
        return load_claim(read_limited(path, DEFAULT_MAX_BYTES), DEFAULT_MAX_BYTES)
    except InvalidDocument as error:
        raise error.in_source(source_name(path)) from None


@app.command("show")
@click.argument("path")
@click.option("--json", "as_json", is_flag=True, help="Print {task, mutations, evidence} as JSON.")
@quotes_agent_text
def show_command(path: str, as_json: bool) -> int:
    """Show the claim in PATH ('-' for stdin): its task, its mutations and its evidence, with
    what each item covers. Nothing is judged (see `claim explain`)."""
    claim = read_claim_file(path)
    named_by: dict[str, list[str]] = {}
    for i, item in enumerate(claim.evidence):
        for mutation_id in dict.fromkeys(item.covers):
            named_by.setdefault(mutation_id, []).append(evidence_ref(item, i))
    if as_json:
        emit_json(_shown(claim, named_by))
        return EXIT_VERIFIED
    click.echo(f"task {claim.task.id}: {claim.claimed_outcome}")
    if claim.task.description is not None:
        click.echo(f"  asked: {claim.task.description}")
    policy = claim.policy.id if claim.policy is not None else "none (the built-in applies)"
    click.echo(f"  embedded policy: {policy}")
    print_table(
        "Mutations",
        ("id", "kind", "target", "at", "digest", "named by"),
        [
            (
                m.id,
                m.kind,
                m.target,
                format_time(m.at),
                _short(m.digest),
                ", ".join(named_by.get(m.id, [])) or "nothing",
            )
            for m in claim.mutations
        ],
    )
    print_table(
        "Evidence",
        ("id", "check type", "target", "at", "verifier", "covers", "observed", "signed"),
        [
            (
                evidence_ref(e, i),
                e.check_type,
                e.target,
                format_time(e.at),
                f"{e.verifier.id} ({e.verifier.kind})",
                ", ".join(e.covers) or "(task-level)",
                "yes" if e.observed else "no (failed attempt)",
                "yes" if e.attestation is not None else "no",
            )
            for i, e in enumerate(claim.evidence)
        ],
    )
    return EXIT_VERIFIED


def _short(digest: str | None) -> str:
    """Enough of a digest to tell two apart in a table; ``--json`` gives it whole."""
    if digest is None:
        return ""
    return digest if len(digest) <= 23 else digest[:22] + "…"


def _shown(claim: Claim, named_by: dict[str, list[str]]) -> dict[str, Any]:
    return {
        "task": {"id": claim.task.id, "description": claim.task.description},
        "claimed_outcome": claim.claimed_outcome,
        "policy_id": claim.policy.id if claim.policy is not None else None,
        "mutations": [
            {
                "id": m.id,
                "kind": m.kind,
                "target": m.target,
                "at": format_time(m.at),
                "digest": m.digest,
                "named_by": named_by.get(m.id, []),
            }
            for m in claim.mutations
        ],
        "evidence": [
            {
                "id": evidence_ref(e, i),
                "check_type": e.check_type,
                "target": e.target,
                "at": format_time(e.at),
                "verifier": {"id": e.verifier.id, "kind": e.verifier.kind},
                "covers": list(e.covers),
                "observed": e.observed,
                "signed": e.attestation is not None,
            }
            for i, e in enumerate(claim.evidence)
        ],
    }


@app.command("explain")
@click.argument("path")
@policy_option
@at_option
@click.option("--json", "as_json", is_flag=True, help="Print {verdict, rules, next_steps} as JSON.")
@quotes_agent_text
def explain_command(path: str, policy_path: str | None, at_text: str | None, as_json: bool) -> int:
    """Verify the claim in PATH ('-' for stdin) and show every rule's outcome for each evidence
    item, which evidence covers each mutation, and the next steps; exit with the verdict's state,
    as `claim verify` does."""
    at = decision_time(at_text)
    policy = read_policy(policy_path, DEFAULT_MAX_BYTES)
    claim = read_claim_file(path)
    verdict = verify(claim, at, policy, signatures=check_signatures)
    source = source_name(path)
    differs = recorded_verdict_differs(claim, verdict)
    if as_json:
        explained = {
            "verdict": verdict.to_json(),
            "rules": rule_results(claim, verdict),
            "next_steps": next_steps(claim, verdict, source, policy),
        }
        if differs is not None:
            explained[DIFFERS_MEMBER] = differs
        emit_json(explained)
        return exit_code(verdict)
    click.echo(paint_state(f"{verdict.state.upper()}  {source}".rstrip(), verdict.state))
    click.echo(
        f"  policy {verdict.policy_id}, {independence_text(verdict)}, decided at "
        f"{format_time(verdict.decided_at)}"
    )
    click.echo(f"  {verdict.reason}")
    if output().quiet:
        return exit_code(verdict)
    if differs is not None:
        click.echo(f"  {disagreement_line(differs)}")
    print_rules(claim, verdict)
    kinds = {m.id: m.kind for m in claim.mutations}
    print_table(
        "Coverage",
        ("mutation", "kind", "covered by", "contradicted by"),
        [
            (
                c.mutation,
                kinds[c.mutation],
                ", ".join(c.covered_by) or "NOT COVERED",
                ", ".join(c.contradicted_by),
            )
            for c in verdict.coverage
        ],
    )
    # The unmet list and the next steps read as the report has them.
    report = render_report(claim, verdict, source, policy)
    tail = report[report.find("\nUnmet\n") :] if "\nUnmet\n" in report else ""
    click.echo(tail.lstrip("\n"), nl=False)
    return exit_code(verdict)


def print_rules(claim: Claim, verdict: Verdict) -> None:
    """Every rule's outcome per evidence item, one row each."""
    rows = []
    for judged in rule_results(claim, verdict):
        first = True
        for rule in judged["rules"]:
            said = "; ".join(f["text"] for f in rule["findings"])
            rows.append(
                (
                    f"{judged['evidence']} ({'counts' if judged['counts'] else 'does not count'})"
                    if first
                    else "",
                    f"{judged['check_type']}, {judged['observation']}" if first else "",
                    rule["rule"],
                    rule["result"],
                    said,
                )
            )
            first = False
    print_table("Rules", ("evidence", "observation", "rule", "result", "finding"), rows)
