"""What ``POST /v1/gate`` does, without HTTP: find the repository under the observe root, run the
gate on it with the operator's configuration and the service's key, and record the decision.

Run as its own user, the service is an observer the agent cannot reach: the configuration is the
operator's file (never the ``claim.toml`` in the work tree, which the agent can edit), the
signing key is readable by the service alone, and the runs directory is the service user's. The
requester only names a repository and says what the agent claimed.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from ..errors import ClaimError
from ..gate.baseline import StartExists, already_started, read_start_record, start_record_path
from ..gate.config import GateConfig, load_config
from ..gate.hooks import MAX_OUTCOME_CHARS
from ..gate.run import NO_OUTCOME, GateResult, run_gate, start_gate
from ..observe.repository import git_toplevel, run_git
from .records import Entry, NewEntry, NewStart, Start, judged_part
from .settings import ServiceSettings

_log = logging.getLogger("completion_claim.service.gate")

# What the gate's claim document holds beside the claim itself: the policy and the verdict go to
# their own members of the entry, and the verdict's attestation signs that same verdict, which
# the signed tree heads now cover.


class RepoRefused(ClaimError):
    """The repository named is not one the service observes (outside its observe root, once
    links and ``..`` are followed)."""


class NotARepository(ClaimError):
    """The path named is not a directory in a git work tree."""


class BadGateRequest(ClaimError):
    """The request's members are missing, unknown or of the wrong type; names the member."""


class GateNotConfigured(ClaimError):
    """The service was started without what ``POST /v1/gate`` needs (the operator's fault)."""


class Appends(Protocol):
    """What the gate needs of the ledger: to log its decisions and its starts, and to find the
    start a session's decisions measure from."""

    def append(self, entry: NewEntry) -> Entry: ...

    def append_start(self, start: NewStart) -> Start: ...

    def find_start(self, repo: str, session: str | None) -> Start | None: ...


@dataclass(frozen=True)
class GateRequest:
    repo: str
    outcome: str = ""
    session: str | None = None
    task_id: str | None = None


# Bounds on what a requester may send (characters): an outcome as ``claim gate --outcome-file``
# reads one, and ids as long as any harness's.
MAX_ID_CHARS = 200
MAX_PATH_CHARS = 4096
MAX_ALTERNATES_BYTES = 64 * 1024
# The largest body whose members are within their bounds: JSON writes a character in at most 12
# bytes (an escaped surrogate pair), with room for the names and punctuation. The gate's routes
# read this much whatever the service's --max-bytes (meant for posted claims): a hook's request
# refused for its size would let the agent's stop through unjudged.
MAX_BODY_BYTES = 12 * (MAX_OUTCOME_CHARS + MAX_PATH_CHARS + 2 * MAX_ID_CHARS) + 1024


def gate_request(document: Any, *, start: bool = False) -> GateRequest:
    """A ``POST /v1/gate`` body (``/v1/gate/start``: ``repo`` and ``session`` only)."""
    if type(document) is not dict:
        raise BadGateRequest("the body must be a JSON object")
    allowed = ("repo", "session") if start else ("repo", "outcome", "session", "task_id")
    unknown = sorted(set(document) - set(allowed))
    if unknown:
        raise BadGateRequest(f"{unknown[0][:60]}: unknown member (expected {', '.join(allowed)})")
    repo = _text(document, "repo", MAX_PATH_CHARS)
    if repo is None:
        raise BadGateRequest("repo: required (the absolute path of the work tree)")
    return GateRequest(
        repo=repo,
        outcome=_text(document, "outcome", MAX_OUTCOME_CHARS) or "",
        session=_text(document, "session", MAX_ID_CHARS),
        task_id=_text(document, "task_id", MAX_ID_CHARS),
    )


def _text(document: dict[str, Any], name: str, limit: int) -> str | None:
    value = document.get(name)
    if value is None:
        return None
    if type(value) is not str:
        raise BadGateRequest(f"{name}: expected a string or null")
    if len(value) > limit:
        raise BadGateRequest(f"{name}: longer than {limit} characters")
    if "\0" in value:
        raise BadGateRequest(f"{name}: contains a NUL character")
    return value


@dataclass(frozen=True)
class GateDecision:
    entry: Entry
    result: GateResult
    max_blocks: int  # the operator's bound on blocks in a row, for the hook that asked


