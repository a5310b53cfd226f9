"""Fixtures for the sessions of the real Claude Code CLI against the scripted model server.

The CLI comes from npm, cached per machine outside the repository (see ``claude_code.py``). When
it cannot be installed, the tests say why: they skip on a developer's machine and fail under
``CI=true``, where a skipped end-to-end test would pass a build that never ran the harness.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.needs import unavailable
from tests.observe.conftest import postgres, postgres_reader  # noqa: F401 (fixtures)

from .claude_code import ensure_installed
from .clis import InstallFailed


@pytest.fixture(scope="session")
def claude() -> Path:
    try:
        return ensure_installed()
    except InstallFailed as failure:
        unavailable(f"Claude Code is not available: {failure}")
