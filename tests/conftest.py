"""What every test module shares: the ``needs_tool`` mark, for tests that run a toolchain from
``PATH`` (``make toolchains`` installs them): skipped on a developer's machine without it, failed
under ``CI=true`` (:func:`tests.needs.unavailable`)."""

from __future__ import annotations

import shutil

import pytest

from tests.needs import unavailable


def pytest_runtest_setup(item: pytest.Item) -> None:
    for mark in item.iter_markers("needs_tool"):
        missing = [tool for tool in mark.args if shutil.which(tool) is None]
        if missing:
            unavailable(f"{', '.join(missing)} not installed (make toolchains)")
