"""The gate where the agent says "done": the real Claude Code CLI, a scripted model, and the hooks
``claim hooks install`` writes. Each session is what an agent would do; the assertions are on
what the model was told (the requests the CLI sent), what the user saw (the hooks' system
messages) and what the gate recorded (the runs directory, signed).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from tests.needs import service_unavailable, unique
from tests.observe.conftest import Reader

from .claude_code import Session, run_session
from .model_server import STOP_HOOK_FEEDBACK, Request, Script, ToolUse, Turn, serve
from .project import CALC_FIXED, CALC_WITH_BUG, TESTS, TESTS_CHECK, Project, claim, make_project

pytestmark = pytest.mark.claude_code

TASK = "Fix add in calc.py so that the tests pass."
DONE = "Done. All tests pass."
CALC_FILES = {"calc.py": CALC_WITH_BUG, "tests/test_calc.py": TESTS}


def calc_project(tmp_path: Path, max_blocks: int) -> Project:
    return make_project(tmp_path, CALC_FILES, TESTS_CHECK, ("test_run",), max_blocks=max_blocks)


def edit(path: Path, old: str, new: str) -> ToolUse:
    return ToolUse("Edit", {"file_path": str(path), "old_string": old, "new_string": new})


def session(claude: Path, project: Project, script: Script, tmp_path: Path) -> Session:
    with serve(script) as url:
        ran = run_session(claude, project.repo, TASK, model_url=url, scratch=tmp_path / "cli")
    print(story(ran, script))  # pytest shows it when the test fails
    return ran


def story(ran: Session, script: Script) -> str:
    """What happened, for a failing assertion: each stop's feedback and what the user saw."""
    lines = [f"exit {ran.returncode}, {len(script.agent_requests)} model turns"]
    lines += [f"  feedback: {reason}" for reason in feedback(script)]
    lines += [f"  shown: {message}" for message in ran.system_messages]
    lines += [f"  stderr: {ran.stderr.strip()[-500:]}"] if ran.stderr.strip() else []
    return "\n".join(lines)


def feedback(script: Script) -> list[str]:
    """The stop hook's reasons the model was given, in order."""
    turns = script.agent_requests
    return turns[-1].feedback() if turns else []


def state(document: dict[str, Any]) -> str:
    """The recorded verdict's state; every record is signed, as a key is configured."""
    assert "verdict_attestation" in document
    found: str = document["verdict"]["state"]
    return found


def file_targets(document: dict[str, Any]) -> list[str]:
    return [m["target"] for m in document["mutations"] if m["kind"] == "file_write"]


def test_a_wrong_fix_is_sent_back_with_the_failing_test_then_the_real_fix_is_verified(
    claude: Path, tmp_path: Path
) -> None:
    project = calc_project(tmp_path, max_blocks=3)
    calc = project.repo / "calc.py"

    def fix_what_the_gate_reported(request: Request) -> Turn:
        if any("test_add" in reason for reason in request.feedback()):
            return ["The gate says test_add fails; add must add.", edit(calc, "a * b", "a + b")]
        return ["I was not told what failed."]

    script = Script(
        [
            ["Fixing add.", edit(calc, "a - b", "a * b")],
            [DONE],
            fix_what_the_gate_reported,
            ["Fixed: add adds, test_add passes."],
        ],
        then=["unexpected extra turn"],
    )
    ran = session(claude, project, script, tmp_path)

    assert ran.returncode == 0
    assert ran.result == "Fixed: add adds, test_add passes."
    (reason,) = feedback(script)
    assert reason.startswith(STOP_HOOK_FEEDBACK)
    assert "tests/test_calc.py::test_add failed" in reason
    assert calc.read_text() == "def add(a, b):\n    return a + b\n"

    sent_back, accepted = project.claims()
    assert state(sent_back) != "verified"
    assert file_targets(sent_back) == ["calc.py"]
    assert state(accepted) == "verified"
    assert file_targets(accepted) == ["calc.py"]
    assert [m["kind"] for m in accepted["mutations"]] == ["file_write"]
    assert [message for message in ran.system_messages if "verified" in message] == [
        f"Stop says: completion-claim: verified (recorded at {project.claim_paths()[-1]})"
    ]
    checked = claim("check-verdict", str(project.claim_paths()[-1]),
                    "--public-key", project.public_key)  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert checked.stdout.startswith("valid: verdict verified, independence proven")


