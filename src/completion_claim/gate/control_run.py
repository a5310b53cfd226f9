"""The control run: a trusted commit's tests on that commit's own code, the baseline of a gate
with a trusted commit and no start that ran on it (CI: ``--base`` and ``--trusted-ref``).

The commit is read as its objects hash (``GitContent``: replace refs and grafts off, every
object checked against its id), written into a folder the operator owns, outside any git work
tree, and run through the same observer, toolchain, dependency cache and sandbox as the judged
run (attack 100). What it reported is kept in the operator's runs folder,
``<runs>/<repository>/controls/<key>.json``, written atomically: one entry per trusted commit and
check (command, report, toolchain, environment names, network, protected globs, the hidden
tests' files and contents), so another commit, another command or hidden tests the operator
changed never reuse it, and a later gate on the same commit runs no control.
A run that could not be made (an object that does not hash, the sandbox, a timeout) is not kept:
the check fails, and the next gate tries again.
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from .._files import write_atomic
from .._json import dumps, loads
from ..errors import InvalidDocument, ObservationFailed
from ..observe.repository import display, git_toplevel
from ..observe.run_tree import GitContent
from ..timefmt import format_time
from .baseline import repository_id
from .config import GateConfig, TestRunCheck
from .test_baseline import ERROR_KEY, TESTS_KEY, check_request, tests_seen

CONTROLS_FOLDER = "controls"
_LINK_MODE = "120000"
_EXECUTABLE_MODE = "100755"
_READ_AT_ONCE = 2048  # blobs read per batch: a monorepo's commit is not held whole in memory


def control_baseline(
    config: GateConfig, check: TestRunCheck, root: Path, commit: str, timeout: float
) -> dict[str, Any]:
    """The control entry of ``check`` on ``commit`` (``target``, ``trusted_ref``, ``runner``,
    ``at``, then ``baseline_tests`` or ``baseline_error``): as kept, else run now and kept."""
    request = check_request(config, check, root, timeout, trusted_ref=None,
                            trusted_content=None, mirror=None, excluded=())  # fmt: skip
    path = control_path(config, root, check, commit)
    kept = _kept(path, commit, request.target)
    if kept is not None:
        return kept
    entry: dict[str, Any] = {
        "target": request.target,
        "trusted_ref": commit,
        "runner": request.runner.name,
        "at": format_time(datetime.now(UTC)),
    }
    entry |= _run_on_commit(config, check, root, commit, timeout)
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_atomic(path, dumps(entry).encode())
    return entry


def control_path(config: GateConfig, root: Path, check: TestRunCheck, commit: str) -> Path:
    """Where the control of ``check`` on ``commit`` is kept: named by a digest of everything
    that decides what the run reports."""
    hidden = None if check.hidden_tests is None else _folder_digest(check.hidden_tests)
    decides = [commit, list(check.command), check.junit, check.chosen_toolchain, list(check.env),
               check.network, list(check.protect), hidden]  # fmt: skip
    key = hashlib.sha256(dumps(decides).encode()).hexdigest()[:32]
    return config.runs_dir / repository_id(root) / CONTROLS_FOLDER / f"{key}.json"


def _folder_digest(folder: Path) -> str:
    """A digest of every name below ``folder`` and what it holds (a link's target, a file's
    bytes): a test the operator added to or changed in the hidden tests runs a new control. The
    folder is checked when the run lays it (a link or a special file is refused there); one that
    cannot be read here is named by its path, and the run then says why."""
    digest = hashlib.sha256()
    try:
        for parent, folders, names in sorted(os.walk(folder)):
            for name in sorted([*folders, *names]):
                path = Path(parent, name)
                digest.update(os.fsencode(path.relative_to(folder)) + b"\0")
                if path.is_symlink():
                    digest.update(b"link\0" + os.fsencode(os.readlink(path)))
                elif path.is_file():
                    digest.update(b"file\0" + hashlib.sha256(path.read_bytes()).digest())
                digest.update(b"\0")
    except OSError:
        return str(folder)
    return f"{folder}:{digest.hexdigest()}"


def _kept(path: Path, commit: str, target: str) -> dict[str, Any] | None:
    try:
        found = loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, InvalidDocument):
        return None
    if (
        isinstance(found, dict)
        and found.get("trusted_ref") == commit
        and found.get("target") == target
        and (isinstance(found.get(TESTS_KEY), dict) or isinstance(found.get(ERROR_KEY), str))
    ):
        return found
    return None


def _run_on_commit(
    config: GateConfig, check: TestRunCheck, root: Path, commit: str, timeout: float
) -> dict[str, Any]:
    from ..observe import test_run  # noqa: PLC0415 - the CLI starts without the runners

    with tempfile.TemporaryDirectory(prefix="claim-control-") as folder:
        # Named as the work tree is: a runner may name its tests after the project's folder.
        tree = Path(folder) / root.name
        tree.mkdir()
        enclosing = git_toplevel(tree)
        if enclosing is not None:
            raise ObservationFailed(
                f"the control run's folder {tree} is inside the git work tree {enclosing}: "
                "set TMPDIR to a folder outside any repository"
            )
        _materialise(GitContent(root, commit), tree)
        request = check_request(config, check, tree, timeout, trusted_ref=None,
                                trusted_content=None, mirror=None, excluded=())  # fmt: skip
        # The trusted commit's own code: nothing in it is the agent's for the runtime monitor to
        # judge (six compiles code when imported).
        request = replace(request, allow_test_aware=("*",))
        try:
            seen = test_run.observe(request, ())
        except ObservationFailed as failure:
            raise ObservationFailed(
                f"the control run on trusted commit {commit}: {failure}"
            ) from None
    return tests_seen(seen)


def _materialise(source: GitContent, folder: Path) -> None:
    """Every file and link of ``source``'s commit under ``folder``, as git would check it out.
    Links are made last and nothing is written through one: a crafted tree holding a link and
    a file below it at once is refused."""
    entries = source.entries()
    paths = sorted(entries)
    listed = set(paths)
    for rel in paths:
        parent = os.path.dirname(rel)
        while parent:
            if parent in listed:
                raise ObservationFailed(
                    f"commit {source.commit} holds both {display(parent)} and {display(rel)}"
                )
            parent = os.path.dirname(parent)
    top = os.fsencode(folder)
    links: list[tuple[bytes, bytes]] = []
    try:
        for at in range(0, len(paths), _READ_AT_ONCE):
            batch = paths[at : at + _READ_AT_ONCE]
            for rel, data in source.contents(batch).items():
                mode = entries[rel][0]
                if mode == _LINK_MODE:
                    links.append((rel, data))
                    continue
                path = os.path.join(top, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                fd = os.open(path, flags, 0o755 if mode == _EXECUTABLE_MODE else 0o644)
                with os.fdopen(fd, "wb") as out:
                    out.write(data)
        for rel, target in links:
            os.makedirs(os.path.dirname(os.path.join(top, rel)), exist_ok=True)
            os.symlink(target, os.path.join(top, rel))
    except OSError as exc:
        raise ObservationFailed(
            f"cannot write commit {source.commit} for the control run: {exc.strerror or exc}"
        ) from None
