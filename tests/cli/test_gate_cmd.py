"""``claim init`` and ``claim gate`` as a user runs them."""

from __future__ import annotations

import itertools
import json
import os
import pty
import re
import socket
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from completion_claim.cli import run
from completion_claim.gate.config import load_config
from completion_claim.gate.run import start_gate
from tests.fixtures.projects import (
    CALC,
    CALC_BUGGY,
    TEST_CALC,
    calc_project,
    git,
    make_repo,
    write_files,
)
from tests.needs import service_unavailable

# No test baseline at the start (tests/gate/test_test_baseline.py takes real ones): a sandboxed run
# more at every start, here of a test that sleeps 3 s. claim init's own configuration keeps it.
CONFIG = """\
[policy]
id = "ops/gate"
requires = ["test_run"]
max_age_s = 600

[gate]
runs_dir = "{runs}"

[[check]]
type = "test_run"
command = ["python", "-m", "pytest", "-q"]
trusted_ref = "main"
baseline = false
"""


@pytest.fixture
def config(tmp_path: Path) -> Path:
    path = tmp_path / "ops" / "claim.toml"
    path.parent.mkdir()
    path.write_text(CONFIG.format(runs=tmp_path / "runs"))
    return path


def started(config: Path, repo: Path) -> None:
    """``claim gate --start`` before the agent works (the hooks take it at session start)."""
    start_gate(load_config(config, os.environ), repo)


