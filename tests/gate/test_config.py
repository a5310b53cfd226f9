"""claim.toml: what it holds, and one line naming the file and line for every mistake."""

from __future__ import annotations

import dataclasses
import subprocess
import sys
from pathlib import Path

import pytest

from completion_claim.cli import run
from completion_claim.gate import config as gate_config
from completion_claim.gate.config import (
    ConfigError,
    DomAssertionCheck,
    EndpointHealthCheck,
    InvalidPolicy,
    StateReadbackCheck,
    find_config,
    load_config,
)
from tests.fixtures.projects import head_commit, make_repo

FULL = """\
# The operator's gate.
[policy]
id = "ops/gate"
requires = ["test_run", "state_readback"]
max_age_s = 900
min_tests = 2

[gate]
runs_dir = "runs"
sign_key = "keys/gate.key"
max_blocks = 5
base = "9f2c1e0000000000000000000000000000000000"
timeout_s = 1200

[[check]]
type = "test_run"
command = ["python", "-m", "pytest", "-q"]
trusted_ref = "main"
protect = ["fixtures/**"]
env = ["LANG"]
network = false
require_tests = ["tests/test_calc.py::test_add"]
timeout_s = 300

[[check]]
type = "endpoint_health"
url = "https://staging.example.com/version"
target = "staging"
expect_status = 200
expect_json = { "/commit" = "${COMMIT}", "/build" = 42 }
expect_header = { "x-build" = "42" }

[[check]]
type = "state_readback"
url = "postgresql://reader:${PGPASSWORD}@127.0.0.1:5432/test"
target = "accounts/4471"
table = "accounts"
key = { id = 4471 }
expect = { status = "closed", balance = 0 }
"""
ENVIRON = {"COMMIT": "4f2c1e", "PGPASSWORD": "s3cret", "HOME": "/home/op"}


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "claim.toml"
    path.write_text(text, encoding="utf-8")
    return path


def error_of(tmp_path: Path, text: str, environ: dict[str, str] | None = None) -> str:
    with pytest.raises(ConfigError) as caught:
        load_config(write(tmp_path, text), ENVIRON if environ is None else environ)
    return str(caught.value)


BASE = "9f2c1e0000000000000000000000000000000000"


def test_a_full_configuration_is_read_into_the_gate_interface(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, FULL), ENVIRON)

    assert config.policy.id == "ops/gate"
    assert config.policy.requires == ("test_run", "state_readback")
    assert config.policy.min_tests == 2
    assert config.runs_dir == tmp_path / "runs"
    assert config.sign_key == tmp_path / "keys" / "gate.key"
    assert (config.max_blocks, config.base, config.timeout_s) == (5, BASE, 1200.0)
    test_run, endpoint, readback = config.checks
    assert test_run == gate_config.TestRunCheck(
        line=15, command=("python", "-m", "pytest", "-q"), trusted_ref="main",
        protect=("fixtures/**",), env=("LANG",), network=False,
        require_tests=("tests/test_calc.py::test_add",), timeout_s=300.0,
    )  # fmt: skip
    assert isinstance(endpoint, EndpointHealthCheck)
    # A TOML string asserts a string; a TOML number takes the observed value's type.
    assert endpoint.expect_json == {"/commit": '"4f2c1e"', "/build": "42"}
    assert endpoint.expect_header == {"x-build": "42"}
    assert (endpoint.target, endpoint.line) == ("staging", 25)
    assert isinstance(readback, StateReadbackCheck)
    assert readback.url == "postgresql://reader:s3cret@127.0.0.1:5432/test"
    assert readback.key == {"id": "4471"}
    assert readback.expect == {"status": '"closed"', "balance": "0"}


def test_an_unknown_key_names_the_file_and_its_line(tmp_path: Path) -> None:
    text = FULL.replace('command = ["python"', 'comand = ["python"')
    assert error_of(tmp_path, text) == "claim.toml:17: unknown key 'comand' in [[check]] 1"


def test_an_unknown_key_in_the_third_check_names_its_own_line(tmp_path: Path) -> None:
    text = FULL.replace("expect = { status", "expected = { status")
    assert error_of(tmp_path, text) == "claim.toml:39: unknown key 'expected' in [[check]] 3"


