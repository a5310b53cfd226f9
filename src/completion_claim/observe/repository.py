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

import contextlib
import errno
import hashlib
import itertools
import marshal
import operator
import os
import re
import stat
import subprocess
import tempfile
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple, TypeVar

from .._files import write_atomic
from ..errors import ClaimError, ObservationFailed

_T = TypeVar("_T")

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
_GIT = (
    "git",
    "--no-pager",
    "--no-replace-objects",
    *(arg for key in _NO_PROGRAMS for arg in ("-c", key)),
)

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
    # Replace refs and grafts are the agent's to write: with them, one object reads as another.
    "GIT_NO_REPLACE_OBJECTS": "1",
    "GIT_GRAFT_FILE": os.devnull,
}

# Git refuses to find a repository another user owns, lest its configuration run programs as
# the caller; none runs here, and the agent's work tree may well belong to the agent's user.
_ANY_OWNER = ("-c", "safe.directory=*")

# Reading a local repository takes seconds; a FIFO the agent planted where git reads a file
# (a .gitignore, an included configuration file) would block it for ever.
GIT_TIMEOUT_S = 300.0

_LINK_MODE = "120000"
_SUBMODULE_MODE = "160000"
# The (mode, object id) of a path a commit does not hold: the id compares as a file gone does.
_ABSENT: tuple[str, str | None] = ("", None)
_MAX_LINK_HOPS = 40  # as the kernel's own limit
_FOLDER_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_CHUNK = 1 << 20

SYMLINK_PREFIX = "symlink:"
_TREE_MODE = b"40000"
_HEX = re.compile(r"[0-9a-f]+")
_FORMATS = {40: "sha1", 64: "sha256"}
_OBJECT_ID_BYTES = {"sha1": 20, "sha256": 32}
_ENTRIES: dict[tuple[str, str], dict[bytes, tuple[str, str]]] = {}
_KEPT_ENTRIES_VERSION = 1
_ENTRIES_KEPT = 4
# Where a commit's entries are kept between processes (``entries_kept_in``): the operator's.
_ENTRIES_FOLDER: list[Path] = []


def git_process(
    root: Path, args: Iterable[str], failure: type[ClaimError], stdin: bytes | None = None
) -> subprocess.CompletedProcess[bytes]:
    """Run git (no shell) on the repository whose work tree is ``root``, named explicitly."""
    pinned = ("--git-dir", os.path.join(root, ".git"), "--work-tree", str(root))
    return _git(root, pinned, tuple(args), failure, stdin)


def run_git(root: Path, *args: str, failure: type[ClaimError] = ObservationFailed) -> bytes:
    """Run one git command on the repository at ``root`` and return its output; ``failure`` is
    raised, with git's own last line of complaint, when it fails."""
    done = git_process(root, args, failure)
    if done.returncode != 0:
        complaint = done.stderr.decode(errors="replace").strip().splitlines()
        raise failure(f"git {args[0]} failed: {complaint[-1] if complaint else done.returncode}")
    return done.stdout


class StartedGit:
    """A git command started now, its output taken later (``run_git``'s, with its errors):
    git lists a monorepo's files while the observer does something else."""

    def __init__(self, root: Path, args: tuple[str, ...], failure: type[ClaimError]) -> None:
        self.args = args
        self.failure = failure
        pinned = ("--git-dir", os.path.join(root, ".git"), "--work-tree", str(root))
        # Files, not pipes: git writes all it has without waiting for the reader.
        self._out = tempfile.TemporaryFile()  # noqa: SIM115 - closed by output() or stop()
        self._err = tempfile.TemporaryFile()  # noqa: SIM115
        try:
            self._process: subprocess.Popen[bytes] | None = subprocess.Popen(
                [*_GIT, *pinned, *args],
                cwd=root,
                env=_environment(),
                stdin=subprocess.DEVNULL,
                stdout=self._out,
                stderr=self._err,
            )
        except FileNotFoundError:
            self._close()
            raise failure("git is not installed (not found on PATH)") from None

    def output(self) -> bytes:
        process = self._process
        assert process is not None, "output() is taken once"
        self._process = None
        try:
            process.wait(timeout=GIT_TIMEOUT_S)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            self._close()
            raise self.failure(
                f"git {self.args[0]} did not finish in {GIT_TIMEOUT_S:g} s and was stopped "
                "(a FIFO where git reads a file?)"
            ) from None
        self._out.seek(0)
        self._err.seek(0)
        out, err = self._out.read(), self._err.read()
        self._close()
        if process.returncode != 0:
            complaint = err.decode(errors="replace").strip().splitlines()
            raise self.failure(
                f"git {self.args[0]} failed: {complaint[-1] if complaint else process.returncode}"
            )
        return out

    def stop(self) -> None:
        """Not wanted after all: ended, and waited for."""
        if self._process is not None:
            self._process.kill()
            self._process.wait()
            self._process = None
            self._close()

    def _close(self) -> None:
        self._out.close()
        self._err.close()


