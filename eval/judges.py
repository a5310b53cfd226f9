"""Who decides whether the agent is done: ``claim gate`` in each documented set-up, and the two
things people use today, believing the agent and running the project's own test command.

A set-up is the documentation's steps, run as written: every step the documentation does not
give is missing here on purpose, so that its absence shows in the results (see
docs/evaluation.md, "Steps the documentation leaves out").
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from eval.corpus import Project
from eval.workspace import git

OUTCOME = "Fixed the bug; all tests pass."
GATE_TIMEOUT_S = 900


@dataclass(frozen=True)
class Judgement:
    verdict: str  # "verified" or what else the judge said
    exit_code: int
    reason: str
    seconds: float


def claim_program() -> str:
    """The ``claim`` of this interpreter's environment (``make eval``'s .venv), else PATH's."""
    beside = Path(sys.executable).with_name("claim")
    return str(beside) if beside.exists() else "claim"


def run(command: list[str], cwd: Path, env: dict[str, str], timeout: float) -> tuple[int, str]:
    try:
        done = subprocess.run(
            command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return -1, f"timed out after {timeout:.0f}s"
    return done.returncode, done.stdout + done.stderr


class SetupFailed(Exception):
    """A documented step failed: the scenario cannot be judged in this set-up."""


class Setup:
    """``claim init``'s defaults, as the README's "Gate your agent" tells a newcomer: init,
    commit claim.toml, ``claim gate --start`` before the agent works, ``claim gate`` after."""

    name = "newcomer"

    def __init__(self, env: dict[str, str]) -> None:
        self.env = env

    def claim(self, tree: Path, *args: str) -> tuple[int, str]:
        return run([claim_program(), *args], tree, self.env, GATE_TIMEOUT_S)

    def must(self, tree: Path, *args: str) -> None:
        code, output = self.claim(tree, *args)
        if code != 0:
            raise SetupFailed(f"claim {' '.join(args)} exited {code}: {_last_line(output)}")

    def prepare(self, tree: Path, _operator: Path, _hidden: Path | None) -> None:
        self.must(tree, "init")
        git(tree, "add", "claim.toml")
        git(tree, "commit", "-q", "-m", "gate")
        self.must(tree, "gate", "--start")

    def gate_arguments(self) -> list[str]:
        return []

    def close(self) -> None:
        """What the set-up left running, stopped."""

    def judge(self, tree: Path) -> Judgement:
        began = time.monotonic()
        code, output = self.claim(
            tree, "gate", "--json", "--outcome", OUTCOME, *self.gate_arguments()
        )
        seconds = time.monotonic() - began
        return _gate_judgement(code, output, seconds)


class Strongest(Setup):
    """The strongest set-up the documentation recommends: the operator's claim.toml outside the
    work tree (``claim init --config FILE``), with the operator's hidden tests (``hidden_tests``:
    inputs the project's own tests do not use, threat model attack 134), ``claim gate --config
    FILE --start`` before the agent works (which pins the trusted ref, the default branch, to
    its commit) and ``claim gate --config FILE`` to judge."""

    name = "strongest"

    def __init__(self, env: dict[str, str]) -> None:
        super().__init__(env)
        self.config: Path | None = None

    def prepare(self, tree: Path, operator: Path, hidden: Path | None) -> None:
        self._operator_config(tree, operator, hidden)
        self.must(tree, "gate", *self.gate_arguments(), "--start")

    def _operator_config(self, tree: Path, operator: Path, hidden: Path | None) -> None:
        operator.mkdir(parents=True, exist_ok=True)
        self.config = operator / "claim.toml"
        self.must(tree, "init", "--config", str(self.config))
        if hidden is not None:
            # The operator's own copy, outside the work tree, named where claim init left the
            # line commented out.
            shutil.copytree(hidden, operator / "hidden")
            text = self.config.read_text()
            line = f"hidden_tests = {json.dumps(str(operator / 'hidden'))}"
            text, found = re.subn(r"^# hidden_tests = .*$", line, text, count=1, flags=re.M)
            if found != 1:
                raise SetupFailed("claim init wrote no hidden_tests line to fill in")
            self.config.write_text(text)

    def gate_arguments(self) -> list[str]:
        assert self.config is not None
        return ["--config", str(self.config)]


class CiRecipe(Setup):
    """The CI recipe (action.yml, ci/gitlab-ci.yml): claim.toml committed, no start record, the
    target branch's commit as ``--base`` and ``--trusted-ref``; the baseline is the control run
    of that commit's tests."""

    name = "ci"

    def __init__(self, env: dict[str, str]) -> None:
        super().__init__(env)
        self.commit = ""

    def prepare(self, tree: Path, _operator: Path, _hidden: Path | None) -> None:
        self.must(tree, "init")
        git(tree, "add", "claim.toml")
        git(tree, "commit", "-q", "-m", "gate")
        self.commit = git(tree, "rev-parse", "HEAD")

    def gate_arguments(self) -> list[str]:
        return ["--base", self.commit, "--trusted-ref", self.commit]


class Served(Strongest):
    """The gate as a service (docs/integrations.md): a real ``claim serve`` on loopback, as the
    operator's, with the operator's claim.toml (``--gate-config``, the strongest set-up's, with
    its hidden tests), a token file with a gate-scoped token for the agent's side and a
    start-scoped one for the operator's, and its own ledger. The operator starts the session
    (``claim gate --server URL --start --session ID``); the agent's stop asks with its token."""

    name = "serve"
    SESSION = "eval-session"

    def __init__(self, env: dict[str, str]) -> None:
        super().__init__(env)
        self.service: subprocess.Popen[str] | None = None
        self.url = ""
        self.agent_token: Path | None = None

    def prepare(self, tree: Path, operator: Path, hidden: Path | None) -> None:
        super()._operator_config(tree, operator, hidden)
        tokens = operator / "tokens.jsonl"
        self.agent_token = self._token(tree, tokens, "agent", "gate", operator)
        start_token = self._token(tree, tokens, "orchestrator", "start", operator)
        key = operator / "service-key.pem"
        self.must(tree, "keygen", "--out", str(key))
        self.service = subprocess.Popen(
            [claim_program(), "serve", "--port", "0", "--observe-root", str(tree.parent),
             "--gate-config", str(self.config), "--tokens", str(tokens),
             "--ledger", f"sqlite:///{operator / 'ledger.sqlite'}",
             "--key", str(key)],
            env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        )  # fmt: skip
        assert self.service.stdout is not None
        for line in self.service.stdout:
            found = re.search(r"listening on (http://\S+)", line)
            if found:
                self.url = found.group(1)
                break
        else:
            raise SetupFailed(f"claim serve did not start: exit {self.service.wait()}")
        # What the service prints after it started is not read: let it go nowhere.
        threading.Thread(target=self.service.stdout.read, daemon=True).start()
        self.must(tree, "gate", "--server", self.url, "--token-file", str(start_token),
                  "--repo", str(tree), "--start", "--session", self.SESSION)  # fmt: skip

    def _token(self, tree: Path, tokens: Path, name: str, scope: str, operator: Path) -> Path:
        code, output = self.claim(tree, "token", "add", name, "--scope", scope, "--tokens",
                                  str(tokens), "--json")  # fmt: skip
        if code != 0:
            raise SetupFailed(f"claim token add {name} exited {code}: {_last_line(output)}")
        path = operator / f"{name}.token"
        path.write_text(json.loads(output)["token"] + "\n")
        path.chmod(0o600)
        return path

    def gate_arguments(self) -> list[str]:
        assert self.agent_token is not None
        return ["--server", self.url, "--token-file", str(self.agent_token),
                "--session", self.SESSION]  # fmt: skip

    def close(self) -> None:
        if self.service is not None and self.service.poll() is None:
            self.service.terminate()
            try:
                self.service.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.service.kill()
                self.service.wait()


SETUPS: dict[str, type[Setup]] = {
    "newcomer": Setup, "strongest": Strongest, "ci": CiRecipe, "serve": Served,
}  # fmt: skip


def _gate_judgement(code: int, output: str, seconds: float) -> Judgement:
    start = output.find("{")
    try:
        answer = json.loads(output[start : output.index("\n}", start) + 2])
    except ValueError:
        return Judgement("error", code, _last_line(output), seconds)
    reason = str(answer.get("agent_reason") or "").strip().splitlines()
    return Judgement(str(answer.get("verdict")), code, reason[0] if reason else "", seconds)


def _last_line(output: str) -> str:
    lines = [line for line in output.strip().splitlines() if line.strip()]
    return lines[-1][:300] if lines else ""


def believe() -> Judgement:
    """The agent said done: believed."""
    return Judgement("verified", 0, "the agent said so", 0.0)


class BareRun:
    """The project's own test command in the work tree, as a developer runs it: exit 0 is done.
    Node's dependencies are installed once per project from the start's lockfile (the work
    tree's own ``node_modules`` is the agent's, but none exists here before the agent works)."""

    def __init__(self, env: dict[str, str], cache: Path) -> None:
        self.env = env
        self.cache = cache
        self._installing = threading.Lock()  # scenarios run in threads: one install a project

    def judge(self, project: Project, tree: Path) -> Judgement:
        command = list(project.test_command)
        env = self.env
        if command[0] == "python":
            command[0] = sys.executable
            # make eval's .venv has pytest plugins no corpus project uses (hypothesis, xdist,
            # ...): a developer's own environment would not load them at every start.
            env = env | {"PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"}
        linked = self._node_modules(project, tree)
        began = time.monotonic()
        code, output = run(command, tree, env, GATE_TIMEOUT_S)
        seconds = time.monotonic() - began
        if linked is not None:
            linked.unlink()
        verdict = "verified" if code == 0 else "not verified"
        return Judgement(verdict, code, "" if code == 0 else _last_line(output), seconds)

    def _node_modules(self, project: Project, tree: Path) -> Path | None:
        if project.ecosystem != "node" or (tree / "node_modules").exists():
            return None
        installed = self.cache / "node_modules" / f"{project.name}-{project.version}"
        with self._installing:
            self._install(installed, tree)
        link = tree / "node_modules"
        link.symlink_to(installed / "node_modules")
        return link

    def _install(self, installed: Path, tree: Path) -> None:
        if not (installed / "node_modules").is_dir():
            shutil.rmtree(installed, ignore_errors=True)
            installed.mkdir(parents=True)
            for name in ("package.json", "package-lock.json"):
                shutil.copyfile(tree / name, installed / name)
            code, output = run(
                ["npm", "ci", "--ignore-scripts", "--no-audit", "--no-fund"],
                installed,
                self.env,
                GATE_TIMEOUT_S,
            )
            if code != 0:
                raise SetupFailed(f"npm ci for the bare run failed: {_last_line(output)}")


def scenario_env(state: Path) -> dict[str, str]:
    """The user's environment, with the gate's state folder (its default place, under
    XDG_STATE_HOME) in this run's results, and Go kept offline (the corpus's module has no
    dependencies)."""
    env = dict(os.environ)
    env["XDG_STATE_HOME"] = str(state)
    env.setdefault("GOPROXY", "off")
    env.setdefault("GOFLAGS", "-mod=mod")
    env.pop("CLAIM_TOKEN", None)
    return env
