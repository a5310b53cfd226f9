"""``claim.toml``: the operator's gate configuration (policy, checks, keys, limits).

The file is read with :mod:`tomllib`, which reports no positions for well-formed TOML. Every
error still names a line: :class:`_Lines` scans the text once for table headers (``[gate]``,
the n-th ``[[check]]``) and the keys assigned under each, so an error about a key points at the
line that assigns it, an error about a missing key at its table's header. Keys inside inline
tables and multi-line values are found at the line of the key that holds them.

``${NAME}`` in any string value is replaced from the environment when the file is loaded; a
missing variable is an error naming it. Secrets therefore live only in the environment: the
observers redact them from what they record (URL passwords, the readback's target).
"""

from __future__ import annotations

import contextlib
import fnmatch
import functools
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import textwrap
import tomllib
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .._json import dumps
from .._state import default_runs_dir
from ..errors import ClaimError, InvalidDocument, ObservationFailed, UsageError
from ..model import (
    DOM_ASSERTION,
    ENDPOINT_HEALTH,
    KNOWN_CHECK_TYPES,
    STATE_READBACK,
    TEST_RUN,
    Policy,
    load_policy,
    parse_policy,
)
from ..observe.repository import object_format_of
from ..observe.runners.base import Detected
from ..observe.runners.pytest import PYTEST_COMMAND
from ..observe.runners.python_project import Declared, declared_dependencies

CONFIG_NAME = "claim.toml"
DEFAULT_MAX_BLOCKS = 3
DEFAULT_TEST_TIMEOUT_S = 600.0
DEFAULT_PROBE_TIMEOUT_S = 10.0
DEFAULT_POLICY_MAX_AGE_S = 3600.0
_PYTEST_IMPORT_TIMEOUT_S = 30.0
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")
_HEADER = re.compile(r"\s*(\[\[?)\s*([^\]]+?)\s*\]\]?\s*(#.*)?$")
_KEY = re.compile(r"\s*(\"[^\"]*\"|'[^']*'|[A-Za-z0-9_-]+)\s*[.=]")


class ConfigError(ClaimError):
    """claim.toml cannot be used; ``str()`` is ``claim.toml:LINE: problem``."""


class InvalidPolicy(ConfigError):
    """The operator's policy in (or named by) claim.toml is not a valid policy (exit 3)."""


@dataclass(frozen=True)
class TestRunCheck:
    line: int
    command: tuple[str, ...]
    trusted_ref: str | None = None
    protect: tuple[str, ...] = ()
    python: str | None = None
    env: tuple[str, ...] = ()
    network: bool = False
    require_tests: tuple[str, ...] = ()
    timeout_s: float = DEFAULT_TEST_TIMEOUT_S
    junit: str | None = None
    python_line: int | None = None  # where ``python`` is set, for errors about its value
    toolchain: str | None = None  # the operator's toolchain for a runner other than Python's
    baseline: bool = (
        True  # run once at the start (or on the trusted commit): its tests stay required
    )
    hidden_tests: Path | None = None  # the operator's tests the agent never sees, laid into the run
    check_type: str = field(default=TEST_RUN, init=False)

    @property
    def chosen_toolchain(self) -> str | None:
        """``python`` or ``toolchain``: what the runner runs with (one key of the two)."""
        return self.python if self.python is not None else self.toolchain


@dataclass(frozen=True)
class EndpointHealthCheck:
    line: int
    url: str
    target: str  # the deploy mutation's target
    expect_status: int = 200
    expect_json: Mapping[str, str] = field(default_factory=dict)  # pointer -> VALUE text
    expect_header: Mapping[str, str] = field(default_factory=dict)
    method: str = "GET"
    timeout_s: float = DEFAULT_PROBE_TIMEOUT_S
    check_type: str = field(default=ENDPOINT_HEALTH, init=False)


@dataclass(frozen=True)
class StateReadbackCheck:
    line: int
    url: str
    target: str  # the state_write mutation's target
    table: str | None = None
    key: Mapping[str, str] = field(default_factory=dict)  # column -> VALUE text
    query: str | None = None
    params: Mapping[str, str] = field(default_factory=dict)
    expect: Mapping[str, str] = field(default_factory=dict)  # field -> VALUE text
    expect_absent: bool = False
    timeout_s: float = DEFAULT_PROBE_TIMEOUT_S
    allow_privileged_role: bool = False
    allow_views: tuple[str, ...] = ()
    check_type: str = field(default=STATE_READBACK, init=False)


@dataclass(frozen=True)
class DomAssertionCheck:
    """Experimental: a page read in the gate's own browser (``claim observe dom``)."""

    line: int
    url: str
    target: str  # the ui_action mutation's target
    locator: str
    expect_text: str | None = None
    expect_includes: tuple[str, ...] = ()
    expect_attr: str | None = None  # NAME=VALUE
    expect_count: int | None = None
    expect_url_path: str | None = None
    wait_for: str | None = None
    prep: tuple[str, ...] = ()
    storage_state: str | None = None
    allow_hosts: tuple[str, ...] = ()
    chromium: str | None = None
    timeout_s: float = DEFAULT_PROBE_TIMEOUT_S
    check_type: str = field(default=DOM_ASSERTION, init=False)


