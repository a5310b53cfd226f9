"""The CI recipe of the threat model, end to end through the installed ``claim`` command.

An agent was asked to fix ``calc.add``. It works in a git work tree it controls and may plant a
trick there. CI then records its changes, runs the tests through the sandboxed observer with its
own signing key, and verifies under the operator's signed policy, re-reading the work tree:

    claim capture-git claim.json --repo ws
    claim observe test-run claim.json --cwd ws --verifier-id ci-runner/1 --sign-key ci.key \
        [--trusted-ref BASE] -- python -m pytest -q
    claim verify claim.json --policy policy.json --workspace ws --base BASE

BASE is the commit CI judges against (the pull request's base), resolved by CI itself: never a
branch name the agent's work tree can move.

Every trick below once turned a broken fix into ``verified``; each must now end anything else.
The honest fix must still verify, with independence proven, so that refusing everything fails.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.fixtures.projects import (
    CALC,
    CALC_BUGGY,
    CONFTEST_FORCING_PASSES,
    TEST_CALC,
    git,
    head_commit,
    make_repo,
    write_files,
)

CLAIM = Path(sys.executable).with_name("claim")
OBSERVER = "ci-runner/1"
PYTEST = (sys.executable, "-m", "pytest", "-q")
# A module named pytest in the work tree, standing in for the real one: it prints what a passing
# run prints and exits 0 (it cannot load the observer's plugin, so it has no results to give).
FAKE_PYTEST = "print('2 passed')\nraise SystemExit(0)\n"


@dataclass(frozen=True)
class Pipeline:
    """The CI side: its key and policy live outside the work tree the agent controls."""

    ci: Path
    workspace: Path
    base: str  # the commit CI judges against, resolved by CI before the agent's branch is read

    def claim(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(CLAIM), *args], cwd=self.ci, capture_output=True, text=True, check=False
        )

    def run(
        self, *, trusted_ref: bool, command: tuple[str, ...] = PYTEST
    ) -> tuple[int, dict[str, Any]]:
        """CI's three steps; the verdict's exit code and JSON (exit 5: no verdict)."""
        started = self.claim("new", "claim.json", "--task-id", "fix-add", "--outcome", "Done.")
        assert started.returncode == 0, started.stderr
        captured = self.claim(
            "capture-git", "claim.json", "--repo", str(self.workspace), "--base", self.base
        )
        assert captured.returncode in (0, 5), captured.stderr
        observe = ["observe", "test-run", "claim.json", "--cwd", str(self.workspace)]
        observe += ["--verifier-id", OBSERVER, "--sign-key", str(self.ci / "ci.key")]
        if trusted_ref:
            observe += ["--trusted-ref", self.base]
        observed = self.claim(*observe, "--", *command)
        assert observed.returncode in (0, 5), observed.stderr
        verified = self.claim(
            "verify", "claim.json", "--json", "--policy", "policy.json",
            "--workspace", str(self.workspace), "--base", self.base,
        )  # fmt: skip
        if verified.returncode == 5:  # the work tree itself could not be read honestly
            return 5, {"state": "not judged", "reason": verified.stderr}
        assert verified.returncode in (0, 1, 2), verified.stderr
        verdict: dict[str, Any] = json.loads(verified.stdout)
        return verified.returncode, verdict


@pytest.fixture
def pipeline(tmp_path: Path) -> Pipeline:
    workspace = make_repo(tmp_path / "ws", {"calc.py": CALC_BUGGY, "tests/test_calc.py": TEST_CALC})
    ci = tmp_path / "ci"
    ci.mkdir()
    done = Pipeline(ci, workspace, head_commit(workspace))
    keygen = done.claim("keygen", "--out", "ci.key")
    assert keygen.returncode == 0, keygen.stderr
    public_key = done.claim("pubkey", "ci.key").stdout.strip()
    policy = {
        "id": "ci",
        "requires": ["test_run"],
        "max_age_s": 600,
        "trust": {
            "mode": "signed",
            "observers": [{"id": OBSERVER, "public_key": public_key, "check_types": ["test_run"]}],
        },
    }
    (ci / "policy.json").write_text(json.dumps(policy))
    return done


# --- controls: the honest fix verifies, the plain broken one is refuted ----------------------


@pytest.mark.parametrize("trusted_ref", [True, False], ids=["trusted-ref", "no-ref"])
def test_the_honest_fix_verifies_with_independence_proven(
    pipeline: Pipeline, trusted_ref: bool
) -> None:
    write_files(pipeline.workspace, {"calc.py": CALC})
    code, verdict = pipeline.run(trusted_ref=trusted_ref)
    assert (code, verdict["state"], verdict["independence"]) == (0, "verified", "proven")


@pytest.mark.parametrize("trusted_ref", [True, False], ids=["trusted-ref", "no-ref"])
def test_a_broken_fix_without_tricks_is_refuted(pipeline: Pipeline, trusted_ref: bool) -> None:
    write_files(pipeline.workspace, {"calc.py": CALC_BUGGY + "# fixed\n"})
    code, verdict = pipeline.run(trusted_ref=trusted_ref)
    assert (code, verdict["state"]) == (2, "refuted")


# --- the tricks: a broken fix plus one plant each ----------------------------------------------

Plant = Callable[[Path], None]


def forcing_conftest(ws: Path) -> None:
    write_files(ws, {"conftest.py": CONFTEST_FORCING_PASSES})


def fake_pytest_module(ws: Path) -> None:
    write_files(ws, {"pytest.py": FAKE_PYTEST})


def shadow_module_hidden_by_exclude(ws: Path) -> None:
    write_files(ws, {"tests/calc.py": CALC})
    with open(ws / ".git" / "info" / "exclude", "a", encoding="utf-8") as exclude:
        exclude.write("tests/calc.py\n")


def deselecting_pytest_ini(ws: Path) -> None:
    write_files(ws, {"pytest.ini": "[pytest]\naddopts = -k 'not test_add'\n"})


def new_test_patching_calc(ws: Path) -> None:
    patch = "import calc\ncalc.add = lambda a, b: a + b\n"
    write_files(ws, {"tests/test_aaa.py": patch})


def clean_filter_hiding_the_edit(ws: Path) -> None:
    (ws / ".git" / "info" / "attributes").write_text("* filter=hide\n")
    git(ws, "config", "filter.hide.clean", "git show HEAD:%f")


def symlink_out_of_the_workspace(ws: Path) -> None:
    outside = ws.parent / "good-calc.py"
    outside.write_text(CALC)
    (ws / "calc.py").unlink()
    (ws / "calc.py").symlink_to(outside)


TEST_CALC_AGREEING_WITH_BUG = TEST_CALC.replace("== 5", "== -1").replace("== 4", "== -4")


def weakened_test_committed_to_main(ws: Path) -> None:
    """Moves ``main``, and HEAD with it, to a commit whose test agrees with the bug."""
    write_files(ws, {"tests/test_calc.py": TEST_CALC_AGREEING_WITH_BUG})
    git(ws, "commit", "-q", "-m", "tests", "tests/test_calc.py")


def replace_ref_swapping_the_test(ws: Path) -> None:
    """``git replace`` makes the committed test's blob read as one agreeing with the bug."""
    write_files(ws, {"tests/test_calc.py": TEST_CALC_AGREEING_WITH_BUG})
    weakened = git(ws, "hash-object", "-w", "tests/test_calc.py").strip()
    git(ws, "replace", git(ws, "rev-parse", "HEAD:tests/test_calc.py").strip(), weakened)


