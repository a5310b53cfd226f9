"""The gate run: a fresh claim for the change in a work tree, observed and judged under the
operator's configuration, recorded in the runs directory.

Nothing the agent wrote is read as evidence: the claim is made here, in a folder outside the
work tree, from what git shows and what the observers see. Every mutation is dated at the
moment the gate captured it, before any check runs: when the agent really wrote is unknown (a
file's time is the agent's to set), and the latest moment the gate can vouch for is the one that
makes every observation that follows strictly later, and no earlier one count.
"""

from __future__ import annotations

import contextlib
import fnmatch
import json
import os
import uuid
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from msgspec import structs

from .. import __version__
from .._files import write_atomic
from .._json import dumps
from ..claimfile import create_claim, next_id, read_claim, render
from ..errors import ObservationFailed, UsageError
from ..model import (
    DEPLOY,
    FILE_WRITE,
    KNOWN_CHECK_TYPES,
    STATE_WRITE,
    UI_ACTION,
    UNCAPTURED,
    Mutation,
    Policy,
    Timestamp,
    Trust,
    TrustedObserver,
    parse_policy,
)
from ..observe._common import Observation, ObserverSettings, run_observer
from ..observe.git_capture import (
    DELETED,
    capture,
    latest_file_writes,
    mutation_record,
    repository_root,
)
from ..observe.mirror import Mirror
from ..observe.repository import (
    content_digest,
    display,
    git_answers_kept,
    git_process,
    object_format_of,
    open_beneath,
    tree_object_format,
)
from ..observe.run_tree import GitContent, is_protected
from ..observe.sandbox import run_owner
from ..observe.values import sha256_digest
from ..report import render_report
from ..timefmt import format_time
from ..trust import check_signatures
from ..verify import Verdict, verify
from .anchors import NO_TRUSTED_BASE, operator_config, require_base_tests, start_anchors
from .baseline import (
    StartExists,
    already_started,
    baseline_details,
    probe,
    read_start_record,
    repository_id,
    start_record_path,
    take_snapshots,
    write_start_record,
)
from .config import (
    CheckConfig,
    DomAssertionCheck,
    EndpointHealthCheck,
    GateConfig,
    TestRunCheck,
    checking_toolchains,
    require_lockfiles,
    require_toolchains,
)
from .control_run import control_baseline
from .reason import agent_reason
from .test_aware import ChangedFile, scan, scanned, why_unverified
from .test_baseline import (
    RECORD_KEY,
    baseline_for,
    take_test_baselines,
    test_request,
    units_loaded,
    with_baseline,
)

GATE_VERIFIER_ID = f"claim-gate/{__version__}"
NO_OUTCOME = "(no outcome given)"
CLAIM_NAME = "claim.json"
EXIT_FOR_STATE = {"verified": 0, "unverified": 1, "refuted": 2}  # cli/__init__.py's EXIT_*
MAX_LINK_HOPS = 40  # as the kernel's limit on links followed in one path
WHOLE_TREE = "."
"""The target of an ``uncaptured`` mutation: the work tree as a whole."""
MIRROR_NAME = "mirror"
OUTPUTS_NAME = "outputs.json"
"""Under the runs directory's folder of a repository: ``{path: digest}`` of each file the gate
wrote into the work tree (``record_gate_outputs``)."""
RUN_KEY = "run"
"""``details.run`` of a page check: its run folder under the runs directory, where its
screenshot is (the dashboard serves it from there)."""


class GateEvents(Protocol):
    """Progress of a gate run: the CLI prints it, a service may store it."""

    def step(self, name: str, detail: str) -> None: ...


class _Silent:
    def step(self, name: str, detail: str) -> None:
        """Nobody listens."""


@dataclass(frozen=True)
class GateResult:
    verdict: Verdict
    claim_path: Path
    document: dict[str, Any]
    agent_reason: str
    exit_code: int
    report: str = ""  # the readable report, with the gate's own notes (base, baselines)


@dataclass(frozen=True)
class _Base:
    revision: str | None  # a full commit id; None: the repository had no commit at the start
    source: str  # how it was chosen, for the report