def git_toplevel(path: Path, failure: type[ClaimError] = ObservationFailed) -> Path | None:
    """The root of the git work tree holding ``path``, or None when it is not in one.

    The root is the folder holding the ``.git`` git found (a folder, or a file naming one:
    linked work trees and submodules). A repository whose ``core.worktree`` moves its work tree
    elsewhere is refused: what would be read is not the folder given.
    """
    return _remembered(("toplevel", os.fspath(path)), lambda: _toplevel(path, failure))


def _toplevel(path: Path, failure: type[ClaimError]) -> Path | None:
    done = _git(path, _ANY_OWNER, ("rev-parse", "--show-toplevel", "--absolute-git-dir"), failure)
    lines = done.stdout.removesuffix(b"\n").split(b"\n")
    if done.returncode != 0 or len(lines) != 2:
        return None
    root, found = Path(os.fsdecode(lines[0])), lines[1]
    if _single_line(git_process(root, ("rev-parse", "--absolute-git-dir"), failure)) != found:
        raise failure(
            f"{path}: the repository sets its work tree to {root} (core.worktree), which does "
            "not hold its .git; refusing to read it"
        )
    return root


def tree_object_format(root: Path, failure: type[ClaimError] = ObservationFailed) -> str:
    """The hash the repository at ``root`` names objects with (``sha1`` or ``sha256``)."""
    return _remembered(
        ("object format", os.fspath(root)),
        lambda: (
            run_git(root, "rev-parse", "--show-object-format", failure=failure).decode().strip()
        ),
    )


_ANSWERS: list[dict[tuple[str, str], Any]] = []


@contextlib.contextmanager
def git_answers_kept() -> Iterator[None]:
    """Within: a work tree's root and its object format are asked of git once (a gate needs
    each several times, and a git process costs milliseconds); an error is not kept."""
    _ANSWERS.append({})
    try:
        yield
    finally:
        _ANSWERS.pop()


def _remembered(key: tuple[str, str], ask: Callable[[], _T]) -> _T:
    if not _ANSWERS:
        return ask()
    kept = _ANSWERS[-1]
    if key not in kept:
        kept[key] = ask()
    answer: _T = kept[key]
    return answer


def split_z(output: bytes) -> list[bytes]:
    """The entries of git's ``-z`` output (NUL-terminated, so any file name survives)."""
    return [entry for entry in output.split(b"\0") if entry]


