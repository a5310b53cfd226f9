"""A git repository the agent controls, read without running anything it configures, and the
digests of the files in its work tree.

A repository's configuration (and every file it includes), its attributes and its hooks can name
programs git runs on its own: clean, smudge and process filters, textconv and external diff
drivers, the fsmonitor hook, hooks, pagers, askpass and transport commands. Every git call goes
through ``git_process``, which

- runs only plumbing that never converts work-tree content (``rev-parse``, ``ls-tree``, and
  ``ls-files``, which lists the index without refreshing it). Whether a file changed is decided
  here, by hashing its raw bytes as git hashes a blob, with no filter; never by ``git diff`` or
  ``git status``, which pass any file whose stat data moved through the clean filter;
- overrides, on the command line (which beats every configuration file, included ones too), each
  key that names a program, turns off the fsmonitor and the untracked cache (data the agent wrote
  into the index), and forbids every transport, so a partial clone never fetches;
- ignores the caller's ``GIT_*`` variables and the system and global configuration, and names the
  repository and work tree explicitly, so ``core.worktree`` cannot move what is read.

A work-tree file's digest is ``sha256:<hex>`` of its bytes. A symbolic link is recorded as what a
test run reads through it: ``symlink:<target>:sha256:<hex>`` for a link to a regular file (target
relative to the root, chains followed), ``symlink:<target>`` for a link to a folder or to nothing;
a link that leaves the root (or leads into ``.git``) at any step is refused, naming it.
"""

from __future__ import annotations

import hashlib
import os
import stat
import subprocess
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path

from ..errors import ClaimError, ObservationFailed

# Each key that names a program git may run, emptied or pointed at nothing.
_NO_PROGRAMS = (
    "core.fsmonitor=false",
    "core.untrackedCache=false",
    f"core.hooksPath={os.devnull}",
    f"core.attributesFile={os.devnull}",
    "core.pager=cat",
    "core.askPass=",
    "core.sshCommand=",
    "credential.helper=",
    "diff.external=",
    "protocol.allow=never",
)
_GIT = ("git", "--no-pager", *(arg for key in _NO_PROGRAMS for arg in ("-c", key)))

# Programs the caller's environment may name for git to run (the GIT_* ones go as a group).
_CALLER_PROGRAMS = frozenset({"PAGER", "EDITOR", "VISUAL", "SSH_ASKPASS"})
# The one GIT_* setting kept: the operator's bound on where a repository is looked for.
_KEPT_GIT_VARIABLES = frozenset({"GIT_CEILING_DIRECTORIES"})
_ISOLATED = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": os.devnull,
    "GIT_ATTR_NOSYSTEM": "1",
    "GIT_OPTIONAL_LOCKS": "0",
    "GIT_TERMINAL_PROMPT": "0",
    "GIT_NO_LAZY_FETCH": "1",
}

# Git refuses to find a repository another user owns, lest its configuration run programs as
# the caller; none runs here, and the agent's work tree may well belong to the agent's user.
_ANY_OWNER = ("-c", "safe.directory=*")

# Reading a local repository takes seconds; a FIFO the agent planted where git reads a file
# (a .gitignore, an included configuration file) would block it for ever.
GIT_TIMEOUT_S = 300.0

_LINK_MODE = b"120000"
_SUBMODULE_MODE = b"160000"
_MAX_LINK_HOPS = 40  # as the kernel's own limit
_CHUNK = 1 << 20

SYMLINK_PREFIX = "symlink:"


def git_process(
    root: Path, args: Iterable[str], failure: type[ClaimError]
) -> subprocess.CompletedProcess[bytes]:
    """Run git (no shell) on the repository whose work tree is ``root``, named explicitly."""
    pinned = ("--git-dir", os.path.join(root, ".git"), "--work-tree", str(root))
    return _git(root, pinned, tuple(args), failure)


def run_git(root: Path, *args: str, failure: type[ClaimError] = ObservationFailed) -> bytes:
    """Run one git command on the repository at ``root`` and return its output; ``failure`` is
    raised, with git's own last line of complaint, when it fails."""
    done = git_process(root, args, failure)
    if done.returncode != 0:
        complaint = done.stderr.decode(errors="replace").strip().splitlines()
        raise failure(f"git {args[0]} failed: {complaint[-1] if complaint else done.returncode}")
    return done.stdout


