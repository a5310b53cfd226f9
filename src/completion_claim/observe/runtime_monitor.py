"""The reporter's end of the observer's channel and the runtime monitor, shared by both Python
reporters (:mod:`.pytest_reporter`, :mod:`.unittest_reporter`).

Standalone on purpose: the observer copies it beside the reporter, as ``<the reporter's module
name>_monitor.py``, and it imports only the standard library.

:meth:`Channel.opened` takes the observer's two inherited pipes, named by ``CLAIM_REPORT_FDS``
(each as ``fd:inode``, so that a descriptor a wrapper closed and reused is never taken for one of
them): it reads the key's pipe to the end and closes it (the run's key, the run's settings as
JSON, the monitor's files), and installs the monitor, before any conftest or test module is
imported. Each record then sent is one line on the records pipe: the HMAC-SHA256 of its JSON under
the key, a space, and the JSON, with a sequence number; ``{"end": true}`` ends the session.

The monitor is a PEP 578 audit hook that records what only test-aware code needs, given the files
the agent changed that are no test file (as the run sees them).

An event counts when the frame that caused it is in one of those files: the frame that made the
audited call, or, when that is the standard library's ``inspect``, ``traceback`` (which read
frames for their caller) or ``ctypes``, the first frame outside them. pytest, the tests and every
library call ``sys._getframe`` and the like all the time; only the changed code is judged. What
counts: reading the call stack (``sys._getframe``, ``sys._current_frames``, a frame's code, a
traceback's, generator's or coroutine's frame), swapping a function's code or defaults, making
code or a function from a code object, walking the garbage collector, ctypes, tracing or
profiling, adding an audit hook, compiling or executing code, and signalling the run's own
process. Each is sent at once (``{"monitor": {"event", "file", "line"}}``), before the call returns
to the code that made it, so nothing it finds afterwards can take the record back.
"""

from __future__ import annotations

import _thread
import contextlib
import hashlib
import hmac
import json
import os
import stat
import sys
import types
import zlib
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

ENVIRONMENT = "CLAIM_REPORT_FDS"
CANARY_PREFIX = "claim_canary_"  # the observer's test modules beside the reporter
_PR_SET_DUMPABLE = 4
_MAX_KEY_PIPE = 16 << 20

# The events that matter whatever their arguments.
_EVENTS = frozenset(
    {
        "sys._getframe",
        "sys._current_frames",
        "code.__new__",
        "function.__new__",
        "gc.get_objects",
        "gc.get_referrers",
        "gc.get_referents",
        "sys.settrace",
        "sys.setprofile",
        "sys.addaudithook",
        "compile",
        "exec",
    }
)
_CTYPES = "ctypes."
_READ = "object.__getattr__"
_WRITTEN = "object.__setattr__"
_SIGNALLED = frozenset({"os.kill", "os.killpg"})
_FRAME_ATTRIBUTES = frozenset({"f_code", "tb_frame", "gi_frame", "cr_frame", "ag_frame"})
_FUNCTION_ATTRIBUTES = frozenset({"__code__", "__defaults__", "__kwdefaults__"})
# Standard library modules that act for their caller: they read frames, or are ctypes itself.
_ON_BEHALF = ("inspect.py", "traceback.py", f"ctypes{os.sep}")
_MAX_RECORDS = 100  # a loop of calls is one finding, not a report too long to read


Lines = tuple[tuple[int, int], ...]
"""Line ranges of a file, first and last inclusive."""


class Watched(NamedTuple):
    """What the observer hands the monitor: the work tree's root, the changed files that are no
    test file (as the run sees them), each with the lines the agent changed in it (None: the
    whole file), and when the run's files were all written (the key's pipe's time, from the same
    clock as the files')."""

    root: str
    files: frozenset[str]
    since_ns: int
    changed: Mapping[str, Lines | None] = {}