def test_an_unknown_key_in_gate_names_its_line(tmp_path: Path) -> None:
    text = FULL.replace("max_blocks = 5", "max_block = 5")
    assert error_of(tmp_path, text) == "claim.toml:11: unknown key 'max_block' in [gate]"


def test_a_wrong_type_names_the_key_and_its_line(tmp_path: Path) -> None:
    text = FULL.replace("max_blocks = 5", 'max_blocks = "5"')
    assert error_of(tmp_path, text) == "claim.toml:11: max_blocks must be an integer"
    text = FULL.replace("network = false", "network = 0")
    assert error_of(tmp_path, text) == "claim.toml:21: network must be true or false"


def test_a_test_runs_baseline_is_on_unless_the_operator_turns_it_off(tmp_path: Path) -> None:
    check = load_config(write(tmp_path, FULL), ENVIRON).checks[0]
    assert isinstance(check, gate_config.TestRunCheck)
    assert check.baseline
    text = FULL.replace("network = false", "network = false\nbaseline = false")
    check = load_config(write(tmp_path, text), ENVIRON).checks[0]
    assert isinstance(check, gate_config.TestRunCheck)
    assert not check.baseline
    text = FULL.replace("network = false", 'network = false\nbaseline = "no"')
    assert error_of(tmp_path, text) == "claim.toml:22: baseline must be true or false"


def test_hidden_tests_is_a_folder_named_from_the_files_own_folder(tmp_path: Path) -> None:
    check = load_config(write(tmp_path, FULL), ENVIRON).checks[0]
    assert isinstance(check, gate_config.TestRunCheck)
    assert check.hidden_tests is None
    text = FULL.replace("network = false", 'network = false\nhidden_tests = "hidden"')
    path = write(tmp_path, text)
    check = load_config(path, ENVIRON).checks[0]
    assert isinstance(check, gate_config.TestRunCheck)
    assert check.hidden_tests == path.parent / "hidden"
    text = FULL.replace("network = false", "network = false\nhidden_tests = 1")
    assert error_of(tmp_path, text) == "claim.toml:22: hidden_tests must be a string"


def test_the_operators_test_aware_allow_list_is_globs_and_nothing_else(tmp_path: Path) -> None:
    """[gate].allow_test_aware: paths whose test-aware code the gate lets through (none by
    default); a value that is not an array of strings is one line naming its own."""
    assert load_config(write(tmp_path, FULL), ENVIRON).allow_test_aware == ()
    text = FULL.replace("timeout_s = 1200", 'timeout_s = 1200\nallow_test_aware = ["tools/**"]')
    assert load_config(write(tmp_path, text), ENVIRON).allow_test_aware == ("tools/**",)
    for wrong in ('"tools/**"', "[1]", "true"):
        text = FULL.replace("timeout_s = 1200", f"timeout_s = 1200\nallow_test_aware = {wrong}")
        assert error_of(tmp_path, text) == (
            "claim.toml:14: allow_test_aware must be an array of strings"
        )


def test_a_missing_required_key_names_its_table(tmp_path: Path) -> None:
    text = FULL.replace('target = "staging"\n', "")
    assert error_of(tmp_path, text) == "claim.toml:25: missing required key 'target'"


def test_an_unknown_check_type_is_named(tmp_path: Path) -> None:
    text = FULL.replace('type = "endpoint_health"', 'type = "endpoint"')
    assert error_of(tmp_path, text).startswith(
        "claim.toml:26: [[check]] 2: unknown type 'endpoint'"
    )


def test_a_check_the_observer_would_refuse_is_refused_at_load(tmp_path: Path) -> None:
    """A status-only endpoint check could not fail: refused before any run, with its line."""
    text = FULL.replace('expect_json = { "/commit" = "${COMMIT}", "/build" = 42 }\n', "")
    text = text.replace('expect_header = { "x-build" = "42" }\n', "")
    assert error_of(tmp_path, text).startswith(
        "claim.toml:25: [[check]] 2 (endpoint_health): the check asserts only the status"
    )


def test_a_readback_may_allow_views_it_reads_and_only_those(tmp_path: Path) -> None:
    text = FULL.replace('table = "accounts"\n', 'table = "accounts"\nallow_views = ["accounts"]\n')
    readback = load_config(write(tmp_path, text), ENVIRON).checks[2]
    assert isinstance(readback, StateReadbackCheck)
    assert readback.allow_views == ("accounts",)
    text = text.replace('allow_views = ["accounts"]', 'allow_views = ["acounts"]')
    assert error_of(tmp_path, text) == (
        "claim.toml:33: [[check]] 3 (state_readback): --allow-view acounts: the readback reads "
        "no such table (it reads: accounts)"
    )