@git_answers_kept()
def start_gate(
    config: GateConfig,
    repo: Path,
    session: str | None = None,
    *,
    restart: bool = False,
    trusted_ref: str | None = None,
) -> Path:
    """Record the base commit, the trust anchors (trusted refs resolved, the operator's copies
    of protected and configuration files), every test each test_run check runs now with its
    outcome, and a snapshot of each readback, endpoint and page; the record path. Once per
    session: ``restart`` (the operator's explicit say) replaces a record. ``trusted_ref`` (a
    full commit id, ``--trusted-ref``) replaces every test_run check's own, as when judging with
    it (attack 99)."""
    require_commit_ids(("--trusted-ref", trusted_ref))
    root = repository_root(repo)
    _refuse_runs_dir_inside(config, root)
    require_toolchains(config, root)
    require_lockfiles(config, root)
    path = start_record_path(config, root, session)
    refused = already_started(session, str(path), "claim gate --start --restart replaces it")
    if not restart and path.exists():  # fails before the snapshots; the write decides races
        raise refused
    anchors = start_anchors(config, root, trusted_ref)
    head = _head_commit(root)
    anchors[RECORD_KEY] = _test_baselines(config, root, head, anchors, trusted_ref)
    try:
        write_start_record(path, head, take_snapshots(config), anchors, replace=restart)
    except StartExists:
        raise refused from None
    return path


def _test_baselines(
    config: GateConfig,
    root: Path,
    head: str | None,
    anchors: dict[str, Any],
    trusted_ref: str | None,
) -> list[dict[str, Any]]:
    """Each test_run check run once on the work tree as the agent finds it, bound to its
    differences from HEAD as the gate captures them."""
    if not any(isinstance(c, TestRunCheck) and c.baseline for c in config.checks):
        return []
    mutations: list[Mutation] = []
    ignored: tuple[str, ...] = ()
    mirror: Mirror | None = None
    error = None
    # Held from the capture to the last run, as when judging.
    with contextlib.ExitStack() as held:
        try:
            mirror = held.enter_context(_mirror(config, root))
            mutations, ignored = _capture(config, root, head, datetime.now(UTC), mirror)
        except ObservationFailed as failure:
            error = f"the work tree could not be captured: {failure}"
        return take_test_baselines(
            config, root, anchors, mutations, ignored, error, mirror, trusted_ref
        )


@git_answers_kept()
def run_gate(
    config: GateConfig,
    repo: Path,
    *,
    outcome: str,
    session: str | None = None,
    base: str | None = None,
    events: GateEvents | None = None,
    task_id: str | None = None,
    trusted_ref: str | None = None,
) -> GateResult:
    """Capture, observe, verify and record one change. ``trusted_ref`` (a full commit id)
    replaces every test_run check's own (CI passes the pull request's base commit)."""
    events = events or _Silent()
    require_commit_ids(("--base", base), ("--trusted-ref", trusted_ref))
    root = repository_root(repo)
    config, record, chosen, capture_error, notes = _anchored(config, root, base, session, events)
    if config.sign_key is not None and not config.sign_key.is_file():
        # Checked before any work; the key itself is read after the checks ran.
        raise UsageError(f"{config.path.name}: [gate].sign_key {config.sign_key} is not a file")
    no_check = contextlib.nullcontext(lambda: None)
    with checking_toolchains(config, root) if capture_error is None else no_check as confirm:
        # The operator's configuration (an agent's edit of it runs nothing, so cannot make the
        # gate fail here and let a stop through); the interpreters are asked while the work tree
        # is captured, and answer before anything is recorded.
        return _gate(config, root, outcome, events, task_id, trusted_ref, record, chosen,
                     capture_error, notes, confirm)  # fmt: skip


def require_commit_ids(*given: tuple[str, str | None]) -> None:
    """Each option given is a full commit id: a name is the agent's to move."""
    for name, value in given:
        if value is not None and object_format_of(value) is None:
            raise UsageError(
                f"{name}: {value!r} is not a full commit id; a name in the agent's repository "
                f"is the agent's to move: pass the commit (git rev-parse {value}) instead"
            )


