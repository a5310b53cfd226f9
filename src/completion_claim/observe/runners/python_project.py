"""What ``claim init`` reads of a Python project: where its tests are, whether pytest or the
standard library's unittest runs them, and where it declares its test dependencies.

Read as data (no file of the project is run or imported): test modules in any ``tests``/``test``
folder down to ``src/<package>/tests`` (toolz keeps them in ``toolz/tests/``, simplejson in
``simplejson/tests/``), and the declarations pip installs from (``pyproject.toml``'s extras and
dependency groups, ``setup.cfg``'s and ``setup.py``'s ``extras_require``, requirements files).
"""

from __future__ import annotations

import configparser
import os
import re
import tomllib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

UNITTEST_COMMAND = ("python", "-m", "unittest")
_TEST_FOLDERS = frozenset({"tests", "test"})
# Where no project keeps its own tests: environments, builds, other ecosystems' packages.
_NOT_SEARCHED = frozenset({"node_modules", "site-packages", "build", "dist", "venv", "env"})
_TEST_FOLDER_DEPTH = 3  # tests/, <package>/tests/, src/<package>/tests/
_MAX_MODULES = 1000
_MAX_READ = 1 << 20
_PYTEST_IMPORT = re.compile(rb"^[ \t]*(import|from)[ \t]+pytest\b", re.MULTILINE)
# A TestCase class (unittest.TestCase, TestCase, a project's own base named ...TestCase), and a
# test function at module level, which unittest never runs (a pytest test that only borrows
# unittest.mock).
_TEST_CASE = re.compile(rb"^class[ \t]+\w+[ \t]*\([^)]*TestCase\b", re.MULTILINE)
_TEST_FUNCTION = re.compile(rb"^(async[ \t]+)?def[ \t]+test", re.MULTILINE)
_PYTEST_FILES = ("pytest.ini", ".pytest.ini", "pytest.toml", ".pytest.toml", "conftest.py")
_PYTEST_SECTIONS = (
    ("pyproject.toml", "[tool.pytest"),
    ("setup.cfg", "[tool:pytest]"),
    ("tox.ini", "[pytest]"),
)
# The names projects give the extra, group or requirements file their tests need.
_TEST_NAME = re.compile(r"(?i).*test.*|dev|develop|development")
_REQUIREMENTS = re.compile(r"(?i).*requirements.*\.txt")
_SETUP_PY_EXTRA = re.compile(r"""['"]([A-Za-z0-9_.-]+)['"]\s*:""")


def _test_module(name: str) -> bool:
    return name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py"))


def _searched(name: str) -> bool:
    return not name.startswith(".") and name not in _NOT_SEARCHED and name != "__pycache__"


def find_test_modules(root: Path) -> list[Path]:
    """The test modules at ``root``'s top and in its test folders (relative paths, sorted)."""
    found: list[Path] = []
    for folder, folders, files in os.walk(root):
        here = Path(folder)
        depth = len(here.relative_to(root).parts)
        in_tests = any(part in _TEST_FOLDERS for part in here.relative_to(root).parts)
        folders[:] = sorted(f for f in folders if _searched(f) and (
            in_tests or depth < _TEST_FOLDER_DEPTH or f in _TEST_FOLDERS))  # fmt: skip
        if in_tests or depth == 0:
            found += (here.relative_to(root) / name for name in sorted(files) if _test_module(name))
        if len(found) >= _MAX_MODULES:
            break
    return found[:_MAX_MODULES]


def _read(path: Path) -> bytes:
    try:
        with path.open("rb") as handle:
            return handle.read(_MAX_READ)
    except OSError:
        return b""


@dataclass(frozen=True)
class Declared:
    """Where a project declares what its tests need: each place as a person names it, the
    requirements ``pip install`` takes for them without installing the project itself (whose
    code the tests import from the run's copy), and whether pytest is one of them."""

    names: tuple[str, ...] = ()
    pip: tuple[str, ...] = ()
    pytest: bool = False


@dataclass(frozen=True)
class PythonTests:
    """A Python project's tests as ``claim init`` finds them."""

    modules: tuple[Path, ...]
    pytest_configured: bool  # a pytest configuration file or section, a conftest.py
    unittest_modules: bool  # every module has TestCases and no test function, none imports pytest
    # ``python -m unittest`` finds every module: each folder down to it is a package.
    discoverable: bool
    declared: Declared

    @property
    def unittest(self) -> bool:
        """unittest runs them: every module is unittest's, and nothing names pytest."""
        return (
            bool(self.modules)
            and self.unittest_modules
            and not self.pytest_configured
            and not self.declared.pytest
        )


def python_tests(root: Path) -> PythonTests:
    modules = find_test_modules(root)
    texts = [_read(root / module) for module in modules]
    configured = (
        any((root / name).is_file() for name in _PYTEST_FILES)
        or any(marker.encode() in _read(root / name) for name, marker in _PYTEST_SECTIONS)
        or any((root / module.parent / "conftest.py").is_file() for module in modules)
    )
    unittest_modules = all(
        _TEST_CASE.search(text)
        and not _TEST_FUNCTION.search(text)
        and not _PYTEST_IMPORT.search(text)
        for text in texts
    )
    discoverable = all(
        (root.joinpath(*module.parts[: i + 1]) / "__init__.py").is_file()
        for module in modules
        for i in range(len(module.parts) - 1)
    )
    return PythonTests(
        tuple(modules), configured, unittest_modules, discoverable, declared_dependencies(root)
    )