def test_a_missing_environment_variable_is_named(tmp_path: Path) -> None:
    environ = {"COMMIT": "4f2c1e"}
    assert error_of(tmp_path, FULL, environ) == (
        "claim.toml:35: url: environment variable PGPASSWORD is not set"
    )


def test_a_base_that_is_a_name_is_refused_naming_its_line(tmp_path: Path) -> None:
    """A branch name in the agent's repository points wherever the agent moved it."""
    assert error_of(tmp_path, FULL.replace(BASE, "main")) == (
        "claim.toml:12: base must be a full commit id (git rev-parse main), not 'main': a name "
        "in the agent's repository is the agent's to move"
    )


def test_invalid_toml_names_the_line_tomllib_reports(tmp_path: Path) -> None:
    text = FULL.replace("max_blocks = 5", "max_blocks = ")
    assert error_of(tmp_path, text).startswith("claim.toml:11: not valid TOML: ")


@pytest.mark.parametrize(
    ("tail", "problem"),
    [
        ("[extra", "Expected ']' at the end of a table declaration"),
        ('note = "unfinished', "Unterminated string"),
        ("note = [1,\n\n", "Invalid value"),  # the blank lines after it hold nothing
    ],
)
def test_invalid_toml_at_the_end_names_the_last_line(
    tmp_path: Path, tail: str, problem: str
) -> None:
    """Issue 21: tomllib says "at end of document", and the error named line 1."""
    text = FULL + tail
    last = len(FULL.splitlines()) + 1
    assert error_of(tmp_path, text) == f"claim.toml:{last}: not valid TOML: {problem}"


def test_a_key_inside_a_multi_line_string_is_not_mistaken_for_one(tmp_path: Path) -> None:
    text = FULL.replace(
        'trusted_ref = "main"\n',
        'trusted_ref = """\nmain"""\n',
    ).replace("network = false", "netwrk = false")
    assert error_of(tmp_path, text) == "claim.toml:22: unknown key 'netwrk' in [[check]] 1"


def test_an_invalid_inline_policy_is_an_invalid_policy_naming_its_line(tmp_path: Path) -> None:
    text = FULL.replace("max_age_s = 900", "max_age_s = -1")
    with pytest.raises(InvalidPolicy) as caught:
        load_config(write(tmp_path, text), ENVIRON)
    assert str(caught.value).startswith("claim.toml:5: [policy] max_age_s: ")


def test_a_policy_file_is_read_relative_to_the_configuration(tmp_path: Path) -> None:
    (tmp_path / "ops").mkdir()
    (tmp_path / "ops" / "policy.json").write_text(
        '{"id": "ops/file", "requires": ["test_run"], "max_age_s": 60}'
    )
    start = FULL.index("[gate]")
    config = load_config(write(tmp_path, 'policy = "ops/policy.json"\n' + FULL[start:]), ENVIRON)
    assert (config.policy.id, config.policy.max_age_s) == ("ops/file", 60)
    # Every file the gate reads is listed, claim.toml first: in a work tree, each is protected.
    assert config.files == (tmp_path / "claim.toml", tmp_path / "ops" / "policy.json")


def test_without_a_policy_every_configured_check_type_is_required(tmp_path: Path) -> None:
    start = FULL.index("[gate]")
    config = load_config(write(tmp_path, FULL[start:]), ENVIRON)
    assert config.policy.requires == ("endpoint_health", "state_readback", "test_run")


def test_the_runs_directory_defaults_to_the_users_state_directory(tmp_path: Path) -> None:
    text = FULL.replace('runs_dir = "runs"\n', "")
    config = load_config(write(tmp_path, text), {**ENVIRON, "XDG_STATE_HOME": "/srv/state"})
    assert config.runs_dir == Path("/srv/state/completion-claim/runs")
    config = load_config(write(tmp_path, text), ENVIRON)
    assert config.runs_dir == Path("/home/op/.local/state/completion-claim/runs")


