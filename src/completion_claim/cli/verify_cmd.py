"""``claim verify`` and ``claim schema``."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, BinaryIO

import click
from msgspec.structs import replace

from .._files import STDIN, open_regular, read_limited, source_name, write_atomic
from .._json import DEFAULT_MAX_BYTES, decode_bytes, dumps, loads
from .._system import usable_cpus
from ..batch import verify_stream
from ..claimfile import render
from ..errors import InvalidDocument, UsageError
from ..model import Mutation, Policy, load_claim, load_policy
from ..observe.git_capture import mutation_record, workspace_mutations
from ..report import DIFFERS_MEMBER, disagreement_line, recorded_verdict_differs, render_report
from ..timefmt import parse_time
from ..trust import check_signatures
from ..verify import Verdict, verify
from . import EXIT_INVALID, EXIT_REFUTED, EXIT_UNVERIFIED, EXIT_USAGE, EXIT_VERIFIED, app
from ._output import output, paint_state, quoting_agent_text

if TYPE_CHECKING:
    from ..trust.keys import SigningKey

_NAMED_CHANGES = 10  # on the one summary line; the verdict names every one

EXIT_FOR_STATE = {
    "verified": EXIT_VERIFIED,
    "unverified": EXIT_UNVERIFIED,
    "refuted": EXIT_REFUTED,
}


def decision_time(text: str | None) -> datetime:
    """``--at`` parsed, or now in UTC: the only clock the verification path reads."""
    if text is None:
        return datetime.now(UTC)
    try:
        return parse_time(text, "")
    except InvalidDocument as error:
        raise UsageError(f"--at: {error.problem}") from None


def read_policy(path: str | None, max_bytes: int) -> Policy | None:
    if path is None:
        return None
    try:
        return load_policy(read_limited(path, max_bytes), max_bytes)
    except InvalidDocument as error:
        raise error.in_source(source_name(path)) from None


policy_option = click.option(
    "--policy",
    "policy_path",
    metavar="FILE",
    help="Operator policy; replaces the policy embedded in the claim.",
)
at_option = click.option(
    "--at", "at_text", metavar="TIME", help="Decision time (RFC 3339 with offset); default: now."
)


@app.command("verify")
@click.argument("path")
@policy_option
@at_option
@click.option("--json", "as_json", is_flag=True, help="Print the verdict object alone, as JSON.")
@click.option(
    "--batch",
    is_flag=True,
    help="PATH is JSON Lines, one claim per line; print one verdict per line.",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1),
    default=None,
    help="Processes to use with --batch (default: the CPUs this process may use; one for an "
    "input of a few hundred lines).",
)
@click.option(
    "--fail-on",
    "fail_on",
    type=click.Choice(["invalid", "refuted", "unverified"]),
    multiple=True,
    help="With --batch: exit non-zero when a line is invalid (3; 4 for an internal error), "
    "refuted (2) or not verified (1, or 2 if refuted); repeatable, the worst applies.",
)
@click.option(
    "--max-bytes",
    type=click.IntRange(min=1),
    default=DEFAULT_MAX_BYTES,
    show_default=True,
    help="Largest claim (or batch line) accepted.",
)
@click.option(
    "--workspace",
    "workspace",
    metavar="DIR",
    help="Capture the git work tree holding DIR now (nothing is written) and judge the claim "
    "with every change it does not hold, dated at the decision time.",
)
@click.option(
    "--base",
    metavar="REV",
    help="With --workspace: the revision changes are measured against (default HEAD).",
)
@click.option(
    "--sign-key",
    "sign_key_path",
    metavar="FILE",
    help="Sign the verdict with this private key (with --out).",
)
@click.option(
    "--out",
    "out_path",
    metavar="FILE",
    help="Write the claim with its verdict and the signature over both (with --sign-key).",
)
def verify_command(
    path: str,
    policy_path: str | None,
    at_text: str | None,
    as_json: bool,
    batch: bool,
    jobs: int | None,
    fail_on: tuple[str, ...],
    max_bytes: int,
    workspace: str | None,
    base: str | None,
    sign_key_path: str | None,
    out_path: str | None,
) -> int:
    """Verify the claim in PATH ('-' for stdin) and exit with its state.

    \b
    Exit codes: 0 verified, 1 unverified, 2 refuted, 3 invalid claim or policy,
    4 usage or internal error (a work tree --workspace cannot record included).
    With --batch: 0 when every line was processed, unless --fail-on says otherwise.
    """
    at = decision_time(at_text)
    policy = read_policy(policy_path, max_bytes)
    if (sign_key_path is None) != (out_path is None):
        raise UsageError("--sign-key and --out go together: they write a signed verdict")
    key = _signing_key(sign_key_path, batch)
    if base is not None and workspace is None:
        raise UsageError("--base goes with --workspace")
    if batch:
        if workspace is not None:
            raise UsageError("--workspace does not go with --batch")
        return _verify_batch(path, policy, at, max_bytes, jobs or usable_cpus(), set(fail_on))
    if jobs is not None:
        raise UsageError("--jobs goes with --batch")
    if fail_on:
        raise UsageError("--fail-on goes with --batch")
    data = read_limited(path, max_bytes)
    try:
        claim = load_claim(data, max_bytes)
    except InvalidDocument as error:
        raise error.in_source(source_name(path)) from None
    found: list[Mutation] = []
    if workspace is not None:
        claimed = [] if path == STDIN else [Path(path)]
        found = workspace_mutations(Path(workspace), base or "HEAD", claim.mutations, at, claimed)
        claim = replace(claim, mutations=(*claim.mutations, *found))
        click.echo(_workspace_summary(workspace, found), err=True)
    verdict = verify(claim, at, policy, signatures=check_signatures)
    if key is not None and out_path is not None:
        document = loads(decode_bytes(data))
        # The signed claim is the one judged: the work-tree changes are part of it.
        document["mutations"] = [*document["mutations"], *map(mutation_record, found)]
        _write_signed_verdict(out_path, document, verdict, key)
    differs = recorded_verdict_differs(claim, verdict)
    if as_json:
        shown_json = verdict.to_json()
        if differs is not None:
            shown_json[DIFFERS_MEMBER] = differs
        click.echo(dumps(shown_json, indent=2))
        return exit_code(verdict)
    report = render_report(claim, verdict, source_name(path), policy)
    shown = output()
    if shown.quiet:
        report = report[: report.index("\n") + 1]  # the verdict line alone
    with quoting_agent_text():
        click.echo(paint_state(report, verdict.state), nl=False)
        if differs is not None and not shown.quiet:
            click.echo(disagreement_line(differs))
        if shown.verbose:
            from .show_cmd import print_rules  # noqa: PLC0415 - show_cmd imports this module

            click.echo()
            print_rules(claim, verdict)
    return exit_code(verdict)


def _workspace_summary(workspace: str, found: list[Mutation]) -> str:
    shown = ", ".join(m.target for m in found[:_NAMED_CHANGES])
    more = f" and {len(found) - _NAMED_CHANGES} more" if len(found) > _NAMED_CHANGES else ""
    named = f": {shown}{more}" if found else ""
    noun = "change" if len(found) == 1 else "changes"
    return f"workspace {workspace}: {len(found)} work-tree {noun} the claim does not hold{named}"


def _signing_key(path: str | None, batch: bool) -> SigningKey | None:
    """The verdict signing key, read before verifying so a bad key fails fast."""
    if path is None:
        return None
    if batch:
        raise UsageError("--sign-key does not go with --batch")
    # Imported here: signing is the only path of `claim verify` that needs cryptography.
    from ..trust.keys import load_signing_key  # noqa: PLC0415

    return load_signing_key(path)


def _write_signed_verdict(
    out_path: str, document: dict[str, object], verdict: Verdict, key: SigningKey
) -> None:
    from ..trust.verdicts import sign_verdict  # noqa: PLC0415

    write_atomic(out_path, render(sign_verdict(document, verdict.to_json(), key)))
    click.echo(
        f"wrote {out_path}: the claim with its verdict, signed by key {key.public.keyid[:16]}",
        err=True,
    )


def exit_code(verdict: Verdict) -> int:
    return EXIT_FOR_STATE[verdict.state]


_FAIL_ON: dict[str, tuple[frozenset[str], int]] = {
    # state of a line -> (the --fail-on values that name it, the exit code it then gives);
    # the codes grow with severity, so the worst line's is the largest
    "unverified": (frozenset({"unverified"}), EXIT_UNVERIFIED),
    "refuted": (frozenset({"refuted", "unverified"}), EXIT_REFUTED),
    "invalid": (frozenset({"invalid"}), EXIT_INVALID),
    "error": (frozenset({"invalid"}), EXIT_USAGE),
}
_PROGRESS_FROM_BYTES = 4 << 20
"""Inputs smaller than this finish before a progress bar would help."""


def _verify_batch(
    path: str,
    policy: Policy | None,
    at: datetime,
    max_bytes: int,
    jobs: int,
    fail_on: set[str],
) -> int:
    # A named file must be a regular file, as everywhere; a stream comes through stdin.
    handle = sys.stdin.buffer if path == STDIN else open_regular(path)
    out = sys.stdout.buffer
    code = EXIT_VERIFIED
    with handle, _progress(handle) as advance:
        # readline with a bound keeps one absurd line from being held whole.
        lines = iter(lambda: advance(_bounded_line(handle, max_bytes)), b"")
        try:
            for state, line in verify_stream(lines, policy, at, max_bytes, jobs):
                out.write(line + b"\n")
                if state in _FAIL_ON and not fail_on.isdisjoint(_FAIL_ON[state][0]):
                    code = max(code, _FAIL_ON[state][1])
            out.flush()
        except BrokenPipeError:
            # The reader has all it wanted (`| head -1`): stop quietly, and keep the
            # interpreter's own flush at exit from failing on the closed pipe again.
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    return code


@contextmanager
def _progress(handle: BinaryIO) -> Iterator[Callable[[bytes], bytes]]:
    """A progress bar on stderr, by bytes read, for a large file when stderr is a terminal;
    otherwise nothing is drawn."""
    try:
        size = os.fstat(handle.fileno()).st_size
    except (OSError, ValueError):
        size = 0
    if size < _PROGRESS_FROM_BYTES or not sys.stderr.isatty():
        yield lambda line: line
        return
    with click.progressbar(length=size, label="verifying", file=sys.stderr) as bar:

        def advance(line: bytes) -> bytes:
            bar.update(len(line))
            return line

        yield advance


def _bounded_line(handle: object, max_bytes: int) -> bytes:
    assert hasattr(handle, "readline")
    line: bytes = handle.readline(max_bytes + 1)
    if len(line) > max_bytes and not line.endswith(b"\n"):
        rest = line
        while rest and not rest.endswith(b"\n"):  # skip the remainder of the long line
            rest = handle.readline(1 << 20)
        return line[: max_bytes + 1]
    return line


@app.command("schema")
def schema_command() -> int:
    """Print the JSON Schema (Draft 2020-12) of the claim document."""
    from importlib import resources  # noqa: PLC0415 - only this command reads package data

    text = resources.files("completion_claim.schema").joinpath("claim.schema.json").read_text()
    click.echo(text, nl=False)
    return EXIT_VERIFIED


__all__ = ["EXIT_INVALID", "decision_time", "exit_code", "read_policy"]