def _git(
    cwd: Path,
    options: tuple[str, ...],
    args: tuple[str, ...],
    failure: type[ClaimError],
    stdin: bytes | None = None,
) -> subprocess.CompletedProcess[bytes]:
    """Run ``git [options] <args>``: ``options`` go before the command, ``args`` name it."""
    try:
        return subprocess.run(
            [*_GIT, *options, *args],
            cwd=cwd,
            env=_environment(),
            input=stdin,
            stdin=subprocess.DEVNULL if stdin is None else None,
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


class WorkTreeFile(NamedTuple):
    """One work-tree file or link."""

    digest: str  # what a claim records: sha256:<hex>, or symlink:...
    blob: str | None  # the object id git would give it (raw bytes, or the link text), if asked
    link: bool


@dataclass
class TreeFiles:
    """The work-tree files and links a pass found: each one's digest (as a claim records it)
    and git blob id (empty when not asked), and which are links. A path in neither map is no
    file there: gone, a folder, a device, below a link. Maps rather than an object a path, so
    that a monorepo's 100,000 paths are handled in bulk."""

    digests: dict[bytes, str] = field(default_factory=dict)
    blobs: dict[bytes, str] = field(default_factory=dict)
    links: set[bytes] = field(default_factory=set)

    @classmethod
    def of(cls, found: Mapping[bytes, WorkTreeFile | None]) -> TreeFiles:
        files = cls()
        for rel, file in found.items():
            files.add(rel, file)
        return files

    def add(self, rel: bytes, file: WorkTreeFile | None) -> None:
        self.remove(rel)
        if file is not None:
            self.digests[rel] = file.digest
            self.blobs[rel] = file.blob or ""
            if file.link:
                self.links.add(rel)

    def remove(self, rel: bytes) -> None:
        self.digests.pop(rel, None)
        self.blobs.pop(rel, None)
        self.links.discard(rel)


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
            target = _link_target(root, rel, failure)
            digest = SYMLINK_PREFIX + display(target)
            if os.path.isfile(os.path.join(root, target)):
                digest += ":" + _hash_file(root, target, failure, None)[0]
            return WorkTreeFile(digest, _blob_id(object_format, text), link=True)
        if not stat.S_ISREG(info.st_mode):
            return None
        digest, blob = _hash_file(root, rel, failure, object_format)
        return WorkTreeFile(digest, blob, link=False)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise failure(f"cannot read {display(rel)}: {exc.strerror or exc}") from None


def open_beneath(root: bytes, rel: bytes) -> int:
    """A descriptor of the file at ``rel`` below the folder ``root``, opened one folder at a
    time, never through a symbolic link: a folder swapped for a link after it was checked (to
    have a file from outside the work tree read as one of it) is not followed, and the path is
    then not there (``FileNotFoundError``), as git sees it. Opened read only, without following
    a link at the end either, and without blocking (a path swapped for a FIFO)."""
    *folders, name = rel.split(b"/")
    if any(part in (b"", b".", b"..") for part in (*folders, name)):
        raise FileNotFoundError(errno.ENOENT, "not a path below the work tree", display(rel))
    below = os.open(root, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        for folder in folders:
            try:
                inner = os.open(folder, _FOLDER_FLAGS, dir_fd=below)
            except OSError as exc:
                if exc.errno in (errno.ELOOP, errno.ENOTDIR):
                    raise FileNotFoundError(errno.ENOENT, "below a link", display(rel)) from None
                raise
            os.close(below)
            below = inner
        return os.open(name, os.O_RDONLY | os.O_NONBLOCK | os.O_NOFOLLOW | os.O_CLOEXEC,
                       dir_fd=below)  # fmt: skip
    finally:
        os.close(below)


def _hash_file(
    root: bytes, rel: bytes, failure: type[ClaimError], object_format: str | None
) -> tuple[str, str | None]:
    """sha256 of the bytes of ``rel`` (below ``root``: ``open_beneath``), and git's object id
    for them, in one read."""
    fd = open_beneath(root, rel)
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
    root: Path,
    commit: str | None,
    failure: type[ClaimError],
    chosen: Callable[[Iterable[bytes]], list[bytes]],
    read: Callable[[list[bytes]], TreeFiles] | None = None,
    listed: Iterable[bytes] | None = None,
) -> dict[bytes, str | None]:
    """Every work-tree path whose content or type (file, link) differs from ``commit``'s tree
    (None: no commit yet, every file is new), with its digest now (None: gone); in no order.

    The paths looked at are the commit's files, the index's and the untracked ones not ignored,
    those that ``chosen`` keeps of them. The exec bit is not compared. A committed file that is
    now a folder, a device or below a link is gone; submodules and untracked nested repositories (as
    folders) are not files. ``read`` gives what the work tree holds at the paths asked (the
    operator's change cache may answer without reading them); by default each file is read.
    ``listed``: the index's and the untracked files, when the caller has listed them already.
    """
    base = _tree(root, commit, failure) if commit is not None else {}
    if listed is None:
        listing = ("ls-files", "-z", "--cached", "--others", "--exclude-standard")
        listed = sorted(dict.fromkeys(split_z(run_git(root, *listing, failure=failure))))
    wanted = chosen(dict.fromkeys(itertools.chain(listed, base)))
    submodules = set(with_mode(base, _SUBMODULE_MODE))
    if submodules:
        wanted = list(itertools.filterfalse(submodules.__contains__, wanted))
    if read is None:
        root_bytes, object_format = os.fsencode(root), tree_object_format(root, failure)
        found = TreeFiles.of({rel: work_tree_file(root_bytes, rel, failure, object_format)
                              for rel in wanted})  # fmt: skip
    else:
        found = read(wanted)
    # In bulk, at C speed: a monorepo has 100,000 paths and a stop changes a few. A path gone
    # and never committed compares None with None.
    committed = map(operator.itemgetter(1), map(base.get, wanted, itertools.repeat(_ABSENT)))
    differing = itertools.compress(
        wanted, map(operator.ne, map(found.blobs.get, wanted), committed)
    )
    changed = {rel: found.digests.get(rel) for rel in differing}
    # A link and a file of the same bytes have one blob id: their types are compared too.
    typed = found.links.union(with_mode(base, _LINK_MODE))
    if typed:
        linked, chosen_paths = set(with_mode(base, _LINK_MODE)), set(wanted)
        for rel in typed & chosen_paths:
            now = found.digests.get(rel)
            if rel in base and now is not None and (rel in linked) != (rel in found.links):
                changed[rel] = now
    return changed


def with_mode(entries: Mapping[bytes, tuple[str, str]], mode: str) -> Iterator[bytes]:
    """The paths of ``entries`` (path -> (mode, object id)) that have ``mode``."""
    modes = map(operator.itemgetter(0), entries.values())
    return itertools.compress(entries, map(operator.eq, modes, itertools.repeat(mode)))


def _tree(root: Path, commit: str, failure: type[ClaimError]) -> Mapping[bytes, tuple[str, str]]:
    """Path -> (mode, object id) of every entry in the commit's tree, each object checked."""
    return VerifiedObjects(root, commit, failure).entries(commit)


# --- objects checked against their ids ---------------------------------------------------------


@contextlib.contextmanager
def entries_kept_in(folder: Path) -> Iterator[None]:
    """Within: the entries of each commit read are kept in ``folder`` (the operator's, never
    the agent's), so that the next process reads them there rather than from the object store;
    an id names one content, checked against its id when it was first read."""
    _ENTRIES_FOLDER.append(folder)
    try:
        yield
    finally:
        _ENTRIES_FOLDER.pop()


def object_format_of(object_id: str) -> str | None:
    """The hash a full object id is written in (``sha1``, ``sha256``), or None when the text is
    not one (a name, an abbreviation, upper case)."""
    if not _HEX.fullmatch(object_id):
        return None
    return _FORMATS.get(len(object_id))


class VerifiedObjects:
    """Objects read from the agent's object store and believed only when their bytes hash to the
    id they were asked by, as git names objects (``<type> <size>\0<bytes>``).

    The store is the agent's: a replace ref, a graft, a shallow file or a loose object rewritten
    in place under a trusted id would otherwise make the agent's version read as the trusted one.
    Replace refs and grafts are off for every git call here (``git_process``), and every object
    read is hashed; trees are parsed here, not listed by ``ls-tree``. A missing object or one
    whose bytes do not match fails the observation: never the agent's version instead.
    """

    def __init__(self, root: Path, pinned: str, failure: type[ClaimError]) -> None:
        found = object_format_of(pinned)
        if found is None:
            raise failure(f"{pinned!r} is not a full commit id")
        self.root = root
        self.object_format = found
        self.failure = failure

    def read(self, object_ids: Iterable[str], kind: bytes) -> dict[str, bytes]:
        """Each object's bytes, checked to be a ``kind`` whose content hashes to its id."""
        wanted = list(dict.fromkeys(object_ids))
        if not wanted:
            return {}
        for object_id in wanted:
            if object_format_of(object_id) != self.object_format:
                raise self.failure(f"{object_id!r} is not a {self.object_format} object id")
        request = "".join(f"{object_id}\n" for object_id in wanted).encode()
        done = git_process(self.root, ("cat-file", "--batch"), self.failure, request)
        if done.returncode != 0:
            raise self.failure(f"git cat-file failed on the object store of {self.root}")
        found: dict[str, bytes] = {}
        output, at = done.stdout, 0
        for object_id in wanted:
            end = output.find(b"\n", at)
            header = output[at:end].split(b" ") if end >= 0 else []
            if len(header) != 3 or header[0].decode(errors="replace") != object_id:
                raise self.failure(f"git object {object_id} is missing from {self.root}")
            if header[1] != kind:
                raise self.failure(f"git object {object_id} is a {display(header[1])}, not a "
                                   f"{display(kind)}")  # fmt: skip
            size = int(header[2])
            content = output[end + 1 : end + 1 + size]
            at = end + 2 + size
            digest = hashlib.new(self.object_format, b"%s %d\0" % (kind, size) + content)
            if len(content) != size or digest.hexdigest() != object_id:
                raise self.failure(
                    f"git object {object_id} in {self.root} does not hash to its id: the object "
                    "store was tampered with"
                )
            found[object_id] = content
        return found

    def commit_tree(self, commit: str) -> str:
        content = self.read((commit,), b"commit")[commit]
        first = content.split(b"\n", 1)[0]
        tree = first.removeprefix(b"tree ").decode(errors="replace")
        if not first.startswith(b"tree ") or object_format_of(tree) != self.object_format:
            raise self.failure(f"commit {commit} names no tree")
        return tree

    def entries(self, commit: str) -> Mapping[bytes, tuple[str, str]]:
        """Path -> (mode, object id) of every entry below the commit's tree that is not itself
        a tree (files, links, submodules), as ``ls-tree -r`` lists them.

        Kept for the last few commits read: an id names one content, checked when it was read,
        and a gate reads its base's tree two or three times (100,000 entries in a monorepo);
        within ``entries_kept_in``, also in the operator's folder, for the next process. Every
        reader in this process is given the one kept mapping, never a copy: it is read only."""
        key = (str(self.root), commit)
        if key not in _ENTRIES:
            if len(_ENTRIES) >= _ENTRIES_KEPT:
                del _ENTRIES[next(iter(_ENTRIES))]
            _ENTRIES[key] = self._kept_entries(commit)
        return _ENTRIES[key]

    def _kept_entries(self, commit: str) -> dict[bytes, tuple[str, str]]:
        if not _ENTRIES_FOLDER or object_format_of(commit) != self.object_format:
            return self._entries(commit)
        kept = _ENTRIES_FOLDER[-1] / commit
        try:
            found = marshal.loads(kept.read_bytes())  # noqa: S302 - the operator's own file
        except (OSError, ValueError, EOFError, TypeError):
            found = None
        if type(found) is tuple and found[0] == _KEPT_ENTRIES_VERSION and type(found[1]) is dict:
            return found[1]
        entries = self._entries(commit)
        kept.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        write_atomic(kept, marshal.dumps((_KEPT_ENTRIES_VERSION, entries)))
        # The newest few are enough: a gate reads its base and HEAD.
        older = sorted(kept.parent.iterdir(), key=lambda path: path.stat().st_mtime)
        for stale in older[:-_ENTRIES_KEPT]:
            with contextlib.suppress(OSError):
                stale.unlink()
        return entries

    def _entries(self, commit: str) -> dict[bytes, tuple[str, str]]:
        entries: dict[bytes, tuple[str, str]] = {}
        # (tree id, path prefix): one subtree can sit at two paths, and each path is listed.
        level = [(self.commit_tree(commit), b"")]
        size = _OBJECT_ID_BYTES[self.object_format]
        # One text a mode, shared by its entries: kept, each is written and read back once.
        modes: dict[bytes, str] = {}
        while level:
            trees = self.read((tree_id for tree_id, _ in level), b"tree")
            below = []
            for tree_id, prefix in level:
                for mode, name, object_id in self._parse_tree(trees[tree_id], size, tree_id):
                    if mode == _TREE_MODE:
                        below.append((object_id, prefix + name + b"/"))
                    else:
                        text = modes.get(mode) or modes.setdefault(mode, mode.decode())
                        entries[prefix + name] = (text, object_id)
            level = below
        return entries

    def _parse_tree(
        self, content: bytes, size: int, tree_id: str
    ) -> Iterable[tuple[bytes, bytes, str]]:
        at = 0
        while at < len(content):
            space = content.find(b" ", at)
            nul = content.find(b"\0", space + 1)
            if space < 0 or nul < 0 or nul + 1 + size > len(content):
                raise self.failure(f"tree {tree_id} is malformed")
            mode, name = content[at:space], content[space + 1 : nul]
            if not name or b"/" in name or name in (b".", b"..", b".git"):
                raise self.failure(f"tree {tree_id} holds the entry {display(name)!r}")
            yield mode, name, content[nul + 1 : nul + 1 + size].hex()
            at = nul + 1 + size