@pytest.fixture(autouse=True)
def _no_github(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


# --- claim init ------------------------------------------------------------------------------


def test_init_writes_a_working_configuration_for_a_pytest_repository(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DATABASE_URL", raising=False)
    for name in [n for n in os.environ if n.startswith("PG")]:
        monkeypatch.delenv(name)
    repo = calc_project(tmp_path / "repo")

    assert run(["init", "--repo", str(repo)]) == 0

    assert "found pytest" in capsys.readouterr().out
    config = load_config(repo / "claim.toml", {"HOME": str(tmp_path)})
    (check,) = config.checks
    assert check.check_type == "test_run"
    # The branch, pinned by each start: a commit written now would go stale (attack 102).
    assert getattr(check, "trusted_ref", None) == "main"
    assert config.policy.requires == ("test_run",)
    assert config.runs_dir == tmp_path / ".local" / "state" / "completion-claim" / "runs"
    text = (repo / "claim.toml").read_text()
    assert "endpoint_health" not in text
    assert "state_readback" not in text


def test_init_says_to_commit_the_file_the_gate_will_then_accept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """An uncommitted claim.toml is a change to the gate's own configuration: the README's
    set-up commits it, and only then does an honest change verify."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC_BUGGY, "tests/test_calc.py": TEST_CALC})
    assert run(["init", "--repo", str(repo)]) == 0
    assert "commit it (git add claim.toml && git commit)" in capsys.readouterr().out
    monkeypatch.chdir(repo)
    assert run(["gate", "--start"]) == 0
    write_files(repo, {"calc.py": CALC})

    assert run(["gate", "--outcome", "Fixed add()."]) == 1  # claim.toml is not committed yet
    assert "a change to a target the policy protects (claim.toml)" in capsys.readouterr().out

    git(repo, "add", "claim.toml")
    git(repo, "commit", "-qm", "gate")
    assert run(["gate", "--start", "--restart"]) == 0  # the operator's commit: a new start
    assert run(["gate", "--outcome", "Fixed add()."]) == 0


def test_init_writes_the_operators_file_outside_the_work_tree_with_config(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The strongest set-up keeps claim.toml outside the work tree (make eval found init could
    only write it at the root, to be moved by hand): --config writes it there, and the gate
    then verifies an honest change with nothing committed in the tree."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC_BUGGY, "tests/test_calc.py": TEST_CALC})
    config = tmp_path / "operator" / "claim.toml"
    config.parent.mkdir()

    assert run(["init", "--repo", str(repo), "--config", str(config)]) == 0

    out = capsys.readouterr().out
    assert not (repo / "claim.toml").exists()
    assert f"wrote {config}" in out
    assert f"claim gate --config {config} --start" in out
    assert "git add" not in out
    monkeypatch.chdir(repo)
    assert run(["gate", "--config", str(config), "--start"]) == 0
    write_files(repo, {"calc.py": CALC})
    assert run(["gate", "--config", str(config), "--outcome", "Fixed add()."]) == 0


def test_init_comments_examples_for_a_dockerfile_and_a_database(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DATABASE_URL", "postgresql://app:pw@db/app")
    repo = make_repo(tmp_path / "repo", {"Dockerfile": "FROM scratch\n", "app.py": "x = 1\n"})

    assert run(["init", "--repo", str(repo)]) == 0

    text = (repo / "claim.toml").read_text()
    assert '# type = "endpoint_health"' in text
    assert '# url = "${DATABASE_URL}"' in text
    assert "pw@db" not in text
    config = load_config(repo / "claim.toml", {"HOME": str(tmp_path)})
    assert config.checks == ()  # examples stay commented until the operator fills them in


def test_init_never_overwrites_without_force(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = calc_project(tmp_path / "repo")
    (repo / "claim.toml").write_text("# mine\n")

    assert run(["init", "--repo", str(repo)]) == 4
    assert capsys.readouterr().err == (
        f"claim: {repo / 'claim.toml'} already exists: review it, or replace it with "
        "claim init --force\n"
    )
    assert (repo / "claim.toml").read_text() == "# mine\n"

    assert run(["init", "--repo", str(repo), "--force"]) == 0
    assert (repo / "claim.toml").read_text().startswith("# claim.toml")


# --- claim gate ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "option"),
    [("gate", "--base"), ("gate", "--config"), ("run", "--config"), ("gate", "--sarif")],
)
def test_options_say_what_they_default_to_in_their_own_help(
    command: str, option: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Help that sends the reader elsewhere ("see docs") or says nothing is no help."""
    assert run([command, "--help"]) == 0
    lines = capsys.readouterr().out.splitlines()
    first = next(i for i, line in enumerate(lines) if line.lstrip().startswith(f"{option} "))
    rest = lines[first + 1 :]
    own = [lines[first], *itertools.takewhile(lambda line: not line.lstrip().startswith("-"), rest)]
    text = " ".join(" ".join(own).split())
    assert "see docs" not in text
    assert any(word in text for word in ("default", "SARIF")), text


def test_gate_exits_with_the_verdict_and_prints_json(
    tmp_path: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = calc_project(tmp_path / "repo")
    started(config, repo)
    write_files(repo, {"calc.py": CALC_BUGGY})

    code = run(["gate", "--config", str(config), "--repo", str(repo), "--json",
                "--outcome", "Done. All tests pass."])  # fmt: skip

    captured = capsys.readouterr()
    assert code == 2
    answer = json.loads(captured.out)
    assert sorted(answer) == ["agent_reason", "claim_path", "verdict"]
    assert answer["verdict"] == "refuted"
    assert answer["agent_reason"].startswith("tests/test_calc.py::test_add failed: assert -1 == 5")
    claim = json.loads(Path(answer["claim_path"]).read_text())
    assert claim["claimed_outcome"] == "Done. All tests pass."
    steps = captured.err.splitlines()
    assert steps[0].startswith("gate: base: ")
    assert steps[-1].startswith("gate: verdict: refuted: ")


def test_gate_prints_the_report_and_the_reason_for_the_agent(
    tmp_path: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = calc_project(tmp_path / "repo")
    outcome = tmp_path / "outcome.txt"
    outcome.write_text("Nothing to do.\n")

    started(config, repo)

    code = run(["gate", "--config", str(config), "--repo", str(repo),
                "--outcome-file", str(outcome)])  # fmt: skip

    out = capsys.readouterr().out
    assert code == 1
    assert out.startswith("UNVERIFIED  ")
    assert "baselines taken at start" in out
    assert out.endswith("For the agent:\nnothing changed in the work tree: make the change the "
                        "task asks for, then stop\n")  # fmt: skip


def test_gate_writes_the_ci_outputs(
    tmp_path: Path, config: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = calc_project(tmp_path / "repo")
    started(config, repo)
    write_files(repo, {"calc.py": CALC_BUGGY})
    summary = tmp_path / "github_summary.md"
    summary.write_text("before\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    junit, dotenv = tmp_path / "gate.xml", tmp_path / "gate.env"

    code = run(["gate", "--config", str(config), "--repo", str(repo), "--junit", str(junit),
                "--dotenv", str(dotenv)])  # fmt: skip

    assert code == 2
    assert summary.read_text().startswith("before\n### claim gate: REFUTED\n")
    cases = ET.fromstring(junit.read_bytes()).iter("testcase")
    assert {case.get("name") for case in cases} >= {"file_write calc.py", "verdict"}
    lines = dotenv.read_text().splitlines()
    assert [re.match(r"[A-Z_]+=", line) is not None for line in lines] == [True] * 3
    assert lines[0] == "CLAIM_STATE=refuted"


def test_gate_start_then_gate_uses_the_start_commit(
    tmp_path: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = calc_project(tmp_path / "repo")
    git(repo, "checkout", "-q", "-b", "agent")
    base = git(repo, "rev-parse", "HEAD").strip()

    assert run(["gate", "--config", str(config), "--repo", str(repo), "--start"]) == 0
    assert "recorded the start" in capsys.readouterr().out
    write_files(repo, {"calc.py": CALC_BUGGY})
    git(repo, "commit", "-qam", "agent's commit")
    assert run(["gate", "--config", str(config), "--repo", str(repo), "--json"]) == 2
    assert f"gate: base: {base} (the start record)" in capsys.readouterr().err


def test_quiet_gate_prints_the_verdict_line_alone(
    tmp_path: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 21: -q gave the gate's whole report and every progress line."""
    repo = calc_project(tmp_path / "repo")
    git(repo, "checkout", "-q", "-b", "agent")
    gate = ["-q", "gate", "--config", str(config), "--repo", str(repo)]

    assert run([*gate, "--start"]) == 0
    assert capsys.readouterr() == ("", "")
    write_files(repo, {"calc.py": CALC_BUGGY})
    assert run([*gate, "--outcome", "Done."]) == 2
    out, err = capsys.readouterr()
    assert re.fullmatch(r"REFUTED  [^\n]+\n", out), out
    assert err == ""


def test_gate_without_a_configuration_says_how_to_make_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = calc_project(tmp_path / "repo")
    assert run(["gate", "--repo", str(repo)]) == 4
    assert capsys.readouterr().err == (
        f"claim: no claim.toml in {repo} or above: run claim init, or pass --config\n"
    )


def test_gate_refuses_a_runs_directory_inside_the_work_tree(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = calc_project(tmp_path / "repo")
    (repo / "claim.toml").write_text(CONFIG.format(runs=repo / ".runs"))
    assert run(["gate", "--repo", str(repo)]) == 4
    assert "is inside the work tree" in capsys.readouterr().err
    assert not (repo / ".runs").exists()


def test_gate_finds_the_configuration_in_the_repository(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = calc_project(tmp_path / "repo")
    (repo / "claim.toml").write_text(CONFIG.format(runs=tmp_path / "runs"))
    git(repo, "add", "claim.toml")
    git(repo, "commit", "-qm", "gate")
    assert run(["gate", "--repo", str(repo / "tests"), "--start"]) == 0
    write_files(repo, {"calc.py": CALC_BUGGY})
    capsys.readouterr()
    assert run(["gate", "--repo", str(repo / "tests"), "--json"]) == 2
    assert json.loads(capsys.readouterr().out)["verdict"] == "refuted"


# --- claim gate --ledger ---------------------------------------------------------------------


def test_gate_appends_its_decision_to_the_ledger_signed_with_the_ledger_key(
    tmp_path: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from completion_claim.service.ledger import Ledger
    from completion_claim.trust.keys import SigningKey, write_private_key

    repo = calc_project(tmp_path / "repo")
    started(config, repo)
    write_files(repo, {"calc.py": CALC_BUGGY})
    key = SigningKey.generate()
    write_private_key(str(tmp_path / "ledger.key"), key)
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"

    code = run(["gate", "--config", str(config), "--repo", str(repo), "--outcome", "Done.",
                "--ledger", url, "--ledger-key", str(tmp_path / "ledger.key")])  # fmt: skip

    assert code == 2
    assert capsys.readouterr().out.endswith("ledger index 0\n")
    ledger = Ledger.open(url)
    try:
        entry = ledger.get(0)
        head = ledger.tree_head()
    finally:
        ledger.close()
    assert entry is not None
    assert (entry.via, entry.submitted_by) == ("gate", f"gate@{socket.gethostname()}")
    assert (entry.state, entry.outcome, entry.policy_id) == ("refuted", "Done.", "ops/gate")
    assert (head.size, head.log_key) == (1, key.public.text)


def test_gate_ledger_key_defaults_to_the_gates_sign_key(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from completion_claim.service.ledger import Ledger
    from completion_claim.trust.keys import SigningKey, write_private_key

    key = SigningKey.generate()
    write_private_key(str(tmp_path / "gate.key"), key)
    signed = tmp_path / "signed.toml"
    signed.write_text(
        CONFIG.format(runs=tmp_path / "runs").replace(
            "[gate]\n", f'[gate]\nsign_key = "{tmp_path / "gate.key"}"\n'
        )
    )
    repo = calc_project(tmp_path / "repo")
    started(signed, repo)
    write_files(repo, {"calc.py": CALC + "\n"})
    url = str(tmp_path / "ledger.sqlite")  # a plain path is a SQLite file

    code = run(["gate", "--config", str(signed), "--repo", str(repo), "--json",
                "--outcome", "Tidied.", "--ledger", url])  # fmt: skip

    assert code == 0
    assert json.loads(capsys.readouterr().out)["ledger_index"] == 0
    ledger = Ledger.open(url)
    try:
        assert ledger.tree_head().log_key == key.public.text
    finally:
        ledger.close()


def test_gate_ledger_without_a_key_refuses_before_running_anything(
    tmp_path: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = calc_project(tmp_path / "repo")
    code = run(["gate", "--config", str(config), "--repo", str(repo),
                "--ledger", str(tmp_path / "ledger.sqlite")])  # fmt: skip
    err = capsys.readouterr().err
    assert code == 4
    assert "--ledger: the ledger's tree heads must be signed" in err
    assert not (tmp_path / "runs").exists()
    assert not (tmp_path / "ledger.sqlite").exists()


# --- claim gate --server (the service's own tests run it against a real service) -----------


@pytest.mark.parametrize(
    "extra",
    [["--config", "c.toml"], ["--base", "HEAD"], ["--ledger", "x.db"], ["--junit", "j"],
     ["--sarif", "s"]],
)  # fmt: skip
def test_gate_server_refuses_what_the_service_decides(
    tmp_path: Path, extra: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code = run(["gate", "--server", f"unix://{tmp_path}/s.sock", "--repo", str(tmp_path), *extra])
    assert code == 4
    assert f"claim: {extra[0]} and --server: the service decides" in capsys.readouterr().err


def test_gate_server_unreachable_is_one_line_and_exit_5(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Exit 5, "could not observe", as the exit-code table says: not a usage error."""
    repo = calc_project(tmp_path / "repo")
    code = run(["gate", "--server", f"unix://{tmp_path}/none.sock", "--repo", str(repo)])
    err = capsys.readouterr().err
    assert code == 5
    assert err.startswith(f"claim: POST unix://{tmp_path}/none.sock/v1/gate: cannot reach")
    assert err.count("\n") == 1


def test_gate_server_without_a_token_names_where_one_comes_from(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.fixtures.gate_service import buggy_project, gate_service

    monkeypatch.delenv("CLAIM_TOKEN", raising=False)
    with gate_service(tmp_path / "svc") as service:
        repo = buggy_project(service.observed / "repo")
        code = run(["gate", "--server", service.url, "--repo", str(repo), "--outcome", "Done."])
        started = run(["gate", "--server", service.url, "--repo", str(repo), "--start"])
    err = capsys.readouterr().err.splitlines()
    assert (code, started) == (4, 4)
    assert err == [
        f"claim: POST {service.url}/v1/gate: the service refused (401): it needs a bearer token "
        "and none was given: pass --token-file FILE or set $CLAIM_TOKEN",
        f"claim: POST {service.url}/v1/gate/start: the service refused (401): it needs a bearer "
        "token and none was given: pass --token-file FILE or set $CLAIM_TOKEN",
    ]


def test_gate_server_prints_the_services_report_and_exits_with_its_verdict(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from tests.fixtures.gate_service import buggy_project, gate_service

    with gate_service(tmp_path / "svc") as service:
        monkeypatch.setenv("CLAIM_TOKEN", service.operator_token)  # the operator starts
        repo = buggy_project(service.observed / "repo")
        started = run(["gate", "--server", service.url, "--repo", str(repo), "--start"])
        assert capsys.readouterr().out == (
            f"the service recorded the start for {repo}: ledger index 0\n"
        )
        monkeypatch.setenv("CLAIM_TOKEN", service.token)
        write_files(repo, {"README.md": "done\n"})
        refuted = run(["gate", "--server", service.url, "--repo", str(repo), "--outcome", "Done."])
        out = capsys.readouterr().out
        write_files(repo, {"calc.py": CALC})
        verified = run(["gate", "--server", service.url, "--repo", str(repo), "--json",
                        "--task-id", "t-7"])  # fmt: skip
        answer = json.loads(capsys.readouterr().out)
        entry = service.ledger.get(2)

    assert started == 0
    assert refuted == 2
    assert out.startswith("REFUTED")
    assert "baselines taken at start" in out
    assert "For the agent:\ntests/test_calc.py::test_add failed" in out
    assert out.rstrip().endswith("/claims/1")
    assert verified == 0
    assert answer["verdict"] == "verified"
    assert answer["ledger_index"] == 2
    assert entry is not None
    assert entry.task_id == "t-7"


def test_gate_appends_to_a_postgresql_ledger(
    tmp_path: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The same code path as SQLite, on the real PostgreSQL, in a schema of the test's own."""
    import uuid

    import psycopg

    from completion_claim.service.ledger import Ledger
    from completion_claim.trust.keys import SigningKey, write_private_key

    server = "postgresql://postgres@127.0.0.1:5432/test"
    try:
        admin = psycopg.connect(server, autocommit=True, connect_timeout=3)
    except psycopg.Error as error:
        service_unavailable("PostgreSQL", error)
    schema = f"ledger_{uuid.uuid4().hex[:12]}"
    url = f"{server}?options=-csearch_path%3D{schema}"
    write_private_key(str(tmp_path / "ledger.key"), SigningKey.generate())
    repo = calc_project(tmp_path / "repo")
    started(config, repo)
    write_files(repo, {"calc.py": CALC_BUGGY})
    with admin:
        admin.execute(f"CREATE SCHEMA {schema}".encode())
        try:
            key = str(tmp_path / "ledger.key")
            code = run(["gate", "--config", str(config), "--repo", str(repo), "--outcome",
                        "Done.", "--ledger", url, "--ledger-key", key])  # fmt: skip
            ledger = Ledger.open(url)
            try:
                entry, size = ledger.get(0), ledger.tree_head().size
            finally:
                ledger.close()
        finally:
            admin.execute(f"DROP SCHEMA {schema} CASCADE".encode())
    assert code == 2
    assert capsys.readouterr().out.endswith("ledger index 0\n")
    assert entry is not None
    assert (entry.via, entry.state, size) == ("gate", "refuted", 1)


# --- progress on a terminal (issue 21, defect 8) ---------------------------------------------

SLOW_TEST = (
    "import time\n\nfrom calc import add\n\n\n"
    "def test_add():\n    time.sleep(3)\n    assert add(2, 3) == 5\n"
)


def gate_on_a_terminal(tmp_path: Path, config: Path, *options: str) -> tuple[str, str]:
    """``claim gate`` on a repository whose test takes 3 s, its stderr a pseudo-terminal;
    what the terminal and a pipe received."""
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC_BUGGY, "tests/test_calc.py": SLOW_TEST})
    started(config, repo)
    write_files(repo, {"calc.py": CALC})
    claim = Path(sys.executable).parent / "claim"
    terminal, side = pty.openpty()
    try:
        process = subprocess.Popen(
            [str(claim), *options, "gate", "--config", str(config), "--repo", str(repo)],
            stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=side,
        )  # fmt: skip
        os.close(side)
        received = b""
        while True:
            try:
                chunk = os.read(terminal, 4096)
            except OSError:  # EIO: the process closed the terminal
                break
            if not chunk:
                break
            received += chunk
        out = process.communicate(timeout=300)[0]
    finally:
        os.close(terminal)
    assert process.returncode == 0, received
    return received.decode(), out.decode()


def test_a_gate_on_a_terminal_shows_the_time_a_check_has_run_in_place(
    tmp_path: Path, config: Path
) -> None:
    shown, _ = gate_on_a_terminal(tmp_path, config)
    assert "gate: check 1 (test_run): observing" in shown
    assert re.search(r"\r\x1b\[K  check 1 \(test_run\): 2 s", shown)
    assert "gate: verdict: verified" in shown


def test_no_elapsed_time_with_quiet_or_off_a_terminal(
    tmp_path: Path, config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shown, out = gate_on_a_terminal(tmp_path, config, "-q")
    assert shown == ""
    assert out.startswith("VERIFIED")
    repo = tmp_path / "repo"
    write_files(repo, {"calc.py": CALC + "\n"})
    assert run(["gate", "--config", str(config), "--repo", str(repo)]) == 0
    assert "\r" not in capsys.readouterr().err