def _gate(
    config: GateConfig,
    root: Path,
    outcome: str,
    events: GateEvents,
    task_id: str | None,
    trusted_ref: str | None,
    record: dict[str, Any] | None,
    chosen: _Base,
    capture_error: str | None,
    notes: list[str],
    confirm: Callable[[], None],
) -> GateResult:
    events.step("base", f"{chosen.revision or 'no commit'} ({chosen.source})")
    started = datetime.now(UTC)
    deadline = None if config.timeout_s is None else started.timestamp() + config.timeout_s
    mirror: Mirror | None = None
    # Held from the capture to the last check: the run reads what the capture read.
    with contextlib.ExitStack() as held:
        mutations: list[Mutation] = []
        ignored: tuple[str, ...] = ()
        try:
            if capture_error is not None:
                raise ObservationFailed(capture_error)
            mirror = held.enter_context(_mirror(config, root))
            mutations, ignored = _capture(config, root, chosen.revision, started, mirror)
            if ignored:
                events.step("capture", f"not a change, ignored: {', '.join(ignored)}")
        except ObservationFailed as failure:
            # The work tree is the agent's: one that cannot be read honestly (a link out of it, a
            # file name git cannot record, a base whose objects were tampered with) is the agent's
            # to fix, and nothing is observed; so is a run with nothing trusted to measure from. The
            # claim records it as a change of a kind nothing may cover, so that whoever verifies
            # the recorded claim reaches the gate's verdict.
            capture_error = str(failure)
            mutations = [Mutation("m1", UNCAPTURED, WHOLE_TREE, Timestamp.of(started), None)]
            events.step("capture", f"could not capture the change: {failure}")
        else:
            files = sum(1 for m in mutations if m.kind == FILE_WRITE)
            events.step(
                "capture", f"{files} changed file(s), {len(mutations) - files} configured target(s)"
            )
        confirm()
        claim_path = _new_run_dir(config, root, started) / CLAIM_NAME
        task = task_id or f"{root.name}@{(chosen.revision or 'empty')[:12]}@{format_time(started)}"
        baselines = "taken at start" if record is not None else "not taken (no claim gate --start)"
        uncaptured = (
            ""
            if capture_error is None
            else f"; the work tree could not be captured: {capture_error}"
        )
        create_claim(
            claim_path,
            {
                "spec_version": "0.1",
                "task": {
                    "id": task,
                    "description": f"claim gate on {root.name} against {chosen.revision} "
                    f"({chosen.source}); baselines {baselines}{uncaptured}",
                },
                "claimed_outcome": outcome,
                "mutations": [
                    {name: value for name, value in mutation_record(m).items() if value is not None}
                    for m in mutations
                ],
                "evidence": [],
            },
        )
        # Nothing changed: the verdict is unverified (require_mutations) whatever a check sees, so
        # none runs; the recorded claim, without evidence, re-verifies to the same verdict.
        skipped = capture_error is not None or not mutations
        if not mutations:
            events.step("checks", "none run: nothing changed")
        for number, check in enumerate(() if skipped else config.checks, start=1):
            note = _observe(config, check, number, claim_path, mutations, root, record,
                            trusted_ref, deadline, events, mirror, ignored,
                            chosen.revision)  # fmt: skip
            if note is not None:
                notes.append(f"  check {number} (test_run): its test baseline {note}")
    raw, claim = read_claim(claim_path)
    # The policy is judged as the claim records it: whoever verifies the recorded claim, with
    # `claim verify`, a service or another implementation, applies the same rules to the same
    # policy and reaches the gate's verdict.
    raw["policy"] = policy_json(gate_policy(config, root))
    verdict = verify(
        claim, datetime.now(UTC), parse_policy(raw["policy"]), signatures=check_signatures
    )
    raw = _with_verdict(raw, verdict, config)
    write_atomic(claim_path, render(raw))
    events.step("verdict", f"{verdict.state}: {verdict.reason}")
    notes.insert(0, f"  base {chosen.revision} ({chosen.source}); baselines {baselines}")
    # The gate observes by itself: its next step for the agent is its agent_reason, not a
    # `claim observe` command.
    report = render_report(claim, verdict, str(claim_path), steps=False) + "\n".join(notes) + "\n"
    return GateResult(
        verdict=verdict,
        claim_path=claim_path,
        document=raw,
        agent_reason=agent_reason(claim, verdict, root, capture_error),
        exit_code=EXIT_FOR_STATE[verdict.state],
        report=report,
    )


