"""The gate run: real repositories, real sandboxed pytest runs, real stores, real verdicts."""

from __future__ import annotations

import contextlib
import hashlib
import json
import mmap
import os
import pwd
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from completion_claim.cli import run
from completion_claim.gate.config import ConfigError, GateConfig, load_config
from completion_claim.gate.run import (
    GATE_VERIFIER_ID,
    NO_OUTCOME,
    mirror_path,
    protected_targets,
    run_gate,
    start_gate,
)
from completion_claim.observe.mirror import RACY_NS
from tests.fixtures.installed import installed_python
from tests.fixtures.pages import Site as WebApp
from tests.fixtures.pages import needs_chromium, served_site
from tests.fixtures.projects import (
    CALC,
    CALC_BUGGY,
    TEST_CALC,
    git,
    head_commit,
    make_repo,
    write_files,
)
from tests.gate.conftest import POLICY, TEST_RUN_CHECK, WriteConfig
from tests.observe.conftest import Reader, Site, closed_port
from tests.test_ci_recipe import TRICKS, Plant

TEST_CALC_AGREEING_WITH_BUG = TEST_CALC.replace("== 5", "== -1")


def buggy_project(root: Path) -> Path:
    """A committed project whose add() is wrong: the task is to fix it."""
    return make_repo(root, {"calc.py": CALC_BUGGY, "tests/test_calc.py": TEST_CALC})


def correct_project(root: Path) -> Path:
    return make_repo(root, {"calc.py": CALC, "tests/test_calc.py": TEST_CALC})


