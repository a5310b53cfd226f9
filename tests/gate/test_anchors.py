"""The gate's trust anchors: what it believes about a repository the agent controls, and where
from. Real git repositories (refs moved, replace refs, objects rewritten in place), real
sandboxed pytest runs. An agent broke ``calc.add``; each attack tries to get the gate to run a
test that agrees with the bug, and the honest fix must still verify."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from completion_claim.gate import config as gate_config
from completion_claim.gate.config import GateConfig, load_config
from completion_claim.gate.run import GateResult, run_gate, start_gate
from tests.fixtures.ecosystems import init_config
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
from tests.test_ci_recipe import (
    TEST_CALC_AGREEING_WITH_BUG,
    Plant,
    loose_object_rewritten_in_place,
    replace_ref_rewriting_the_base_commit,
    replace_ref_swapping_the_test,
)

TRUSTED_MAIN = TEST_RUN_CHECK + 'trusted_ref = "main"\n'


def correct_project(root: Path) -> Path:
    return make_repo(root, {"calc.py": CALC, "tests/test_calc.py": TEST_CALC})


def unmet_codes(result: GateResult) -> list[str]:
    return [u.code for u in result.verdict.unmet]


def nothing_captured(result: GateResult) -> bool:
    """The run recorded an ``uncaptured`` change, which nothing may cover, and observed nothing."""
    kinds = {m["id"]: m["kind"] for m in result.document["mutations"]}
    return not result.document["evidence"] and any(
        u.code == "mutation_kind_unmapped" and kinds.get(str(u.mutation)) == "uncaptured"
        for u in result.verdict.unmet
    )


# --- 40: a trusted ref is resolved where the agent cannot move it ----------------------------


@pytest.mark.parametrize("move", ["commit on main", "git branch -f main"])
def test_attack_40_a_trusted_branch_the_agent_moves_does_not_pick_the_tests(
    tmp_path: Path, write_config: WriteConfig, move: str
) -> None:
    repo = correct_project(tmp_path / "repo")
    config = write_config(POLICY + TRUSTED_MAIN)
    start_gate(config, repo)
    if move == "git branch -f main":
        git(repo, "checkout", "-q", "-b", "agent")
    write_files(repo, {"calc.py": CALC_BUGGY, "tests/test_calc.py": TEST_CALC_AGREEING_WITH_BUG})
    git(repo, "commit", "-qam", "fixed")
    if move == "git branch -f main":
        git(repo, "branch", "-f", "main", "HEAD")

    result = run_gate(config, repo, outcome="Done.")

    assert result.verdict.state == "refuted", result.report
    assert "tests/test_calc.py::test_add failed: assert -1 == 5" in result.agent_reason


def test_attack_40_a_trusted_branch_nobody_resolved_before_the_agent_worked_is_not_used(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    """No start record: the name is not resolved now, in the agent's repository."""
    repo = correct_project(tmp_path / "repo")
    config = write_config(POLICY + TRUSTED_MAIN)
    base = head_commit(repo)
    write_files(repo, {"calc.py": CALC_BUGGY, "tests/test_calc.py": TEST_CALC_AGREEING_WITH_BUG})
    git(repo, "commit", "-qam", "fixed")

    result = run_gate(config, repo, outcome="Done.", base=base)

    assert result.verdict.state == "unverified"
    [item] = result.document["evidence"]
    assert "trusted_ref 'main' is a name the agent can move" in item["details"]["error"]


