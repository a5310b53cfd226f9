"""Harness adapters: a stop (or session-start) hook's stdin JSON in, the harness's own answer out.

Each adapter only translates. The decision is the gate's; the adapters read what each harness
documents (docs/integrations.md cites every contract) and answer in its words. Three rules hold
for all of them:

- Every stop is judged. A payload the hook cannot read (over its size, not JSON, a member off
  its contract) does not let the stop through: the gate judges the work tree all the same (the
  pinned repository, else the harness's project folder, else the folder the harness ran the
  hook in), under a session of its own, and the record says what was wrong with the payload.
  An over-long last message is cut to its end (a retry's text is appended to it) and the record
  says so. Only a hook that cannot judge at all (no work tree, no config, the gate or its
  service failing) lets the stop through, with one line on stderr saying so (and a system
  message where the harness shows one): a broken hook must not trap the agent.
- A stop that is not verified is sent back with the gate's reason for the agent, at most
  ``max_blocks`` times in a row per session; the next stop is let through with the verdict
  printed, never silently. The count, not the harness's ``stop_hook_active``, bounds the loop:
  that flag only says whether the previous stop of this turn was blocked, so when the harness
  reports a fresh turn (flag false, Cursor's ``loop_count`` 0) a stale count is reset. Where the
  flag is false again after a blocked stop whose retry made a tool call (Gemini CLI), it is not
  read at all: a reset there would never reach ``max_blocks``.
- What the agent reads is the gate's ``agent_reason`` and nothing else from the gate.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Protocol

from .._files import write_atomic

MAX_INPUT_BYTES = 64 << 20
"""What the hook reads of a payload. Payloads are small, but one carries the agent's last message
(Gemini CLI's grows with every retry); a larger one is still judged, without its payload."""
MAX_OUTCOME_CHARS = 64 * 1024
"""What a gate records of the agent's last message at most (the service takes no more)."""
_CUT_NOTE = (
    "[completion-claim: the agent's last message was {total} characters; "
    "only its last {kept} are recorded]\n"
)
_CUT_NOTE_CHARS = 120  # room for the note, whatever the numbers in it
UNREAD_SESSION = "unread-payload"
"""The session a stop whose payload could not be read is counted under (per harness)."""

STOPS_ENV = "CLAIM_RUN_STOPS"
"""Set by ``claim run`` for the agent (and so for the hooks its harness runs): a file each stop
hook adds a line to, so ``claim run`` can tell a harness whose hooks never ran."""

EXECUTABLES = {
    "claude": "claude-code",
    "codex": "codex",
    "copilot": "copilot",
    "gemini": "gemini",
    "openhands": "openhands",
    "cursor-agent": "cursor",
}
"""Each harness's command-line executable, for ``claim run`` to know a gated agent."""


class DecidedVerdict(Protocol):
    """What an adapter reads of a verdict (a ``Verdict``, or the state and reason a service
    answered)."""

    @property
    def state(self) -> str: ...
    @property
    def reason(self) -> str: ...


class GateOutcome(Protocol):
    """What an adapter needs from a gate run (``gate.run.GateResult`` has these members, and so
    does the answer of a service that ran the gate)."""

    @property
    def verdict(self) -> DecidedVerdict: ...
    @property
    def agent_reason(self) -> str: ...
    @property
    def claim_path(self) -> Path | str:
        """Where the decision is recorded: the run's claim file, or the service's page for
        its ledger entry."""
        ...


@dataclass(frozen=True)
class StopRequest:
    """One stop, read from the harness: whose session, which work tree, what the agent said."""

    harness: str
    session: str
    repo: Path
    outcome: str
    fresh_turn: bool | None
    """True when the harness says no stop hook blocked earlier in this turn; None: not told."""


@dataclass(frozen=True)
class StartRequest:
    harness: str
    session: str
    repo: Path
    resumed: bool
    """A resumed or compacted session already has its baselines; taking them again would
    count the agent's earlier work as the starting point."""


@dataclass(frozen=True)
class HookAnswer:
    stdout: str
    stderr: str
    exit_code: int


class HookInputError(ValueError):
    """The harness's payload is not what its contract says: the stop is judged without it."""


class NotAStop(HookInputError):
    """The payload is another event than the hook was installed for (a wiring mistake, not a
    stop): nothing to judge."""


Decide = Callable[[StopRequest], GateOutcome]
"""Runs the gate for one stop (the CLI binds it to ``run_gate`` under the project's config)."""


# ----------------------------------------------------------------------------------------------
# Reading payloads


def parse_payload(data: bytes) -> dict[str, Any]:
    if len(data) > MAX_INPUT_BYTES:
        raise HookInputError(f"input is over {MAX_INPUT_BYTES} bytes (not read)")
    text = data.decode("utf-8", errors="replace").lstrip("\ufeff")
    if not text.strip():
        raise HookInputError("empty input (expected the harness's JSON object on stdin)")
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as exc:
        raise HookInputError(f"input is not JSON: {exc.msg} (line {exc.lineno})") from None
    if not isinstance(payload, dict):
        raise HookInputError("input is not a JSON object")
    return payload


def _text(payload: Mapping[str, Any], key: str, *, required: bool = True) -> str:
    value = payload.get(key)
    if value is None and not required:
        return ""
    if not isinstance(value, str) or (required and not value.strip()):
        raise HookInputError(f"'{key}' is missing or not a non-empty string")
    return value


def _flag(payload: Mapping[str, Any], key: str) -> bool | None:
    value = payload.get(key)
    if value is None:
        return None
    if not isinstance(value, bool):
        raise HookInputError(f"'{key}' is not a boolean")
    return value


def _directory(value: str, key: str) -> Path:
    path = Path(value)
    if not path.is_absolute() or not path.is_dir():
        raise HookInputError(f"'{key}' is not an existing absolute directory: {value}")
    return path


# ----------------------------------------------------------------------------------------------
# The harnesses


class Harness:
    """Claude Code's contract; the other harnesses override what differs."""

    name = "claude-code"
    stop_events: tuple[str, ...] = ("Stop", "SubagentStop")
    start_events: tuple[str, ...] = ("SessionStart", "UserPromptSubmit")
    project_dir_env: str | None = "CLAUDE_PROJECT_DIR"
    """Where the harness tells its hooks the project root. The payload's ``cwd`` follows the
    agent's ``cd``, so it could point the gate at another tree; this cannot be moved by it."""
    status_key: str | None = None
    """The payload field saying how the agent stopped, where the harness sends one."""

    def parse_stop(self, payload: Mapping[str, Any]) -> StopRequest:
        self._check_event(payload, self.stop_events)
        active = _flag(payload, "stop_hook_active")
        return StopRequest(
            harness=self.name,
            session=_text(payload, "session_id"),
            repo=self._repo(payload),
            outcome=_text(payload, "last_assistant_message", required=False),
            fresh_turn=None if active is None else not active,
        )

    def parse_start(self, payload: Mapping[str, Any]) -> StartRequest:
        self._check_event(payload, self.start_events)
        return StartRequest(
            harness=self.name,
            session=_text(payload, "session_id"),
            repo=self._repo(payload),
            resumed=payload.get("source") in ("resume", "compact"),
        )

    def _repo(self, payload: Mapping[str, Any]) -> Path:
        project = os.environ.get(self.project_dir_env) if self.project_dir_env else None
        if project:
            return _directory(project, f"${self.project_dir_env}")
        return _directory(_text(payload, "cwd"), "cwd")

    def judges(self, payload: Mapping[str, Any]) -> bool:
        """Whether this stop is the agent finishing (and so is put to the gate)."""
        return self.status_key is None or payload.get(self.status_key) in (None, "completed")

    def _check_event(self, payload: Mapping[str, Any], expected: tuple[str, ...]) -> None:
        event = payload.get("hook_event_name")
        if event is not None and event not in expected:
            raise NotAStop(f"'hook_event_name' is {event!r}, expected one of {expected}")

    def allow(self, message: str) -> HookAnswer:
        body = {"systemMessage": message} if message else {}
        return HookAnswer(json.dumps(body), "", 0)

    def block(self, reason: str, message: str) -> HookAnswer:
        body: dict[str, str] = {"decision": "block", "reason": reason}
        if message:
            body["systemMessage"] = message
        return HookAnswer(json.dumps(body), "", 0)

    def started(self) -> HookAnswer:
        return HookAnswer("", "", 0)


class Codex(Harness):
    """Codex's Stop payload adds ``turn_id``; its answer schema is Claude's top-level fields
    (it rejects unknown keys, so nothing else is ever added)."""

    name = "codex"
    project_dir_env = None
    stop_events = ("Stop",)
    start_events = ("SessionStart", "UserPromptSubmit")


class OpenHands(Harness):
    """OpenHands (SDK 1.21) sends its own shape, not Claude's: ``event_type``, ``session_id``,
    ``working_dir``, ``metadata: {"reason": "agent_finished"}`` and no final message. A stop is
    refused with exit 2 and ``decision: deny``; it exports the project directory to hooks."""

    name = "openhands"
    project_dir_env = "OPENHANDS_PROJECT_DIR"
    stop_events = ("Stop",)
    start_events = ("SessionStart", "UserPromptSubmit")

    def parse_stop(self, payload: Mapping[str, Any]) -> StopRequest:
        return super().parse_stop(_openhands_as_claude(payload))

    def parse_start(self, payload: Mapping[str, Any]) -> StartRequest:
        return super().parse_start(_openhands_as_claude(payload))

    def allow(self, message: str) -> HookAnswer:
        return HookAnswer("{}", message, 0)

    def block(self, reason: str, message: str) -> HookAnswer:
        body = json.dumps({"decision": "deny", "reason": reason})
        return HookAnswer(body, f"{message}: {reason}", 2)


def _openhands_as_claude(payload: Mapping[str, Any]) -> Mapping[str, Any]:
    """OpenHands' names in Claude's (earlier releases sent Claude's; either is read). Without a
    session id, one count per project."""
    renamed = dict(payload)
    for theirs, ours in (("event_type", "hook_event_name"), ("working_dir", "cwd")):
        if renamed.get(ours) is None and renamed.get(theirs) is not None:
            renamed[ours] = renamed[theirs]
    project = os.environ.get("OPENHANDS_PROJECT_DIR") or renamed.get("cwd")
    if renamed.get("session_id") is None and isinstance(project, str):
        renamed["session_id"] = f"openhands:{project}"
    return renamed


class Cursor(Harness):
    """Cursor's ``stop`` carries ``conversation_id``, ``status`` and ``loop_count``, and the
    workspace in ``workspace_roots``; a ``followup_message`` is sent as the next user message.
    A stop the user aborted (or that errored) is not the agent saying "done": not judged."""

    name = "cursor"
    project_dir_env = None
    stop_events = ("stop",)
    start_events = ("sessionStart",)
    status_key = "status"

    def parse_stop(self, payload: Mapping[str, Any]) -> StopRequest:
        self._check_event(payload, self.stop_events)
        loops = payload.get("loop_count")
        if loops is not None and (not isinstance(loops, int) or isinstance(loops, bool)):
            raise HookInputError("'loop_count' is not an integer")
        return StopRequest(
            harness=self.name,
            session=_text(payload, "conversation_id"),
            repo=_workspace(payload),
            outcome="",
            fresh_turn=None if loops is None else loops == 0,
        )

    def parse_start(self, payload: Mapping[str, Any]) -> StartRequest:
        self._check_event(payload, self.start_events)
        return StartRequest(
            self.name, _text(payload, "conversation_id"), _workspace(payload), False
        )

    def allow(self, message: str) -> HookAnswer:
        return HookAnswer("{}", message, 0)

    def block(self, reason: str, message: str) -> HookAnswer:
        return HookAnswer(json.dumps({"followup_message": reason}), message, 0)

    def started(self) -> HookAnswer:
        return HookAnswer("{}", "", 0)


def _workspace(payload: Mapping[str, Any]) -> Path:
    roots = payload.get("workspace_roots")
    if not isinstance(roots, list) or not roots or not isinstance(roots[0], str):
        raise HookInputError("'workspace_roots' is missing or not a list of paths")
    return _directory(roots[0], "workspace_roots[0]")


class Copilot(Harness):
    """Copilot CLI's ``agentStop`` (1.0.102): camelCase ``sessionId`` and ``cwd``, no final
    message, and (undocumented) ``stop_hook_active``; hooks get ``COPILOT_PROJECT_DIR``. A
    ``decision: block`` answer queues ``reason`` as the next prompt."""

    name = "copilot"
    project_dir_env = "COPILOT_PROJECT_DIR"

    def parse_stop(self, payload: Mapping[str, Any]) -> StopRequest:
        active = _flag(payload, "stop_hook_active")
        return StopRequest(
            harness=self.name,
            session=_text(payload, "sessionId"),
            repo=self._repo(payload),
            outcome="",
            fresh_turn=None if active is None else not active,
        )

    def parse_start(self, payload: Mapping[str, Any]) -> StartRequest:
        return StartRequest(
            harness=self.name,
            session=_text(payload, "sessionId"),
            repo=self._repo(payload),
            resumed=payload.get("source") == "resume",
        )

    def allow(self, message: str) -> HookAnswer:
        return HookAnswer("{}", message, 0)

    def block(self, reason: str, message: str) -> HookAnswer:
        return HookAnswer(json.dumps({"decision": "block", "reason": reason}), message, 0)

    def started(self) -> HookAnswer:
        return HookAnswer("{}", "", 0)


class Gemini(Harness):
    """Gemini CLI (0.61): ``AfterAgent`` with Claude's ``session_id``, ``cwd`` and
    ``hook_event_name``, the turn's text in ``prompt_response`` (it accumulates across retries),
    and ``GEMINI_PROJECT_DIR`` for hooks. ``decision: block`` sends ``reason`` back as the next
    prompt. Its ``stop_hook_active`` is false again after a block whenever the retry made a tool
    call, so it is never read: the count alone bounds the loop."""

    name = "gemini"
    project_dir_env = "GEMINI_PROJECT_DIR"
    stop_events = ("AfterAgent",)
    start_events = ("SessionStart",)

    def parse_stop(self, payload: Mapping[str, Any]) -> StopRequest:
        self._check_event(payload, self.stop_events)
        return StopRequest(
            harness=self.name,
            session=_text(payload, "session_id"),
            repo=self._repo(payload),
            outcome=_text(payload, "prompt_response", required=False),
            fresh_turn=None,
        )

    def allow(self, message: str) -> HookAnswer:
        body = {"systemMessage": message} if message else {}
        return HookAnswer(json.dumps(body), message, 0)

    def block(self, reason: str, message: str) -> HookAnswer:
        body = {"decision": "block", "reason": reason, "systemMessage": message}
        return HookAnswer(json.dumps(body), message, 0)


HARNESSES: dict[str, Harness] = {
    h.name: h for h in (Harness(), Codex(), OpenHands(), Cursor(), Copilot(), Gemini())
}
ALIASES = {"claude": "claude-code"}
"""Other names accepted for a harness (what people type)."""


def canonical(name: str) -> str:
    return ALIASES.get(name, name)


def harness(name: str) -> Harness:
    try:
        return HARNESSES[canonical(name)]
    except KeyError:
        raise ValueError(f"unknown harness {name!r}; one of: {', '.join(HARNESSES)}") from None


# ----------------------------------------------------------------------------------------------
# The per-session count of blocks in a row


@dataclass
class SessionState:
    path: Path
    blocks: int

    @classmethod
    def load(cls, sessions_dir: Path, session: str) -> SessionState:
        name = hashlib.sha256(session.encode("utf-8")).hexdigest()[:16]
        path = sessions_dir / f"{name}.json"
        try:
            blocks = json.loads(path.read_text(encoding="utf-8")).get("blocks", 0)
        except (OSError, ValueError, AttributeError):
            blocks = 0  # absent or unreadable: a wrong count can only mean more blocks
        return cls(path, blocks if isinstance(blocks, int) and blocks >= 0 else 0)

    def save(self, outcome: GateOutcome | None) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        record: dict[str, Any] = {"blocks": self.blocks}
        if outcome is not None:
            record["last_state"] = outcome.verdict.state
            record["last_claim"] = str(outcome.claim_path)
        write_atomic(self.path, json.dumps(record).encode("utf-8"))


# ----------------------------------------------------------------------------------------------
# The stop


def note_stop(harness: str, environ: Mapping[str, str]) -> None:
    """Tell a ``claim run`` around the harness that its stop hook ran (best effort: the gate
    judges the agent after it exits either way)."""
    path = environ.get(STOPS_ENV)
    if path:
        try:
            with open(path, "a", encoding="utf-8") as stops:
                stops.write(f"{harness}\n")
        except OSError:
            pass


def read_stop(
    adapter: Harness, data: bytes, pinned_repo: Path | None = None
) -> StopRequest | HookAnswer:
    """The stop to judge, or the answer when there is none to judge (another event, a stop the
    user aborted, no work tree to judge). ``pinned_repo`` (the installer writes it for a
    project) wins over what the payload says."""
    try:
        payload = parse_payload(data)
        if not adapter.judges(payload):
            return adapter.allow("")
        request = adapter.parse_stop(payload)
    except NotAStop as problem:
        return input_problem(adapter, str(problem))
    except HookInputError as problem:
        return _unread_stop(adapter, str(problem), pinned_repo)
    try:
        if pinned_repo is not None:
            request = replace(request, repo=_directory(str(pinned_repo), "--repo"))
    except HookInputError as problem:
        return input_problem(adapter, str(problem))
    return replace(request, outcome=cut_outcome(request.outcome))


def _unread_stop(
    adapter: Harness, problem: str, pinned_repo: Path | None
) -> StopRequest | HookAnswer:
    """A stop whose payload cannot be read, judged all the same: a payload the agent can make
    unreadable (its last message is in it) must not be a way to stop unjudged. The work tree is
    the pinned one, else the harness's project folder, else the folder the hook runs in (the
    harness starts it in the project); the session is one of its own, so the usual bound on
    blocks in a row holds."""
    project = os.environ.get(adapter.project_dir_env) if adapter.project_dir_env else None
    try:
        where = pinned_repo or (Path(project) if project else Path.cwd())
        repo = _directory(str(where), "the work tree")
    except (HookInputError, OSError) as missing:  # OSError: the hook's folder is gone
        return input_problem(adapter, f"{problem}; no work tree to judge ({missing})")
    return StopRequest(
        harness=adapter.name,
        session=f"{adapter.name}:{UNREAD_SESSION}",
        repo=repo,
        outcome=f"[completion-claim: the stop payload could not be read ({problem[:200]}); "
        "the agent's last message is not recorded]",
        fresh_turn=None,
    )


def cut_outcome(outcome: str) -> str:
    """The agent's last message as the gate records it: whole, or over the bound its end (a
    retry's text is appended) after a note saying how much there was."""
    if len(outcome) <= MAX_OUTCOME_CHARS:
        return outcome
    kept = MAX_OUTCOME_CHARS - _CUT_NOTE_CHARS
    return _CUT_NOTE.format(total=len(outcome), kept=kept) + outcome[-kept:]


def read_start(
    adapter: Harness, data: bytes, pinned_repo: Path | None = None
) -> StartRequest | HookAnswer:
    try:
        request = adapter.parse_start(parse_payload(data))
        if pinned_repo is not None:
            request = replace(request, repo=_directory(str(pinned_repo), "--repo"))
        return request
    except HookInputError as problem:
        line = f"claim hook start --harness {adapter.name}: {problem}; no baselines were taken"
        return HookAnswer(adapter.started().stdout, line, 0)


def input_problem(adapter: Harness, problem: str) -> HookAnswer:
    """A payload the hook cannot read lets the stop through, loudly."""
    line = f"claim hook stop --harness {adapter.name}: {problem}; the stop was let through unjudged"
    answer = adapter.allow(line)
    return HookAnswer(answer.stdout, line, 0)


def judge_stop(
    adapter: Harness,
    request: StopRequest,
    decide: Decide,
    *,
    sessions_dir: Path,
    max_blocks: int,
) -> HookAnswer:
    """Run the gate for this stop and answer: allow when verified, else block up to
    ``max_blocks`` times in a row, then let the stop through with the verdict printed."""
    state = SessionState.load(sessions_dir, request.session)
    if request.fresh_turn:
        state.blocks = 0
    outcome = decide(request)
    verdict = outcome.verdict
    if verdict.state == "verified":
        state.blocks = 0
        state.save(outcome)
        return adapter.allow(f"completion-claim: verified (recorded at {outcome.claim_path})")
    if state.blocks >= max_blocks:
        state.blocks = 0
        state.save(outcome)
        return adapter.allow(
            f"completion-claim: NOT verified: {verdict.state} after {max_blocks} "
            f"block{'' if max_blocks == 1 else 's'} in a row;"
            f" the stop was let through. {verdict.reason} (recorded at {outcome.claim_path})"
        )
    state.blocks += 1
    state.save(outcome)
    return adapter.block(
        _reason_for_agent(outcome),
        f"completion-claim: {verdict.state}; sent back ({state.blocks} of {max_blocks})",
    )


def _reason_for_agent(outcome: GateOutcome) -> str:
    reason = outcome.agent_reason.strip() or outcome.verdict.reason
    return f"completion-claim gate: your work is {outcome.verdict.state}, not verified. {reason}"