def _anchored(
    config: GateConfig, root: Path, base: str | None, session: str | None, events: GateEvents
) -> tuple[GateConfig, dict[str, Any] | None, _Base, str | None, list[str]]:
    """What the run trusts: the operator's configuration, the start record, the base; the
    reason nothing can be trusted (no base, no operator's copy of a changed configuration), and
    notes for the report."""
    _refuse_runs_dir_inside(config, root)
    record = read_start_record(start_record_path(config, root, session))
    chosen = _choose_base(config, root, base, record)
    error, notes = None, []
    try:
        # The configuration the agent may have edited has named the start record and the base
        # so far; from here on, the operator's copy does.
        operators, changed = operator_config(
            config, root, record, None if chosen is None else chosen.revision
        )
    except ObservationFailed as failure:
        # No operator's configuration to judge under: nothing runs, and nothing is signed with
        # a key the agent's copy names.
        error, config = str(failure), replace(config, sign_key=None)
    else:
        if operators.runs_dir != config.runs_dir:
            record = read_start_record(start_record_path(operators, root, session))
        config = operators
        chosen = _choose_base(config, root, base, record)
        if changed:
            # An operator who edits the configuration after the start would otherwise wonder
            # why the edit has no effect.
            notes.append(
                f"  {', '.join(changed)}: not the operator's copy (taken by claim gate --start, "
                "else at the base); judged under that copy. After changing the configuration, "
                "run claim gate --start again"
            )
            events.step("configuration", notes[-1])
        _refuse_runs_dir_inside(config, root)
    if chosen is None:
        return config, record, _Base(None, "none"), error or NO_TRUSTED_BASE, notes
    return config, record, chosen, error, notes


def gate_policy(config: GateConfig, root: Path) -> Policy:
    """The operator's policy with what the gate demands of every change: that there is one
    (``require_mutations``), that it leaves the gate's configuration alone (each file the
    configuration reads that lies in the work tree is a protected target), and that what the
    gate could not capture is covered by nothing. With a gate key and no trust roots of its own,
    the gate's key is its one trusted observer, so the gate's signed evidence proves
    independence. Only the operator's claim.toml can do this: the claim's own policy is never
    read."""
    policy = structs.replace(
        config.policy,
        require_mutations=True,
        protected_targets=tuple(
            dict.fromkeys((*config.policy.protected_targets, *protected_targets(config, root)))
        ),
        covered_by={k: v for k, v in config.policy.covered_by.items() if k != UNCAPTURED},
    )
    if config.sign_key is None or policy.trust is not None:
        return policy
    from ..trust.keys import load_signing_key  # noqa: PLC0415

    public = load_signing_key(str(config.sign_key)).public
    observer = TrustedObserver(GATE_VERIFIER_ID, public, KNOWN_CHECK_TYPES)
    return structs.replace(policy, trust=Trust("signed", (observer,), ()))


def protected_targets(config: GateConfig, root: Path) -> tuple[str, ...]:
    """The configuration's files that lie in the work tree, as the capture names them (POSIX
    paths relative to the root): the agent works there, and they are the operator's. A file
    reached through links is protected under every name on the way (attack 62): a link is a
    file the agent can re-point at another one it never changed."""
    trees = tuple(dict.fromkeys((Path(os.path.abspath(root)), Path(os.path.realpath(root)))))
    found: dict[str, None] = {}
    for path in config.files:
        for name in _names(Path(os.path.abspath(path))):
            for tree in trees:
                if name != tree and name.is_relative_to(tree):
                    found[name.relative_to(tree).as_posix()] = None
    return tuple(found)


def _names(path: Path) -> Iterator[Path]:
    """``path``, every link on the way to the file it names (a folder on its path, a link to a
    link), and that file."""
    for _ in range(MAX_LINK_HOPS):
        yield path
        yield from (p for p in reversed(path.parents) if p.is_symlink())
        try:
            target = os.readlink(path)
        except OSError:  # not a link (or no longer one: the work tree is the agent's)
            break
        path = Path(os.path.abspath(Path(os.path.realpath(path.parent)) / target))
    yield Path(os.path.realpath(path))


