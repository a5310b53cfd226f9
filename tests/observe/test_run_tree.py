"""Which paths decide a run rather than what it tests."""

from __future__ import annotations

import pytest

from completion_claim.observe.run_tree import is_protected


@pytest.mark.parametrize(
    "path",
    [
        "conftest.py", "sub/conftest.py", "pytest.ini", "tox.ini", "setup.cfg", "pyproject.toml",
        "sitecustomize.py", "usercustomize.py", "x.pth", "test_a.py", "pkg/a_test.py",
        "tests/helpers.py", "src/test/data.json", "pytest.py", "_pytest/hook.py", "py.py",
        "pluggy/__init__.py",
    ],
)  # fmt: skip
def test_protected(path: str) -> None:
    assert is_protected(path.encode(), ())


@pytest.mark.parametrize("path", ["calc.py", "src/app/main.py", "testing.py", "contest.py"])
def test_not_protected(path: str) -> None:
    assert not is_protected(path.encode(), ())


def test_a_protect_glob_adds_paths() -> None:
    assert is_protected(b"golden/sum.txt", ("golden/*",))
    assert not is_protected(b"golden/sum.txt", ("gold/*",))
