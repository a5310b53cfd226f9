"""``claim new`` and ``claim mutate``: start a claim and record what the agent changed."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import click

from ..claimfile import RawClaim, create_claim, edit_claim, next_id
from ..errors import InvalidDocument, UsageError
from ..model import BUILTIN_POLICY, Claim
from ..timefmt import format_time
from . import EXIT_VERIFIED, app
from ._output import emit_json, json_option, say
from .verify_cmd import decision_time


@app.command("new")
@click.argument("path")
@click.option("--task-id", required=True, help="Stable identifier of the task.")
@click.option("--outcome", required=True, help="What the agent claims it achieved.")
@click.option("--description", help="What was asked.")
@json_option("Print {path, task_id} as JSON.")
def new_command(
    path: str, task_id: str, outcome: str, description: str | None, as_json: bool
) -> int:
    """Write a new claim to PATH (refuses to overwrite): no mutations, no evidence, and the
    built-in policy."""
    task: dict[str, Any] = {"id": task_id}
    if description is not None:
        task["description"] = description
    create_claim(
        path,
        {
            "spec_version": "0.1",
            "task": task,
            "claimed_outcome": outcome,
            "mutations": [],
            "evidence": [],
            "policy": {
                "id": BUILTIN_POLICY.id,
                "requires": list(BUILTIN_POLICY.requires),
                "max_age_s": BUILTIN_POLICY.max_age_s,
            },
        },
    )
    if as_json:
        emit_json({"path": path, "task_id": task_id})
    else:
        say(f"created {path} for task {task_id}")
    return EXIT_VERIFIED


_MUTATION_OPTIONS = {
    "id": "--id",
    "kind": "--kind",
    "target": "--target",
    "at": "--at",
    "digest": "--digest",
}


@app.command("mutate")
@click.argument("path")
@click.option("--kind", required=True, help="file_write, state_write, deploy, ...")
@click.option("--target", required=True, help="What changed: a path, a record, a service.")
@click.option("--id", "mutation_id", help="Mutation id (default m1, m2, ...).")
@click.option("--at", "at_text", metavar="TIME", help="When it happened (RFC 3339); default now.")
@click.option("--digest", help="Content digest of the target after the change.")
@click.option(
    "--strict",
    is_flag=True,
    help="Refuse a kind the claim's policy maps to no check type (exit 4), instead of warning.",
)
@json_option("Print {path, mutation} as JSON.")
def mutate_command(
    path: str,
    kind: str,
    target: str,
    mutation_id: str | None,
    at_text: str | None,
    digest: str | None,
    strict: bool,
    as_json: bool,
) -> int:
    """Append one mutation to the claim in PATH. A kind no check type may cover (a misspelling,
    most often) can never be verified: a warning says so, and --strict refuses it."""
    at = decision_time(at_text) if at_text is not None else datetime.now(UTC)
    recorded: dict[str, Any] = {}

    def append(raw: RawClaim, claim: Claim) -> None:
        taken = {m.id for m in claim.mutations}
        new_id = mutation_id or next_id("m", taken)
        if new_id in taken:
            raise UsageError(f"--id: mutation {new_id!r} is already in the claim")
        known = (claim.policy or BUILTIN_POLICY).coverage
        if kind not in known:
            unmapped.append(
                f"--kind {kind!r}: the claim's policy maps it to no check type, so no evidence "
                f"can cover it (known: {', '.join(sorted(known))})"
            )
            if strict:
                raise UsageError(unmapped[0])
        recorded.update(id=new_id, kind=kind, target=target, at=format_time(at))
        if digest is not None:
            recorded["digest"] = digest
        new_at.append(len(raw["mutations"]))
        raw["mutations"].append(dict(recorded))

    new_at: list[int] = []
    unmapped: list[str] = []
    try:
        edit_claim(path, append)
    except InvalidDocument as error:
        # What the options put in is the caller's mistake, not the claim file's: a usage error
        # naming the option (nothing was written either way).
        member = error.path.removeprefix(f"mutations[{new_at[0]}].") if new_at else ""
        option = _MUTATION_OPTIONS.get(member)
        if option is None:
            raise
        raise UsageError(f"{option}: {error.problem}") from None
    for problem in unmapped:  # said once the mutation is recorded, whatever the output format
        click.echo(f"claim: warning: {problem}", err=True)
    if as_json:
        emit_json({"path": path, "mutation": recorded})
    else:
        say(f"recorded {recorded['id']}: {kind} {target}")
    return EXIT_VERIFIED
