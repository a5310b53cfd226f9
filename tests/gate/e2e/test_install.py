"""When the CLI cannot be installed, the suite says why in one line and leaves no half install
behind (the conftest then skips locally and fails under CI=true)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.observe.conftest import closed_port

from .claude_code import cache_dir, ensure_installed
from .clis import InstallFailed

pytestmark = pytest.mark.claude_code


def test_an_unreachable_registry_is_named_and_leaves_the_cache_empty(tmp_path: Path) -> None:
    environ = {
        **os.environ,
        "XDG_CACHE_HOME": str(tmp_path / "cache"),
        "npm_config_registry": f"http://127.0.0.1:{closed_port()}/",
        "npm_config_cache": str(tmp_path / "npm"),  # nothing already downloaded to fall back on
        "npm_config_fetch_retries": "0",
    }
    with pytest.raises(InstallFailed, match=r"registry reachable\?\): .*ECONNREFUSED"):
        ensure_installed(environ)
    assert not cache_dir(environ).exists()
    assert [p.name for p in cache_dir(environ).parent.iterdir()] == [".claude-code-2.1.328.lock"]


def test_a_machine_without_npm_is_told_so(tmp_path: Path) -> None:
    environ = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "cache"), "PATH": str(tmp_path)}
    with pytest.raises(InstallFailed, match="npm is not on PATH"):
        ensure_installed(environ)


def test_the_cache_is_outside_the_repository_and_names_the_pinned_release() -> None:
    folder = cache_dir({"XDG_CACHE_HOME": "/var/cache/u"})
    assert folder == Path("/var/cache/u/completion-claim/claude-code-2.1.328")
    assert cache_dir({}) == Path.home() / ".cache/completion-claim/claude-code-2.1.328"