def unittest_command(tests: PythonTests) -> tuple[str, ...] | None:
    """The command that runs a project of unittest's with unittest: its discovery from the top
    when it finds every module, else from the one test folder holding them all; None when
    unittest would miss some (pytest finds them anywhere)."""
    if not tests.unittest:
        return None
    if tests.discoverable:
        return UNITTEST_COMMAND
    folders = {module.parent for module in tests.modules}
    if len(folders) == 1 and len(next(iter(folders)).parts) == 1:
        return (*UNITTEST_COMMAND, "discover", "-s", next(iter(folders)).as_posix())
    return None


def declared_dependencies(root: Path) -> Declared:
    """Where the project at ``root`` declares what its tests need."""
    names: list[str] = []
    wanted: list[str] = []
    project = _toml(root / "pyproject.toml").get("project")
    project = project if isinstance(project, dict) else {}
    extras = _test_entries(project.get("optional-dependencies"))
    if extras:
        names.append(f"pyproject.toml extra [{','.join(extras)}]")
        wanted += _strings(project.get("dependencies")) + [r for e in extras.values() for r in e]
    groups = _test_entries(_toml(root / "pyproject.toml").get("dependency-groups"))
    names += (f"dependency group {group}" for group in groups)
    wanted += (r for group in groups.values() for r in group)
    for place, found in (
        ("setup.cfg", _setup_cfg_extras(root)),
        ("setup.py", _setup_py_extras(root)),
    ):
        if found:
            names.append(f"{place} extra [{','.join(found)}]")
            wanted += (r for e in found.values() for r in e)
    files = _requirements_files(root)
    names += files
    pip = tuple(dict.fromkeys(wanted)) + tuple(arg for f in files for arg in ("-r", f))
    listed = [*wanted, *(_read(root / f).decode("utf-8", "replace") for f in files)]
    pytest = any(_PYTEST_REQUIREMENT.search(text) for text in listed)
    return Declared(tuple(names), pip, pytest)


_PYTEST_REQUIREMENT = re.compile(r"(?im)^\s*pytest(?![\w.-])")
_QUOTED_PYTEST = re.compile(r"""['"]pytest(?![\w.-])""")


def _toml(path: Path) -> dict[str, Any]:
    try:
        return tomllib.loads(_read(path).decode("utf-8", "replace"))
    except tomllib.TOMLDecodeError:
        return {}


def _strings(value: object) -> list[str]:
    """The requirement strings of a list (a dependency group's ``include-group`` tables are not
    requirements)."""
    return [item for item in value if isinstance(item, str)] if isinstance(value, list) else []


def _test_entries(table: object) -> dict[str, list[str]]:
    if not isinstance(table, dict):
        return {}
    return {str(k): _strings(v) for k, v in table.items() if _TEST_NAME.fullmatch(str(k))}


def _setup_cfg_extras(root: Path) -> dict[str, list[str]]:
    parser = configparser.ConfigParser(interpolation=None)
    try:
        parser.read_string(_read(root / "setup.cfg").decode("utf-8", "replace"))
    except configparser.Error:
        return {}
    if not parser.has_section("options.extras_require"):
        return {}
    section = parser["options.extras_require"]
    return {
        name: [line.strip() for line in section[name].splitlines() if line.strip()]
        for name in section
        if _TEST_NAME.fullmatch(name)
    }


def _setup_py_extras(root: Path) -> dict[str, list[str]]:
    """The test extras ``setup.py`` names in ``extras_require``, as a reading of its text can
    find them (it is never run): their names only, and pytest when it is written there."""
    text = _read(root / "setup.py").decode("utf-8", "replace")
    _, marker, after = text.partition("extras_require")
    if not marker:
        return {}
    found = [name for name in _SETUP_PY_EXTRA.findall(after) if _TEST_NAME.fullmatch(name)]
    pytest = ["pytest"] if _QUOTED_PYTEST.search(after) else []
    return dict.fromkeys(dict.fromkeys(found), pytest)


def _requirements_files(root: Path) -> list[str]:
    """Requirements files the tests need: at the top (all but the documentation's), named for
    tests or development in ``requirements/``, and ``tests/requirements.txt``."""
    found = [
        name
        for name in _listing(root)
        if _REQUIREMENTS.fullmatch(name) and "doc" not in name.lower()
    ]
    found += (
        f"requirements/{name}"
        for name in _listing(root / "requirements")
        if name.endswith((".txt", ".in")) and _TEST_NAME.fullmatch(name.rsplit(".", 1)[0])
    )
    found += (
        f"{folder}/{name}"
        for folder in sorted(_TEST_FOLDERS)
        for name in _listing(root / folder)
        if _REQUIREMENTS.fullmatch(name)
    )
    return found


def _listing(folder: Path) -> list[str]:
    try:
        return sorted(name for name in os.listdir(folder) if (folder / name).is_file())
    except OSError:
        return []
