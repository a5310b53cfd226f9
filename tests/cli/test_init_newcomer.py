"""``claim init`` on projects shaped as real ones are (toolz, simplejson: tests inside the
package), then the README's steps and nothing more: commit claim.toml, start, judge."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from completion_claim.cli import run
from completion_claim.gate.config import load_config
from tests.fixtures.projects import GIT_ENV, git, make_repo, write_files

# toolz's shape: plain pytest functions in toolz/tests/ (no __init__.py there), no pytest config.
TOOLZ_CODE = "def identity(x):\n    return x\n"
TOOLZ_BUGGY = "def identity(x):\n    return None\n"
TOOLZ_TEST = (
    "from toolz.functoolz import identity\n\n\ndef test_identity():\n    assert identity(3) == 3\n"
)
# simplejson's shape: unittest TestCases in simplejson/tests/ (a package), no pytest anywhere.
SJ_CODE = "def dumps(value):\n    return str(value)\n"
SJ_BUGGY = "def dumps(value):\n    return repr(value) + ' '\n"
SJ_TEST = (
    "from unittest import TestCase\n\nimport sj\n\n\n"
    "class TestDumps(TestCase):\n"
    "    def test_int(self):\n        self.assertEqual(sj.dumps(3), '3')\n\n"
    "    def test_text(self):\n        self.assertEqual(sj.dumps('a'), 'a')\n"
)


@pytest.fixture(autouse=True)
def _own_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("XDG_STATE_HOME", raising=False)
    monkeypatch.delenv("GITHUB_STEP_SUMMARY", raising=False)


def toolz_like(root: Path, code: str = TOOLZ_BUGGY) -> Path:
    return make_repo(root, {
        "setup.py": "from setuptools import setup\nsetup(name='toolz', packages=['toolz'])\n",
        "toolz/__init__.py": "from .functoolz import identity\n",
        "toolz/functoolz.py": code,
        "toolz/tests/test_functoolz.py": TOOLZ_TEST,
    })  # fmt: skip


def simplejson_like(root: Path, code: str = SJ_BUGGY) -> Path:
    return make_repo(root, {
        "setup.py": "from setuptools import setup\nsetup(name='sj', packages=['sj'])\n",
        "sj/__init__.py": code,
        "sj/tests/__init__.py": "",
        "sj/tests/test_dumps.py": SJ_TEST,
    })  # fmt: skip


def init_commit_start(repo: Path) -> None:
    """The README's quick start for a new project, by the letter."""
    assert run(["init", "--repo", str(repo)]) == 0
    git(repo, "add", "claim.toml")
    git(repo, "commit", "-qm", "gate")
    assert run(["gate", "--repo", str(repo), "--start"]) == 0


def test_init_finds_tests_inside_a_package_folder(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = toolz_like(tmp_path / "toolz")
    init_commit_start(repo)
    assert "found pytest" in capsys.readouterr().out
    (check,) = load_config(repo / "claim.toml", os.environ).checks
    assert getattr(check, "command", None) == ("python", "-m", "pytest", "-q")

    write_files(repo, {"toolz/functoolz.py": TOOLZ_BUGGY + "# looked at\n"})
    assert run(["gate", "--repo", str(repo), "--outcome", "Done."]) == 2  # the bug is there
    write_files(repo, {"toolz/functoolz.py": TOOLZ_CODE})
    assert run(["gate", "--repo", str(repo), "--outcome", "Fixed identity()."]) == 0


def test_init_writes_unittest_for_testcases_without_pytest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = simplejson_like(tmp_path / "sj")
    init_commit_start(repo)
    assert "found unittest" in capsys.readouterr().out
    (check,) = load_config(repo / "claim.toml", os.environ).checks
    assert getattr(check, "command", None) == ("python", "-m", "unittest")

    write_files(repo, {"sj/__init__.py": SJ_BUGGY + "# looked at\n"})
    assert run(["gate", "--repo", str(repo), "--outcome", "Done."]) == 2
    write_files(repo, {"sj/__init__.py": SJ_CODE})
    assert run(["gate", "--repo", str(repo), "--outcome", "Fixed dumps()."]) == 0


def test_init_keeps_pytest_for_testcases_in_a_project_configured_for_pytest(
    tmp_path: Path,
) -> None:
    """The project says pytest runs its tests (a conftest.py, pytest among its test extras):
    pytest it is, whatever style the tests are written in."""
    for name, extra in (("conftest", {"conftest.py": ""}),
                        ("extras", {"pyproject.toml": PYPROJECT_TEST_EXTRAS})):  # fmt: skip
        repo = simplejson_like(tmp_path / name)
        write_files(repo, extra)
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "pytest")
        assert run(["init", "--repo", str(repo)]) == 0
        (check,) = load_config(repo / "claim.toml", os.environ).checks
        assert getattr(check, "command", None) == ("python", "-m", "pytest", "-q")


PYPROJECT_TEST_EXTRAS = """\
[project]
name = "sj"
version = "1.0"
dependencies = ["attrs"]

[project.optional-dependencies]
test = ["pytest>=7", "hypothesis"]
docs = ["sphinx"]

[dependency-groups]
dev = ["ruff"]
"""


def test_init_says_how_the_tests_get_their_interpreter_and_test_dependencies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A newcomer must learn from init itself which Python runs the tests, that it needs pytest
    and the project's test dependencies, and where the project declares them."""
    repo = toolz_like(tmp_path / "toolz")
    write_files(repo, {"pyproject.toml": PYPROJECT_TEST_EXTRAS,
                       "requirements-test.txt": "pytest\n"})  # fmt: skip
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "extras")

    assert run(["init", "--repo", str(repo)]) == 0

    said = capsys.readouterr().out
    text = (repo / "claim.toml").read_text()
    for shown in (said, text):
        assert sys.executable in shown
        assert "[test]" in shown  # pyproject.toml's test extra
        assert "dependency group dev" in shown
        assert "requirements-test.txt" in shown
        assert "docs" not in shown.replace("docs/", "")  # not a test extra
        assert "outside the work tree" in shown
    # The comment is the command a newcomer can run, and the toml still loads.
    assert "pip install" in text
    load_config(repo / "claim.toml", os.environ)