class _LoggedEvents:
    """The gate's progress goes to the service's log, one line per step, naming the repo."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def step(self, name: str, detail: str) -> None:
        _log.info("gate %s: %s: %s", self.root, name, " ".join(detail.split()))


def resolve_repo(observe_root: Path, given: str) -> Path:
    """The work tree's root for ``given``, an absolute path that must stay under
    ``observe_root`` once every link is followed. The root returned is the real path, so what
    is judged is what was checked, whatever the name sent."""
    shown = given[:200]
    path = Path(given)
    if not path.is_absolute():
        raise NotARepository(f"repo: {shown!r} is not an absolute path")
    if ".." in path.parts:
        raise RepoRefused(f"repo: {shown!r} contains '..'")
    allowed = Path(os.path.realpath(observe_root))
    real = Path(os.path.realpath(path))
    if not real.is_relative_to(allowed):
        raise RepoRefused(f"repo: {shown!r} is not under the service's observe root")
    try:
        is_dir = real.is_dir()
    except OSError as error:  # a name too long, a folder the service may not search
        raise NotARepository(f"repo: {shown!r}: {error.strerror or error}") from None
    if not is_dir:
        raise NotARepository(f"repo: {shown!r} is not a directory")
    try:
        top = git_toplevel(real)
    except ClaimError as error:
        raise NotARepository(f"repo: {shown!r}: {error}") from None
    if top is None:
        raise NotARepository(f"repo: {shown!r} is not in a git work tree")
    root = Path(os.path.realpath(top))
    if not _utf8(str(root)):
        # The gate names its runs and its claim after the work tree: a name it cannot write
        # would fail the run half-way, as a 500.
        raise NotARepository(f"repo: {shown!r}: the work tree's real path is not UTF-8 text")
    # A folder under the root whose repository starts above it would judge files outside.
    if not root.is_relative_to(allowed):
        raise RepoRefused(f"repo: {shown!r} belongs to a repository outside the observe root")
    for place in git_data(root, shown):
        if any(not Path(os.path.realpath(p)).is_relative_to(allowed) for p in _links(place)):
            raise RepoRefused(f"repo: {shown!r} keeps git data outside the observe root")
    return root


def _utf8(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def _links(place: str) -> Iterator[str]:
    """``place`` and every link under it: a link inside the git dir (a pack, a loose object, a
    refs folder) reads as far as one naming the git dir itself."""
    yield place
    for folder, subfolders, files in os.walk(place):
        for name in (*subfolders, *files):
            path = os.path.join(folder, name)
            if os.path.islink(path):
                yield path


def git_data(root: Path, shown: str) -> list[str]:
    """Where git reads the repository's history from: its git dir, the common dir a linked work
    tree shares, and every object store their alternates name (followed, as git does). A
    ``.git`` file or link, or an alternate, out of the observe root would have the service read
    another repository with its own rights, and tell the requester its files."""
    try:
        lines = run_git(
            root,
            "rev-parse",
            "--path-format=absolute",
            "--absolute-git-dir",
            "--git-common-dir",
            failure=NotARepository,
        )
    except NotARepository as error:
        raise NotARepository(f"repo: {shown!r}: {error}") from None
    places = [os.fsdecode(line) for line in lines.splitlines() if line]
    stores = [os.path.join(places[-1], "objects")] if places else []
    seen: set[str] = set()
    while stores:
        store = stores.pop()
        real = os.path.realpath(store)
        if real in seen:
            continue
        seen.add(real)
        places.append(store)
        try:
            stores += _alternates(real)
        except RepoRefused as error:
            raise RepoRefused(f"repo: {shown!r}: {error}") from None
    return places


def _alternates(store: str) -> list[str]:
    """The object stores ``store/info/alternates`` names (relative ones from ``store``)."""
    try:
        with open(os.path.join(store, "info", "alternates"), "rb") as file:
            text = file.read(MAX_ALTERNATES_BYTES)
    except OSError:
        return []  # none (or unreadable, and then git cannot use it either)
    found = []
    for line in text.splitlines():
        name = os.fsdecode(line.strip())
        if name.startswith('"'):
            # Git reads a quoted line with C escapes; no honest clone writes one.
            raise RepoRefused(
                f"{store}: a quoted alternate (which could keep git data outside the observe root)"
            )
        if name and not name.startswith("#"):
            found.append(os.path.join(store, name))
    return found


def operator_config(
    settings: ServiceSettings, environ: Mapping[str, str]
) -> tuple[GateConfig, Path]:
    """The operator's claim.toml, read afresh for each run, with the service's key as the
    gate's signing key (so its evidence and verdicts are signed by the service); and the
    observe root."""
    if settings.observe_root is None or settings.gate_config is None:
        raise GateNotConfigured(
            "the gate needs the service's --observe-root and --gate-config; this one has "
            f"observe root {settings.observe_root} and gate config {settings.gate_config}"
        )
    config = load_config(settings.gate_config, environ)
    runs = Path(os.path.realpath(config.runs_dir))
    if runs.is_relative_to(os.path.realpath(settings.observe_root)):
        # The start records there fix the base and the baselines a later run measures from.
        raise GateNotConfigured(
            f"{config.path.name}: [gate].runs_dir {config.runs_dir} is under the observe root "
            f"{settings.observe_root}, where the agents work; keep the runs the service's own"
        )
    return replace(config, sign_key=settings.key_path), settings.observe_root


def start(
    settings: ServiceSettings,
    ledger: Appends,
    request: GateRequest,
    *,
    submitted_by: str,
    now: datetime,
) -> tuple[Path, Start]:
    """Take the baselines for a session starting on the requested repository, once, and log
    the start; its root and its ledger entry. A session started already is refused: the start
    fixes the base every later gate of the session measures from."""
    config, observe_root = operator_config(settings, os.environ)
    root = resolve_repo(observe_root, request.repo)
    try:
        path = start_gate(config, root, session=request.session)
    except StartExists:
        logged = ledger.find_start(str(root), request.session)
        where = f"{root}" + ("" if logged is None else f", ledger entry {logged.index}")
        raise already_started(request.session, where, "begin a new session") from None
    entry = ledger.append_start(new_start(path, root, request.session, submitted_by, now))
    _log.info("start %s (session %r) by %s: ledger index %d", root, request.session,
              submitted_by, entry.index)  # fmt: skip
    return root, entry


def decide(
    settings: ServiceSettings,
    ledger: Appends,
    request: GateRequest,
    *,
    submitted_by: str,
    now: datetime,
) -> GateDecision:
    """Run the gate on the requested repository and append its decision; nothing is appended
    when the gate cannot run. ``now`` is the entry's ``recorded_at``."""
    config, observe_root = operator_config(settings, os.environ)
    root = resolve_repo(observe_root, request.repo)
    result = run_gate(
        config,
        root,
        outcome=request.outcome.strip() or NO_OUTCOME,
        session=request.session,
        task_id=request.task_id,
        events=_LoggedEvents(root),
    )
    started = logged_start(ledger, config, root, request.session)
    entry = ledger.append(gate_entry(result, submitted_by, now, started))
    _log.info("gate %s: %s, ledger index %d", root, result.verdict.state, entry.index)
    return GateDecision(entry, result, config.max_blocks)


