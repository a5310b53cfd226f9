"""Where the operator's state lives by default: outside any work tree."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path


def default_runs_dir(environ: Mapping[str, str]) -> Path:
    """Outside any work tree: the user's state directory (XDG), as the agent's tools do not
    look there."""
    state = environ.get("XDG_STATE_HOME") or os.path.join(
        environ.get("HOME") or os.path.expanduser("~"), ".local", "state"
    )
    return Path(state) / "completion-claim" / "runs"