def watched(payload: bytes, since_ns: int) -> Watched:
    """The observer's list, after the settings' line in its pipe: compressed JSON, the root and
    each file with its changed lines as ``[first, last]`` ranges (null: the whole file)."""
    found = json.loads(zlib.decompress(payload))
    changed = {
        os.path.normpath(path): None if ranges is None else tuple(map(tuple, ranges))
        for path, ranges in found["files"]
    }
    return Watched(found["root"], frozenset(changed), since_ns, changed)


def _touched(code: types.CodeType, ranges: Lines) -> bool:
    """Whether a line of ``code``'s own instructions (not those of the functions it defines) is
    one the agent changed: an event there is the agent's doing even on a line it did not write
    (a changed argument of a call whose first line is the file's own)."""
    return any(
        first <= line <= last
        for _, _, line in code.co_lines()
        if line is not None
        for first, last in ranges
    )


def _within(path: str, files: frozenset[str]) -> str | None:
    """``path``, or the file it lies in, when that is one of ``files``."""
    while path not in files:
        parent = os.path.dirname(path)
        if parent == path:
            return None
        path = parent
    return path


def _agents(path: str, given: Watched, trusted: tuple[str, ...]) -> str | None:
    """``path`` (or the changed file it lies in) when it is the agent's code: a changed file
    that is no test file, or one the run wrote: in the work tree after its files were all
    written, or anywhere outside the folders the interpreter and the plugin came from."""
    found = _within(path, given.files)
    if found is not None:
        return found
    if not path.startswith(f"{given.root}/"):
        return None if path.startswith(trusted) else path
    try:
        written = os.stat(path).st_ctime_ns > given.since_ns
    except OSError:
        written = True  # imported, then removed
    return path if written else None


def _trusted_folders(root: str) -> tuple[str, ...]:
    """Where the interpreter, its libraries and the plugin are (every folder on the path when
    the monitor starts, but those of the work tree), each as ``folder/``."""
    folders = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
               os.path.dirname(__file__), *filter(None, sys.path)}  # fmt: skip
    found = {os.path.normpath(form) for folder in folders
             for form in (os.path.abspath(folder), os.path.realpath(folder))}  # fmt: skip
    inside = f"{root}/"
    return tuple(f"{folder.rstrip('/')}/" for folder in found
                 if folder != root and not folder.startswith(inside))  # fmt: skip


def install(given: Watched, send: Callable[[dict[str, Any]], None]) -> None:
    """Add the audit hook (for the rest of the process: a hook cannot be removed). Its state
    lives in this closure only, which nothing of the run holds a reference to."""
    folder = os.path.dirname(os.path.realpath(os.__file__))
    on_behalf = tuple(os.path.join(folder, name) for name in _ON_BEHALF)
    trusted = _trusted_folders(given.root)
    started_in = os.getcwd()
    verdicts: dict[str, str | None] = {}  # a code object's file name: the agent's file, or None
    touched: dict[types.CodeType, bool] = {}  # a code object of the agent's file: changed?
    sent: set[tuple[str, str, int]] = set()
    busy: set[int] = set()  # threads inside the hook (it raises events of its own)
    current_thread, caller = _thread.get_ident, sys._getframe
    own_process = (os.getpid(), 0, os.getpgrp(), -os.getpgrp())  # itself, or its group

    def agents_file(filename: str) -> str | None:
        found = verdicts.get(filename, "")
        if found == "":
            found = None
            if not filename.startswith("<"):  # no file: "<string>", "<frozen os>"
                # As the run names the file, or through the links on its way (a folder of the
                # work tree that links to another).
                path = os.path.normpath(os.path.join(started_in, filename))
                found = _agents(path, given, trusted) or _agents(
                    os.path.realpath(path), given, trusted
                )
            verdicts[filename] = found
        return found

    def agents_code(code: types.CodeType, found: str) -> bool:
        """Whether ``code`` of the agent's file ``found`` holds a line the agent changed (a file
        the observer gives no lines of, new or written by the run, is the agent's whole)."""
        ranges = given.changed.get(found)
        if ranges is None:
            return True
        known = touched.get(code)
        if known is None:
            known = touched[code] = _touched(code, ranges)
        return known

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in _EVENTS or event.startswith(_CTYPES):
            what = event
        elif (event == _READ and len(args) == 2 and args[1] in _FRAME_ATTRIBUTES) or (
            event == _WRITTEN and len(args) == 3 and args[1] in _FUNCTION_ATTRIBUTES
        ):
            what = f"{event} {args[1]}"
        elif event in _SIGNALLED and args and args[0] in own_process:
            what = event  # the run ending itself
        else:
            return
        thread = current_thread()
        if thread in busy:
            return
        busy.add(thread)
        try:
            frame: types.FrameType | None = caller(1)
            while frame is not None and frame.f_code.co_filename.startswith(on_behalf):
                frame = frame.f_back
            if frame is None:
                return
            found = agents_file(frame.f_code.co_filename)
            if found is None or not agents_code(frame.f_code, found):
                return
            seen = (what, found, frame.f_lineno or 0)
            if seen not in sent and len(sent) < _MAX_RECORDS:
                sent.add(seen)
                send({"monitor": {"event": what, "file": found, "line": seen[2]}})
        finally:
            busy.discard(thread)

    sys.addaudithook(hook)