def sha256(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def evidence_of(document: dict[str, Any], check_type: str) -> dict[str, Any]:
    items = [item for item in document["evidence"] if item["check_type"] == check_type]
    assert len(items) == 1
    found: dict[str, Any] = items[0]
    return found


# --- code changes ----------------------------------------------------------------------------


def test_an_honest_fix_is_verified_and_the_mutations_are_the_real_edits(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    repo = buggy_project(tmp_path / "repo")
    config = write_config(POLICY + TEST_RUN_CHECK)
    start_gate(config, repo)
    write_files(repo, {"calc.py": CALC})

    result = run_gate(config, repo, outcome="Fixed add().")

    assert (result.verdict.state, result.exit_code, result.agent_reason) == ("verified", 0, "")
    document = json.loads(result.claim_path.read_text())
    assert document == result.document
    assert [(m["kind"], m["target"], m["digest"]) for m in document["mutations"]] == [
        ("file_write", "calc.py", sha256(CALC))
    ]
    item = evidence_of(document, "test_run")
    assert item["verifier"] == {"id": GATE_VERIFIER_ID, "kind": "independent"}
    assert item["covers"] == [document["mutations"][0]["id"]]
    assert document["claimed_outcome"] == "Fixed add()."
    assert document["policy"]["id"] == "ops/gate"
    assert document["verdict"]["state"] == "verified"
    # Recorded outside the work tree, in the configured runs directory.
    assert result.claim_path.is_relative_to(config.runs_dir)
    assert git(repo, "status", "--porcelain") == " M calc.py\n"


def test_a_broken_edit_is_refuted_and_the_reason_names_the_failing_test(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    repo = correct_project(tmp_path / "repo")
    config = write_config(POLICY + TEST_RUN_CHECK)
    start_gate(config, repo)
    write_files(repo, {"calc.py": CALC_BUGGY})

    result = run_gate(config, repo, outcome="Done. All tests pass.")

    assert (result.verdict.state, result.exit_code) == ("refuted", 2)
    assert result.agent_reason.splitlines()[0] == (
        "tests/test_calc.py::test_add failed: assert -1 == 5"
    )
    failures = evidence_of(result.document, "test_run")["details"]["failures"]
    assert failures[0] == {
        "test": "tests.test_calc::test_add",
        "outcome": "failed",
        "message": "assert -1 == 5",
    }


def test_no_change_is_unverified_even_when_the_tests_pass(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    repo = correct_project(tmp_path / "repo")
    config = write_config(POLICY + TEST_RUN_CHECK)
    start_gate(config, repo)

    result = run_gate(config, repo, outcome="Done.")

    assert (result.verdict.state, result.exit_code) == ("unverified", 1)
    assert result.document["mutations"] == []
    # No check ran: the whole suite would only confirm what require_mutations already decided.
    assert result.document["evidence"] == []
    assert "no_mutations" in [u.code for u in result.verdict.unmet]
    assert "The claim records no change, and the policy requires one" in result.verdict.reason
    assert result.agent_reason.startswith("nothing changed in the work tree")
    assert result.document["claimed_outcome"] == "Done."


def test_a_test_edited_to_agree_with_a_bug_is_run_as_the_trusted_ref_has_it(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    repo = correct_project(tmp_path / "repo")
    config = write_config(POLICY + TEST_RUN_CHECK + 'trusted_ref = "main"\n')
    start_gate(config, repo)
    write_files(repo, {"calc.py": CALC_BUGGY, "tests/test_calc.py": TEST_CALC_AGREEING_WITH_BUG})

    result = run_gate(config, repo, outcome="Done.")

    assert result.verdict.state == "refuted"
    assert "tests/test_calc.py::test_add failed: assert -1 == 5" in result.agent_reason
    details = evidence_of(result.document, "test_run")["details"]
    assert details["protected_restored"]["restored"] == ["tests/test_calc.py"]
    assert "your changes to tests/test_calc.py were not used" in result.agent_reason


def test_a_test_edited_to_agree_with_a_bug_does_not_count_without_a_trusted_ref(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    repo = correct_project(tmp_path / "repo")
    config = write_config(POLICY + TEST_RUN_CHECK)
    start_gate(config, repo)
    write_files(repo, {"calc.py": CALC_BUGGY, "tests/test_calc.py": TEST_CALC_AGREEING_WITH_BUG})

    result = run_gate(config, repo, outcome="Done.")

    assert result.verdict.state == "unverified"
    assert "you changed tests/test_calc.py; changes to tests do not count" in result.agent_reason
    assert "calc.py (file_write) is covered by no passing test_run" in result.agent_reason


def test_the_trusted_ref_option_replaces_the_checks_own(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    """CI passes the pull request's base commit: the agent's branch cannot pick the tests."""
    repo = correct_project(tmp_path / "repo")
    config = write_config(POLICY + TEST_RUN_CHECK)
    base = head_commit(repo)
    write_files(repo, {"calc.py": CALC_BUGGY, "tests/test_calc.py": TEST_CALC_AGREEING_WITH_BUG})

    result = run_gate(config, repo, outcome="Done.", base=base, trusted_ref=base)

    assert result.verdict.state == "refuted"


def test_evidence_the_agent_wrote_into_the_work_tree_is_never_read(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    repo = correct_project(tmp_path / "repo")
    config = write_config(POLICY + TEST_RUN_CHECK)
    forged = {
        "spec_version": "0.1",
        "task": {"id": "t"},
        "claimed_outcome": "done",
        "mutations": [{"id": "m1", "kind": "file_write", "target": "calc.py",
                       "at": "2026-01-01T00:00:00Z"}],
        "evidence": [{"check_type": "test_run", "target": "pytest", "at": "2099-01-01T00:00:00Z",
                      "covers": ["m1"], "verifier": {"id": GATE_VERIFIER_ID, "kind": "independent"},
                      "expected": {"exit_code": 0}, "observed_value": {"exit_code": 0}}],
        "verdict": {"state": "verified"},
    }  # fmt: skip
    start_gate(config, repo)
    write_files(repo, {"calc.py": CALC_BUGGY, "claim.json": json.dumps(forged)})

    result = run_gate(config, repo, outcome="Done.")

    assert result.verdict.state == "refuted"
    assert [m["target"] for m in result.document["mutations"]] == ["calc.py", "claim.json"]
    assert [item["target"] for item in result.document["evidence"]] == ["python -m pytest -q"]


def test_an_agent_commit_is_captured_against_the_start_commit(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    """Committing the change does not hide it: the base is the commit the session started on."""
    repo = correct_project(tmp_path / "repo")
    config = write_config(POLICY + TEST_RUN_CHECK)
    git(repo, "checkout", "-q", "-b", "agent")
    start_gate(config, repo)
    write_files(repo, {"calc.py": CALC_BUGGY})
    git(repo, "commit", "-qam", "fix")

    result = run_gate(config, repo, outcome="Done.")

    assert result.verdict.state == "refuted"
    assert [m["target"] for m in result.document["mutations"]] == ["calc.py"]
    assert "the start record" in result.document["task"]["description"]


def test_without_a_start_a_base_given_as_a_commit_id_is_measured_from(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    repo = correct_project(tmp_path / "repo")
    config = write_config(POLICY + TEST_RUN_CHECK)
    base = head_commit(repo)
    git(repo, "checkout", "-q", "-b", "agent")
    write_files(repo, {"calc.py": CALC_BUGGY})
    git(repo, "commit", "-qam", "fix")

    result = run_gate(config, repo, outcome="Done.", base=base)

    assert result.verdict.state == "refuted"
    assert f"base {base} (--base)" in result.report


def test_a_changed_gate_configuration_in_the_work_tree_is_not_verified(
    tmp_path: Path,
) -> None:
    """The claim.toml in the repository is the operator's: the agent may not loosen it."""
    runs = tmp_path / "runs"
    strict = f'[gate]\nruns_dir = "{runs}"\n{POLICY}{TEST_RUN_CHECK}'
    repo = make_repo(
        tmp_path / "repo",
        {"calc.py": CALC_BUGGY, "tests/test_calc.py": TEST_CALC, "claim.toml": strict},
    )
    start_gate(load_config(repo / "claim.toml", {}), repo)
    write_files(repo, {"calc.py": CALC, "claim.toml": strict.replace("600", "601")})

    result = run_gate(load_config(repo / "claim.toml", {}), repo, outcome="Done.")

    # Judged under the operator's copy taken at the start: the fix passes its tests, and the
    # changed configuration alone keeps the claim from being verified.
    assert result.verdict.state == "unverified"
    assert "protected_target_changed" in [u.code for u in result.verdict.unmet]
    assert "you changed claim.toml, the gate's configuration" in result.agent_reason


# --- one verdict everywhere (attack 48) ---------------------------------------------------------


def claim_verify(claim_path: Path) -> tuple[int, dict[str, Any]]:
    """The real command, as a CI step or an auditor would run it on the recorded claim."""
    done = subprocess.run(
        [sys.executable, "-m", "completion_claim", "verify", str(claim_path), "--json"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    return done.returncode, json.loads(done.stdout)


def nothing_changed(tmp_path: Path, write_config: WriteConfig) -> tuple[GateConfig, Path]:
    config, repo = write_config(POLICY + TEST_RUN_CHECK), correct_project(tmp_path / "repo")
    start_gate(config, repo)
    return config, repo


def config_changed(tmp_path: Path, write_config: WriteConfig) -> tuple[GateConfig, Path]:
    """An honest-looking fix, with the claim.toml in the work tree loosened on the way."""
    strict = f'[gate]\nruns_dir = "{tmp_path / "runs"}"\n{POLICY}{TEST_RUN_CHECK}'
    repo = make_repo(
        tmp_path / "repo",
        {"calc.py": CALC_BUGGY, "tests/test_calc.py": TEST_CALC, "claim.toml": strict},
    )
    config = load_config(repo / "claim.toml", {})
    start_gate(config, repo)
    write_files(repo, {"calc.py": CALC, "claim.toml": strict.replace("600", "601")})
    return config, repo


def capture_failed(tmp_path: Path, write_config: WriteConfig) -> tuple[GateConfig, Path]:
    """A work tree the gate cannot read honestly: calc.py is a link out of it."""
    repo = buggy_project(tmp_path / "repo")
    config = write_config(POLICY + TEST_RUN_CHECK)
    start_gate(config, repo)
    outside = tmp_path / "outside.py"
    outside.write_text(CALC, encoding="utf-8")
    (repo / "calc.py").unlink()
    (repo / "calc.py").symlink_to(outside)
    return config, repo


REFUSALS = {
    "no_changes": (nothing_changed, "no_mutations", "nothing changed in the work tree"),
    "gate_config_changed": (
        config_changed,
        "protected_target_changed",
        "you changed claim.toml, the gate's",
    ),
    "capture_failed": (
        capture_failed,
        "mutation_kind_unmapped",
        "the gate could not read your change: ",
    ),
}


@pytest.mark.parametrize("scenario", REFUSALS.values(), ids=REFUSALS.keys())
def test_attack_48_the_recorded_claim_re_verifies_to_the_gates_refusal(
    tmp_path: Path, write_config: WriteConfig, scenario: tuple[Any, str, str]
) -> None:
    """The gate's own rules are the format's: `claim verify` of the claim the gate recorded
    reaches the gate's verdict, so no later re-check turns "not verified" into "verified"."""
    setup, code, said = scenario
    config, repo = setup(tmp_path, write_config)

    result = run_gate(config, repo, outcome="Done.")

    assert result.verdict.state == "unverified"
    assert code in [u.code for u in result.verdict.unmet]
    assert said in result.agent_reason
    exit_code, again = claim_verify(result.claim_path)
    assert (exit_code, again["state"]) == (1, "unverified")
    assert again["unmet"] == result.document["verdict"]["unmet"]
    assert "recorded_verdict_differs" not in again


def test_attack_48_the_honest_fix_re_verifies_as_verified(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    repo = buggy_project(tmp_path / "repo")
    config = write_config(POLICY + TEST_RUN_CHECK)
    start_gate(config, repo)
    write_files(repo, {"calc.py": CALC})

    result = run_gate(config, repo, outcome="Fixed add().")

    assert result.verdict.state == "verified"
    assert result.document["policy"]["require_mutations"] is True
    exit_code, again = claim_verify(result.claim_path)
    assert (exit_code, again["state"], again["unmet"]) == (0, "verified", [])


def test_attack_48_the_recorded_policy_protects_the_configuration_in_the_work_tree(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    """Only files the configuration reads from the work tree are protected, by the path the
    capture gives them; an operator's claim.toml outside the tree adds nothing."""
    config, repo = config_changed(tmp_path, write_config)
    inside = run_gate(config, repo, outcome="Done.")
    outside = run_gate(write_config(POLICY + TEST_RUN_CHECK), repo, outcome="Done.")

    assert inside.document["policy"]["protected_targets"] == ["claim.toml"]
    assert "protected_targets" not in outside.document["policy"]


def test_a_configuration_cannot_switch_the_gates_demands_off(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    """The gate's demands are added to the configuration's policy, never taken from it: an
    in-tree claim.toml is the agent's to edit, if only to be caught at it."""
    lax = POLICY + (
        'require_mutations = false\nprotected_targets = ["docs/x.md"]\n'
        '[policy.covered_by]\nuncaptured = ["test_run"]\nfile_write = ["test_run"]\n'
    )
    config, repo = write_config(lax + TEST_RUN_CHECK), correct_project(tmp_path / "repo")
    start_gate(config, repo)
    result = run_gate(config, repo, outcome="Done.")

    assert "no_mutations" in [u.code for u in result.verdict.unmet]
    recorded = result.document["policy"]
    assert (recorded["require_mutations"], recorded["protected_targets"]) == (True, ["docs/x.md"])
    assert recorded["covered_by"] == {"file_write": ["test_run"]}


def test_attack_62_a_configuration_link_re_pointed_at_a_file_already_in_the_tree(
    tmp_path: Path,
) -> None:
    """claim.toml in the work tree is a link to the operator's file beside it; the agent breaks
    calc.py and re-points the link at a lenient file the repository already held (a green
    command, no test counts needed). Only the file the link named was protected."""
    runs = f'[gate]\nruns_dir = "{tmp_path / "runs"}"\n'
    lenient = (
        f'{runs}[policy]\nid = "lenient"\nrequires = ["test_run"]\nmax_age_s = 600\n'
        'min_tests = 0\n[[check]]\ntype = "test_run"\ncommand = ["python", "-c", "pass"]\n'
    )
    repo = make_repo(
        tmp_path / "repo",
        {"calc.py": CALC, "tests/test_calc.py": TEST_CALC, "ops/strict.toml": runs + POLICY
         + TEST_RUN_CHECK, "ops/lenient.toml": lenient},
    )  # fmt: skip
    (repo / "claim.toml").symlink_to("ops/strict.toml")
    git(repo, "add", "claim.toml")
    git(repo, "commit", "-q", "-m", "gate")
    start_gate(load_config(repo / "claim.toml", {}), repo)
    write_files(repo, {"calc.py": CALC_BUGGY})
    (repo / "claim.toml").unlink()
    (repo / "claim.toml").symlink_to("ops/lenient.toml")

    result = run_gate(load_config(repo / "claim.toml", {}), repo, outcome="Done.")

    # Judged under the operator's copy taken at the start (the strict file): its tests fail.
    assert result.verdict.state == "refuted"
    assert "protected_target_changed" in [u.code for u in result.verdict.unmet]
    assert set(result.document["policy"]["protected_targets"]) == {
        "claim.toml", "ops/lenient.toml"
    }  # fmt: skip


def test_a_configuration_file_is_protected_under_every_name_a_link_gives_it(
    tmp_path: Path,
) -> None:
    runs = f'[gate]\nruns_dir = "{tmp_path / "runs"}"\n'
    repo = make_repo(tmp_path / "repo", {"real/claim.toml": runs + POLICY + TEST_RUN_CHECK})
    (repo / "hop.toml").symlink_to("real/claim.toml")
    (repo / "claim.toml").symlink_to("hop.toml")
    (repo / "conf").symlink_to("real")
    chained = load_config(repo / "claim.toml", {})
    through_folder = load_config(repo / "conf" / "claim.toml", {})

    assert protected_targets(chained, repo) == ("claim.toml", "hop.toml", "real/claim.toml")
    assert protected_targets(through_folder, repo) == (
        "conf/claim.toml", "conf", "real/claim.toml"
    )  # fmt: skip
    assert protected_targets(load_config(repo / "claim.toml", {}), tmp_path / "other") == ()


def test_a_configuration_reached_through_a_link_it_was_not_changed_through_verifies(
    tmp_path: Path,
) -> None:
    """The honest control: the same link, left alone, and a real fix."""
    runs = f'[gate]\nruns_dir = "{tmp_path / "runs"}"\n'
    repo = make_repo(
        tmp_path / "repo",
        {"calc.py": CALC_BUGGY, "tests/test_calc.py": TEST_CALC,
         "ops/strict.toml": runs + POLICY + TEST_RUN_CHECK},
    )  # fmt: skip
    (repo / "claim.toml").symlink_to("ops/strict.toml")
    git(repo, "add", "claim.toml")
    git(repo, "commit", "-q", "-m", "gate")
    start_gate(load_config(repo / "claim.toml", {}), repo)
    write_files(repo, {"calc.py": CALC})

    result = run_gate(load_config(repo / "claim.toml", {}), repo, outcome="Fixed add().")

    assert result.verdict.state == "verified"


def test_the_default_outcome_says_none_was_given(tmp_path: Path, write_config: WriteConfig) -> None:
    repo = correct_project(tmp_path / "repo")
    config = write_config(POLICY + TEST_RUN_CHECK)
    start_gate(config, repo)
    write_files(repo, {"README": "x\n"})
    assert run(["gate", "--config", str(config.path), "--repo", str(repo), "--json"]) == 0
    claims = list(config.runs_dir.glob("*/*/claim.json"))
    assert json.loads(claims[0].read_text())["claimed_outcome"] == NO_OUTCOME


# --- state: readbacks and baselines ----------------------------------------------------------


def sqlite_store(path: Path, status: str) -> str:
    with sqlite3.connect(path) as conn:
        conn.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, status TEXT)")
        conn.execute("INSERT INTO accounts VALUES (4471, ?)", (status,))
    return f"sqlite:///{path}"


def set_status(path: Path, status: str) -> None:
    with sqlite3.connect(path) as conn:
        conn.execute("UPDATE accounts SET status = ? WHERE id = 4471", (status,))


def readback_check(url: str) -> str:
    return f"""
[[check]]
type = "state_readback"
url = "{url}"
target = "accounts/4471"
table = "accounts"
key = {{ id = 4471 }}
expect = {{ status = "closed" }}
"""


READBACK_POLICY = '[policy]\nid = "ops/db"\nrequires = ["state_readback"]\nmax_age_s = 600\n'


def test_a_readback_that_changed_since_the_start_is_verified(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    repo = correct_project(tmp_path / "repo")
    store = tmp_path / "bank.db"
    config = write_config(READBACK_POLICY + readback_check(sqlite_store(store, "open")))
    start_gate(config, repo)
    set_status(store, "closed")

    result = run_gate(config, repo, outcome="Closed account 4471.")

    assert result.verdict.state == "verified"
    assert [(m["kind"], m["target"]) for m in result.document["mutations"]] == [
        ("state_write", "accounts/4471")
    ]
    details = evidence_of(result.document, "state_readback")["details"]
    assert details["baseline"] == {"status": "open"}
    assert details["baseline_taken"] is True


def test_a_readback_value_that_already_held_at_the_start_does_not_count(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    repo = correct_project(tmp_path / "repo")
    store = tmp_path / "bank.db"
    config = write_config(READBACK_POLICY + readback_check(sqlite_store(store, "closed")))
    start_gate(config, repo)

    result = run_gate(config, repo, outcome="Closed account 4471.")

    assert result.verdict.state == "unverified"
    assert "accounts/4471 already had the expected value before you started" in (
        result.agent_reason
    )


def test_without_a_start_the_gate_says_baselines_were_not_taken(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    repo = correct_project(tmp_path / "repo")
    store = tmp_path / "bank.db"
    config = write_config(READBACK_POLICY + readback_check(sqlite_store(store, "closed")))

    result = run_gate(config, repo, outcome="Closed account 4471.", base=head_commit(repo))

    # Nothing to compare with: the value counts, and the record says so.
    assert result.verdict.state == "verified"
    assert evidence_of(result.document, "state_readback")["details"]["baseline_taken"] is False
    assert "baselines not taken" in result.report
    assert "baselines not taken" in result.document["task"]["description"]


def test_a_start_per_session_is_apart_from_the_repositorys(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    repo = correct_project(tmp_path / "repo")
    store = tmp_path / "bank.db"
    config = write_config(READBACK_POLICY + readback_check(sqlite_store(store, "closed")))
    start_gate(config, repo, session="s-1")

    other = run_gate(config, repo, outcome="Closed.", session="s-2", base=head_commit(repo))
    same = run_gate(config, repo, outcome="Closed.", session="s-1")

    assert (other.verdict.state, same.verdict.state) == ("verified", "unverified")


def test_attack_68_the_gate_sends_back_a_view_in_the_tables_place(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    """The agent puts a view that shows the expected status where the table was: the readback
    is a failed attempt, so the agent is sent back, unless the operator's check allows a view
    there (then the evidence says it read one)."""
    repo = correct_project(tmp_path / "repo")
    store = tmp_path / "bank.db"
    url = sqlite_store(store, "open")
    with sqlite3.connect(store) as conn:
        conn.execute("ALTER TABLE accounts RENAME TO accounts_real")
        conn.execute("CREATE VIEW accounts AS SELECT id, 'closed' AS status FROM accounts_real")
    config = write_config(READBACK_POLICY + readback_check(url))

    result = run_gate(config, repo, outcome="Closed account 4471.", base=head_commit(repo))

    assert result.verdict.state == "unverified"
    item = evidence_of(result.document, "state_readback")
    assert "observed_value" not in item
    assert "accounts is a view, not a table" in item["details"]["error"]

    allowed = write_config(READBACK_POLICY + readback_check(url) + 'allow_views = ["accounts"]\n')
    result = run_gate(allowed, repo, outcome="Closed account 4471.", base=head_commit(repo))
    assert result.verdict.state == "verified"
    assert evidence_of(result.document, "state_readback")["details"]["views"] == ["accounts"]


def test_a_store_that_cannot_be_read_is_recorded_as_a_failed_attempt(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    repo = correct_project(tmp_path / "repo")
    url = f"postgresql://reader@127.0.0.1:{closed_port()}/test"
    config = write_config(READBACK_POLICY + readback_check(url))

    result = run_gate(config, repo, outcome="Closed.", base=head_commit(repo))

    assert result.verdict.state == "unverified"
    item = evidence_of(result.document, "state_readback")
    assert "observed_value" not in item
    assert "cannot connect" in item["details"]["error"] or "connect" in item["details"]["error"]
    assert result.agent_reason.startswith("the readback of postgresql://")
    assert "could not run" in result.agent_reason.splitlines()[0]
    assert result.agent_reason.splitlines()[1].startswith(
        "accounts/4471 (state_write) is covered by no passing state_readback: its check could "
        "not observe it"
    )


def test_a_postgresql_readback_with_a_password_from_the_environment(
    tmp_path: Path, write_config: WriteConfig, postgres: Any, postgres_reader: Reader
) -> None:
    """The secret comes from ${PGPASSWORD}, and lands nowhere in the written claim."""
    table = f"accounts_{uuid.uuid4().hex[:10]}"
    postgres.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, status TEXT)")
    try:
        postgres.execute(f"INSERT INTO {table} VALUES (4471, 'open')")
        postgres_reader.grant(table)
        secret = f"pw-{uuid.uuid4().hex}"
        url = postgres_reader.url_with(f"{postgres_reader.name}:${{PGPASSWORD}}")
        check = readback_check(url).replace('"accounts"', f'"{table}"')
        environ = {"PGPASSWORD": secret, "HOME": str(tmp_path)}
        config = write_config(READBACK_POLICY + check, environ=environ)
        repo = correct_project(tmp_path / "repo")
        start_gate(config, repo)
        postgres.execute(f"UPDATE {table} SET status = 'closed' WHERE id = 4471")

        result = run_gate(config, repo, outcome="Closed account 4471.")

        assert result.verdict.state == "verified"
        written = result.claim_path.read_text()
        assert secret not in written
        start_records = list(config.runs_dir.rglob("start/*.json"))
        assert all(secret not in path.read_text() for path in start_records)
        assert secret not in result.report + result.agent_reason
    finally:
        postgres.execute(f"DROP TABLE {table}")


def test_attack_63_a_reader_role_the_agent_let_write_fails_the_check_not_the_gate(
    tmp_path: Path, write_config: WriteConfig, postgres: Any, postgres_reader: Reader
) -> None:
    """The agent owns the table and grants the gate's reader INSERT on it: the readback refuses
    a role that can write (exit 4 from `claim observe readback`). Inside the gate that refusal is
    the check's failed attempt, recorded, and the agent is sent back; raised out of the gate it
    stopped the run, and the hook let the stop through."""
    table = f"accounts_{uuid.uuid4().hex[:10]}"
    postgres.execute(f"CREATE TABLE {table} (id INTEGER PRIMARY KEY, status TEXT)")
    try:
        postgres.execute(f"INSERT INTO {table} VALUES (4471, 'open')")
        postgres_reader.grant(table)
        url = postgres_reader.url_with(postgres_reader.name)
        config = write_config(
            READBACK_POLICY + readback_check(url).replace('"accounts"', f'"{table}"')
        )
        repo = correct_project(tmp_path / "repo")
        start_gate(config, repo)
        postgres.execute(f"UPDATE {table} SET status = 'closed' WHERE id = 4471")
        postgres.execute(f"GRANT INSERT ON {table} TO {postgres_reader.name}")

        result = run_gate(config, repo, outcome="Closed account 4471.")

        assert result.verdict.state == "unverified"
        item = evidence_of(result.document, "state_readback")
        assert "observed_value" not in item
        assert item["details"]["error"].startswith("refused: ")
        assert "a readback needs a role that can only read" in item["details"]["error"]
        assert "could not run" in result.agent_reason

        postgres.execute(f"REVOKE INSERT ON {table} FROM {postgres_reader.name}")
        assert run_gate(config, repo, outcome="Closed account 4471.").verdict.state == "verified"
    finally:
        postgres.execute(f"DROP TABLE {table}")


def endpoint_check(url: str) -> str:
    return f"""
[[check]]
type = "endpoint_health"
url = "{url}/health"
target = "shop-staging"
expect_json = {{ "/build" = "b2" }}
"""


ENDPOINT_POLICY = '[policy]\nid = "ops/deploy"\nrequires = ["endpoint_health"]\nmax_age_s = 60\n'


def test_a_deploy_seen_changing_since_the_start_is_verified(
    tmp_path: Path, write_config: WriteConfig, site: Site
) -> None:
    repo = correct_project(tmp_path / "repo")
    config = write_config(ENDPOINT_POLICY + endpoint_check(site.url))
    start_gate(config, repo)
    site.build = "b2"

    result = run_gate(config, repo, outcome="Deployed b2.")

    assert result.verdict.state == "verified"
    assert [(m["kind"], m["target"]) for m in result.document["mutations"]] == [
        ("deploy", "shop-staging")
    ]
    details = evidence_of(result.document, "endpoint_health")["details"]
    assert details["baseline"] == {"status": 200, "json": {"/build": "b1"}}


def test_a_deploy_whose_value_was_already_live_at_the_start_does_not_count(
    tmp_path: Path, write_config: WriteConfig, site: Site
) -> None:
    repo = correct_project(tmp_path / "repo")
    site.build = "b2"
    config = write_config(ENDPOINT_POLICY + endpoint_check(site.url))
    start_gate(config, repo)

    result = run_gate(config, repo, outcome="Deployed b2.")

    assert result.verdict.state == "unverified"
    assert "shop-staging already had the expected value before you started" in (result.agent_reason)


def test_the_gate_time_limit_stops_checks_and_records_why(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    repo = correct_project(tmp_path / "repo")
    store = tmp_path / "bank.db"
    runs = tmp_path / "runs"
    config = write_config(
        f'[gate]\nruns_dir = "{runs}"\ntimeout_s = 0.000001\n'
        + READBACK_POLICY
        + readback_check(sqlite_store(store, "closed"))
    )

    result = run_gate(config, repo, outcome="Closed.", base=head_commit(repo))

    assert result.verdict.state == "unverified"
    item = evidence_of(result.document, "state_readback")
    assert item["details"]["error"] == "the gate ran out of time ([gate].timeout_s)"


# --- signed runs -----------------------------------------------------------------------------


def keygen(tmp_path: Path) -> tuple[Path, str]:
    key = tmp_path / "keys" / "gate.key"
    key.parent.mkdir()
    done = subprocess.run(
        [sys.executable, "-m", "completion_claim", "keygen", "--out", str(key)],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    public = next(line for line in done.stdout.splitlines() if line.startswith("public key: "))
    return key, public.removeprefix("public key: ")


def signed_config(tmp_path: Path, write_config: WriteConfig) -> tuple[GateConfig, str]:
    """The test-run gate with a signing key; the key's public half."""
    key, public = keygen(tmp_path)
    runs = tmp_path / "runs"
    gate = f'[gate]\nruns_dir = "{runs}"\nsign_key = "{key}"\n'
    return write_config(gate + POLICY + TEST_RUN_CHECK), public


def check_verdict(claim: Path, public: str) -> int:
    return subprocess.run(
        [sys.executable, "-m", "completion_claim", "check-verdict", str(claim),
         "--public-key", public],
        capture_output=True, check=False,
    ).returncode  # fmt: skip


def test_a_signed_run_passes_check_verdict_with_the_gate_key(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    config, public = signed_config(tmp_path, write_config)
    repo = buggy_project(tmp_path / "repo")
    start_gate(config, repo)
    write_files(repo, {"calc.py": CALC})

    result = run_gate(config, repo, outcome="Fixed add().")

    assert (result.verdict.state, result.verdict.independence) == ("verified", "proven")
    assert "attestation" in evidence_of(result.document, "test_run")
    assert result.document["policy"]["trust"]["observers"][0]["id"] == GATE_VERIFIER_ID
    assert check_verdict(result.claim_path, public) == 0


def test_a_signed_refusal_is_refuted_under_check_verdict(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    config, public = signed_config(tmp_path, write_config)
    repo = correct_project(tmp_path / "repo")
    start_gate(config, repo)
    write_files(repo, {"calc.py": CALC_BUGGY})

    result = run_gate(config, repo, outcome="Done.")

    assert result.verdict.state == "refuted"
    assert check_verdict(result.claim_path, public) == 2


def test_an_operator_trust_list_without_the_gate_key_proves_nothing(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    """The gate trusts its own key only when the operator's policy names no trust roots."""
    key, _ = keygen(tmp_path)
    _, other = keygen(tmp_path / "elsewhere")
    runs = tmp_path / "runs"
    trust = (
        '[policy.trust]\nmode = "signed"\n[[policy.trust.observers]]\n'
        f'id = "{GATE_VERIFIER_ID}"\npublic_key = "{other}"\ncheck_types = ["test_run"]\n'
    )
    config = write_config(
        f'[gate]\nruns_dir = "{runs}"\nsign_key = "{key}"\n{POLICY}{trust}{TEST_RUN_CHECK}'
    )
    repo = buggy_project(tmp_path / "repo")
    start_gate(config, repo)
    write_files(repo, {"calc.py": CALC})

    result = run_gate(config, repo, outcome="Fixed add().")

    assert result.verdict.state == "unverified"


@pytest.fixture(autouse=True)
def _keygen_folder(tmp_path: Path) -> None:
    (tmp_path / "elsewhere").mkdir()


@pytest.mark.parametrize("plant", TRICKS.values(), ids=TRICKS.keys())
def test_a_broken_fix_with_a_planted_trick_is_never_verified_by_the_gate(
    tmp_path: Path, write_config: WriteConfig, plant: Plant
) -> None:
    """The CI recipe's tricks, through the gate: signed, no trusted ref (the harder case)."""
    config, public = signed_config(tmp_path, write_config)
    repo = buggy_project(tmp_path / "ws")
    start_gate(config, repo)
    write_files(repo, {"calc.py": CALC_BUGGY + "# fixed\n"})
    plant(repo)

    result = run_gate(config, repo, outcome="Done. All tests pass.")

    assert result.exit_code != 0, result.report
    assert result.verdict.state != "verified"
    assert result.agent_reason
    assert check_verdict(result.claim_path, public) != 0
    assert not (tmp_path / "stolen.key").exists()


# --- pages (dom_assertion, experimental) -----------------------------------------------------


@pytest.fixture
def web_app() -> Iterator[WebApp]:
    needs_chromium()
    yield from served_site()


def dom_check(url: str) -> str:
    return f"""
[[check]]
type = "dom_assertion"
url = "{url}/settings"
target = "settings/display-name"
locator = "css=#label"
expect_text = "Bob"
timeout_s = 3
"""


def test_a_page_changed_since_the_start_is_verified_with_its_screenshot_in_the_run(
    tmp_path: Path, write_config: WriteConfig, web_app: WebApp
) -> None:
    repo = correct_project(tmp_path / "repo")
    config = write_config(dom_check(web_app.url))
    start_gate(config, repo)
    web_app.respond("POST", "/settings", b"name=Bob", "")  # the agent, through the form

    result = run_gate(config, repo, outcome="Renamed the account to Bob.")

    assert result.verdict.state == "verified"
    assert [(m["kind"], m["target"]) for m in result.document["mutations"]] == [
        ("ui_action", "settings/display-name")
    ]
    item = evidence_of(result.document, "dom_assertion")
    assert item["details"]["baseline"]["text"] == "Alice"
    shot = item["details"]["screenshot"]
    image = (result.claim_path.parent / shot["file"]).read_bytes()
    assert shot["digest"] == "sha256:" + hashlib.sha256(image).hexdigest()


def test_attack_35_a_page_that_already_showed_the_value_at_the_start_does_not_count(
    tmp_path: Path, write_config: WriteConfig, web_app: WebApp
) -> None:
    repo = correct_project(tmp_path / "repo")
    web_app.name = "Bob"
    config = write_config(dom_check(web_app.url))
    start_gate(config, repo)

    result = run_gate(config, repo, outcome="Renamed the account to Bob.")

    assert result.verdict.state == "unverified"
    assert "settings/display-name already had the expected value before you started" in (
        result.agent_reason
    )


def test_a_policy_without_experimental_checks_does_not_count_the_page(
    tmp_path: Path, write_config: WriteConfig, web_app: WebApp
) -> None:
    repo = correct_project(tmp_path / "repo")
    policy = (
        '[policy]\nid = "ops/ui"\nrequires = []\nmax_age_s = 600\nexperimental_checks = false\n'
    )
    config = write_config(policy + dom_check(web_app.url))
    start_gate(config, repo)
    web_app.respond("POST", "/settings", b"name=Bob", "")

    result = run_gate(config, repo, outcome="Renamed the account to Bob.")

    assert result.verdict.state == "unverified"
    [judged] = result.verdict.evidence
    assert [f.code for f in judged.reasons] == ["experimental_off"]
    # Written into the claim, so claim verify repeats the decision.
    assert result.document["policy"]["experimental_checks"] is False
    assert run(["verify", str(result.claim_path)]) == 1


# --- what is no change: the gate's own outputs, the operator's ignore list (issue 21, defect 4) --


def gate_cli(config: GateConfig, repo: Path, *more: str) -> int:
    return run(["-q", "gate", "--config", str(config.path), "--repo", str(repo), *more])


def file_writes(claim_path: Path) -> list[str]:
    document = json.loads(claim_path.read_text())
    return [m["target"] for m in document["mutations"] if m["kind"] == "file_write"]


def last_claim(config: GateConfig) -> Path:
    return sorted(config.runs_dir.glob("*/*/claim.json"), key=lambda p: p.parent.name)[-1]


def test_the_gates_own_outputs_in_the_work_tree_are_not_the_agents_changes(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    repo = buggy_project(tmp_path / "repo")
    config = write_config(POLICY + TEST_RUN_CHECK)
    start_gate(config, repo)
    outputs = ["--junit", "gate.xml", "--dotenv", "gate.env", "--summary-md", "gate.md",
               "--sarif", "gate.sarif"]  # fmt: skip
    write_files(repo, {"calc.py": CALC_BUGGY.replace("a - b", "a * b")})
    assert gate_cli(config, repo, *[str(repo / o) if "." in o else o for o in outputs]) == 2

    write_files(repo, {"calc.py": CALC})
    assert gate_cli(config, repo, *[str(repo / o) if "." in o else o for o in outputs]) == 0
    assert file_writes(last_claim(config)) == ["calc.py"]


def test_attack_73_the_agents_own_bytes_at_a_gate_output_path_are_a_change(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    """The gate ignores a file it wrote only while the file holds what it wrote (by digest):
    at the same path, the agent's content is recorded, and the run copy holds it."""
    repo = buggy_project(tmp_path / "repo")
    config = write_config(POLICY + TEST_RUN_CHECK)
    start_gate(config, repo)
    assert gate_cli(config, repo, "--dotenv", str(repo / "helper.py")) == 1
    write_files(repo, {"calc.py": CALC})
    assert gate_cli(config, repo) == 0
    assert file_writes(last_claim(config)) == ["calc.py"]  # helper.py: as the gate wrote it
    # The agent's fix imports a module it wrote where the gate's output was.
    write_files(repo, {"helper.py": CALC, "calc.py": "from helper import add\n"})

    assert gate_cli(config, repo) == 0
    assert file_writes(last_claim(config)) == ["calc.py", "helper.py"]


def test_attack_72_code_hidden_at_an_ignored_path_is_not_in_the_test_run(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    """An ignored path is no change and is left out of the run copy: what the tests import from
    there is absent, so no test passes on unrecorded code."""
    repo = buggy_project(tmp_path / "repo")
    config = write_config('[gate]\nruns_dir = "' + str(tmp_path / "runs") + '"\n'
                          'ignore = ["build/**"]\n' + POLICY + TEST_RUN_CHECK)  # fmt: skip
    start_gate(config, repo)
    write_files(repo, {"build/fixed.py": CALC, "calc.py": "from build.fixed import add\n"})

    result = run_gate(config, repo, outcome="Fixed add().")

    assert result.verdict.state == "refuted"
    assert file_writes(result.claim_path) == ["calc.py"]
    assert "No module named 'build'" in json.dumps(evidence_of(result.document, "test_run"))


def test_an_ignored_path_is_no_change_and_the_fix_beside_it_verifies(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    repo = buggy_project(tmp_path / "repo")
    config = write_config('[gate]\nruns_dir = "' + str(tmp_path / "runs") + '"\n'
                          'ignore = ["build/**", "*.log"]\n' + POLICY + TEST_RUN_CHECK)  # fmt: skip
    start_gate(config, repo)
    write_files(repo, {"build/out.txt": "x\n", "run.log": "y\n", "calc.py": CALC})

    result = run_gate(config, repo, outcome="Fixed add().")

    assert result.verdict.state == "verified"
    assert file_writes(result.claim_path) == ["calc.py"]


def test_an_ignore_glob_never_hides_a_protected_path(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    """A glob that could reach test files is refused at load; one that reaches them only in a
    folder (build/**) still never hides them: build/test_x.py is a change."""
    refused = r"^claim.toml:3: ignore: '\*.py' matches [\w/]+\.py, a path that decides"
    with pytest.raises(ConfigError, match=refused):
        write_config('[gate]\nruns_dir = "x"\nignore = ["*.py"]\n' + POLICY + TEST_RUN_CHECK)
    repo = buggy_project(tmp_path / "repo")
    config = write_config('[gate]\nruns_dir = "' + str(tmp_path / "runs") + '"\n'
                          'ignore = ["build/**"]\n' + POLICY + TEST_RUN_CHECK)  # fmt: skip
    start_gate(config, repo)
    write_files(repo, {"build/test_x.py": "def test_x(): pass\n", "calc.py": CALC})

    result = run_gate(config, repo, outcome="Fixed add().")

    assert file_writes(result.claim_path) == ["build/test_x.py", "calc.py"]


# --- the run tree: the operator's mirror (issue 19) -------------------------------------------


def _log_of_the_run(token: str) -> Path | None:
    """The output log of the sandboxed run that printed ``token`` (the observer's own folder)."""
    for log in Path(tempfile.gettempdir()).glob("claim-test-run-*/output.log"):
        with contextlib.suppress(OSError):
            if token in log.read_text(errors="replace"):
                return log
    return None


def test_attack_74_a_file_changed_while_the_tests_run_is_not_seen_and_fails_the_run(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    token = uuid.uuid4().hex
    waiting = (
        "import pathlib, time\n\n"
        "def test_waits():\n"
        f"    print('RUNNING-{token}', flush=True)\n"
        "    time.sleep(3)\n"
        "    seen = 'EDITED' if 'edited' in pathlib.Path('calc.py').read_text() else 'ORIGINAL'\n"
        "    print('SAW-' + seen, flush=True)\n"
    )
    repo = make_repo(
        tmp_path / "repo",
        {"calc.py": CALC_BUGGY, "tests/test_calc.py": TEST_CALC, "tests/test_waits.py": waiting},
    )
    config = write_config(POLICY + TEST_RUN_CHECK.replace('"-q"]', '"-q", "-s"]'))
    start_gate(config, repo)
    write_files(repo, {"calc.py": CALC})
    seen: list[str] = []

    def leftover_agent_process() -> None:
        """Edits the work tree once the tests run, then reads what they saw."""
        deadline = time.monotonic() + 120
        while (log := _log_of_the_run(f"RUNNING-{token}")) is None:
            if time.monotonic() > deadline:
                return
            time.sleep(0.02)
        write_files(repo, {"calc.py": CALC + "# edited during the run\n"})
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                text = log.read_text(errors="replace")
                if "SAW-" in text:
                    seen.append(text.split("SAW-", 1)[1].split()[0])
                    return
            time.sleep(0.02)

    editor = threading.Thread(target=leftover_agent_process)
    editor.start()
    result = run_gate(config, repo, outcome="Fixed add().")
    editor.join()

    assert seen == ["ORIGINAL"]  # the tests ran on what the claim records
    assert result.verdict.state == "unverified"
    item = evidence_of(result.document, "test_run")
    assert item["details"]["error"] == (
        "calc.py changed in the work tree while the tests ran (a process still writing "
        "there?): the run no longer describes the work tree"
    )


def test_attack_95_a_file_deleted_after_a_stop_read_it_fresh_is_gone_at_the_next(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    """The fix lives in ``addition.py``, written just before the first stop (so kept with no
    key: racily clean); the agent then deletes it, and git still lists it. The next stop must
    see the deletion, not run the tests on the mirror's copy of the fix."""
    repo = make_repo(tmp_path / "repo", {"addition.py": CALC_BUGGY,
                                         "calc.py": "from addition import add\n",
                                         "tests/test_calc.py": TEST_CALC})  # fmt: skip
    config = write_config(POLICY + TEST_RUN_CHECK)
    start_gate(config, repo)
    write_files(repo, {"addition.py": CALC})
    assert run_gate(config, repo, outcome="Fixed add().").verdict.state == "verified"

    (repo / "addition.py").unlink()
    result = run_gate(config, repo, outcome="Fixed add().")

    assert result.verdict.state == "refuted"
    assert [(m["target"], m["digest"]) for m in result.document["mutations"]] == [
        ("addition.py", "deleted")
    ]


def test_attack_95_a_file_dated_past_2262_is_read_again_at_the_next_stop(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    """``touch -d 2300-01-01``: a time the change cache cannot key. The fix is read once under
    it; the broken code written later under the same date must be read too."""
    repo = buggy_project(tmp_path / "repo")
    config = write_config(POLICY + TEST_RUN_CHECK)
    start_gate(config, repo)
    far = 10_413_792_000.0  # 2300-01-01T00:00:00Z
    write_files(repo, {"calc.py": CALC})
    os.utime(repo / "calc.py", (far, far))
    assert run_gate(config, repo, outcome="Fixed add().").verdict.state == "verified"

    write_files(repo, {"calc.py": CALC_BUGGY + "# still fixed, says the agent\n"})
    os.utime(repo / "calc.py", (far, far))
    result = run_gate(config, repo, outcome="Fixed add().")

    assert result.verdict.state == "refuted"


def test_attack_96_a_write_through_a_mapping_left_open_is_seen_at_the_next_stop(
    write_config: WriteConfig, request: pytest.FixtureRequest
) -> None:
    """A process the agent left holds ``calc.py`` mapped: the fix is written through it before
    one stop, the broken code through the same (dirty) page before the next, which moves no
    time. The next stop must run the tests on the broken code. The work tree is on a tmpfs,
    which never writes a page back (on ext4 the gate's own writes happen to flush it)."""
    shm = Path("/dev/shm")  # the machine's tmpfs: the case under test
    if not shm.is_dir():
        pytest.fail("this test needs the tmpfs at /dev/shm")
    place = Path(tempfile.mkdtemp(dir=shm))
    request.addfinalizer(lambda: shutil.rmtree(place))
    repo = buggy_project(place / "repo")
    config = write_config(POLICY + TEST_RUN_CHECK)
    start_gate(config, repo)
    broken = CALC.replace("a + b", "a * b")
    with open(repo / "calc.py", "r+b") as handle:
        os.fsync(handle.fileno())
        with mmap.mmap(handle.fileno(), 0) as mapped:
            mapped[:] = CALC.encode()
            time.sleep(RACY_NS / 1e9 + 0.2)  # old enough for its stat to be kept
            assert run_gate(config, repo, outcome="Fixed add().").verdict.state == "verified"
            mapped[:] = broken.encode()
            result = run_gate(config, repo, outcome="Fixed add().")

    assert result.verdict.state == "refuted"
    assert [m["digest"] for m in result.document["mutations"]] == [sha256(broken)]


def test_attack_78_a_sandboxed_test_cannot_change_the_operators_mirror(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    tampering = (
        "import pathlib\n\n"
        "def test_tampers():\n"
        "    import calc\n"
        "    assert not hasattr(calc, 'TAMPERED')\n"
        "    pathlib.Path('calc.py').write_text('TAMPERED = True\\n')\n"
        "    mounts = pathlib.Path('/proc/self/mountinfo').read_text()\n"
        "    for word in mounts.replace(',', ' ').split():\n"
        "        if word.startswith('lowerdir='):\n"
        "            try:\n"
        "                (pathlib.Path(word[9:]) / 'calc.py').write_text('TAMPERED = True\\n')\n"
        "            except OSError:\n"
        "                pass\n"
    )
    repo = make_repo(
        tmp_path / "repo",
        {"calc.py": CALC_BUGGY, "tests/test_calc.py": TEST_CALC, "tests/test_z.py": tampering},
    )
    config = write_config(POLICY + TEST_RUN_CHECK)
    start_gate(config, repo)
    write_files(repo, {"calc.py": CALC})

    first = run_gate(config, repo, outcome="Fixed add().")
    again = run_gate(config, repo, outcome="Fixed add().")

    assert (first.verdict.state, again.verdict.state) == ("verified", "verified")
    counts = [
        evidence_of(result.document, "test_run")["observed_value"] for result in (first, again)
    ]
    assert counts[0] == counts[1]
    assert counts[1]["failed"] == 0
    assert (mirror_path(config, repo) / "tree" / "calc.py").read_text() == CALC
    assert (repo / "calc.py").read_text() == CALC


def test_a_second_gate_reads_only_what_changed_and_sees_every_change(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    repo = buggy_project(tmp_path / "repo")
    config = write_config(POLICY + TEST_RUN_CHECK)
    start_gate(config, repo)
    write_files(repo, {"calc.py": CALC})
    assert run_gate(config, repo, outcome="Fixed add().").verdict.state == "verified"

    broken = CALC.replace("a + b", "a * b")
    write_files(repo, {"calc.py": broken, "extra.py": "X = 1\n"})
    result = run_gate(config, repo, outcome="Still fixed.")

    assert result.verdict.state == "refuted"
    assert sorted(m["target"] for m in result.document["mutations"]) == ["calc.py", "extra.py"]
    tree = mirror_path(config, repo) / "tree"
    assert (tree / "calc.py").read_text() == broken
    assert (tree / "extra.py").read_text() == "X = 1\n"


@pytest.fixture
def throwaway_user() -> Iterator[tuple[int, int]]:
    """A user that is not root, made for one test: the gate's overlay then needs a user
    namespace of its own."""
    if os.geteuid() != 0:
        pytest.skip("this suite runs as a non-root user: every gate test above is that case")
    name = f"claim-{uuid.uuid4().hex[:8]}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name],
                   check=True)  # fmt: skip
    try:
        entry = pwd.getpwnam(name)
        yield entry.pw_uid, entry.pw_gid
    finally:
        subprocess.run(["userdel", name], check=True)


def test_a_gate_run_by_a_user_that_is_not_root_mounts_its_overlay_and_judges(
    throwaway_user: tuple[int, int],
) -> None:
    uid, gid = throwaway_user
    place = Path(tempfile.mkdtemp(prefix="claim-nonroot-gate-"))
    try:
        repo = buggy_project(place / "repo")
        config = place / "ops" / "claim.toml"
        config.parent.mkdir()
        config.write_text(f'[gate]\nruns_dir = "{place / "runs"}"\n{POLICY}{TEST_RUN_CHECK}')
        subprocess.run(["chown", "-R", f"{uid}:{gid}", str(place)], check=True)

        def gate(*args: str) -> subprocess.CompletedProcess[str]:
            command = [str(installed_python()), "-m", "completion_claim", "gate", "--config",
                       str(config), "--repo", str(repo), "--json", *args]  # fmt: skip
            return subprocess.run(
                ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups", "--", *command],
                env={"PATH": "/usr/bin:/bin", "HOME": str(place), "LANG": "C.UTF-8"},
                cwd=place, capture_output=True, text=True, check=False,
            )  # fmt: skip

        assert gate("--start").returncode == 0
        write_files(repo, {"calc.py": CALC})
        os.chown(repo / "calc.py", uid, gid)
        fixed = gate()
        write_files(repo, {"calc.py": CALC.replace("a + b", "a * b")})
        broken = gate()

        assert (fixed.returncode, broken.returncode) == (0, 2), fixed.stderr + broken.stderr
        tree = place / "runs" / f"repo-{hashlib.sha256(str(repo).encode()).hexdigest()[:8]}"
        assert (tree / "mirror" / "tree" / "calc.py").stat().st_uid == uid
    finally:
        shutil.rmtree(place)