def test_attack_40_without_a_start_or_a_pinned_base_nothing_is_verified(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    """The old fallback, the merge-base with main, was wherever the agent had moved main: its
    committed test disappeared from the capture."""
    repo = correct_project(tmp_path / "repo")
    config = write_config(POLICY + TEST_RUN_CHECK)
    write_files(repo, {"tests/test_calc.py": TEST_CALC_AGREEING_WITH_BUG})
    git(repo, "commit", "-qam", "tests")
    write_files(repo, {"calc.py": CALC_BUGGY})

    result = run_gate(config, repo, outcome="Done.")

    assert result.verdict.state == "unverified"
    assert nothing_captured(result)
    assert "no trusted base: run `claim gate --start`" in result.agent_reason
    assert result.document["evidence"] == []


def test_an_honest_fix_with_a_trusted_branch_resolved_at_the_start_verifies(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    repo = make_repo(tmp_path / "repo", {"calc.py": CALC_BUGGY, "tests/test_calc.py": TEST_CALC})
    config = write_config(POLICY + TRUSTED_MAIN)
    path = start_gate(config, repo)
    write_files(repo, {"calc.py": CALC})
    git(repo, "commit", "-qam", "fix")

    result = run_gate(config, repo, outcome="Fixed add().")

    assert result.verdict.state == "verified", result.report
    record = json.loads(path.read_text())
    assert record["trusted_refs"] == {"main": record["base"]}
    [stored] = record["protected"]
    assert set(stored["files"]) == {"tests/test_calc.py"}


def test_a_name_given_as_the_base_or_trusted_ref_is_refused(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    from completion_claim.errors import UsageError

    repo = correct_project(tmp_path / "repo")
    config = write_config(POLICY + TEST_RUN_CHECK)
    with pytest.raises(UsageError, match="--base: 'main' is not a full commit id"):
        run_gate(config, repo, outcome="Done.", base="main")
    with pytest.raises(UsageError, match="--trusted-ref: 'main' is not a full commit id"):
        run_gate(config, repo, outcome="Done.", trusted_ref="main")


# --- 41, 50: objects the agent can write are not believed -------------------------------------


PLANTS = {
    "replace-ref-swapping-the-test": replace_ref_swapping_the_test,
    "replace-ref-rewriting-the-base-commit": replace_ref_rewriting_the_base_commit,
    "loose-object-rewritten-in-place": loose_object_rewritten_in_place,
}


def pinned(write_config: WriteConfig, commit: str) -> GateConfig:
    return write_config(POLICY + TEST_RUN_CHECK + f'trusted_ref = "{commit}"\n')


@pytest.mark.parametrize("plant", PLANTS.values(), ids=PLANTS.keys())
def test_attack_41_the_trusted_commits_objects_are_read_as_they_hash_not_as_replaced(
    tmp_path: Path, write_config: WriteConfig, plant: Plant
) -> None:
    """A trusted ref pinned to a full commit id, no start record (as CI runs): the agent's
    object store is read with replace refs and grafts off, every object hashed."""
    repo = correct_project(tmp_path / "repo")
    base = head_commit(repo)
    config = pinned(write_config, base)
    write_files(repo, {"calc.py": CALC_BUGGY})
    plant(repo)

    result = run_gate(config, repo, outcome="Done.", base=base)

    assert result.verdict.state != "verified", result.report
    if plant is loose_object_rewritten_in_place:
        [item] = result.document["evidence"]
        assert "does not hash to its id" in item["details"]["error"]
    else:
        assert result.verdict.state == "refuted"


def test_attack_41_a_replaced_base_commit_does_not_hide_a_test_change(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    """No trusted ref: the capture against the start's commit reads its real tree."""
    repo = correct_project(tmp_path / "repo")
    config = write_config(POLICY + TEST_RUN_CHECK)
    start_gate(config, repo)
    write_files(repo, {"calc.py": CALC_BUGGY})
    replace_ref_rewriting_the_base_commit(repo)
    git(repo, "--no-replace-objects", "commit", "-qm", "tests")  # HEAD has the weakened test

    result = run_gate(config, repo, outcome="Done.")

    assert result.verdict.state == "unverified", result.report
    assert "tests/test_calc.py" in [m["target"] for m in result.document["mutations"]]
    assert "you changed tests/test_calc.py" in result.agent_reason


def test_attack_50_with_a_start_record_the_tests_come_from_the_operators_store(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    """The agent's object store is not read for protected content at all: a rewritten object
    changes nothing, and the run is judged (refuted) rather than failing."""
    repo = correct_project(tmp_path / "repo")
    config = write_config(POLICY + TRUSTED_MAIN)
    start_gate(config, repo)
    write_files(repo, {"calc.py": CALC_BUGGY})
    loose_object_rewritten_in_place(repo)

    result = run_gate(config, repo, outcome="Done.")

    assert result.verdict.state == "refuted", result.report
    assert "tests/test_calc.py::test_add failed: assert -1 == 5" in result.agent_reason


def test_a_stored_copy_changed_behind_the_gate_is_not_used(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    from completion_claim.observe.content_store import ContentStore

    repo = correct_project(tmp_path / "repo")
    config = write_config(POLICY + TRUSTED_MAIN)
    record = json.loads(start_gate(config, repo).read_text())
    write_files(repo, {"calc.py": CALC_BUGGY, "tests/test_calc.py": TEST_CALC_AGREEING_WITH_BUG})
    digest = record["protected"][0]["files"]["tests/test_calc.py"]["sha256"]
    stored = next(config.runs_dir.rglob(digest))
    stored.write_text(TEST_CALC_AGREEING_WITH_BUG)

    result = run_gate(config, repo, outcome="Done.")

    assert result.verdict.state == "unverified", result.report
    [item] = result.document["evidence"]
    assert "stored copy of tests/test_calc.py is gone or was changed" in item["details"]["error"]
    assert ContentStore(stored.parent.parent).get(digest) is None


# --- 44: every file the configuration reads is the operator's ---------------------------------


def in_tree_policy_project(root: Path, runs: Path) -> Path:
    """claim.toml and the policy.json it names, committed in the repository, as the starter
    suggests."""
    policy = {"id": "ops/in-tree", "requires": ["test_run"], "max_age_s": 600}
    toml = f'policy = "policy.json"\n[gate]\nruns_dir = "{runs}"\n{TEST_RUN_CHECK}'
    return make_repo(
        root,
        {
            "calc.py": CALC_BUGGY,
            "tests/test_calc.py": TEST_CALC,
            "claim.toml": toml,
            "policy.json": json.dumps(policy),
        },
    )


def test_attack_44_a_policy_file_in_the_work_tree_is_protected_like_claim_toml(
    tmp_path: Path,
) -> None:
    repo = in_tree_policy_project(tmp_path / "repo", tmp_path / "runs")
    start_gate(load_config(repo / "claim.toml", {}), repo)
    lenient = {"id": "ops/in-tree", "requires": ["test_run"], "max_age_s": 600,
               "allow_test_changes": True}  # fmt: skip
    write_files(repo, {"tests/test_calc.py": TEST_CALC_AGREEING_WITH_BUG,
                       "calc.py": CALC_BUGGY + "# fixed\n",
                       "policy.json": json.dumps(lenient)})  # fmt: skip

    config = load_config(repo / "claim.toml", {})
    result = run_gate(config, repo, outcome="Done.")

    assert result.verdict.state == "unverified", result.report
    assert "protected_target_changed" in unmet_codes(result)
    assert "a change to a target the policy protects (policy.json)" in result.verdict.reason
    # Judged and recorded under the operator's copy, never the agent's.
    assert result.document["policy"]["allow_test_changes"] is False
    assert [path.name for path in config.files] == ["claim.toml", "policy.json"]


def test_an_in_tree_claim_toml_the_agent_loosened_is_judged_under_the_operators_copy(
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs"
    strict = f'[gate]\nruns_dir = "{runs}"\n{POLICY}{TEST_RUN_CHECK}'
    repo = make_repo(
        tmp_path / "repo",
        {"calc.py": CALC, "tests/test_calc.py": TEST_CALC, "claim.toml": strict},
    )
    start_gate(load_config(repo / "claim.toml", {}), repo)
    lenient = f'[gate]\nruns_dir = "{runs}"\n[policy]\nid = "agent"\nrequires = []\n'
    lenient += "max_age_s = 600\n"
    write_files(repo, {"calc.py": CALC_BUGGY, "claim.toml": lenient})

    result = run_gate(load_config(repo / "claim.toml", {}), repo, outcome="Done.")

    # The operator's check ran and refuted the bug; the agent's policy was never used.
    assert result.verdict.state == "refuted", result.report
    assert result.document["policy"]["id"] == "ops/gate"
    assert "protected_target_changed" in unmet_codes(result)
    # An operator who changed it reads why the change had no effect.
    assert "claim.toml: not the operator's copy" in result.report
    assert "run claim gate --start again" in result.report


def test_an_honest_fix_with_the_policy_file_in_the_work_tree_verifies(tmp_path: Path) -> None:
    repo = in_tree_policy_project(tmp_path / "repo", tmp_path / "runs")
    config = load_config(repo / "claim.toml", {})
    start_gate(config, repo)
    write_files(repo, {"calc.py": CALC})

    result = run_gate(config, repo, outcome="Fixed add().")

    assert result.verdict.state == "verified", result.report
    assert result.document["policy"]["id"] == "ops/in-tree"


def test_a_base_commit_gone_from_the_object_store_is_unverified_not_a_gate_error(
    tmp_path: Path, write_config: WriteConfig
) -> None:
    """A gate that cannot run lets the stop through: an object the agent deleted is its doing."""
    repo = correct_project(tmp_path / "repo")
    config = write_config(POLICY + TEST_RUN_CHECK)
    base = head_commit(repo)
    start_gate(config, repo)
    write_files(repo, {"calc.py": CALC_BUGGY})
    git(repo, "commit", "-qam", "agent")
    (repo / ".git" / "objects" / base[:2] / base[2:]).unlink()

    result = run_gate(config, repo, outcome="Done.")

    assert result.verdict.state == "unverified"
    assert nothing_captured(result)
    assert f"git object {base} is missing" in result.agent_reason


def test_attack_44_an_in_tree_claim_toml_naming_another_policy_file_changes_nothing(
    tmp_path: Path,
) -> None:
    """The operator's claim.toml is read again, and so is the policy file it names, from the
    operator's copies: never the file on disk the agent also edited."""
    repo = in_tree_policy_project(tmp_path / "repo", tmp_path / "runs")
    start_gate(load_config(repo / "claim.toml", {}), repo)
    lenient = json.dumps({"id": "agent", "requires": [], "max_age_s": 600,
                          "allow_test_changes": True})  # fmt: skip
    toml = (repo / "claim.toml").read_text().replace("policy.json", "lenient.json")
    write_files(repo, {"tests/test_calc.py": TEST_CALC_AGREEING_WITH_BUG,
                       "calc.py": CALC_BUGGY + "# fixed\n", "claim.toml": toml,
                       "lenient.json": lenient, "policy.json": lenient})  # fmt: skip

    result = run_gate(load_config(repo / "claim.toml", {}), repo, outcome="Done.")

    assert result.verdict.state == "unverified", result.report
    assert result.document["policy"]["id"] == "ops/in-tree"
    assert result.document["policy"]["allow_test_changes"] is False


def test_a_changed_configuration_without_the_operators_copy_is_unverified(
    tmp_path: Path,
) -> None:
    runs = tmp_path / "runs"
    strict = f'[gate]\nruns_dir = "{runs}"\n{POLICY}{TEST_RUN_CHECK}'
    repo = make_repo(
        tmp_path / "repo", {"calc.py": CALC, "tests/test_calc.py": TEST_CALC, "claim.toml": strict}
    )
    record = json.loads(start_gate(load_config(repo / "claim.toml", {}), repo).read_text())
    next(runs.rglob(record["config_files"]["claim.toml"])).unlink()
    write_files(repo, {"calc.py": CALC_BUGGY, "claim.toml": strict.replace("600", "601")})

    result = run_gate(load_config(repo / "claim.toml", {}), repo, outcome="Done.")

    assert result.verdict.state == "unverified"
    assert nothing_captured(result)
    assert "(claim.toml) is not the operator's copy" in result.agent_reason
    assert result.document["evidence"] == []


# --- 102: claim init writes no trusted ref that goes stale ------------------------------------


def test_attack_102_claim_inits_trusted_ref_is_the_branch_each_start_pins(tmp_path: Path) -> None:
    """The operator commits the task's test after claim init: a commit id written at init would
    lack it, and the run would delete it (it is not the trusted commit's) and verify add() still
    wrong. The branch name is pinned by each start instead."""
    repo = make_repo(
        tmp_path / "repo",
        {"calc.py": CALC_BUGGY, "tests/test_other.py": "def test_other():\n    pass\n"},
    )
    config = init_config(repo, tmp_path / "ops")
    write_files(repo, {"tests/test_calc.py": TEST_CALC})
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the task's test")
    start = start_gate(config, repo)
    write_files(repo, {"calc.py": CALC_BUGGY + "# fixed\n"})

    result = run_gate(config, repo, outcome="Fixed add().")

    [check] = config.checks
    assert isinstance(check, gate_config.TestRunCheck)
    assert check.trusted_ref == "main"
    pinned = json.loads(start.read_text(encoding="utf-8"))["trusted_refs"]
    assert pinned == {"main": head_commit(repo)}
    assert result.verdict.state == "refuted"
    assert result.agent_reason.startswith("tests/test_calc.py::test_add failed")


def test_claim_init_says_how_ci_passes_the_trusted_commit(tmp_path: Path) -> None:
    repo = correct_project(tmp_path / "repo")
    init_config(repo, tmp_path / "ops")
    text = (tmp_path / "ops" / "claim.toml").read_text(encoding="utf-8")
    assert 'trusted_ref = "main"' in text
    assert "--trusted-ref" in text
    assert head_commit(repo) not in text