CheckConfig = TestRunCheck | EndpointHealthCheck | StateReadbackCheck | DomAssertionCheck
ProbedCheck = EndpointHealthCheck | StateReadbackCheck | DomAssertionCheck
"""The checks observed once more at ``claim gate --start``, for their baselines."""


@dataclass(frozen=True)
class GateConfig:
    path: Path
    policy: Policy
    checks: tuple[CheckConfig, ...]
    sign_key: Path | None
    runs_dir: Path
    max_blocks: int = DEFAULT_MAX_BLOCKS
    base: str | None = None  # a full commit id
    timeout_s: float | None = None  # the whole gate run; None: the sum of the checks' own
    ignore: tuple[str, ...] = ()  # globs of work-tree paths that are no change (never protected)
    # Globs of work-tree paths whose test-aware code (gate/test_aware.py) the operator allows.
    allow_test_aware: tuple[str, ...] = ()
    # Every file the configuration was read from or names for the gate to read, claim.toml
    # first: inside the work tree each is the operator's, changed or not.
    files: tuple[Path, ...] = ()
    # What ${NAME} was replaced from, to read the operator's own copy again when the agent
    # changed the one in the work tree.
    environ: Mapping[str, str] = field(default_factory=dict, repr=False, compare=False)


def find_config(start: Path) -> Path | None:
    """``claim.toml`` in ``start`` or a parent, stopping at the repository root (the folder
    holding ``.git``)."""
    folder = start.resolve()
    while True:
        candidate = folder / CONFIG_NAME
        if candidate.is_file():
            return candidate
        if (folder / ".git").exists() or folder.parent == folder:
            return None
        folder = folder.parent


def load_config(
    path: Path, environ: Mapping[str, str], read: Callable[[Path], bytes] = Path.read_bytes
) -> GateConfig:
    """``read`` gives each file's bytes (the gate passes the operator's stored copies)."""
    try:
        text = read(path).decode("utf-8")
    except OSError as exc:
        raise ConfigError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise ConfigError(f"{path}: not UTF-8 text") from None
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        # tomllib's message ends "(at line N, column M)", or "(at end of document)": an
        # unfinished value or header, which is on the last line that holds anything.
        found = re.search(r"at line (\d+)", str(exc))
        where = found.group(1) if found else str(len(text.rstrip().splitlines()) or 1)
        problem = re.sub(r"\s*\((at line \d+, column \d+|at end of document)\)$", "", str(exc))
        raise ConfigError(f"{path.name}:{where}: not valid TOML: {problem}") from None
    return _Reader(path, text, environ, read).config(document)


class _Lines:
    """Where each table and key is in the text (tomllib gives no positions)."""

    def __init__(self, text: str) -> None:
        self.headers: dict[tuple[str, int], int] = {}
        self.keys: dict[tuple[str, int, str], int] = {}
        counts: dict[str, int] = {}
        table, index = "", 0
        in_string: str | None = None
        for number, line in enumerate(text.splitlines(), start=1):
            if in_string is not None:
                if line.count(in_string) % 2 == 1:
                    in_string = None
                continue
            header = _HEADER.match(line)
            if header is not None and "=" not in line.split("#")[0].split("]")[0]:
                table = header.group(2).replace(" ", "")
                index = counts.get(table, 0) if header.group(1) == "[[" else 0
                if header.group(1) == "[[":
                    counts[table] = index + 1
                self.headers.setdefault((table, index), number)
                continue
            key = _KEY.match(line)
            if key is not None:
                self.keys.setdefault((table, index, key.group(1).strip("\"'")), number)
            for quote in ('"""', "'''"):
                if line.count(quote) % 2 == 1:
                    in_string = quote

    def of(self, table: str, index: int, key: str | None) -> int:
        if key is not None and (table, index, key) in self.keys:
            return self.keys[(table, index, key)]
        return self.headers.get((table, index), 1)