def policy_json(policy: Policy) -> dict[str, Any]:
    """The policy as a claim document holds it (so ``claim verify`` repeats the decision)."""
    document: dict[str, Any] = {
        "id": policy.id,
        "requires": list(policy.requires),
        "max_age_s": policy.max_age_s,
        "min_tests": int(policy.min_tests),
        "allow_test_changes": policy.allow_test_changes,
    }
    if not policy.experimental_checks:
        document["experimental_checks"] = False
    if policy.require_mutations:
        document["require_mutations"] = True
    if policy.protected_targets:
        document["protected_targets"] = list(policy.protected_targets)
    if policy.covered_by:
        document["covered_by"] = {kind: list(types) for kind, types in policy.covered_by.items()}
    if policy.trust is not None:
        document["trust"] = {
            "mode": policy.trust.mode,
            "observers": [
                {"id": o.id, "public_key": o.public_key.text, "check_types": list(o.check_types)}
                for o in policy.trust.observers
            ],
            "agent_keys": [key.text for key in policy.trust.agent_keys],
        }
    return document


# --- capture ---------------------------------------------------------------------------------


def _mirror(config: GateConfig, root: Path) -> Mirror:
    """The operator's mirror of the work tree (``observe.mirror``): a file its change cache
    vouches for is not read again, and a file read by the capture is copied for the test run in
    the same pass."""
    object_format = tree_object_format(root)
    return Mirror.kept(mirror_path(config, root), root, run_owner(), object_format)


def _capture(
    config: GateConfig, root: Path, base: str | None, at: datetime, mirror: Mirror
) -> tuple[list[Mutation], tuple[str, ...]]:
    """The work tree's changes against ``base``, and against HEAD (what was committed and
    reverted since the base still differs from HEAD, and the test run checks against HEAD), then
    one mutation per configured state and deploy target; and the changed paths ignored.

    Ignored: a file as the gate itself last wrote it there (``--junit`` and the like, by digest:
    the agent's own bytes at that path are a change), and a path the operator's ``[gate].ignore``
    matches. Never a protected path: a test file, its configuration, a ``protect`` glob's, the
    gate's configuration. An ignored path is also left out of the test run's copy (``_observe``),
    so nothing the tests read is unrecorded."""
    outputs = gate_outputs(config, root)
    globs = [glob for check in config.checks if isinstance(check, TestRunCheck)
             for glob in check.protect]  # fmt: skip
    protected = {*config.policy.protected_targets, *protected_targets(config, root)}

    def is_ignored(target: str, digest: str | None) -> bool:
        written = digest is not None and outputs.get(target) == digest
        wanted = written or any(fnmatch.fnmatchcase(target, glob) for glob in config.ignore)
        return wanted and target not in protected and not is_protected(target.encode(), globs)

    found: list[Mutation] = []
    ignored: dict[str, None] = {}
    taken: set[str] = set()
    # HEAD at the base (no commit since) holds no change the base's capture missed.
    head = _head_commit(root)
    for revision in dict.fromkeys((base, "HEAD" if head is None or head != base else base)):
        for change in capture(root, revision, found, at, excluded=(), mirror=mirror):
            if is_ignored(change.target, change.digest):
                ignored[change.target] = None
                continue
            found.append(
                Mutation(
                    next_id("m", taken), FILE_WRITE, change.target, Timestamp.of(at), change.digest
                )
            )
            taken.add(found[-1].id)
    configured = {
        (_configured_kind(check), check.target): None
        for check in config.checks
        if not isinstance(check, TestRunCheck)
    }
    for kind, target in configured:
        found.append(Mutation(next_id("m", taken), kind, target, Timestamp.of(at), None))
        taken.add(found[-1].id)
    return found, tuple(ignored)


def mirror_path(config: GateConfig, root: Path) -> Path:
    """The operator's mirror of the work tree and its change cache (``observe.mirror``)."""
    return config.runs_dir / repository_id(root) / MIRROR_NAME


def gate_outputs_path(config: GateConfig, root: Path) -> Path:
    """Where the files the gate wrote into the work tree are recorded: the runs directory,
    the operator's, never the agent's tree."""
    return config.runs_dir / repository_id(root) / OUTPUTS_NAME