def git_toplevel(path: Path, failure: type[ClaimError] = ObservationFailed) -> Path | None:
    """The root of the git work tree holding ``path``, or None when it is not in one.

    The root is the folder holding the ``.git`` git found (a folder, or a file naming one:
    linked work trees and submodules). A repository whose ``core.worktree`` moves its work tree
    elsewhere is refused: what would be read is not the folder given.
    """
    toplevel = _single_line(_git(path, _ANY_OWNER, ("rev-parse", "--show-toplevel"), failure))
    found = _single_line(_git(path, _ANY_OWNER, ("rev-parse", "--absolute-git-dir"), failure))
    if toplevel is None or found is None:
        return None
    root = Path(os.fsdecode(toplevel))
    if _single_line(git_process(root, ("rev-parse", "--absolute-git-dir"), failure)) != found:
        raise failure(
            f"{path}: the repository sets its work tree to {root} (core.worktree), which does "
            "not hold its .git; refusing to read it"
        )
    return root


def split_z(output: bytes) -> list[bytes]:
    """The entries of git's ``-z`` output (NUL-terminated, so any file name survives)."""
    return [entry for entry in output.split(b"\0") if entry]


def _git(
    cwd: Path, options: tuple[str, ...], args: tuple[str, ...], failure: type[ClaimError]
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git [options] <args>``: ``options`` go before the command, ``args`` name it."""
    try:
        return subprocess.run(
            [*_GIT, *options, *args],
            cwd=cwd,
            env=_environment(),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            check=False,
            timeout=GIT_TIMEOUT_S,
        )
    except FileNotFoundError:
        raise failure("git is not installed (not found on PATH)") from None
    except subprocess.TimeoutExpired:
        raise failure(
            f"git {args[0]} did not finish in {GIT_TIMEOUT_S:g} s and was stopped "
            "(a FIFO where git reads a file?)"
        ) from None


def _environment() -> dict[str, str]:
    kept = {
        name: value
        for name, value in os.environ.items()
        if name not in _CALLER_PROGRAMS
        and (not name.startswith("GIT_") or name in _KEPT_GIT_VARIABLES)
    }
    return kept | _ISOLATED


def _single_line(done: subprocess.CompletedProcess[bytes]) -> bytes | None:
    """A one-value answer (the value may itself hold a newline), or None when git refused."""
    return done.stdout.removesuffix(b"\n") if done.returncode == 0 else None


# --- the work tree -----------------------------------------------------------------------------


@dataclass(frozen=True)
class WorkTreeFile:
    digest: str  # what a claim records: sha256:<hex>, or symlink:...
    blob: str | None  # the object id git would give it (raw bytes, or the link text), if asked
    link: bool


def content_digest(
    root: bytes, rel: bytes, failure: type[ClaimError] = ObservationFailed
) -> str | None:
    """The digest of the file at ``rel`` under ``root`` (a real path: no link in it), as the
    module's description says; None for anything else (a folder, a device), or when nothing is
    there, or only beyond a link. ``failure`` names a link leading out of ``root``."""
    found = work_tree_file(root, rel, failure)
    return None if found is None else found.digest


def work_tree_file(
    root: bytes, rel: bytes, failure: type[ClaimError], object_format: str | None = None
) -> WorkTreeFile | None:
    """``content_digest``, with git's object id for the file in ``object_format`` when given.

    A path below a symbolic link (``rel`` is ``a/b`` and ``a`` is a link) is not in the work
    tree, as git sees it: None.
    """
    path = os.path.join(root, rel)
    folder = os.path.dirname(path)
    try:
        if os.path.realpath(folder) != folder:
            return None
        info = os.lstat(path)
        if stat.S_ISLNK(info.st_mode):
            text = os.readlink(path)
            digest = SYMLINK_PREFIX + display(_link_target(root, rel, failure))
            target = os.path.realpath(path)
            if os.path.isfile(target):
                digest += ":" + _hash_file(target, rel, failure, None)[0]
            return WorkTreeFile(digest, _blob_id(object_format, text), link=True)
        if not stat.S_ISREG(info.st_mode):
            return None
        digest, blob = _hash_file(path, rel, failure, object_format)
        return WorkTreeFile(digest, blob, link=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise failure(f"cannot read {display(rel)}: {exc.strerror or exc}") from None


def _hash_file(
    path: bytes, rel: bytes, failure: type[ClaimError], object_format: str | None
) -> tuple[str, str | None]:
    """sha256 of the bytes, and git's object id for them, in one read. Opened without following
    a link and without blocking, so a path swapped for a FIFO cannot hang the reader."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        size = os.fstat(fd).st_size
        content = hashlib.sha256()
        blob = hashlib.new(object_format, _blob_header(size)) if object_format else None
        hashers = [hasher for hasher in (content, blob) if hasher is not None]
        seen = 0
        while chunk := handle.read(_CHUNK):
            seen += len(chunk)
            for hasher in hashers:
                hasher.update(chunk)
    if seen != size:
        raise failure(f"{display(rel)} changed while it was being read")
    return "sha256:" + content.hexdigest(), None if blob is None else blob.hexdigest()


def _blob_id(object_format: str | None, data: bytes) -> str | None:
    if object_format is None:
        return None
    return hashlib.new(object_format, _blob_header(len(data)) + data).hexdigest()


def _blob_header(size: int) -> bytes:
    """What git hashes before a blob's bytes to name it."""
    return b"blob %d\0" % size


def _link_target(root: bytes, rel: bytes, failure: type[ClaimError]) -> bytes:
    """Where the link at ``rel`` leads, relative to ``root``. Every step of a chain must stay
    inside, not only the end: a step outside is a place the agent can change unseen."""
    step = os.path.join(root, rel)
    for _ in range(_MAX_LINK_HOPS):
        step = os.path.normpath(os.path.join(os.path.dirname(step), os.readlink(step)))
        if _inside(root, step) is None:
            break
        if not os.path.islink(step):
            target = _inside(root, os.path.realpath(step))
            if target is not None:
                return target
            break
    else:
        raise failure(f"{display(rel)} is a chain of more than {_MAX_LINK_HOPS} symbolic links")
    text = display(os.readlink(os.path.join(root, rel)))
    raise failure(
        f"{display(rel)} is a symbolic link leading out of {display(root)} (to {text}); refused"
    )


def _inside(root: bytes, path: bytes) -> bytes | None:
    """``path`` relative to ``root`` when it lies in the work tree (``.`` for the root), else
    None; the repository's own ``.git`` is not work tree."""
    rel = os.path.relpath(path, root)
    first = rel.split(b"/", 1)[0]
    return None if first in (os.pardir.encode(), b".git") else rel


def display(path: bytes) -> str:
    """A path as text for documents and messages; undecodable bytes are shown escaped."""
    return path.decode("utf-8", "backslashreplace")


# --- changes against a commit ------------------------------------------------------------------


def changed_files(
    root: Path, commit: str | None, failure: type[ClaimError], left_out: Callable[[bytes], bool]
) -> dict[bytes, str | None]:
    """Every work-tree path whose content or type (file, link) differs from ``commit``'s tree
    (None: no commit yet, every file is new), with its digest now (None: gone).

    The paths looked at are the commit's files, the index's and the untracked ones not ignored;
    ``left_out`` paths are not read. The exec bit is not compared. A committed file that is now a
    folder, a device or below a link is gone; submodules and untracked nested repositories (as
    folders) are not files.
    """
    object_format = run_git(root, "rev-parse", "--show-object-format", failure=failure)
    object_format_name = object_format.decode().strip()
    base = _tree(root, commit, failure) if commit is not None else {}
    listing = ("ls-files", "-z", "--cached", "--others", "--exclude-standard")
    paths = set(base) | set(split_z(run_git(root, *listing, failure=failure)))
    root_bytes = os.fsencode(root)
    changed: dict[bytes, str | None] = {}
    for rel in sorted(paths):
        committed = base.get(rel)
        if left_out(rel) or (committed is not None and committed[0] == _SUBMODULE_MODE):
            continue
        now = work_tree_file(root_bytes, rel, failure, object_format_name)
        if now is None:
            if committed is not None:
                changed[rel] = None
        elif committed is None or _differs(committed, now):
            changed[rel] = now.digest
    return changed


def _differs(committed: tuple[bytes, str], now: WorkTreeFile) -> bool:
    mode, object_id = committed
    return object_id != now.blob or (mode == _LINK_MODE) != now.link


def _tree(root: Path, commit: str, failure: type[ClaimError]) -> dict[bytes, tuple[bytes, str]]:
    """Path -> (mode, object id) of every entry in the commit's tree."""
    listing = run_git(root, "ls-tree", "-r", "-z", "--full-tree", commit, failure=failure)
    entries = {}
    for entry in split_z(listing):
        header, rel = entry.split(b"\t", 1)
        mode, _kind, object_id = header.split(b" ")
        entries[rel] = (mode, object_id.decode())
    return entries
