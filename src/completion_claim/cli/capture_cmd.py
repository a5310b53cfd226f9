"""``claim capture-git``: record the agent's file changes from git, one mutation per file."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import click

from ..claimfile import RawClaim, edit_claim, next_id
from ..model import Claim, Mutation
from ..observe.git_capture import as_mutation, capture, mutation_record, repository_root
from . import EXIT_VERIFIED, app
from ._output import emit_json, json_option, say


@app.command("capture-git")
@click.argument("path")
@click.option(
    "--repo",
    default=".",
    show_default=True,
    metavar="DIR",
    help="Any folder inside the git work tree.",
)
@click.option(
    "--base",
    default="HEAD",
    show_default=True,
    metavar="REV",
    help="The revision changes are measured against.",
)
@json_option("Print {path, mutations} as JSON (the mutations recorded).")
def capture_git_command(path: str, repo: str, base: str, as_json: bool) -> int:
    """Append one file_write mutation to the claim in PATH per file changed against REV.

    Modified, added, untracked (not ignored) and deleted files count; targets are paths relative
    to the repository root, `at` is the file's modification time (for a deletion: now) and
    `digest` is sha256 of the content (for a link: symlink:TARGET:sha256 of the target's), or
    `deleted`. Files whose digest matches the latest mutation already recorded for them are
    skipped, so running it again records only what moved on. Files that running tests writes
    (__pycache__/, *.pyc, .pytest_cache/), the claim file and its temporary files are never
    recorded.

    No program the repository configures runs (filters, textconv, hooks, fsmonitor): changes
    are found by hashing the work tree's raw bytes. Exit 5, recording nothing, for a symbolic
    link leading out of the repository or a core.worktree pointing elsewhere.
    """
    root = repository_root(Path(repo))
    now = datetime.now(UTC)
    recorded: list[Mutation] = []

    def append(raw: RawClaim, claim: Claim) -> None:
        taken = {m.id for m in claim.mutations}
        for change in capture(root, base, claim.mutations, now, excluded=[Path(path)]):
            mutation = as_mutation(next_id("m", taken), change)
            taken.add(mutation.id)
            raw["mutations"].append(mutation_record(mutation))
            recorded.append(mutation)

    edit_claim(path, append)
    if as_json:
        emit_json({"path": path, "mutations": [mutation_record(m) for m in recorded]})
        return EXIT_VERIFIED
    for m in recorded:
        say(f"recorded {m.id}: {m.kind} {m.target} {m.digest}")
    if not recorded:
        say(f"nothing to record: no file differs from what {path} already holds")
    return EXIT_VERIFIED