def new_start(
    record_path: Path, root: Path, session: str | None, submitted_by: str, now: datetime
) -> NewStart:
    """The ledger entry of the start just recorded at ``record_path``."""
    record = read_start_record(record_path) or {}
    return NewStart(
        repo=os.path.realpath(root),
        session=session,
        base=record.get("base"),
        taken_at=str(record.get("taken_at")),
        submitted_by=submitted_by,
        recorded_at=now,
    )


def logged_start(
    ledger: Appends, config: GateConfig, root: Path, session: str | None
) -> int | None:
    """The ledger index of the start the run measured from: the session's logged start, when
    it is the one its start record holds."""
    record = read_start_record(start_record_path(config, root, session))
    logged = ledger.find_start(os.path.realpath(root), session)
    if record is None or logged is None:
        return None
    if (logged.base, logged.taken_at) != (record.get("base"), record.get("taken_at")):
        return None
    return logged.index


def gate_entry(
    result: GateResult, submitted_by: str, recorded_at: datetime, start_index: int | None = None
) -> NewEntry:
    """The ledger entry of one gate run: its claim, the policy it was judged under, its verdict,
    and the ledger index of its session's start, when one is logged."""
    document: dict[str, Any] = result.document
    return NewEntry(
        claim=judged_part(document),
        policy=document["policy"],
        verdict=result.verdict.to_json(),
        submitted_by=submitted_by,
        via="gate",
        recorded_at=recorded_at,
        start_index=start_index,
    )