def gate_outputs(config: GateConfig, root: Path) -> dict[str, str]:
    """``{path: digest}`` of what the gate last wrote into the work tree."""
    try:
        found = json.loads(gate_outputs_path(config, root).read_bytes())
    except (OSError, ValueError):
        return {}
    if not isinstance(found, dict):
        return {}
    return {k: v for k, v in found.items() if isinstance(k, str) and isinstance(v, str)}


def record_gate_outputs(config: GateConfig, root: Path, paths: Sequence[Path]) -> None:
    """Record the digest of each of ``paths`` (files the gate just wrote) that lies in the work
    tree, so that the next run does not take the gate's own writing for the agent's."""
    tree = Path(os.path.realpath(root))
    record = gate_outputs(config, root)
    for path in paths:
        real = Path(os.path.realpath(path))
        if real == tree or not real.is_relative_to(tree):
            continue
        rel = real.relative_to(tree).as_posix()
        digest = content_digest(os.fsencode(tree), rel.encode(), ObservationFailed)
        if digest is not None:
            record[rel] = digest
    if record:
        target = gate_outputs_path(config, root)
        target.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomic(target, dumps(record).encode())


def _configured_kind(check: CheckConfig) -> str:
    if isinstance(check, EndpointHealthCheck):
        return DEPLOY
    if isinstance(check, DomAssertionCheck):
        return UI_ACTION
    return STATE_WRITE


def _head_commit(root: Path) -> str | None:
    done = git_process(root, ("rev-parse", "--verify", "--quiet", "HEAD^{commit}"), UsageError)
    return done.stdout.decode().strip() if done.returncode == 0 else None


def _choose_base(
    config: GateConfig, root: Path, given: str | None, record: dict[str, Any] | None
) -> _Base | None:
    """--base, else [gate].base of a claim.toml outside the work tree, else the start record's
    commit; None when there is none. Never a ref the agent can move: no merge-base with a
    default branch, no HEAD; and a [gate].base the agent could have edited counts for nothing."""
    if given is not None:
        return _Base(given, "--base")
    if config.base is not None and not _inside(config.path, root):
        return _Base(config.base, "[gate].base")
    if record is not None and "base" in record:
        commit = record["base"]
        if commit is None:
            return _Base(None, "the start record: no commit yet, every file is new")
        if isinstance(commit, str) and object_format_of(commit) is not None:
            return _Base(commit, "the start record")
    return None


def _inside(path: Path, root: Path) -> bool:
    real, tree = os.path.realpath(path), os.path.realpath(root)
    return real.startswith(tree.rstrip("/") + "/")


def _new_run_dir(config: GateConfig, root: Path, at: datetime) -> Path:
    stamp = at.strftime("%Y%m%dT%H%M%S%fZ")
    run_dir = config.runs_dir / repository_id(root) / f"{stamp}-{uuid.uuid4().hex[:8]}"
    try:
        run_dir.mkdir(parents=True, mode=0o700)
    except OSError as exc:
        raise UsageError(f"cannot create the run folder {run_dir}: {exc.strerror}") from None
    return run_dir


def _refuse_runs_dir_inside(config: GateConfig, root: Path) -> None:
    """Runs recorded inside the work tree would be the agent's to edit, and would show up as
    changes of its own."""
    runs, tree = os.path.realpath(config.runs_dir), os.path.realpath(root)
    if runs == tree or runs.startswith(tree.rstrip("/") + "/"):
        raise UsageError(
            f"{config.path.name}: [gate].runs_dir {config.runs_dir} is inside the work tree "
            f"{root}; keep the runs where the agent does not work"
        )


# --- observing -------------------------------------------------------------------------------


