"""Observing one real run from a test: capture the work tree, observe, read the evidence."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from completion_claim.cli import run


def observed(claim: Path, repo: Path, *args: str) -> dict[str, Any]:
    """Capture the work tree, observe one run, and return its evidence item."""
    assert run(["capture-git", str(claim), "--repo", str(repo)]) == 0
    assert run(["observe", "test-run", str(claim), "--cwd", str(repo), *args]) == 0
    item: dict[str, Any] = json.loads(claim.read_text())["evidence"][-1]
    return item
