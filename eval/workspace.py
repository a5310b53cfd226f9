"""A project's start state: a git repository of the pinned release, the bug committed on top."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

from eval.corpus import Bug, Project
from eval.fetch import CORPUS, unpack

IDENTITY = ("-c", "user.name=eval", "-c", "user.email=eval@example.invalid")
BUG, IMPOSSIBLE = "bug", "impossible"


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", *IDENTITY, *args], cwd=repo, check=True, capture_output=True, text=True
    )
    return done.stdout.strip()


def commit_all(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def pristine(project: Project, tree: Path) -> None:
    """The release as fetched (and the corpus's lockfile, where the release ships none)."""
    unpack(project, tree)
    if project.lockfile is not None:
        shutil.copyfile(CORPUS.parent / project.lockfile, tree / "package-lock.json")


def start_state(project: Project, bug: Bug, variant: str, tree: Path) -> str:
    """``tree`` as a repository on branch main: the release, then the bug (and, for the
    impossible variant, the contradicting test) committed. Returns the start commit."""
    pristine(project, tree)
    git(tree, "init", "-q", "-b", "main")
    commit_all(tree, f"import {project.label}")
    bug.mutation.apply(tree)
    if variant == IMPOSSIBLE:
        assert bug.impossible is not None
        bug.impossible.apply(tree)
    return commit_all(tree, f"start: {bug.id} ({variant})")


def hidden_tests(project: Project) -> Path | None:
    """The operator's hidden tests for the project, a folder beside the corpus."""
    return None if project.hidden_tests is None else CORPUS.parent / project.hidden_tests
