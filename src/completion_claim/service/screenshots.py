"""The screenshots the service's own gate runs kept for their page checks (dom_assertion),
served to the dashboard.

A screenshot is served only when the entry came from the service's gate (so its own observer
wrote the file, in a runs folder no agent can reach), the evidence item's details name the file
and its run folder in the shapes the gate writes them, the path stays inside the runs folder,
and the file's digest is the one recorded (and signed with the rest of the item). Anything else
is "not found": a claim an agent submitted cannot make the service read a file it names.
"""

from __future__ import annotations

import hashlib
import os
import re
from pathlib import Path
from typing import Any

from .._files import open_regular, read_opened
from ..errors import ClaimError
from ..gate.run import RUN_KEY
from ..model import DOM_ASSERTION
from .records import Entry

MAX_SCREENSHOT_BYTES = 32 * 1024 * 1024
_FILE = re.compile(r"dom-[0-9a-f]{32}\.png")
_DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


def screenshot_reference(entry: Entry, position: int) -> tuple[str, str, str] | None:
    """(run folder, file name, digest) of the screenshot evidence item ``position`` names, when
    the entry is one the service's gate made and the names have the shapes the gate writes."""
    items = entry.claim.get("evidence", ())
    if entry.via != "gate" or not 0 <= position < len(items):
        return None
    item: Any = items[position]
    if type(item) is not dict or item.get("check_type") != DOM_ASSERTION:
        return None
    details = item.get("details")
    if type(details) is not dict or type(details.get("screenshot")) is not dict:
        return None
    run, shot = details.get(RUN_KEY), details["screenshot"]
    name, digest = shot.get("file"), shot.get("digest")
    if not (type(name) is str and _FILE.fullmatch(name)):
        return None
    if not (type(digest) is str and _DIGEST.fullmatch(digest)) or not _run_folder(run):
        return None
    return str(run), name, digest


def _run_folder(run: Any) -> bool:
    """``<repository>/<run>``: two plain names, neither ``.`` nor ``..``."""
    if type(run) is not str or "\0" in run or "\\" in run:
        return False
    parts = run.split("/")
    return len(parts) == 2 and all(part not in ("", ".", "..") for part in parts)


def read_screenshot(runs_dir: Path, reference: tuple[str, str, str]) -> bytes | None:
    """The screenshot's bytes, or None when the file is missing, outside the runs folder, not a
    regular file, too large, or not the one recorded (its digest differs)."""
    run, name, digest = reference
    root = os.path.realpath(runs_dir)
    path = os.path.join(root, run, name)
    if os.path.commonpath([root, os.path.realpath(path)]) != root:
        return None
    try:
        with open_regular(path, follow_symlinks=False) as handle:
            data = read_opened(handle, MAX_SCREENSHOT_BYTES, path)
    except (ClaimError, OSError):
        return None
    if "sha256:" + hashlib.sha256(data).hexdigest() != digest:
        return None
    return data
