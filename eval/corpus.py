"""The corpus: projects pinned by version and sha256, each with its bugs, read from a TOML file.

A bug is a search/replace of one source file (``mutation``), applied to the pristine project to
make the start state. Every other edit of a bug (``wrong_fix``, ``special_case``, ...) is a
search/replace applied to the start state. Each search must occur exactly once, so an edit never
lands somewhere the corpus did not mean.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ECOSYSTEMS = ("python", "node", "go", "rust")
ARCHIVES = ("tar.gz", "deb")


class CorpusError(Exception):
    """The corpus file is wrong: one line naming the place."""


@dataclass(frozen=True)
class Edit:
    """Replace the one occurrence of ``search`` in ``path`` (relative to the project root)."""

    path: str
    search: str
    replace: str

    def apply(self, root: Path) -> None:
        target = root / self.path
        text = target.read_text()
        found = text.count(self.search)
        if found != 1:
            raise CorpusError(f"{self.path}: the search text occurs {found} times, not once")
        target.write_text(text.replace(self.search, self.replace))

    def reverted(self) -> Edit:
        return Edit(self.path, self.replace, self.search)


@dataclass(frozen=True)
class Edits:
    """One or more edits, applied in order."""

    edits: tuple[Edit, ...]

    def apply(self, root: Path) -> None:
        for edit in self.edits:
            edit.apply(root)

    def reverted(self) -> Edits:
        return Edits(tuple(edit.reverted() for edit in reversed(self.edits)))

    @property
    def path(self) -> str:
        return self.edits[0].path


@dataclass(frozen=True)
class Bug:
    id: str
    description: str
    mutation: Edits  # pristine -> start state; its reverse is the honest fix
    wrong_fix: Edits
    tests: tuple[str, ...]  # "file::function" of the tests the mutation makes fail
    tamper_assert: Edits  # the tests' expectations changed to what the bug returns
    special_case: Edits | None = None  # source answers the visible tests' inputs alone
    tamper_skip: Edits | None = None  # where the ecosystem has no generic skip
    impossible: Edits | None = None  # a test's expected value made to contradict the spec

    def by_file(self) -> dict[str, list[str]]:
        """The failing tests' functions, by file."""
        found: dict[str, list[str]] = {}
        for test in self.tests:
            path, name = test.split("::", 1)
            found.setdefault(path, []).append(name)
        return found


@dataclass(frozen=True)
class Project:
    name: str
    ecosystem: str
    version: str
    url: str
    sha256: str
    archive: str
    root: str  # the project's folder inside the archive
    test_command: tuple[str, ...]  # the project's own, as its README or package.json says
    registry: str
    lockfile: str | None = None  # relative to the corpus: added to the import, say so
    bugs: tuple[Bug, ...] = field(default_factory=tuple)
    runner: str = ""  # the test runner, where the ecosystem has several (node: mocha, node-test)
    # The operator's tests the agent never sees, a folder relative to the corpus laid into the
    # strongest set-up's runs (hidden_tests): inputs the project's own tests do not use.
    hidden_tests: str | None = None

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"


def load(path: Path) -> tuple[Project, ...]:
    try:
        data = tomllib.loads(path.read_text())
    except (OSError, tomllib.TOMLDecodeError) as error:
        raise CorpusError(f"{path}: {error}") from error
    projects = data.get("project")
    if not isinstance(projects, list) or not projects:
        raise CorpusError(f"{path}: no [[project]]")
    return tuple(_project(path, index, entry) for index, entry in enumerate(projects))


def _project(path: Path, index: int, entry: dict[str, Any]) -> Project:
    where = f"{path}: project[{index}]"
    ecosystem = _text(entry, "ecosystem", where)
    if ecosystem not in ECOSYSTEMS:
        raise CorpusError(f"{where}.ecosystem: {ecosystem!r} is none of {', '.join(ECOSYSTEMS)}")
    archive = _text(entry, "archive", where)
    if archive not in ARCHIVES:
        raise CorpusError(f"{where}.archive: {archive!r} is none of {', '.join(ARCHIVES)}")
    command = entry.get("test_command")
    if not isinstance(command, list) or not all(isinstance(word, str) for word in command):
        raise CorpusError(f"{where}.test_command: a list of strings")
    bugs = entry.get("bug")
    if not isinstance(bugs, list) or len(bugs) < 2:
        raise CorpusError(f"{where}: at least two [[project.bug]]")
    lockfile = entry.get("lockfile")
    hidden = entry.get("hidden_tests")
    if hidden is not None and not (isinstance(hidden, str) and (path.parent / hidden).is_dir()):
        raise CorpusError(f"{where}.hidden_tests: a folder beside the corpus")
    runner = entry.get("runner", "")
    if not isinstance(runner, str):
        raise CorpusError(f"{where}.runner: a string")
    return Project(
        name=_text(entry, "name", where),
        ecosystem=ecosystem,
        version=_text(entry, "version", where),
        url=_text(entry, "url", where),
        sha256=_text(entry, "sha256", where),
        archive=archive,
        root=_text(entry, "root", where),
        test_command=tuple(command),
        registry=_text(entry, "registry", where),
        lockfile=lockfile if isinstance(lockfile, str) else None,
        bugs=tuple(_bug(f"{where}.bug[{n}]", bug) for n, bug in enumerate(bugs)),
        runner=runner,
        hidden_tests=hidden,
    )


def _bug(where: str, entry: dict[str, Any]) -> Bug:
    source = _text(entry, "file", where)
    tests = _names(entry, where)
    test_file = tests[0].split("::")[0]

    def edit(key: str, default_path: str) -> Edits | None:
        value = entry.get(key)
        if value is None:
            return None
        tables = value if isinstance(value, list) else [value]
        if not tables or not all(isinstance(table, dict) for table in tables):
            raise CorpusError(f"{where}.{key}: a table (or tables) of search and replace")
        return Edits(
            tuple(
                Edit(
                    path=table.get("file", default_path),
                    search=_text(table, "search", f"{where}.{key}"),
                    replace=_text(table, "replace", f"{where}.{key}", empty=True),
                )
                for table in tables
            )
        )

    def required(key: str, default_path: str) -> Edits:
        found = edit(key, default_path)
        if found is None:
            raise CorpusError(f"{where}: {key} is missing")
        return found

    return Bug(
        id=_text(entry, "id", where),
        description=_text(entry, "description", where),
        mutation=required("mutation", source),
        wrong_fix=required("wrong_fix", source),
        tests=tests,
        tamper_assert=required("tamper_assert", test_file),
        special_case=edit("special_case", source),
        tamper_skip=edit("tamper_skip", test_file),
        impossible=edit("impossible", test_file),
    )


def _names(entry: dict[str, Any], where: str) -> tuple[str, ...]:
    value = entry.get("tests")
    if (
        not isinstance(value, list)
        or not value
        or not all(isinstance(v, str) and "::" in v for v in value)
    ):
        raise CorpusError(f"{where}.tests: a list of the failing tests, as file::function")
    return tuple(value)


def _text(entry: dict[str, Any], key: str, where: str, *, empty: bool = False) -> str:
    value = entry.get(key)
    if not isinstance(value, str) or not (value or empty):
        raise CorpusError(f"{where}.{key}: a non-empty string is needed")
    return value