def test_the_configuration_is_found_up_to_the_repository_root(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo", {"src/pkg/mod.py": "x = 1\n"})
    (tmp_path / "claim.toml").write_text(FULL)  # above the repository: not its configuration
    assert find_config(repo / "src" / "pkg") is None
    (repo / "claim.toml").write_text(FULL)
    assert find_config(repo / "src" / "pkg") == repo / "claim.toml"


def test_the_cli_prints_one_line_and_exits_4_on_a_config_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COMMIT", "4f2c1e")
    monkeypatch.setenv("PGPASSWORD", "s3cret")
    path = write(tmp_path, FULL.replace('command = ["python"', 'comand = ["python"'))
    assert run(["gate", "--config", str(path), "--repo", str(tmp_path)]) == 4
    assert capsys.readouterr().err == "claim: claim.toml:17: unknown key 'comand' in [[check]] 1\n"


def test_the_cli_exits_3_on_an_invalid_policy(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COMMIT", "4f2c1e")
    monkeypatch.setenv("PGPASSWORD", "s3cret")
    path = write(tmp_path, FULL.replace("max_age_s = 900", "max_age_s = -1"))
    assert run(["gate", "--config", str(path), "--repo", str(tmp_path)]) == 3
    err = capsys.readouterr().err
    assert err.startswith("claim: claim.toml:5: [policy] max_age_s")
    assert err.count("\n") == 1


DOM_CHECK = """\
[[check]]
type = "dom_assertion"
url = "https://app.example/settings"
target = "settings/display-name"
locator = "css=#label"
expect_text = "Bob"
expect_includes = ["Bob"]
wait_for = "css=#label"
prep = ["click:role=button[name='Reload']"]
storage_state = "auth/state.json"
allow_hosts = ["sso.example"]
timeout_s = 20
"""


def test_a_dom_assertion_check_is_read(tmp_path: Path) -> None:
    (tmp_path / "auth").mkdir()
    (tmp_path / "auth" / "state.json").write_text("{}")
    config = load_config(write(tmp_path, DOM_CHECK), ENVIRON)
    [check] = config.checks
    assert isinstance(check, DomAssertionCheck)
    assert (check.locator, check.expect_text, check.expect_includes) == (
        "css=#label",
        "Bob",
        ("Bob",),
    )
    assert check.prep == ("click:role=button[name='Reload']",)
    assert check.storage_state == str(tmp_path / "auth" / "state.json")
    assert (check.allow_hosts, check.timeout_s) == (("sso.example",), 20.0)
    assert config.policy.requires == ("dom_assertion",)
    assert config.files == (tmp_path / "claim.toml", tmp_path / "auth" / "state.json")


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        ('locator = "css=#label"', 'locator = "css=body"', "matches the whole document"),
        ('locator = "css=#label"', 'locator = "xpath=//p"', "css=, text= or role="),
        ('url = "https://app.example/settings"', 'url = "file:///etc/passwd"', "http"),
        ('storage_state = "auth/state.json"\n', 'storage_state = "missing.json"\n', "not a file"),
    ],
)
def test_a_dom_assertion_the_observer_would_refuse_is_refused_at_load(
    tmp_path: Path, old: str, new: str, message: str
) -> None:
    (tmp_path / "auth").mkdir()
    (tmp_path / "auth" / "state.json").write_text("{}")
    text = DOM_CHECK.replace(old, new)
    error = error_of(tmp_path, text)
    assert error.startswith("claim.toml:1: [[check]] 1 (dom_assertion): ")
    assert message in error


# --- the test interpreter (issue 21, defect 6) -------------------------------------------------