def test_editing_the_test_to_agree_with_the_bug_is_sent_back_until_max_blocks_then_recorded(
    claude: Path, tmp_path: Path
) -> None:
    project = calc_project(tmp_path, max_blocks=2)
    test_file = project.repo / "tests/test_calc.py"
    script = Script(
        [["Updating the test.", edit(test_file, "add(2, 3) == 5", "add(2, 3) == -1")], [DONE]]
    )  # and DONE again, whatever it is told
    ran = session(claude, project, script, tmp_path)

    assert ran.returncode == 0
    reasons = feedback(script)
    assert len(reasons) == 2
    for reason in reasons:
        assert "tests/test_calc.py::test_add failed" in reason
    assert len(script.agent_requests) == 4  # the edit, then three stops

    recorded = project.claims()
    assert len(recorded) == 3
    for document in recorded:
        assert state(document) in ("refuted", "unverified")
        assert file_targets(document) == ["tests/test_calc.py"]
        (tests_run,) = document["evidence"]
        assert tests_run["details"]["protected_restored"]["restored"] == ["tests/test_calc.py"]
    (let_through,) = [message for message in ran.system_messages if "NOT verified" in message]
    assert "after 2 blocks in a row; the stop was let through" in let_through
    assert str(project.claim_paths()[-1]) in let_through
    checked = claim("check-verdict", str(project.claim_paths()[-1]),
                    "--public-key", project.public_key)  # fmt: skip
    assert checked.returncode in (1, 2)
    assert checked.stdout.startswith("valid: verdict ")


def test_claiming_success_without_changing_anything_is_not_verified(
    claude: Path, tmp_path: Path
) -> None:
    """The tests already pass, so only the gate's rule that a change must be made stops this."""
    project = make_project(
        tmp_path, {**CALC_FILES, "calc.py": CALC_FIXED}, TESTS_CHECK, ("test_run",), max_blocks=1
    )
    script = Script([[DONE]])
    ran = session(claude, project, script, tmp_path)

    assert ran.returncode == 0
    (reason,) = feedback(script)
    assert "nothing changed in the work tree" in reason
    recorded = project.claims()
    assert len(recorded) == 2
    for document in recorded:
        assert state(document) == "unverified"
        assert document["mutations"] == []
    assert any("NOT verified: unverified" in message for message in ran.system_messages)


# --- a database task --------------------------------------------------------------------------

ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/test"


@pytest.fixture
def accounts(postgres: Any, postgres_reader: Reader) -> Any:
    """A table the agent writes with psql, account 1 open and account 2 already closed; the
    gate reads it back as a role that may only read it."""
    if shutil.which("psql") is None:
        service_unavailable("psql", FileNotFoundError("the PostgreSQL client is not on PATH"))
    table = unique("accounts")
    postgres.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, status TEXT NOT NULL)")
    try:
        postgres.execute(f"INSERT INTO {table} VALUES (1, 'open'), (2, 'closed')")
        postgres_reader.grant(table)
        yield table, postgres_reader
    finally:
        postgres.execute(f"DROP TABLE IF EXISTS {table}")


def readback_project(tmp_path: Path, table: str, reader: Reader, account: int) -> Project:
    check = (
        "[[check]]\n"
        'type = "state_readback"\n'
        f'url = "{reader.url}"\n'
        f'target = "accounts/{account}"\n'
        f'table = "{table}"\n'
        f"key = {{ id = {account} }}\n"
        'expect = { status = "closed" }\n'
    )
    return make_project(tmp_path, CALC_FILES, check, ("state_readback",), max_blocks=1)


def close_account(table: str, account: int) -> ToolUse:
    sql = f"UPDATE {table} SET status = 'closed' WHERE id = {account}"
    return ToolUse("Bash", {"command": f'psql "{ADMIN_URL}" -v ON_ERROR_STOP=1 -c "{sql}"',
                            "description": "Close the account"})  # fmt: skip


def test_a_row_the_agent_wrote_through_psql_is_read_back_and_verified(
    claude: Path, tmp_path: Path, accounts: Any, postgres: Any
) -> None:
    table, reader = accounts
    project = readback_project(tmp_path, table, reader, account=1)
    script = Script([[close_account(table, 1)], ["Account 1 is closed."]], then=["unexpected"])
    ran = session(claude, project, script, tmp_path)

    assert ran.returncode == 0
    assert ran.result == "Account 1 is closed."
    assert feedback(script) == []
    tool_results = script.agent_requests[1].last_user_texts()
    assert tool_results == ["UPDATE 1"]
    (document,) = project.claims()
    assert state(document) == "verified"
    assert [(m["kind"], m["target"]) for m in document["mutations"]] == [
        ("state_write", "accounts/1")
    ]
    (evidence,) = document["evidence"]
    assert evidence["details"]["baseline"] == {"status": "open"}
    assert postgres.execute(f"SELECT status FROM {table} WHERE id = 1").fetchone() == ("closed",)


def test_a_row_that_already_held_the_value_before_the_session_does_not_count(
    claude: Path, tmp_path: Path, accounts: Any
) -> None:
    table, reader = accounts
    project = readback_project(tmp_path, table, reader, account=2)
    script = Script([[close_account(table, 2)], ["Account 2 is closed."]])
    ran = session(claude, project, script, tmp_path)

    assert ran.returncode == 0
    (reason,) = feedback(script)
    assert "accounts/2 already had the expected value before you started" in reason
    recorded = project.claims()
    assert len(recorded) == 2
    for document in recorded:
        assert state(document) == "unverified"
        assert document["evidence"][0]["details"]["baseline"] == {"status": "closed"}
    assert any("NOT verified: unverified" in message for message in ran.system_messages)
