"""Shell completion through click's recipe (`_CLAIM_COMPLETE=bash_source claim`), as the README
and `claim help completion` tell users to set it up."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.needs import unavailable

BIN = Path(sys.executable).parent
CLAIM = BIN / "claim"


def _source(shell: str) -> str:
    env = {**os.environ, "_CLAIM_COMPLETE": f"{shell}_source"}
    done = subprocess.run([CLAIM], env=env, capture_output=True, text=True, check=True)
    return done.stdout


@pytest.mark.parametrize(
    ("shell", "hook"),
    [
        ("bash", "complete -o nosort -F _claim_completion claim"),
        ("zsh", "compdef _claim_completion claim"),
        ("fish", 'complete --no-files --command claim --arguments "(_claim_completion)"'),
    ],
)
def test_the_recipe_prints_a_completion_script_for_each_shell(shell: str, hook: str) -> None:
    assert hook in _source(shell)


@pytest.mark.parametrize(
    ("words", "expected"),
    [
        ("claim he", ["help"]),
        ("claim help ev", ["evidence"]),
        ("claim observe test", ["test-run"]),
        ("claim verify --pol", ["--policy"]),
    ],
)
def test_bash_completes_with_the_sourced_script(words: str, expected: list[str]) -> None:
    bash = shutil.which("bash")
    if bash is None:
        unavailable("bash is not installed")
    script = (
        'eval "$(_CLAIM_COMPLETE=bash_source claim)"\n'
        f"COMP_WORDS=({words}); COMP_CWORD={len(words.split()) - 1}\n"
        "_claim_completion claim\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
    )
    env = {**os.environ, "PATH": os.pathsep.join([str(BIN), os.environ.get("PATH", "")])}
    done = subprocess.run([bash, "-c", script], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.split() == expected