def python_without_pytest(folder: Path) -> Path:
    """A virtual environment as a wheel install or pipx leaves one: no pytest in it."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(folder)], check=True)
    return folder / "bin" / "python"


def interpreter_config(tmp_path: Path, python: Path) -> tuple[Path, Path]:
    repo = make_repo(tmp_path / "repo", {"calc.py": "x = 1\n"})
    ops = tmp_path / "ops"
    ops.mkdir()
    text = (
        f'[gate]\nruns_dir = "{tmp_path / "runs"}"\n\n[[check]]\ntype = "test_run"\n'
        f'command = ["python", "-m", "pytest", "-q"]\npython = "{python}"\n'
    )
    return write(ops, text), repo


@pytest.mark.parametrize("start", [True, False], ids=["start", "run"])
def test_a_python_that_cannot_import_pytest_stops_the_gate_naming_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], start: bool
) -> None:
    """An operator's mistake is the operator's (exit 4, the claim.toml line), never a failed
    run blamed on the agent; and it is found before anything is recorded: no start record, no
    run (a gate asks the interpreter while it captures the work tree, the start before all)."""
    python = python_without_pytest(tmp_path / "env")
    path, repo = interpreter_config(tmp_path, python)
    base = ["--base", head_commit(repo)] if not start else ["--start"]

    assert run(["gate", "--config", str(path), "--repo", str(repo), *base]) == 4
    said = capsys.readouterr().err
    assert said.endswith(
        f"claim: claim.toml:7: python: {python} cannot import pytest "
        f"(install it: {python} -m pip install pytest)\n"
    )
    assert said.count("\n") == (1 if start else 3)  # the gate's base and capture steps before
    recorded = [path.name for path in (tmp_path / "runs").glob("*/*") if path.name != "mirror"]
    assert recorded == []
    assert not start or not (tmp_path / "runs").exists()


def test_a_python_inside_the_work_tree_is_refused_saying_why_and_the_safe_way(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": "x = 1\n"})
    python = python_without_pytest(repo / ".venv")
    path, _ = interpreter_config(tmp_path / "x", python)

    assert run(["gate", "--config", str(path), "--repo", str(repo), "--start"]) == 4
    said = capsys.readouterr().err
    assert said.startswith(f"claim: claim.toml:7: python: {python} is inside the work tree, ")
    assert "the agent can replace it" in said
    assert "uv venv /srv/claim-envs/<repo>, then uv pip sync of uv export --frozen" in said
    assert "--python" not in said


def test_a_missing_interpreter_of_any_command_names_its_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, repo = interpreter_config(tmp_path, tmp_path / "nowhere" / "python")
    path.write_text(path.read_text().replace('"python", "-m", "pytest", "-q"', '"make", "test"'))

    assert run(["gate", "--config", str(path), "--repo", str(repo), "--start"]) == 4
    assert capsys.readouterr().err == (
        f"claim: claim.toml:7: python: no interpreter '{tmp_path / 'nowhere' / 'python'}'\n"
    )


def test_an_interpreter_that_can_import_pytest_starts(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, repo = interpreter_config(tmp_path, Path(sys.executable))
    assert run(["gate", "--config", str(path), "--repo", str(repo), "--start"]) == 0


def test_init_writes_an_interpreter_that_can_import_pytest(tmp_path: Path) -> None:
    """Claim's own interpreter (a pipx venv) cannot: claim init finds one on PATH that can."""
    own = python_without_pytest(tmp_path / "pipx")
    repo = make_repo(tmp_path / "repo", {"tests/test_x.py": "def test_x(): pass\n"})
    can = str(Path(sys.executable).parent)

    found = gate_config.pytest_interpreter(str(own), repo, can)
    assert found is not None
    assert gate_config.can_import_pytest(found)
    assert gate_config.pytest_interpreter(str(own), repo, str(own.parent)) is None
    assert gate_config.pytest_interpreter(sys.executable, repo, "") == sys.executable
    facts = gate_config.look_at(repo, {}, "main", BASE)
    text = gate_config.starter_config(dataclasses.replace(facts, python=found))
    path = write(tmp_path, text)
    (check,) = load_config(path, {}).checks
    assert isinstance(check, gate_config.TestRunCheck)
    assert check.python == found
    gate_config.require_toolchains(load_config(path, {}), repo)


def test_python_and_toolchain_are_one_key_of_two(tmp_path: Path) -> None:
    text = (
        '[policy]\nid = "p"\nrequires = ["test_run"]\nmax_age_s = 60\n\n[[check]]\n'
        'type = "test_run"\ncommand = ["go", "test", "./..."]\n'
        'python = "/usr/bin/python3"\ntoolchain = "/usr/lib/go"\n'
    )
    with pytest.raises(ConfigError, match=r"set python \(a Python runner\) or toolchain, not both"):
        load_config(write(tmp_path, text), {})
    text = text.replace('python = "/usr/bin/python3"\n', "")
    (check,) = load_config(write(tmp_path, text), {}).checks
    assert isinstance(check, gate_config.TestRunCheck)
    assert check.chosen_toolchain == "/usr/lib/go"