def _observe(
    config: GateConfig,
    check: CheckConfig,
    number: int,
    claim_path: Path,
    mutations: Sequence[Mutation],
    root: Path,
    record: dict[str, Any] | None,
    trusted_ref: str | None,
    deadline: float | None,
    events: GateEvents,
    mirror: Mirror | None,
    ignored: Sequence[str] = (),
    base: str | None = None,
) -> str | None:
    """Run one check through its observer; a failed attempt is recorded (details.error), never
    a contradiction, and the gate goes on to the next check. What the report should say of a
    test baseline not used in full, or taken by a control run. ``base``: the commit changes
    are measured against, whose protected files the trusted commit must have."""
    name = f"check {number} ({check.check_type})"
    timeout = check.timeout_s
    if deadline is not None:
        timeout = min(timeout, deadline - datetime.now(UTC).timestamp())
    notes: list[str] = []
    if isinstance(check, TestRunCheck):
        covers = tuple(m.id for m in mutations if m.kind == FILE_WRITE)
        target, expected, observe = _test_run(config, check, root, claim_path, timeout,
                                              trusted_ref, base, record, mirror, ignored,
                                              notes)  # fmt: skip
    else:
        covers = tuple(m.id for m in mutations if m.target == check.target
                       and m.kind != FILE_WRITE)  # fmt: skip
        # A page's screenshot is kept beside the claim, in the run folder the agent cannot reach.
        found = probe(replace(check, timeout_s=max(timeout, 0.001)), claim_path.parent)
        target, expected = found.target, found.failed_expected
        # What the gate adds to the observer's details: the baseline, and where a page's
        # screenshot was kept.
        added = baseline_details(record, check, target)
        if isinstance(check, DomAssertionCheck):
            added[RUN_KEY] = f"{repository_id(root)}/{claim_path.parent.name}"

        def observe() -> Observation:
            if timeout <= 0:
                raise ObservationFailed("the gate ran out of time ([gate].timeout_s)")
            seen = found.observe()
            return replace(seen, details={**seen.details, **added})

    settings = ObserverSettings(
        claim_path=str(claim_path),
        covers=covers,
        verifier_id=GATE_VERIFIER_ID,
        self_attested=False,
        print_only=False,
        record_failure=True,
        evidence_id=None,
        sign_key_path=None if config.sign_key is None else str(config.sign_key),
    )
    events.step(name, f"observing {target}")
    try:
        item = run_observer(settings, check.check_type, _refusal_fails(observe), target, expected)
    except ObservationFailed as failure:
        events.step(name, f"could not observe: {failure}")
    else:
        events.step(name, _summary(item))
    return next(iter(notes), None)


def _refusal_fails(observe: Callable[[], Observation]) -> Callable[[], Observation]:
    """An observer's refusal met while observing is this check's failed attempt. Some are the
    agent's to provoke (it grants the reader role a write, it puts a function of its own on the
    search path): raised out of the gate, they would stop the run, and the hook lets a stop
    through when the gate cannot run (attack 63)."""

    def observed() -> Observation:
        try:
            return observe()
        except UsageError as refused:
            raise ObservationFailed(f"refused: {refused}") from None

    return observed


def _test_run(
    config: GateConfig,
    check: TestRunCheck,
    root: Path,
    claim_path: Path,
    timeout: float,
    trusted_ref: str | None,
    base: str | None,
    record: dict[str, Any] | None,
    mirror: Mirror | None,
    ignored: Sequence[str],
    notes: list[str],
) -> tuple[str, Any, Callable[[], Observation]]:
    """The check's target, its expectation should it fail before it runs, and its observation,
    which adds to ``notes`` what the report says of its baseline."""
    from ..observe import test_run  # noqa: PLC0415

    request, problem = test_request(config, check, root, timeout, trusted_ref, record, mirror,
                                    ignored)  # fmt: skip

    def observe() -> Observation:
        if problem is not None:
            raise ObservationFailed(problem)
        if timeout <= 0:
            raise ObservationFailed("the gate ran out of time ([gate].timeout_s)")
        if request.trusted_ref is not None:
            require_base_tests(
                root, base, request.trusted_ref, request.trusted_content, check.protect
            )
        # Every test seen before the agent worked, or on the trusted commit, must pass now
        # (attacks 93, 98, 100).
        baseline = baseline_for(
            check, request, record,
            lambda: control_baseline(config, check, root, str(request.trusted_ref), timeout),
        )  # fmt: skip
        if baseline.note is not None:
            notes.append(baseline.note)
        _, claim = read_claim(claim_path)
        # Before the tests run: a green run of code that acts on being tested proves nothing.
        hits = scan(*_changed_code(config, check, root, base, mirror, claim.mutations))
        if hits:
            raise ObservationFailed(why_unverified(hits, config.path.name))
        seen = test_run.observe(with_baseline(request, baseline), claim.mutations)
        seen = replace(seen, details={**seen.details, **baseline.details})
        return units_loaded(seen, baseline, request.required)

    return request.target, request.expected, observe


