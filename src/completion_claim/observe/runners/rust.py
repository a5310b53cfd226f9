"""Rust: ``cargo test``, read from libtest's JSON events on standard output.

The operator's toolchain (the check's ``toolchain``: a toolchain folder, its ``bin``, or a
``cargo`` program; else ``cargo`` on the observer's PATH) is resolved to its real sysroot (a
rustup proxy is asked for it, outside the work tree, so no ``rust-toolchain.toml`` of the
agent's chooses it), which alone is mounted read-only (never all of ``~/.cargo``: it holds
credentials) and whose ``bin/cargo`` runs directly. Crates come from the operator's cache: each
crates.io package the Cargo.lock of the trusted ref pins is downloaded, checked against the
lockfile's checksum and unpacked into a vendor folder, mounted read-only as the only source of
crates.io packages of an ``--offline`` run; the build writes into the run's own ``/tmp``.

The report: libtest's JSON events (``-Z unstable-options --format json``), unstable in libtest.
On a stable or beta toolchain the run sets ``RUSTC_BOOTSTRAP=-1``: libtest accepts its unstable
options whenever the variable is set at all, while rustc and rustdoc read ``-1`` as "behave as
stable", so the code under test is compiled exactly as the operator's stable builds compile it
(``#![feature]`` stays refused). cargo-nextest's JUnit report would need nextest, which is not
installed with a toolchain; libtest's events need nothing more than the toolchain.

Every test binary is started through a runner the observer sets (``target."cfg(all())"
.runner``), which first prints the binary's path as an event, so each suite has a name.

Report names: ``<target>::<test path>``, the target being the crate or test target the binary
was built from (``calc::tests::adds`` for a unit test of the library ``calc``, ``arith::adds``
for ``tests/arith.rs``); a documentation test is ``doctest::<file> - <item>``. libtest names it
``<file> - <item> (line <n>)``: the line is left out, so that an honest edit above it renames no
test (attack 103), and the examples of one item are one test, the worst outcome of them standing.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import tomllib
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...errors import ObservationFailed, UsageError
from ..sandbox import SYSTEM_PATH, WORK
from .base import (
    PROXY_SETTINGS,
    Canaries,
    Canary,
    Dependencies,
    Detected,
    Draw,
    FileVersion,
    Invocation,
    ReportSource,
    RunContext,
    Runner,
    Toolchain,
    chosen_program,
    file_version,
    inside,
    observer_settings,
    program_name,
)
from .binaries import EVERY_BINARY, in_every_binary
from .results import ERROR, FAILED, MAX_REPORT_BYTES, PASSED, SKIPPED, Results, no_counts, tally

VENDOR = "vendor"  # the cache entry's folder of unpacked crates
RUSTC_INFO_SEED = "rustc-info"  # the cache entry's record of cargo's questions to the compiler
RUSTC_INFO = ".rustc_info.json"  # cargo's name for that record, in a target folder
CRATES_DOWNLOAD = "https://static.crates.io/crates/{crate}/{crate}-{version}.crate"
DOWNLOAD_VARIABLE = "CLAIM_CRATES_DOWNLOAD"  # the operator's mirror, as a URL template
BINARY_EVENT = "claim-binary"
_QUERY_TIMEOUT_S = 30.0
_TOOLCHAIN_FILES = frozenset({b"rust-toolchain", b"rust-toolchain.toml"})
_MANIFESTS = frozenset({b"Cargo.toml", b"Cargo.lock"})
_CARGO_CONFIG = frozenset({b"config", b"config.toml"})
_HASHED = re.compile(r"(.+)-[0-9a-f]{16}")
_DOCTEST = re.compile(r"(.+ - .+) \(line \d+\)")
_PANIC = re.compile(r"thread '.*' (?:\(\d+\) )?panicked at (.+):$")
# Before Rust 1.73 the message came first, quoted: panicked at 'MESSAGE', PLACE
_PANIC_LINES = 40  # the most lines of an old-style panic message looked through
_OLD_PANIC = re.compile(r"thread '.*' panicked at '(.*)', (\S+:\d+:\d+)$", re.DOTALL)
# Printed to standard output before each test binary starts: its path (cargo passes it as $0).
_ANNOUNCE = f'printf \'{{"type":"{BINARY_EVENT}","path":"%s"}}\\n\' "$0"; exec "$0" "$@"'
# With canaries, also whether the build put them into the binary (their module's name is in
# every binary that holds their tests): a target without libtest's harness has none to run.
_ANNOUNCE_PLANTED = (
    'c=false; grep -qF -- {module} "$0" && c=true; '
    f'printf \'{{{{"type":"{BINARY_EVENT}","path":"%s","canaries":%s}}}}\\n\' "$0" "$c"; '
    'exec "$0" "$@"'
)
# The observer's canaries: one module file beside each Cargo.toml, which a step in the sandbox
# (before anything is built) adds to each crate root cargo test may build a test binary from, so
# every test binary runs them (an integration test file of its own would be one more binary,
# saying nothing of the others). The roots are those cargo names (``cargo metadata``: a ``[lib]``
# or ``[[test]]`` at a path of its own, a workspace's members) and those of the default layout
# beside each manifest (a manifest cargo does not start from, ``--manifest-path``). The runner
# removes the files before any test binary starts (cargo builds them all first): the code under
# test finds no source telling which canary must fail, nor do the names.
_CANARY_MODULE = "claim_canary_{word}"
# At the root of its binary's tests, or below a module that is a crate root of its own too
# (``tests/common.rs``, which other test files include with ``mod common;``).
_CANARY_TEST = re.compile(r"(?:.+::)?(claim_canary_[0-9a-f]+::canary_[0-9a-f]+)")
_CANARY_SOURCE = """
#[test]
fn {name}() {{
    assert_eq!("{value}", "{expected}");
}}
"""
_CRATE_ROOTS = (
    "src/lib.rs",
    "src/main.rs",
    *(
        f"{folder}/{root}"
        for folder in ("src/bin", "tests", "examples", "benches")
        for root in ("*.rs", "*/main.rs")
    ),
)
# Arguments: the module's name, the work tree's root, the canary files, "--", the module of the
# tests run a second time ("" for none) and, per crate root, its root and file, "--", then the
# command (cargo first). Each root is planted once (a file two targets share, or named both ways,
# would declare the module twice), and only inside the work tree: a link is never followed out.
_PLANT = r"""module=$1; work=$(realpath -e -- "$2") || exit 1; shift 2; here=$(pwd); first=; roots=
inside() {
  while IFS= read -r root; do
    [ -n "$root" ] && [ -f "$root" ] && [ ! -L "$root" ] || continue
    real=$(realpath -e -- "$root") || continue
    case $real in "$work"/*) printf '%s\n' "$real" ;; esac
  done
}
while [ "$1" != -- ]; do
  canary=$1; shift; first=${first:-$canary}
  dir=${canary%/*}; [ "$dir" = "$canary" ] && dir=.
  for root in ROOTS; do
    roots="$roots
$root"
  done
done
shift; again=$1; shift
while [ "$1" != -- ]; do
  printf '%s\n' "$1" | inside | while IFS= read -r root; do
    printf '\n#[cfg(test)]\n#[path = "%s/%s"]\nmod %s;\n' "$here" "$2" "$again" >> "$root"
  done
  shift 2
done
shift
named=$("$1" metadata --no-deps --offline --format-version 1 2>/dev/null \
  | grep -o '"src_path":"[^"\\]*"' | sed 's/^"src_path":"//; s/"$//')
printf '%s\n%s\n' "$roots" "$named" | inside | sort -u | while IFS= read -r root; do
  printf '\n#[cfg(test)]\n#[path = "%s/%s"]\nmod %s;\n' "$here" "$first" "$module" >> "$root"
done
exec "$@"
""".replace("ROOTS", " ".join(f'"$dir"/{root}' for root in _CRATE_ROOTS))
# A test run a second time: a test of the observer's in the test's own binary, a module of its
# crate root, which reaches the crate root's private functions (those in a module of their own
# stay private to it). Its outcome is the test's: a test returns () or a Result.
_AGAIN_MODULE = "claim_again_{word}"
_AGAIN_SOURCE = """
trait ClaimAgain {
    fn claim_again(self);
}

impl ClaimAgain for () {
    fn claim_again(self) {}
}

impl<T, E: ::std::fmt::Debug> ClaimAgain for Result<T, E> {
    fn claim_again(self) {
        if let Err(error) = self {
            panic!("{:?}", error);
        }
    }
}
"""
# Twice, in its own thread: state kept per thread (thread_local!) answers each thread's first
# call right.
_AGAIN_TEST = """
#[test]
fn {name}() {{
    ClaimAgain::claim_again(super::{name}());
    ClaimAgain::claim_again(super::{name}());
}}
"""
# A test function at the top of its file (not indented: not in a module), taking nothing and
# returning () or a Result, after its attributes (one per group, each up to its first "]").
_TOP_TEST = (
    r"(?P<attributes>(?:^[ \t]*(?:#\[[^\]]*\]|//[^\n]*)[ \t]*\n)+)"
    r"(?:pub(?:\([^)\n]*\))?[ \t]+)?fn[ \t]+{name}[ \t]*\([ \t]*\)[ \t]*"
    r"(?:->[ \t]*(?:(?:std|core)::result::)?Result[ \t]*<[^{{\n]*|->[ \t]*\([ \t]*\)[ \t]*)?\{{"
)
# Attributes under which a second call is not the same test: a panic that passes it, a test that
# may not be built, or not run.
_NOT_AGAIN = re.compile(r"should_panic|\bcfg|\bignore\b")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
# libtest's options that take a value (any other word is a filter of test names).
_LIBTEST_VALUES = frozenset({"--skip", "--test-threads", "--color", "--shuffle-seed", "--logfile",
                             "--format", "-Z"})  # fmt: skip
_REFUSED_CARGO = {
    "--no-run": "builds the tests without running them",
    "--message-format": "turns cargo's messages into events of its own",
    "--config": "is the observer's: it sets the test runner and the crate source",
}
_REFUSED_LIBTEST = {
    "--format": "chooses the report: the observer asks for libtest's JSON events",
    "-Z": "chooses the report: the observer asks for libtest's JSON events",
    "--logfile": "writes the results elsewhere",
    "--nocapture": "mixes what the tests print into the report",
    "--no-capture": "mixes what the tests print into the report",
    "--list": "lists the tests without running them",
    "-q": "chooses the report: the observer asks for libtest's JSON events",
    "--quiet": "chooses the report: the observer asks for libtest's JSON events",
}

# Run in the cache entry by the operator's python3 in the sandbox, with the network: every
# crates.io package of Cargo.lock, checked against its checksum, unpacked into vendor/ as cargo's
# directory sources are (a .cargo-checksum.json holding the package's checksum).
VENDOR_SCRIPT = r"""
import hashlib, io, json, os, re, sys, tarfile, urllib.request
REGISTRIES = ("registry+https://github.com/rust-lang/crates.io-index", "sparse+https://index.crates.io/")
try:
    lock = open("Cargo.lock", encoding="utf-8").read()
except FileNotFoundError:
    lock = ""
os.makedirs("vendor")
for block in lock.split("[[package]]")[1:]:
    fields = dict(re.findall(r'^(\w+) = "([^"\n]*)"$', block, re.M))
    source, name, version = fields.get("source"), fields.get("name", ""), fields.get("version", "")
    if source is None:
        continue
    if source not in REGISTRIES:
        sys.exit(f"Cargo.lock: {name} {version} comes from {source}, not crates.io")
    checksum = fields.get("checksum", "")
    if not (re.fullmatch(r"[A-Za-z0-9_-]+", name) and re.fullmatch(r"[0-9A-Za-z.+-]+", version)
            and re.fullmatch(r"[0-9a-f]{64}", checksum)):
        sys.exit(f"Cargo.lock: the package {name!r} {version!r} is not a crates.io package")
    url = os.environ["CRATES_DOWNLOAD"].replace("{crate}", name).replace("{version}", version)
    with urllib.request.urlopen(url, timeout=120) as response:
        data = response.read()
    if hashlib.sha256(data).hexdigest() != checksum:
        sys.exit(f"{name} {version}: the download does not match the checksum in Cargo.lock")
    folder = os.path.join("vendor", f"{name}-{version}")
    prefix = f"{name}-{version}/"
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:gz") as archive:
        for member in archive.getmembers():
            rel = os.path.normpath(member.name)
            if not rel.startswith(prefix) or rel.startswith("/") or ".." in rel.split("/"):
                sys.exit(f"{name} {version}: the archive holds {member.name!r}")
            target = os.path.join(folder, rel[len(prefix):])
            if member.isdir():
                os.makedirs(target, exist_ok=True)
            elif member.isfile():
                os.makedirs(os.path.dirname(target), exist_ok=True)
                with open(target, "wb") as out:
                    out.write(archive.extractfile(member).read())
    with open(os.path.join(folder, ".cargo-checksum.json"), "w") as out:
        json.dump({"files": {}, "package": checksum}, out)
"""


# The install: the vendor script (its interpreter is $0), then `cargo test` of a package of the
# observer's, no code of the work tree, so that cargo records what it asks the compiler (its
# version, the target's names and cfg: three compiler starts) in its target folder; that record
# alone is kept. Each run's target folder starts with a copy (_FROM_RUSTC_INFO): cargo believes
# it only for the compiler it names, unchanged (its path and modification time), and asks again
# otherwise. Without a record (the package did not build) a run asks, as cargo always does.
_INSTALL = (
    '"$0" -I -c "import os; exec(os.environ[\'VENDOR_SCRIPT\'])" || exit\n'
    f"mkdir {RUSTC_INFO_SEED}\n"
    'seed=$(mktemp -d) && mkdir "$seed/src" && : > "$seed/src/lib.rs" || exit\n'
    'printf \'[package]\\nname = "claim-seed"\\nversion = "0.1.0"\\n\' > "$seed/Cargo.toml"\n'
    '(cd "$seed" && CARGO_HOME="$seed/home" CARGO_TARGET_DIR="$seed/target" '
    "cargo test --offline -q) > /dev/null 2>&1 &&\n"
    f'  cp "$seed/target/{RUSTC_INFO}" {RUSTC_INFO_SEED}/\n'
    'rm -rf "$seed"\n'
)
_FROM_RUSTC_INFO = (
    f'[ -f "$0/{RUSTC_INFO}" ] && mkdir -p "$CARGO_TARGET_DIR" && '
    f'cp "$0/{RUSTC_INFO}" "$CARGO_TARGET_DIR/"; exec "$@"'
)


def is_cargo_test(command: Sequence[str]) -> bool:
    """``cargo test``, and ``cargo +TOOLCHAIN test`` (refused: the toolchain is the check's)."""
    if program_name(command) != "cargo" or len(command) < 2:
        return False
    return command[1] == "test" or (command[1].startswith("+") and command[2:3] == ["test"])


class CargoTest(Runner):
    name = "cargo"
    example_test = "calc::tests::adds"
    ecosystem = "rust"
    examples = ("tests/arith.rs", "Cargo.toml", "Cargo.lock", "build.rs", ".cargo/config.toml",
                "rust-toolchain.toml")  # fmt: skip

    def recognises(self, command: Sequence[str]) -> bool:
        return is_cargo_test(list(command))

    def detect(self, root: Path) -> Detected | None:
        if not (root / "Cargo.toml").is_file():
            return None
        found = None
        if shutil.which("cargo") is None:
            cargo = Path.home() / ".cargo" / "bin" / "cargo"
            found = str(cargo) if cargo.is_file() else None
        return Detected(("cargo", "test"), "Cargo.toml: a Rust package", found,
                        _named_tests(root))  # fmt: skip

    def protected(self, rel: bytes) -> bool:
        """Integration tests, build scripts, manifests, lockfile, toolchain file and cargo's
        configuration: what decides which code the tests build and how. Unit tests in src/
        share their file with the code and cannot be told apart from it."""
        parts = rel.split(b"/")
        name = parts[-1]
        if name in _MANIFESTS or name in _TOOLCHAIN_FILES or name == b"build.rs":
            return True
        if len(parts) > 1 and parts[-2] == b".cargo" and name in _CARGO_CONFIG:
            return True
        return name.endswith(b".rs") and b"tests" in parts[:-1]

    def configuration(self, rel: bytes) -> bool:
        parts = rel.split(b"/")
        name = parts[-1]
        cargo_config = len(parts) > 1 and parts[-2] == b".cargo" and name in _CARGO_CONFIG
        return name in _MANIFESTS or name in _TOOLCHAIN_FILES or cargo_config

    def check(self, command: Sequence[str], report: str | None) -> None:
        if report is not None:
            raise UsageError(
                "junit is for other commands: cargo test reports to the observer through "
                "libtest's events"
            )
        if command[1].startswith("+"):
            raise UsageError(
                f"remove {command[1]} from the cargo command: name the toolchain with toolchain "
                "= (its folder), which the observer mounts and runs directly"
            )
        ours, theirs = _split(command[2:])
        for args, refused in ((ours, _REFUSED_CARGO), (theirs, _REFUSED_LIBTEST)):
            for arg in args:
                flag = "-Z" if arg.startswith("-Z") else arg.split("=", 1)[0]
                if flag in refused:
                    raise UsageError(
                        f"remove {flag} from the cargo test command: it {refused[flag]}"
                    )

    def toolchain(self, command: Sequence[str], chosen: str | None, workspace: Path) -> Toolchain:
        sysroot, nightly = _resolved(_chosen_cargo(command, chosen, workspace))
        if inside(sysroot, workspace):
            raise UsageError(
                f"toolchain: {sysroot} is inside the workspace, which the agent controls"
            )
        bin_dir = os.path.join(sysroot, "bin")
        env = {
            "RUSTC": os.path.join(bin_dir, "rustc"),
            "RUSTDOC": os.path.join(bin_dir, "rustdoc"),
            "CARGO_TERM_COLOR": "never",
            "CARGO_INCREMENTAL": "0",
            "RUST_BACKTRACE": "0",
        }
        if not nightly:
            env["RUSTC_BOOTSTRAP"] = "-1"
        cargo = os.path.join(bin_dir, "cargo")
        readable = () if inside(sysroot, "/usr") else (sysroot,)
        # cargo would need a home to start: the probe is the compiler, from the same folder.
        probe = (env["RUSTC"], "--version")
        return Toolchain(readable, (bin_dir,), env, cargo, probe)

    def dependencies(
        self, command: Sequence[str], read: Callable[[str], bytes | None]
    ) -> Dependencies:
        python = shutil.which("python3", path=SYSTEM_PATH) or "python3"
        vendor = (python, "-I", "-c", "import os; exec(os.environ['VENDOR_SCRIPT'])")
        return Dependencies(
            lockfiles=("Cargo.lock",),
            optional=("Cargo.lock",),
            install=("/bin/sh", "-c", _INSTALL, python),
            # The script travels in the environment, so the command said in messages is short.
            shown=" ".join(vendor),
            mounts={VENDOR: None, RUSTC_INFO_SEED: None},
            install_env=observer_settings(PROXY_SETTINGS)
            | {
                "VENDOR_SCRIPT": VENDOR_SCRIPT,
                "CRATES_DOWNLOAD": os.environ.get(DOWNLOAD_VARIABLE, CRATES_DOWNLOAD),
            },
        )

    def canaries(
        self, command: Sequence[str], files: Sequence[bytes], draw: Draw
    ) -> Canaries | None:
        """A must-pass and a must-fail test in every test binary of every package of the run's
        folder (each test binary of the packages cargo tests runs them); none for a command
        that runs no test binary of the observer's runner or only ignored tests."""
        packages = [rel[: -len(b"Cargo.toml")] for rel in files
                    if rel == b"Cargo.toml" or rel.endswith(b"/Cargo.toml")]  # fmt: skip
        ours, theirs = _split(command[2:])
        if not packages or "--doc" in ours or "--ignored" in theirs:
            return None
        word, value, other = draw(), draw(), draw()
        module = _CANARY_MODULE.format(word=word)
        tests = (Canary(f"canary_{draw()}", True), Canary(f"canary_{draw()}", False))
        source = "".join(
            _CANARY_SOURCE.format(name=test.name, value=value,
                                  expected=value if test.passes else other)
            for test in sorted(tests, key=lambda test: test.name)  # an order of no meaning
        ).encode()  # fmt: skip
        return Canaries(
            files={f"{os.fsdecode(folder)}{module}.rs": source for folder in packages},
            tests=tuple(Canary(f"{EVERY_BINARY}::{module}::{test.name}", test.passes)
                        for test in tests),
            failed_exit_code=101,
        )  # fmt: skip

    def repeat(
        self,
        canaries: Canaries,
        names: Sequence[str],
        draw: Draw,
        read: Callable[[bytes], bytes | None],
    ) -> Canaries:
        """A test of the observer's beside each test of ``names`` at the top of an integration
        test file (``<target>::<function>``), in a module of that file's crate root, calling it
        again: in the same process, in another test (libtest runs each test once). The tests in
        a module of their own, or named by another file, run once."""
        module = _AGAIN_MODULE.format(word=draw())
        folders = sorted(
            {name[: len(name) - len(name.rsplit("/", 1)[-1])] for name in canaries.files}
        )
        wanted: dict[str, list[str]] = {}
        for name in names:
            target, _, test = name.partition("::")
            if _IDENTIFIER.fullmatch(target) and _IDENTIFIER.fullmatch(test):
                wanted.setdefault(target, []).append(test)
        files, repeats = dict(canaries.files), dict(canaries.repeats)
        for target, tests in wanted.items():
            found = [(root, text) for folder in folders
                     for stem in dict.fromkeys((target, target.replace("_", "-")))
                     for root in (f"{folder}tests/{stem}.rs", f"{folder}tests/{stem}/main.rs")
                     if (text := read(root.encode())) is not None]  # fmt: skip
            if len(found) != 1:  # none, or two packages' binaries of one name
                continue
            root, text = found[0]
            again = [
                test for test in reversed(tests) if _at_the_top(text.decode(errors="replace"), test)
            ]
            if again:
                tested = "".join(_AGAIN_TEST.format(name=test) for test in again)
                files[f"{module}/{root}"] = (_AGAIN_SOURCE + tested).encode()
                repeats |= {f"{target}::{module}::{test}": f"{target}::{test}" for test in again}
        return replace(canaries, files=files, repeats=repeats)

    def invocation(self, command: Sequence[str], context: RunContext) -> Invocation:
        assert context.toolchain.program is not None  # a Rust toolchain is its cargo program
        _require_no_outer_config(context.work)
        ours, theirs = _split(command[2:])
        canaries = context.canaries
        argv = [context.toolchain.program, "test", "--offline"]
        if "--no-fail-fast" not in ours:
            argv.append("--no-fail-fast")
        vendor = context.dependencies.get(VENDOR)
        if vendor is not None:
            argv += ["--config", 'source.crates-io.replace-with="claim-vendor"']
            argv += ["--config", f"source.claim-vendor.directory={json.dumps(vendor)}"]
        announce = _ANNOUNCE
        if canaries is not None:
            planted = [os.path.join(context.cwd, rel) for rel in canaries.files]
            module = canaries.tests[0].name.split("::")[1]
            announce = _ANNOUNCE_PLANTED.format(module=module)
            announce = f"{shlex.join(['rm', '-f', '--', *planted])}; {announce}"
        runner = json.dumps(["/bin/sh", "-c", announce])
        argv += ["--config", f'target."cfg(all())".runner={runner}']
        if canaries is not None and _filters(theirs):
            # Filters choose tests by name: the canaries' names are filters too.
            theirs += [canary.name.split("::", 1)[1] for canary in canaries.tests]
            theirs += [again.split("::", 1)[1] for again in canaries.repeats]
        argv += [*ours, "--", "-Z", "unstable-options", "--format", "json", *theirs]
        if canaries is not None:
            module = canaries.tests[0].name.split("::")[1]
            again = next((name.split("::")[1] for name in canaries.repeats), "")
            planted = [
                rel for rel in canaries.files if not again or not rel.startswith(f"{again}/")
            ]
            roots = [part for rel in canaries.files if again and rel.startswith(f"{again}/")
                     for part in (rel[len(again) + 1 :], rel)]  # fmt: skip
            argv = ["/bin/sh", "-c", _PLANT, "sh", module, context.work, *planted, "--", again,
                    *roots, "--", *argv]  # fmt: skip
        seed = context.dependencies.get(RUSTC_INFO_SEED)
        if seed is not None:
            # Outermost: the planting step asks the cargo program it finds first (cargo metadata).
            argv = ["/bin/sh", "-c", _FROM_RUSTC_INFO, seed, *argv]
        # In the run's own home (the sandbox's /tmp, or the observer's folder for the run without
        # one): no credentials, no configuration, no build of anyone else's.
        home = context.env["HOME"]
        env = {"CARGO_HOME": f"{home}/cargo-home", "CARGO_TARGET_DIR": f"{home}/target"}
        return Invocation(tuple(argv), env, ReportSource.STDOUT)

    def results(self, report: bytes) -> Results:
        return read_events(report)


def _at_the_top(source: str, name: str) -> bool:
    """Whether ``source`` declares the test ``name`` at its top, as one a second call repeats."""
    found = re.search(_TOP_TEST.format(name=re.escape(name)), source, re.MULTILINE)
    if found is None:
        return False
    attributes = found["attributes"]
    return "#[test]" in attributes.replace(" ", "") and not _NOT_AGAIN.search(attributes)


def _named_tests(root: Path) -> tuple[str, ...]:
    """The test, bench and example targets the manifests at ``root`` and in the workspace
    members it names (folders, not globs) name at paths no test folder protects: as much a test
    as ``tests/arith.rs``, and the agent's to edit unless protected."""
    from . import is_runner_protected  # noqa: PLC0415 - the package imports this module first

    found: list[str] = []
    folders, seen = [""], set()
    while folders:
        folder = folders.pop(0)
        if folder in seen:
            continue
        seen.add(folder)
        try:
            manifest = tomllib.loads((root / folder / "Cargo.toml").read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
            continue
        members = manifest.get("workspace", {}).get("members", [])
        folders += [os.path.normpath(os.path.join(folder, member)) for member in members
                    if type(member) is str and not set(member) & set("*?[")]  # fmt: skip
        for kind in ("test", "bench", "example"):
            for target in manifest.get(kind, []):
                path = target.get("path") if type(target) is dict else None
                if type(path) is not str:
                    continue
                rel = os.path.normpath(os.path.join(folder, path))
                if not rel.startswith("../") and not is_runner_protected(os.fsencode(rel)):
                    found.append(rel)
    return tuple(dict.fromkeys(found))


def _split(args: Sequence[str]) -> tuple[list[str], list[str]]:
    """cargo's own arguments, and those after ``--`` for the test binaries."""
    if "--" not in args:
        return list(args), []
    at = list(args).index("--")
    return list(args[:at]), list(args[at + 1 :])


def _require_no_outer_config(work: str) -> None:
    """Refused when cargo would read a configuration file above the work tree: it reads
    ``.cargo/config.toml`` and ``.cargo/config`` in every folder above the one it runs in. The
    sandbox has none there; without it, the run's copy lies in the observer's temporary folder,
    which other users of the machine can write to."""
    if work == WORK:
        return
    folder = os.path.dirname(os.path.normpath(work))
    while True:
        for name in _CARGO_CONFIG:
            found = os.path.join(folder, ".cargo", os.fsdecode(name))
            if os.path.lexists(found):
                raise ObservationFailed(
                    f"{found}: cargo would read it, and it is outside the work tree: remove it, "
                    "or run in the sandbox"
                )
        parent = os.path.dirname(folder)
        if parent == folder:
            return
        folder = parent


def _filters(args: Sequence[str]) -> bool:
    """Whether libtest's arguments hold a filter of test names."""
    after_option = False
    for arg in args:
        if not after_option and not arg.startswith("-"):
            return True
        after_option = arg in _LIBTEST_VALUES
    return False


def _chosen_cargo(command: Sequence[str], chosen: str | None, workspace: Path) -> str:
    return os.path.abspath(
        chosen_program("cargo", command, chosen, workspace, "set toolchain = its folder")
    )


_RUSTUP_SETTINGS = ("RUSTUP_HOME", "CARGO_HOME", "RUSTUP_TOOLCHAIN")
_resolved_before: dict[tuple[object, ...], tuple[str, bool, FileVersion]] = {}


def _resolved(cargo: str) -> tuple[str, bool]:
    """``cargo``'s sysroot, and whether its compiler is a nightly. A gate asks twice per stop
    (loading its configuration, then running the check), and each answer costs the compiler's
    start (twice through a rustup proxy): asked again about the same program, unchanged, with
    the same rustup settings and the same compiler, the process answers as before."""
    real = os.path.realpath(cargo)
    home = os.environ.get("RUSTUP_HOME") or os.path.expanduser("~/.rustup")
    settings = [os.environ.get(name) for name in _RUSTUP_SETTINGS]
    files = [file_version(path) for path in (real, os.path.join(home, "settings.toml"))]
    key = (cargo, *files, *settings, os.path.expanduser("~"))
    found = _resolved_before.get(key)
    if found is not None and file_version(os.path.join(found[0], "bin", "rustc")) == found[2]:
        return found[0], found[1]
    sysroot = _sysroot(cargo)
    rustc = os.path.join(sysroot, "bin", "rustc")
    before = file_version(rustc)
    nightly = _nightly(rustc)
    _resolved_before[key] = (sysroot, nightly, before)
    return sysroot, nightly


def _sysroot(cargo: str) -> str:
    """The toolchain folder ``cargo`` belongs to. A rustup proxy is asked (its ``rustc
    --print sysroot``, run from ``/`` so no toolchain file of a work tree counts); a real cargo
    lives in its sysroot's ``bin``."""
    real = os.path.realpath(cargo)
    if os.path.basename(real).startswith("rustup"):
        env = {"PATH": f"{os.path.dirname(cargo)}:{SYSTEM_PATH}", "HOME": os.path.expanduser("~")}
        env |= {k: os.environ[k] for k in ("RUSTUP_HOME", "CARGO_HOME", "RUSTUP_TOOLCHAIN")
                if k in os.environ}  # fmt: skip
        rustc = os.path.join(os.path.dirname(cargo), "rustc")
        sysroot = _ask(rustc, ["--print", "sysroot"], env).strip()
    else:
        sysroot = os.path.dirname(os.path.dirname(real))
    if not all(os.path.isfile(os.path.join(sysroot, "bin", p)) for p in ("cargo", "rustc")):
        raise UsageError(f"toolchain: {cargo} belongs to no toolchain with bin/cargo and bin/rustc")
    return os.path.realpath(sysroot)


def _nightly(rustc: str) -> bool:
    """Whether the toolchain accepts unstable options as it is (a nightly or dev build)."""
    version = _ask(rustc, ["-vV"], {"PATH": SYSTEM_PATH})
    release = next((line for line in version.splitlines() if line.startswith("release:")), "")
    return "nightly" in release or "dev" in release


def _ask(program: str, args: list[str], env: dict[str, str]) -> str:
    try:
        done = subprocess.run(
            [program, *args], cwd="/", env=env, capture_output=True,
            timeout=_QUERY_TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UsageError(f"toolchain: cannot run {program}: {exc}") from None
    if done.returncode != 0:
        raise UsageError(f"toolchain: {program} {' '.join(args)} failed")
    return done.stdout.decode(errors="replace")


# --- libtest's events ---------------------------------------------------------------------------


@dataclass
class _Suite:
    """One test binary's run: its tests, and what its suite's end said of them."""

    binary: str | None
    outcomes: dict[str, tuple[str, str]] = field(default_factory=dict)
    announced: bool = False  # started by the observer's runner (rustdoc's doctests are not)
    # rustdoc's binary of merged doctests (edition 2024), started through the runner too: built
    # from the doctests alone, without the canaries.
    doctests: bool = False


class _Refused(Exception):
    """A stream that cannot be counted, and why."""


class _Unfinished(_Refused):
    def __init__(self, suite: _Suite) -> None:
        super().__init__(
            f"the suite of {suite.binary or 'a test binary'} never ended (the run was killed, or "
            "a test ended the process)"
        )


def read_events(report: bytes) -> Results:
    """Per-test results when every suite the stream started ended with counts that agree with
    its tests; otherwise no counts, and why."""
    if len(report) > MAX_REPORT_BYTES:
        return no_counts(f"its report was over {MAX_REPORT_BYTES} bytes")
    try:
        suites = list(_suites(report))
        outcomes = list(_outcomes(suites))
    except _Refused as refused:
        return no_counts(str(refused))
    if not suites:
        return no_counts("cargo test ran no test binary (the build failed, or built no test)")
    return tally(outcomes)


def _suites(report: bytes) -> Iterator[_Suite]:
    binary: str | None = None
    silent: str | None = None  # a binary announced that has not started a suite yet
    doctests = False  # the binary announced last is rustdoc's
    suite: _Suite | None = None
    for number, line in enumerate(report.splitlines(), 1):
        if not line.startswith(b"{"):
            continue  # not an event: a test binary of its own (harness = false) printing
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if type(event) is not dict:
            continue
        kind = event.get("type")
        if kind == BINARY_EVENT:
            if suite is not None:
                raise _Unfinished(suite)
            _require_spoken(silent)
            binary = silent = _target(event.get("path")) or "a test binary"
            doctests = _rustdocs(event.get("path"))
            if event.get("canaries") is False and not doctests:
                raise _Refused(
                    f"the test binary {binary} was built without the observer's canaries (a "
                    "target without libtest's harness, harness = false): the observer cannot "
                    "tell what it reports from what the code under test makes it report; name "
                    "the targets to run without it (cargo test --lib --test NAME)"
                )
        elif kind == "suite":
            suite = _suite_event(event, suite, binary, number)
            if silent is not None:
                suite.announced, suite.doctests = True, doctests
            silent = None
            if event.get("event") != "started":
                yield suite
                suite = None
        elif kind == "test":
            if suite is None:
                raise _Refused(f"line {number}: a test event outside any suite")
            _test_event(event, suite)
    if suite is not None:
        raise _Unfinished(suite)
    _require_spoken(silent)


def _require_spoken(binary: str | None) -> None:
    """A test binary that started no suite: it exited before libtest ran (code before main), or
    it has no libtest harness (``harness = false``) and reports nothing the observer reads."""
    if binary is not None:
        raise _Refused(
            f"the test binary {binary} reported no suite (it exited before its tests "
            "ran, or runs without libtest's harness)"
        )


def _suite_event(
    event: dict[str, Any], suite: _Suite | None, binary: str | None, number: int
) -> _Suite:
    if event.get("event") == "started":
        if suite is not None:
            raise _Refused(f"line {number}: a suite started inside another")
        return _Suite(binary)
    if event.get("event") not in ("ok", "failed") or suite is None:
        raise _Refused(f"line {number}: a suite's end with no suite started")
    counted = {
        key: sum(1 for outcome, _ in suite.outcomes.values() if outcome == value)
        for key, value in (("passed", PASSED), ("failed", FAILED), ("ignored", SKIPPED))
    }
    said = {key: event.get(key) for key in counted}
    if said != counted:
        raise _Refused(
            f"line {number}: the suite's counts {said} disagree with its tests {counted}"
        )
    return suite


def _test_event(event: dict[str, Any], suite: _Suite) -> None:
    name, what = event.get("name"), event.get("event")
    if type(name) is not str:
        raise _Refused("a test event names no test")
    outcome = {"ok": PASSED, "failed": FAILED, "ignored": SKIPPED}.get(str(what))
    if outcome is None:
        return  # started, a timeout warning, a benchmark
    stdout, message = event.get("stdout"), event.get("message")
    text = "\n".join(part for part in (message, stdout) if type(part) is str)
    suite.outcomes[name] = (outcome, _panic(text) if outcome == FAILED else "")


def _rustdocs(path: object) -> bool:
    """Whether a binary the runner started is rustdoc's, in a temporary folder of its own."""
    if type(path) is not str or os.path.basename(path) != "rust_out":
        return False
    return os.path.basename(os.path.dirname(path)).startswith("rustdoctest")


def _target(path: object) -> str | None:
    if type(path) is not str:
        return None
    name = os.path.basename(path)
    hashed = _HASHED.fullmatch(name)
    return hashed.group(1) if hashed else name


def _outcomes(suites: Sequence[_Suite]) -> Iterator[tuple[str, str, str]]:
    canaries: list[tuple[str, dict[str, str]]] = []  # per test binary the runner started
    for suite in suites:
        planted = suite.announced and not suite.doctests
        if planted:
            canaries.append((suite.binary or "a test binary", {}))
        for name, (outcome, message) in suite.outcomes.items():
            canary = _CANARY_TEST.fullmatch(name) if planted else None
            doctest = _DOCTEST.fullmatch(name)
            if suite.doctests and doctest is None:
                raise _Refused(f"{name} ran in rustdoc's doctest binary, which runs doctests alone")
            if canary is not None:
                found = canaries[-1][1]
                test = canary.group(1)
                found[test] = outcome if found.get(test, outcome) == outcome else ERROR
            elif doctest is not None:
                yield f"doctest::{doctest.group(1)}", outcome, message
            elif suite.binary is None:
                raise _Refused(
                    f"{name} ran in a test binary the observer did not start (a runner of "
                    ".cargo/config.toml for this target?)"
                )
            else:
                yield f"{suite.binary}::{name}", outcome, message
    yield from in_every_binary(canaries)


def _panic(text: str) -> str:
    """A failed test's panic in one line: where, and what it said."""
    lines = text.splitlines()
    for at, line in enumerate(lines):
        if "' panicked at '" not in line:
            continue
        for end in range(at, min(len(lines), at + _PANIC_LINES)):
            old = _OLD_PANIC.match("\n".join(lines[at : end + 1]).strip())
            if old is not None:
                parts = [part.strip() for part in old.group(1).splitlines() if part.strip()]
                return f"{old.group(2)}: {'; '.join(parts)}"
    for at, line in enumerate(lines):
        panic = _PANIC.match(line.strip())
        if panic is None:
            continue
        said = []
        for following in lines[at + 1 :]:
            if following.startswith(("note:", "stack backtrace:")) or _PANIC.match(following):
                break
            if following.strip():
                said.append(following.strip())
        return f"{panic.group(1)}: {'; '.join(said)}" if said else f"panicked at {panic.group(1)}"
    return next((line.strip() for line in lines if line.strip()), "")