def test_init_names_no_extras_where_the_project_declares_none(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = simplejson_like(tmp_path / "sj")
    assert run(["init", "--repo", str(repo)]) == 0
    said = capsys.readouterr().out
    assert "unittest" in said
    assert "declares no test dependencies" in said


def test_a_project_of_testcases_runs_under_an_interpreter_without_pytest(tmp_path: Path) -> None:
    """unittest is the standard library's: init's check needs no pytest at all, so a claim
    installed where pytest is not (pipx) still gates a simplejson-shaped project."""
    venv = tmp_path / "bare"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    bare = str(venv / "bin" / "python")
    repo = simplejson_like(tmp_path / "sj")
    assert run(["init", "--repo", str(repo)]) == 0
    text = (repo / "claim.toml").read_text()
    assert "cannot import pytest" not in text
    path = repo / "claim.toml"
    path.write_text(
        text.replace('trusted_ref = "main"', f'trusted_ref = "main"\npython = "{bare}"')
    )
    git(repo, "add", "claim.toml")
    git(repo, "commit", "-qm", "gate")
    assert run(["gate", "--repo", str(repo), "--start"]) == 0
    write_files(repo, {"sj/__init__.py": SJ_CODE})
    assert run(["gate", "--repo", str(repo), "--outcome", "Fixed dumps()."]) == 0


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a folder to another user needs root")
def test_init_in_a_clone_another_user_owns_says_the_commit_git_will_do_there(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A clone owned by another user (an sdist unpacked as root keeps its uid; a CI checkout):
    git refuses the newcomer's own commit of claim.toml there (dubious ownership). claim's git
    reads it as data; init says the commit that works, and the gate judges it."""
    repo = toolz_like(tmp_path / "toolz")
    subprocess.run(["chown", "-R", "nobody:", str(repo)], check=True)
    assert run(["init", "--repo", str(repo)]) == 0
    said = capsys.readouterr().out
    commit = next(line for line in said.splitlines() if line.startswith("next:"))
    command = commit.partition("(")[2].rpartition(")")[0]
    assert "safe.directory" in command

    env = {**GIT_ENV, "HOME": str(tmp_path / "home")}
    given = f"{command} -qm gate"  # the message the newcomer's editor would take
    subprocess.run(given, shell=True, cwd=repo, env=env, check=True)

    assert run(["gate", "--repo", str(repo), "--start"]) == 0
    write_files(repo, {"toolz/functoolz.py": TOOLZ_CODE})
    assert run(["gate", "--repo", str(repo), "--outcome", "Fixed identity()."]) == 0


def test_init_discovers_testcases_in_a_top_test_folder_that_is_no_package(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """unittest's discovery from the top enters packages only: a plain tests/ folder is
    discovered from itself, and its tests still import the project."""
    repo = make_repo(tmp_path / "calc", {
        "sj/__init__.py": SJ_BUGGY,
        "tests/test_dumps.py": SJ_TEST,
    })  # fmt: skip
    init_commit_start(repo)
    (check,) = load_config(repo / "claim.toml", os.environ).checks
    assert getattr(check, "command", None) == (
        "python",
        "-m",
        "unittest",
        "discover",
        "-s",
        "tests",
    )

    write_files(repo, {"sj/__init__.py": SJ_CODE})
    assert run(["gate", "--repo", str(repo), "--outcome", "Fixed dumps()."]) == 0


def test_init_reads_test_extras_of_setup_cfg_and_setup_py_and_requirement_folders(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    repo = simplejson_like(tmp_path / "sj")
    write_files(repo, {
        "setup.cfg": "[options.extras_require]\ntesting =\n    mock>=4\ndocs = sphinx\n",
        "setup.py": "setup(name='sj', extras_require={'dev': ['pytest'], 'docs': ['x']})\n",
        "requirements/test.txt": "coverage\n",
        "requirements/docs.txt": "sphinx\n",
    })  # fmt: skip
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "extras")

    assert run(["init", "--repo", str(repo)]) == 0

    said = capsys.readouterr().out
    assert "setup.cfg extra [testing]" in said
    assert "setup.py extra [dev]" in said
    assert "requirements/test.txt" in said
    assert "requirements/docs.txt" not in said
    assert "'mock>=4'" in said
    # setup.py's dev extra names pytest: the project runs its TestCases with pytest.
    (check,) = load_config(repo / "claim.toml", os.environ).checks
    assert getattr(check, "command", None) == ("python", "-m", "pytest", "-q")


def test_init_keeps_pytest_for_test_functions_that_only_borrow_unittest_mock(
    tmp_path: Path,
) -> None:
    """A module of test functions importing unittest.mock is pytest's: unittest would run none
    of them."""
    borrowing = (
        "from unittest import mock\n\nimport sj\n\n\n"
        "def test_int():\n    assert sj.dumps(3) == '3'\n"
    )
    repo = simplejson_like(tmp_path / "sj")
    write_files(repo, {"sj/tests/test_mocked.py": borrowing})
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "a test function")

    assert run(["init", "--repo", str(repo)]) == 0

    (check,) = load_config(repo / "claim.toml", os.environ).checks
    assert getattr(check, "command", None) == ("python", "-m", "pytest", "-q")