class Channel:
    """Where the reporter sends its records, once it holds the run's key."""

    def __init__(self, key: bytes, fd: int, settings: dict[str, Any]) -> None:
        self._key, self._fd, self._sequence = key, fd, 0
        # Tests run a second time, in reverse order, after the others.
        self.repeat = frozenset(settings.get("repeat") or ())

    @classmethod
    def opened(cls) -> Channel | None:
        """The observer's channel, its key read and its pipe closed, with the runtime monitor
        watching; None when the run was not started by the observer, a wrapper closed its pipes,
        or another reporter of the same run took the key (only the first one reports)."""
        fds = os.environ.pop(ENVIRONMENT, None)
        if fds is None:
            return None
        try:
            (key_fd, key_pipe), (records_fd, records_pipe) = (
                (int(number) for number in fd.split(":")) for fd in fds.split()
            )
            # A wrapper that closed them (Python's subprocess does) may have left the numbers
            # to files of its own: only the observer's own pipes are used.
            for fd, inode in ((key_fd, key_pipe), (records_fd, records_pipe)):
                found = os.fstat(fd)
                if not stat.S_ISFIFO(found.st_mode) or found.st_ino != inode:
                    return None
            made_ns = os.fstat(key_fd).st_ctime_ns
            with os.fdopen(key_fd, "rb") as pipe:
                key, _, rest = pipe.read(_MAX_KEY_PIPE).partition(b"\n")
                given, _, listed = rest.partition(b"\n")
            os.set_inheritable(records_fd, False)
            settings = json.loads(given or b"{}")
        except (OSError, ValueError):
            return None
        if not key:
            return None
        _not_dumpable()
        channel = cls(key, records_fd, settings)
        install(watched(listed, made_ns), channel.send)
        return channel

    def send(self, record: dict[str, Any]) -> None:
        if self._fd < 0:
            return  # the session was ended already (by a conftest calling the hook early)
        body = json.dumps({"seq": self._sequence, **record}, separators=(",", ":")).encode()
        self._sequence += 1
        mac = hmac.new(self._key, body, hashlib.sha256).hexdigest().encode()
        line = memoryview(mac + b" " + body + b"\n")
        while line:
            line = line[os.write(self._fd, line) :]

    def end(self) -> None:
        self.send({"end": True})
        os.close(self._fd)  # an atexit handler finds nothing left to write to
        self._fd = -1


def _not_dumpable() -> None:
    """Other processes of the run's user (a test's child, a leftover) may not read this one's
    memory, where the key now is, nor its descriptors."""
    with contextlib.suppress(ImportError, OSError, AttributeError):
        import ctypes  # noqa: PLC0415 - an interpreter may lack it; the report does not need it

        ctypes.CDLL(None).prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)