class _Reader:
    def __init__(
        self, path: Path, text: str, environ: Mapping[str, str], read: Callable[[Path], bytes]
    ) -> None:
        self.path = path
        self.lines = _Lines(text)
        self.environ = environ
        self.read = read
        self.files = [path]

    def error(
        self,
        table: str,
        index: int,
        key: str | None,
        problem: str,
        kind: type[ConfigError] = ConfigError,
    ) -> ConfigError:
        return kind(f"{self.path.name}:{self.lines.of(table, index, key)}: {problem}")

    def config(self, document: dict[str, Any]) -> GateConfig:
        self.only(document, "", 0, "the top level", {"policy", "gate", "check"})
        gate = self.table(document, "gate", "", 0)
        self.only(gate, "gate", 0, "[gate]", _GATE_KEYS)
        checks = self.checks(document.get("check", []))
        sign_key = self.optional(gate, "gate", 0, "sign_key", str)
        runs_dir = self.optional(gate, "gate", 0, "runs_dir", str)
        max_blocks = self.optional(gate, "gate", 0, "max_blocks", int)
        if max_blocks is not None and max_blocks < 0:
            raise self.error("gate", 0, "max_blocks", "max_blocks must be 0 or more")
        timeout_s = self.seconds(gate, "gate", 0, "timeout_s")
        base = self.optional(gate, "gate", 0, "base", str)
        if base is not None and object_format_of(base) is None:
            raise self.error(
                "gate", 0, "base",
                f"base must be a full commit id (git rev-parse {base}), not {base!r}: a name in "
                "the agent's repository is the agent's to move",
            )  # fmt: skip
        ignore = self.strings(gate, "gate", 0, "ignore")
        for glob in ignore:
            hit = ignored_protected(glob, checks)
            if hit is not None:
                raise self.error(
                    "gate", 0, "ignore",
                    f"ignore: {glob!r} matches {hit}, a path that decides what the tests do; "
                    "a protected path is never ignored",
                )  # fmt: skip
        allow_test_aware = self.strings(gate, "gate", 0, "allow_test_aware")
        policy = self.policy(document, checks)
        self.files += [Path(c.storage_state) for c in checks
                       if isinstance(c, DomAssertionCheck) and c.storage_state]  # fmt: skip
        return GateConfig(
            path=self.path,
            policy=policy,
            checks=checks,
            sign_key=None if sign_key is None else self.relative(sign_key),
            runs_dir=default_runs_dir(self.environ)
            if runs_dir is None
            else self.relative(runs_dir),
            max_blocks=DEFAULT_MAX_BLOCKS if max_blocks is None else max_blocks,
            base=base,
            timeout_s=timeout_s,
            ignore=ignore,
            allow_test_aware=allow_test_aware,
            files=tuple(dict.fromkeys(self.files)),
            environ=dict(self.environ),
        )

    # --- values ---------------------------------------------------------------------------

    def relative(self, text: str) -> Path:
        """A path in the file is relative to the file's folder, never to the current one."""
        return (self.path.parent / os.path.expanduser(text)).absolute()

    def only(
        self, table_value: Mapping[str, Any], table: str, index: int, name: str, known: set[str]
    ) -> None:
        for key in table_value:
            if key not in known:
                raise self.error(table, index, key, f"unknown key {key!r} in {name}")

    def table(self, parent: Mapping[str, Any], key: str, table: str, index: int) -> dict[str, Any]:
        value = parent.get(key, {})
        if not isinstance(value, dict):
            raise self.error(table, index, key, f"{key} must be a table")
        return value

    def substitute(self, text: str, table: str, index: int, key: str) -> str:
        def value(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in self.environ:
                raise self.error(
                    table, index, key, f"{key}: environment variable {name} is not set"
                )
            return self.environ[name]

        return _VARIABLE.sub(value, text)

    def optional(
        self, values: Mapping[str, Any], table: str, index: int, key: str, kind: type[Any]
    ) -> Any:
        if key not in values:
            return None
        return self.typed(values[key], table, index, key, kind)

    def typed(self, value: Any, table: str, index: int, key: str, kind: type[Any]) -> Any:
        # bool is an int to Python, never to the operator.
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            raise self.error(table, index, key, f"{key} must be {_KIND_NAMES[kind]}")
        if isinstance(value, str):
            return self.substitute(value, table, index, key)
        return value

    def required(
        self, values: Mapping[str, Any], table: str, index: int, key: str, kind: type[Any]
    ) -> Any:
        if key not in values:
            raise self.error(table, index, None, f"missing required key {key!r}")
        return self.typed(values[key], table, index, key, kind)

    def seconds(self, values: Mapping[str, Any], table: str, index: int, key: str) -> float | None:
        if key not in values:
            return None
        value = values[key]
        if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
            raise self.error(table, index, key, f"{key} must be a number of seconds above 0")
        return float(value)

    def strings(
        self, values: Mapping[str, Any], table: str, index: int, key: str
    ) -> tuple[str, ...]:
        found = values.get(key, [])
        if not isinstance(found, list) or not all(isinstance(item, str) for item in found):
            raise self.error(table, index, key, f"{key} must be an array of strings")
        return tuple(self.substitute(item, table, index, key) for item in found)

    def assertions(
        self, values: Mapping[str, Any], table: str, index: int, key: str
    ) -> dict[str, str]:
        """A table of NAME -> value as the observers' VALUE text: a TOML string is a string
        (JSON-quoted); a number or boolean takes the observed value's type, as on the CLI."""
        found = values.get(key, {})
        if not isinstance(found, dict):
            raise self.error(table, index, key, f"{key} must be a table")
        texts: dict[str, str] = {}
        for name, value in found.items():
            if isinstance(value, str):
                texts[name] = dumps(self.substitute(value, table, index, key))
            elif isinstance(value, bool | int | float):
                texts[name] = dumps(value)
            else:
                raise self.error(
                    table, index, key, f"{key}.{name} must be a string, number or boolean"
                )
        return texts

    # --- policy ---------------------------------------------------------------------------

    def policy(self, document: Mapping[str, Any], checks: tuple[CheckConfig, ...]) -> Policy:
        given = document.get("policy")
        if given is None:
            # No policy named: require a supporting observation of each configured check type,
            # so that configuring a check means it must pass.
            requires = tuple(sorted({check.check_type for check in checks}))
            return Policy("claim-gate/default", requires, DEFAULT_POLICY_MAX_AGE_S)
        if isinstance(given, str):
            path = self.relative(self.substitute(given, "", 0, "policy"))
            self.files.append(path)
            try:
                return load_policy(self.read(path))
            except OSError as exc:
                raise self.error(
                    "", 0, "policy", f"policy: cannot read {path}: {exc.strerror or exc}"
                ) from None
            except InvalidDocument as error:
                raise self.error(
                    "", 0, "policy", f"policy {path}: {error}", InvalidPolicy
                ) from None
        if not isinstance(given, dict):
            raise self.error("", 0, "policy", "policy must be a table or a path to a JSON file")
        try:
            return parse_policy(given)
        except InvalidDocument as error:
            table, key = _policy_place(error.path)
            raise self.error(table, 0, key, f"[policy] {error}", InvalidPolicy) from None

    # --- checks ---------------------------------------------------------------------------

    def checks(self, tables: Any) -> tuple[CheckConfig, ...]:
        if not isinstance(tables, list):
            raise self.error("", 0, "check", "check must be an array of tables ([[check]])")
        return tuple(self.check(table, index) for index, table in enumerate(tables))

    def check(self, values: Any, index: int) -> CheckConfig:
        name = f"[[check]] {index + 1}"
        if not isinstance(values, dict):
            raise self.error("check", index, None, f"{name} must be a table")
        kind = self.required(values, "check", index, "type", str)
        build = _CHECK_BUILDERS.get(kind)
        if build is None:
            raise self.error(
                "check", index, "type",
                f"{name}: unknown type {kind!r} (expected {', '.join(KNOWN_CHECK_TYPES)})",
            )  # fmt: skip
        self.only(values, "check", index, name, _CHECK_KEYS[kind] | {"type"})
        line = self.lines.of("check", index, None)
        try:
            check = build(self, values, index, line)
            validate_check(check, self.path.parent)
        except UsageError as error:
            raise self.error("check", index, None, f"{name} ({kind}): {error}") from None
        return check

    def test_run(self, values: Mapping[str, Any], index: int, line: int) -> TestRunCheck:
        if "command" not in values:
            raise self.error("check", index, None, "missing required key 'command'")
        command = self.strings(values, "check", index, "command")
        if not command:
            raise self.error("check", index, "command", "command must not be empty")
        if "python" in values and "toolchain" in values:
            raise self.error(
                "check", index, "toolchain", "set python (a Python runner) or toolchain, not both"
            )
        hidden = self.optional(values, "check", index, "hidden_tests", str)
        return TestRunCheck(
            line=line,
            command=command,
            trusted_ref=self.optional(values, "check", index, "trusted_ref", str),
            protect=self.strings(values, "check", index, "protect"),
            python=self.optional(values, "check", index, "python", str),
            env=self.strings(values, "check", index, "env"),
            network=bool(self.optional(values, "check", index, "network", bool)),
            require_tests=self.strings(values, "check", index, "require_tests"),
            timeout_s=self.seconds(values, "check", index, "timeout_s") or DEFAULT_TEST_TIMEOUT_S,
            junit=self.optional(values, "check", index, "junit", str),
            python_line=self.lines.of("check", index, "python") if "python" in values else None,
            toolchain=self.optional(values, "check", index, "toolchain", str),
            baseline=self.optional(values, "check", index, "baseline", bool) is not False,
            hidden_tests=None if hidden is None else self.relative(hidden),
        )

    def endpoint_health(
        self, values: Mapping[str, Any], index: int, line: int
    ) -> EndpointHealthCheck:
        status = self.optional(values, "check", index, "expect_status", int)
        if status is not None and not 100 <= status <= 599:
            raise self.error("check", index, "expect_status", "expect_status must be 100..599")
        return EndpointHealthCheck(
            line=line,
            url=self.required(values, "check", index, "url", str),
            target=self.required(values, "check", index, "target", str),
            expect_status=200 if status is None else status,
            expect_json=self.assertions(values, "check", index, "expect_json"),
            expect_header=self.plain(values, index, "expect_header"),
            method=self.optional(values, "check", index, "method", str) or "GET",
            timeout_s=self.seconds(values, "check", index, "timeout_s") or DEFAULT_PROBE_TIMEOUT_S,
        )

    def state_readback(
        self, values: Mapping[str, Any], index: int, line: int
    ) -> StateReadbackCheck:
        return StateReadbackCheck(
            line=line,
            url=self.required(values, "check", index, "url", str),
            target=self.required(values, "check", index, "target", str),
            table=self.optional(values, "check", index, "table", str),
            key=self.plain(values, index, "key"),
            query=self.optional(values, "check", index, "query", str),
            params=self.plain(values, index, "params"),
            expect=self.assertions(values, "check", index, "expect"),
            expect_absent=bool(self.optional(values, "check", index, "expect_absent", bool)),
            timeout_s=self.seconds(values, "check", index, "timeout_s") or DEFAULT_PROBE_TIMEOUT_S,
            allow_privileged_role=bool(
                self.optional(values, "check", index, "allow_privileged_role", bool)
            ),
            allow_views=self.strings(values, "check", index, "allow_views"),
        )

    def dom_assertion(self, values: Mapping[str, Any], index: int, line: int) -> DomAssertionCheck:
        count = self.optional(values, "check", index, "expect_count", int)
        if count is not None and count < 0:
            raise self.error("check", index, "expect_count", "expect_count must be 0 or more")
        storage_state = self.optional(values, "check", index, "storage_state", str)
        return DomAssertionCheck(
            line=line,
            url=self.required(values, "check", index, "url", str),
            target=self.required(values, "check", index, "target", str),
            locator=self.required(values, "check", index, "locator", str),
            expect_text=self.optional(values, "check", index, "expect_text", str),
            expect_includes=self.strings(values, "check", index, "expect_includes"),
            expect_attr=self.optional(values, "check", index, "expect_attr", str),
            expect_count=count,
            expect_url_path=self.optional(values, "check", index, "expect_url_path", str),
            wait_for=self.optional(values, "check", index, "wait_for", str),
            prep=self.strings(values, "check", index, "prep"),
            storage_state=None if storage_state is None else str(self.relative(storage_state)),
            allow_hosts=self.strings(values, "check", index, "allow_hosts"),
            chromium=self.optional(values, "check", index, "chromium", str),
            timeout_s=self.seconds(values, "check", index, "timeout_s") or DEFAULT_PROBE_TIMEOUT_S,
        )

    def plain(self, values: Mapping[str, Any], index: int, key: str) -> dict[str, str]:
        """Key columns, query parameters, header values: text, whatever TOML type they have."""
        found = values.get(key, {})
        if not isinstance(found, dict) or not all(
            isinstance(v, str | int) and not isinstance(v, bool) for v in found.values()
        ):
            raise self.error("check", index, key, f"{key} must be a table of strings or integers")
        return {
            name: self.substitute(v, "check", index, key) if isinstance(v, str) else str(v)
            for name, v in found.items()
        }


def validate_check(check: CheckConfig, folder: Path) -> None:
    """Build the observer's own request once, so what it would refuse is refused at load time
    (a status-only endpoint check, a readback asserting nothing, a --junitxml in the command)."""
    if isinstance(check, TestRunCheck):
        from ..observe import test_run  # noqa: PLC0415

        test_run.prepare(check.command, folder, check.junit, check.require_tests, 1.0, ())
        return
    # A missing driver is a MissingExtra (a UsageError), reported at the check's line.
    if isinstance(check, DomAssertionCheck):
        dom_arguments(check)
        return
    if isinstance(check, EndpointHealthCheck):
        from ..observe.endpoint import endpoint_check  # noqa: PLC0415

        endpoint_check(
            check.url, check.method, check.expect_status, dict(check.expect_json),
            dict(check.expect_header), check.timeout_s, False,
        )  # fmt: skip
    else:
        from ..observe.readback import build_readback  # noqa: PLC0415

        build_readback(*readback_arguments(check))


def ignored_protected(glob: str, checks: Sequence[CheckConfig]) -> str | None:
    """A path of the kinds a test run protects (7.1) that ``glob`` matches, or None: an ignore
    list aimed at test files, their configuration or a check's ``protect`` globs is a mistake
    (the gate would never ignore those anyway). The gate's configuration is probed too."""
    from ..observe.runners import protected_examples  # noqa: PLC0415

    protect = [p for c in checks if isinstance(c, TestRunCheck) for p in c.protect]
    probes = [
        *protected_examples(),
        *_PROTECTED_PROBES,
        *(re.sub(r"[*?]", "x", p) for p in protect),
    ]
    return next((probe for probe in probes if fnmatch.fnmatchcase(probe, glob)), None)


def require_toolchains(config: GateConfig, root: Path) -> None:
    """Each test run's toolchain exists and lies outside the work tree, and a pytest check's
    interpreter can import pytest: otherwise every run would fail and the gate would blame the
    agent for the operator's setting. Checked by ``claim gate`` and ``--start`` before any work,
    naming the line (never ``--python``, which the observer's own messages say)."""
    with checking_toolchains(config, root) as confirm:
        confirm()


def require_lockfiles(config: GateConfig, root: Path) -> None:
    """Each test run that installs its dependencies finds the lockfile it installs from in the
    work tree (a Node project with none): else no run of it could ever be verified, and a start
    would record that silently. Checked by ``claim gate --start``, before anything is recorded;
    a gate judges the trusted ref's lockfile, which the observer reads itself."""
    from ..observe.runners import runner_for  # noqa: PLC0415

    for check in config.checks:
        if isinstance(check, TestRunCheck):
            runner = runner_for(check.command, check.junit)
            try:
                runner.dependencies(check.command, functools.partial(_read_file, root))
            except ObservationFailed as error:
                raise ConfigError(
                    f"{config.path.name}:{check.line}: test_run: {runner.name}: {error}"
                ) from None


def _read_file(root: Path, name: str) -> bytes | None:
    try:
        return (root / name).read_bytes()
    except OSError:
        return None


@contextlib.contextmanager
def checking_toolchains(config: GateConfig, root: Path) -> Iterator[Callable[[], None]]:
    """``require_toolchains``, whose pytest questions are asked of interpreters started now
    and answered when the callable given is called: a gate waits for them only before it
    records anything, not before its capture. Each is reaped on leaving."""
    asked: list[tuple[subprocess.Popen[bytes] | None, str]] = []

    def confirm() -> None:
        for process, complaint in asked:
            if not _finds_pytest(process):
                raise ConfigError(complaint)

    try:
        for check in config.checks:
            if isinstance(check, TestRunCheck):
                question = _pytest_question(config, check, root)
                if question is not None:
                    asked.append((_find_pytest(question[0]), question[1]))
        yield confirm
    finally:
        for process, _ in asked:
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()


def _pytest_question(config: GateConfig, check: TestRunCheck, root: Path) -> tuple[str, str] | None:
    """Refuses a toolchain that is missing or in the work tree; for a pytest check, the
    interpreter to ask whether it finds pytest, and the complaint when it does not."""
    from ..observe.runners import runner_for  # noqa: PLC0415
    from ..observe.runners.pytest import is_pytest  # noqa: PLC0415

    runner = runner_for(check.command, check.junit)
    if runner.ecosystem != "python":
        try:
            runner.toolchain(check.command, check.chosen_toolchain, root)
        except UsageError as error:
            raise ConfigError(f"{config.path.name}:{check.line}: test_run: {error}") from None
        return None
    pytest = is_pytest(check.command)
    where = f"{config.path.name}:{check.python_line or check.line}"
    if check.python is None:
        own = sys.executable
        return None if not pytest else (own, (
            f"{where}: test_run: claim's own interpreter {own} cannot import pytest (install "
            f"it: {own} -m pip install pytest, or set python = an interpreter outside the work "
            "tree that has the project's test dependencies)"
        ))  # fmt: skip
    found = shutil.which(check.python)
    if found is None:
        raise ConfigError(f"{where}: python: no interpreter {check.python!r}")
    executable = os.path.abspath(found)
    tree = os.path.realpath(root).rstrip("/") + "/"
    if any(p.startswith(tree) for p in (executable, os.path.realpath(executable))):
        raise ConfigError(
            f"{where}: python: {executable} is inside the work tree, where the agent can "
            "replace it (a .venv there is the agent's); use an environment outside it, "
            "built from the trusted lockfile (e.g. uv venv /srv/claim-envs/<repo>, then uv "
            "pip sync of uv export --frozen; docs/integrations.md, The test interpreter)"
        )
    if not pytest:
        return None
    return executable, (
        f"{where}: python: {executable} cannot import pytest "
        f"(install it: {executable} -m pip install pytest)"
    )


def pytest_interpreter(own: str, root: Path, search_path: str) -> str | None:
    """For ``claim init``: ``own`` (claim's interpreter) when it can import pytest, else the
    first ``python3``/``python`` on ``search_path`` outside the work tree that can; None when
    none can."""
    if can_import_pytest(own):
        return own
    tree = os.path.realpath(root).rstrip("/") + "/"
    for name in ("python3", "python"):
        found = shutil.which(name, path=search_path)
        if found is None or os.path.realpath(found).startswith(tree):
            continue
        if can_import_pytest(os.path.abspath(found)):
            return os.path.abspath(found)
    return None


_FINDS_PYTEST = "import importlib.util, sys; sys.exit(importlib.util.find_spec('pytest') is None)"


def can_import_pytest(executable: str) -> bool:
    """Whether ``executable`` finds pytest on its path. Found, not imported: a gate asks this
    at every stop, and importing pytest takes ten times as long as starting the interpreter."""
    return _finds_pytest(_find_pytest(executable))


def _find_pytest(executable: str) -> subprocess.Popen[bytes] | None:
    """``executable`` started on the question (None: it cannot start)."""
    from ..observe.sandbox import SYSTEM_PATH  # noqa: PLC0415

    try:
        return subprocess.Popen(
            [executable, "-I", "-c", _FINDS_PYTEST],
            cwd="/",
            env={"PATH": SYSTEM_PATH},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    except OSError:
        return None


def _finds_pytest(process: subprocess.Popen[bytes] | None) -> bool:
    if process is None:
        return False
    try:
        return process.wait(timeout=_PYTEST_IMPORT_TIMEOUT_S) == 0
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()
        return False


def readback_arguments(check: StateReadbackCheck) -> tuple[Any, ...]:
    """``build_readback``'s arguments for this check."""
    return (
        check.url,
        check.table,
        tuple(f"{column}={value}" for column, value in check.key.items()),
        check.query,
        tuple(f"{name}={value}" for name, value in check.params.items()),
        tuple(f"{name}={value}" for name, value in check.expect.items()),
        check.timeout_s,
        check.expect_absent,
        check.allow_privileged_role,
        check.allow_views,
    )


def dom_arguments(check: DomAssertionCheck) -> Any:
    """The observer's own request for this check (a ``DomCheck``); what it would refuse (a
    whole-document locator, a script selector, a file:// URL) is refused here. Playwright itself
    is needed only to observe."""
    from ..observe.dom import dom_check  # noqa: PLC0415

    return dom_check(
        check.url,
        check.locator,
        expect_text=check.expect_text,
        expect_includes=check.expect_includes,
        expect_attr=check.expect_attr,
        expect_count=check.expect_count,
        expect_address=check.expect_url_path,
        wait_for=check.wait_for,
        prep=check.prep,
        storage_state=check.storage_state,
        allow_hosts=check.allow_hosts,
        timeout=check.timeout_s,
        chromium=check.chromium,
    )


def _policy_place(path: str) -> tuple[str, str | None]:
    """The TOML table and key an error path of the policy (``trust.mode``) points at."""
    parts = [part for part in re.split(r"[.\[\]]", path) if part and not part.isdigit()]
    if not parts:
        return "policy", None
    if parts[0] == "trust" and len(parts) > 1:
        return "policy.trust", parts[1]
    return "policy", parts[0]


_GATE_KEYS = {
    "runs_dir", "sign_key", "max_blocks", "base", "timeout_s", "ignore", "allow_test_aware",
}  # fmt: skip
# A path in a test folder (observe/run_tree.is_protected), and claim.toml; each runner adds one
# path of each kind it protects.
_PROTECTED_PROBES = ("tests/x.py", "test/x.py", CONFIG_NAME)
_CHECK_KEYS = {
    TEST_RUN: {
        "command", "trusted_ref", "protect", "python", "env", "network", "require_tests",
        "timeout_s", "junit", "toolchain", "baseline", "hidden_tests",
    },
    ENDPOINT_HEALTH: {
        "url", "target", "expect_status", "expect_json", "expect_header", "method", "timeout_s",
    },
    STATE_READBACK: {
        "url", "target", "table", "key", "query", "params", "expect", "expect_absent",
        "timeout_s", "allow_privileged_role", "allow_views",
    },
    DOM_ASSERTION: {
        "url", "target", "locator", "expect_text", "expect_includes", "expect_attr",
        "expect_count", "expect_url_path", "wait_for", "prep", "storage_state", "allow_hosts",
        "chromium", "timeout_s",
    },
}  # fmt: skip
_CHECK_BUILDERS: dict[str, Callable[[_Reader, Mapping[str, Any], int, int], CheckConfig]] = {
    TEST_RUN: _Reader.test_run,
    ENDPOINT_HEALTH: _Reader.endpoint_health,
    STATE_READBACK: _Reader.state_readback,
    DOM_ASSERTION: _Reader.dom_assertion,
}
_KIND_NAMES: dict[type[Any], str] = {str: "a string", int: "an integer", bool: "true or false"}


# --- the starter file (claim init) -----------------------------------------------------------


@dataclass(frozen=True)
class RepoFacts:
    """What ``claim init`` looked at."""

    name: str
    # (runner name, its ecosystem, what it found, a test as it names one), in the registry's order
    runners: tuple[tuple[str, str, Detected, str], ...]
    default_branch: str | None
    dockerfile: bool
    database: bool
    # The interpreter Python tests run with when claim's own cannot import pytest (pipx, a
    # wheel venv); None: claim's own.
    python: str | None = None
    # Where a Python project declares its test dependencies (None: no Python tests found).
    declared: Declared | None = None

    @property
    def pytest(self) -> bool:
        return any(name == "pytest" for name, _, _, _ in self.runners)


def look_at(root: Path, environ: Mapping[str, str], default_branch: str | None) -> RepoFacts:
    from ..observe.runners import detect  # noqa: PLC0415 - runners load only for init and runs

    found = tuple(
        (runner.name, runner.ecosystem, found, runner.example_test)
        for runner, found in detect(root)
    )
    database = "DATABASE_URL" in environ or any(name.startswith("PG") for name in environ)
    dockerfile = (root / "Dockerfile").is_file()
    python = any(ecosystem == "python" for _, ecosystem, _, _ in found)
    declared = declared_dependencies(root) if python else None
    return RepoFacts(root.name, found, default_branch, dockerfile, database, declared=declared)


_TEST_ENVS = "/srv/claim-envs"


def interpreter_advice(facts: RepoFacts, own: str = sys.executable) -> list[str]:
    """How the Python tests get their interpreter, for init to say and write: which one runs
    them, what it must import, where the project declares that, and how to build one."""
    if facts.declared is None:
        return []
    python = facts.python or own
    whose = "as python = says" if facts.python else "claim's own"
    needs = "pytest and the project's test dependencies" if facts.pytest else (
        "the project's test dependencies")  # fmt: skip
    lines = [
        f"tests: they run with {python} ({whose}), which must import {needs}; the project's "
        "own code is imported from the run's copy of the work tree, never installed",
    ]
    declared = facts.declared
    wanted = (*(("pytest",) if facts.pytest and not declared.pytest else ()), *declared.pip)
    if declared.names:
        lines.append(f"the project declares them in: {', '.join(declared.names)}")
    else:
        lines.append(
            "the project declares no test dependencies (no test extra, dependency group or "
            "requirements file)" + ("" if wanted else f": {python} alone runs them")
        )
    if wanted:
        env = f"{_TEST_ENVS}/{facts.name}"
        lines.append(
            f"an interpreter for them, outside the work tree: python3 -m venv {env} && "
            f"{env}/bin/pip install {' '.join(shlex.quote(arg) for arg in wanted)}, then "
            f'python = "{env}/bin/python" under [[check]] (docs/integrations.md, The test '
            "interpreter)"
        )
    return lines


def _toml_strings(values: Sequence[str]) -> str:
    return "[" + ", ".join(json.dumps(value) for value in values) + "]"


def _toolchain_line(ecosystem: str, detected: Detected | None, facts: RepoFacts) -> str:
    if detected is None or ecosystem == "python":
        if facts.python:
            note = "claim's own cannot import pytest; never one in the repo"
            return f'python = "{facts.python}"  # {note}'
        return f'# python = "{_TEST_ENVS}/{facts.name}/bin/python"  # never one in the repo'
    if detected.toolchain:
        return f'toolchain = "{detected.toolchain}"  # found by claim init; never one in the repo'
    return '# toolchain = "/opt/toolchain"  # default: found on PATH; never one in the repo'


def starter_config(facts: RepoFacts) -> str:
    """A commented claim.toml for this repository: only what was found is switched on."""
    requires = '["test_run"]' if facts.runners else "[]"
    lines = [
        '# claim.toml: how `claim gate` decides whether an agent\'s "done" is true here.',
        "# Written by `claim init`. Reference: README (Gate your agent), docs/spec.md section 9.",
        "# Strings may use ${NAME} from the environment; keep secrets there, never in this file.",
        "",
        "# The operator's policy: what counts as proof. The agent's own claim never sets it.",
        '# (Or: policy = "policy.json", a path relative to this file.)',
        "[policy]",
        f'id = "{facts.name}/gate"',
        f"requires = {requires}",
        "max_age_s = 3600",
        "# min_tests = 1                # a test run of fewer tests proves nothing",
        "# allow_test_changes = false   # a run whose tests the agent changed does not count",
        "",
        "[gate]",
        '# runs_dir = "~/.local/state/completion-claim/runs"  # the default: outside the work tree',
        '# sign_key = "/etc/claim/gate.key"  # claim keygen --out FILE; signs evidence, verdicts',
        "max_blocks = 3                 # times a stop hook may send the agent back",
        "# What changes are measured against: the commit `claim gate --start` recorded before",
        "# the agent worked (the hooks take it at session start), or a full commit id here or in",
        "# --base. A branch name is never used: in the agent's repository it is the agent's.",
        '# base = "<full commit id>"',
        "# timeout_s = 900              # the whole gate run",
        '# ignore = ["build/**"]        # no change, and kept out of the test run; never tests',
        "# allow_test_aware = []        # paths whose code may depend on being tested (exit, ...)",
        "",
    ]
    # The branch, never its commit now: a commit written here would go stale, and a test the
    # operator commits later would be left out of every run (attack 102).
    trusted = (
        f'trusted_ref = "{facts.default_branch}"'
        if facts.default_branch
        else '# trusted_ref = "main"'
    )
    advice = [
        part
        for line in interpreter_advice(facts)
        for part in textwrap.wrap(line, 96, break_long_words=False, break_on_hyphens=False)
    ]
    runners: Sequence[tuple[str, str, Detected | None, str]] = facts.runners or (
        ("pytest", "python", None, "tests/test_x.py::test_y"),
    )
    for name, ecosystem, detected, example in runners:
        block = [
            f"# {name}: {detected.why}" if detected else "# pytest: none found; uncomment to use",
            "[[check]]",
            'type = "test_run"',
            f"command = {_toml_strings(detected.command if detected else PYTEST_COMMAND)}",
            "# The tests run as this branch has them, whatever the agent did to them. Each",
            "# `claim gate --start` (the hooks' session start) pins it to its commit then; it is",
            "# never resolved when judging. CI, with no start, passes the commit itself:",
            '#   claim gate --base "$BASE_SHA" --trusted-ref "$BASE_SHA"',
            trusted,
            *(f"# {line}" for line in advice if ecosystem == "python"),
            _toolchain_line(ecosystem, detected, facts),
            (
                f"protect = {_toml_strings(detected.protect)}  # tests named outside test folders"
                if detected and detected.protect
                else '# protect = ["fixtures/**"]     # more paths the agent may not change'
            ),
            "# env = []                      # variables passed to the tests",
            "# network = false",
            f"# require_tests = {_toml_strings([example] if example else [])}",
            '# hidden_tests = "/srv/claim/hidden"  # tests the agent never sees, laid into the run',
            "timeout_s = 600",
            "",
        ]
        lines += (
            block if detected else [block[0], *("# " + line if line else "" for line in block[1:])]
        )
    if facts.dockerfile:
        lines += [
            "# A deploy: assert a value the deploy changes (a build id, a commit), never only 200.",
            "# [[check]]",
            '# type = "endpoint_health"',
            '# url = "https://staging.example.com/version"',
            '# target = "staging"',
            "# expect_status = 200",
            '# expect_json = { "/commit" = "${CI_COMMIT_SHA}" }',
            "# timeout_s = 10",
            "",
        ]
    if facts.database:
        lines += [
            "# A write to the database, read back as a role that can only read.",
            "# [[check]]",
            '# type = "state_readback"',
            '# url = "${DATABASE_URL}"',
            '# target = "accounts/4471"',
            '# table = "accounts"',
            "# key = { id = 4471 }",
            '# expect = { status = "closed" }',
            "# timeout_s = 10",
            "",
        ]
    return "\n".join(lines)