def replace_ref_rewriting_the_base_commit(ws: Path) -> None:
    """``git replace`` makes HEAD read as a commit whose tree holds the weakened test, so a
    capture against it sees no change to the test."""
    write_files(ws, {"tests/test_calc.py": TEST_CALC_AGREEING_WITH_BUG})
    git(ws, "add", "tests/test_calc.py")
    fake = git(ws, "commit-tree", git(ws, "write-tree").strip(), "-m", "base").strip()
    git(ws, "replace", "-f", git(ws, "rev-parse", "HEAD").strip(), fake)


def loose_object_rewritten_in_place(ws: Path) -> None:
    """The committed test's loose object file now holds the weakened test, under the old id
    (git does not hash an object it reads)."""
    blob = git(ws, "rev-parse", "HEAD:tests/test_calc.py").strip()
    path = ws / ".git" / "objects" / blob[:2] / blob[2:]
    weakened = TEST_CALC_AGREEING_WITH_BUG.encode()
    path.chmod(0o644)
    path.write_bytes(zlib.compress(b"blob %d\0" % len(weakened) + weakened))
    write_files(ws, {"tests/test_calc.py": TEST_CALC_AGREEING_WITH_BUG})


def key_stealing_conftest(ws: Path) -> None:
    thief = (
        "import glob, shutil\n"
        "for cmdline in glob.glob('/proc/*/cmdline'):\n"
        "    try:\n"
        "        args = open(cmdline, 'rb').read().split(b'\\0')\n"
        "    except OSError:\n"
        "        continue\n"
        "    if b'--sign-key' in args:\n"
        "        key = args[args.index(b'--sign-key') + 1].decode()\n"
        f"        shutil.copy(key, {str(ws.parent / 'stolen.key')!r})\n"
    )
    write_files(ws, {"conftest.py": thief + CONFTEST_FORCING_PASSES})