def _changed_code(
    config: GateConfig,
    check: TestRunCheck,
    root: Path,
    base: str | None,
    mirror: Mirror | None,
    mutations: Sequence[Mutation],
) -> tuple[list[ChangedFile], frozenset[str]]:
    """Each changed file the test-aware scan reads (``scanned``: no test, no path the
    operator allows in ``[gate].allow_test_aware``), in both versions, and the paths of the
    tree it looks up (a Rust crate's kind). Both versions come from where the agent cannot
    change them after the capture: the base's from the pinned commit, every object checked
    against its id; the change's from the operator's mirror, as the capture copied it, checked
    against the digest the claim records (the run is refused unless it reads those bytes too),
    never from the work tree."""
    latest = latest_file_writes(mutations)
    wanted = [
        (target, mutation.digest)
        for target, mutation in latest.items()
        if mutation.digest is not None
        and mutation.digest.startswith(_CONTENT_DIGEST)
        and scanned(target, check.protect, config.allow_test_aware)
    ]
    if not wanted:
        return [], frozenset()
    if mirror is None:
        raise ObservationFailed("the change was not captured: its code cannot be read")
    source = None if base is None else GitContent(root, base)
    entries = {} if source is None else source.entries()
    at_base = [target.encode() for target, _ in wanted
               if entries.get(target.encode(), ("",))[0] in _REGULAR_MODES]  # fmt: skip
    before = {} if source is None or not at_base else source.contents(at_base)
    changed = [
        ChangedFile(target, before.get(target.encode()), _captured(mirror, target, digest))
        for target, digest in wanted
    ]
    if not any(target.endswith(".rs") for target, _ in wanted):
        return changed, frozenset()
    # Only the names a Rust crate's kind is told by: 100,000 paths are not all decoded.
    tree = {display(rel) for rel in entries if rel.rsplit(b"/", 1)[-1] in _CRATE_FILES}
    for target, mutation in latest.items():
        if os.fsencode(target).rsplit(b"/", 1)[-1] in _CRATE_FILES:
            (tree.discard if mutation.digest == DELETED else tree.add)(target)
    return changed, frozenset(tree)


_CRATE_FILES = (b"Cargo.toml", b"main.rs", b"lib.rs")
_REGULAR_MODES = ("100644", "100755")
_CONTENT_DIGEST = "sha256:"  # a file's (a link's digest says "symlink:", a deletion "deleted")


def _captured(mirror: Mirror, target: str, digest: str) -> bytes:
    """``target`` as the capture copied it into the operator's mirror, with the claim's
    digest."""
    try:
        with os.fdopen(open_beneath(mirror.tree, target.encode()), "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise ObservationFailed(f"cannot read the capture of {target}: {exc.strerror}") from None
    if sha256_digest(data) != digest:
        raise ObservationFailed(f"{target} in the operator's mirror is not as the claim records it")
    return data


def _summary(item: dict[str, Any]) -> str:
    observed = item.get("observed_value")
    if isinstance(observed, dict) and "exit_code" in observed:
        counts = ", ".join(
            f"{observed[key]} {key}" for key in ("passed", "failed", "errors") if key in observed
        )
        return f"exit code {observed['exit_code']}" + (f", {counts}" if counts else "")
    return "observed"


# --- the decision ----------------------------------------------------------------------------


def _with_verdict(raw: dict[str, Any], verdict: Verdict, config: GateConfig) -> dict[str, Any]:
    if config.sign_key is None:
        return {**raw, "verdict": verdict.to_json()}
    from ..trust.keys import load_signing_key  # noqa: PLC0415
    from ..trust.verdicts import sign_verdict  # noqa: PLC0415

    return sign_verdict(raw, verdict.to_json(), load_signing_key(str(config.sign_key)))