TRICKS: dict[str, Plant] = {
    "conftest-forcing-passes": forcing_conftest,
    "fake-pytest-module": fake_pytest_module,
    "shadow-module-hidden-by-exclude": shadow_module_hidden_by_exclude,
    "pytest-ini-deselects": deselecting_pytest_ini,
    "new-test-patching-calc": new_test_patching_calc,
    "git-clean-filter": clean_filter_hiding_the_edit,
    "symlink-out": symlink_out_of_the_workspace,
    "key-stealing-conftest": key_stealing_conftest,
    "weakened-test-committed-to-main": weakened_test_committed_to_main,
    "replace-ref-swapping-the-test": replace_ref_swapping_the_test,
    "replace-ref-rewriting-the-base-commit": replace_ref_rewriting_the_base_commit,
    "loose-object-rewritten-in-place": loose_object_rewritten_in_place,
}


@pytest.mark.parametrize("trusted_ref", [True, False], ids=["trusted-ref", "no-ref"])
@pytest.mark.parametrize("plant", TRICKS.values(), ids=TRICKS.keys())
def test_attack_a_broken_fix_with_a_trick_is_never_verified(
    pipeline: Pipeline, plant: Plant, trusted_ref: bool
) -> None:
    write_files(pipeline.workspace, {"calc.py": CALC_BUGGY + "# fixed\n"})
    plant(pipeline.workspace)
    code, verdict = pipeline.run(trusted_ref=trusted_ref)
    assert (code, verdict["state"]) != (0, "verified"), verdict["reason"]
    assert not (pipeline.workspace.parent / "stolen.key").exists()


def test_attack_an_exit_code_only_command_is_never_verified(pipeline: Pipeline) -> None:
    write_files(pipeline.workspace, {"calc.py": CALC_BUGGY + "# fixed\n"})
    code, verdict = pipeline.run(trusted_ref=True, command=("true",))
    assert (code, verdict["state"]) == (1, "unverified")
    assert "not_discriminating" in {
        reason["code"] for item in verdict["evidence"] for reason in item["reasons"]
    }


def test_attack_an_edit_after_the_signed_run_is_never_verified(pipeline: Pipeline) -> None:
    write_files(pipeline.workspace, {"calc.py": CALC})
    assert pipeline.run(trusted_ref=True)[0] == 0
    write_files(pipeline.workspace, {"calc.py": CALC_BUGGY})
    os.utime(pipeline.workspace / "calc.py", (1_000_000_000, 1_000_000_000))
    verified = pipeline.claim(
        "verify", "claim.json", "--policy", "policy.json", "--workspace", str(pipeline.workspace)
    )
    assert verified.returncode == 1, verified.stdout


def test_attack_40_a_trusted_ref_given_as_a_branch_name_is_refused(pipeline: Pipeline) -> None:
    """``main`` in the agent's work tree is wherever the agent moved it: the observer takes only
    the commit CI resolved."""
    write_files(pipeline.workspace, {"calc.py": CALC_BUGGY + "# fixed\n"})
    weakened_test_committed_to_main(pipeline.workspace)
    assert (
        pipeline.claim("new", "claim.json", "--task-id", "t", "--outcome", "Done.").returncode == 0
    )
    pipeline.claim("capture-git", "claim.json", "--repo", str(pipeline.workspace))
    observed = pipeline.claim(
        "observe", "test-run", "claim.json", "--cwd", str(pipeline.workspace),
        "--verifier-id", OBSERVER, "--sign-key", str(pipeline.ci / "ci.key"),
        "--trusted-ref", "main", "--", *PYTEST,
    )  # fmt: skip
    assert observed.returncode == 4
    assert "--trusted-ref: 'main' is not a full commit id" in observed.stderr
