"""Java and Kotlin: Maven (Surefire, Failsafe) and Gradle, run by the operator's own build tool and
JDK, offline, and judged by the JUnit XML reports the build writes.

The command names the build tool (``mvn test``, ``gradle test``); the observer runs the
operator's (the check's ``toolchain``: its folder or program; else the one on the observer's
PATH), with the JDK of ``JAVA_HOME`` or of ``java`` on the PATH, offline and in batch mode. The
project's wrappers (``./mvnw``, ``./gradlew``) are refused: they are scripts of the work tree,
and they fetch and run a build tool the work tree names.

Reports: the build writes one JUnit XML file per test class into each module's own output folder
(``target/surefire-reports``, ``target/failsafe-reports``; ``build/test-results/<task>``). Those
folders (``target/`` beside each ``pom.xml``; ``build/`` and ``.gradle/`` beside each Gradle build
file) are removed from the run's copy before the run: the build starts from sources, not from
classes the agent left, and every report read afterwards was written by the run. All of them are
read into one result. Unlike pytest's, these reports are files the run's own processes can write:
the build tool's exit code, which it decides in its own process from what its test workers told
it, must be 0 as well, and any failure a report names fails the run whatever the exit code.

Canaries (issue 30): every module with Java tests runs a class of the observer's, in the JUnit its
tests use, with a must-pass and a must-fail test; the build goes on past failed tests so that
every module's run, and exits 0. A Maven report whose test JVM the observer's wrapper did not
start (Maven's own JVM, ``forkCount`` 0), a Gradle whose Test tasks choose their JVM by toolchain
(6.7 and later), and a Maven output saying a test JVM ended early are not verified.

Report names: ``<classname>::<name>`` as the report spells them: Surefire, and Gradle for JUnit 4,
name the method (``com.example.CalcTest::add``); Gradle names a JUnit 5 test by its display name
(``com.example.CalcTest::add()``).

Dependencies: Maven's come from the operator's cache, filled by ``mvn dependency:go-offline``
from the trusted ``pom.xml``, or from a repository the command names
(``-Dmaven.repo.local=/srv/m2``), mounted read-only. Gradle's come from the repositories the
build names that need no network (a ``file:`` repository), or from a read-only dependency cache
the operator names in ``GRADLE_RO_DEP_CACHE`` (Gradle's own variable), mounted read-only.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

from ...errors import ObservationFailed, UsageError
from .base import (
    Canaries,
    Canary,
    Dependencies,
    Detected,
    Draw,
    Invocation,
    ReportSource,
    RunContext,
    Runner,
    Toolchain,
    inside,
    program_name,
)
from .results import Results, junit_cases, junit_root, no_counts, tally

# Packages of the test libraries: a class of the work tree in one of them comes first on the
# test class path (before the libraries' jars) and replaces the library's own (an Assertions
# whose assertEquals never fails).
_TEST_LIBRARY_PACKAGES = (
    (b"org", b"junit"),
    (b"junit", b"framework"),
    (b"org", b"opentest4j"),
    (b"org", b"apiguardian"),
    (b"org", b"hamcrest"),
    (b"org", b"assertj"),
    (b"org", b"testng"),
    (b"org", b"mockito"),
    (b"org", b"apache", b"maven", b"surefire"),
    (b"kotlin", b"test"),
    (b"io", b"kotest"),
    (b"com", b"google", b"common", b"truth"),
)
# Service files by which anything on the class path (the code's own resources too) hooks into
# the test engine (a PostDiscoveryFilter that drops tests, a listener, an extension) or runs in
# the build tool's own process (an annotation processor runs inside javac, in Maven's JVM).
_HOOK_SERVICE_PREFIXES = (
    b"org.junit.",
    b"org.testng.",
    b"org.opentest4j.",
    b"javax.annotation.processing.",
    b"com.sun.source.util.",
    b"org.apache.maven.",
    b"org.gradle.",
)
_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib64")
_MAVEN_WRAPPERS = frozenset({"mvnw", "mvnw.cmd"})
_GRADLE_WRAPPERS = frozenset({"gradlew", "gradlew.bat"})
_GRADLE_BUILD_FILES = frozenset(
    {"build.gradle", "build.gradle.kts", "settings.gradle", "settings.gradle.kts"}
)
_MAVEN_OWN_OPTIONS = frozenset({"-o", "--offline", "-B", "--batch-mode"})
_MAVEN_FILE_OPTIONS = ("-s", "--settings", "-gs", "--global-settings", "-t", "--toolchains")
_REPOSITORY_OPTION = "-Dmaven.repo.local="
# The observer's wrapper of the test JVMs (bin/java) and Gradle's init script that starts them
# through it (claim.gradle).
FORK_FOLDER = Path(__file__).parent.parent / "java_fork"
_GRADLE_OWN_OPTIONS = frozenset({"--offline", "--no-daemon", "--daemon", "--console=plain"})
_GRADLE_FILE_OPTIONS = ("-I", "--init-script", "-c", "--settings-file", "-b", "--build-file")
_MAVEN_REPOSITORY_MOUNT = "repository"
# Surefire's and Failsafe's error lines for a test JVM that exited before its tests were done.
_SUREFIRE_CUT_SHORT = (
    b"The forked VM terminated without properly saying goodbye",
    b"There was an error in the forked process",
)
_GRADLE_LAUNCHERS = (6, 7)  # the first Gradle with toolchains: Test.javaLauncher
_MAVEN_SETTINGS = ("settings.xml", "settings-security.xml")
# The system property the wrapper gives every test JVM it starts: Surefire writes the test JVM's
# properties into each report, and a report without it came from a JVM the wrapper did not start.
WRAPPED_PROPERTY = ("claim.test.jvm", "wrapped")
# The observer's canaries (see ..canaries): one test class in each module that has Java tests, in
# a package of its own, written for JUnit 5 and for JUnit 4; which of the two the module compiles
# is chosen in the sandbox before the build starts (_CHOOSE), from the module's test sources (the
# trusted ref's: they are protected). Their display names are their method names: Gradle names a
# JUnit 5 test by its display name, Surefire and JUnit 4 by its method.
_CANARY_TESTS = "src/test/java"
_CANARY_CLASS = "claimcanary{word}/Claim{word}Test.java"
_JUPITER, _JUNIT4 = ".jupiter", ".junit4"
_CANARY_HEAD = {
    _JUPITER: (
        "package claimcanary{word};\n\n"
        "import org.junit.jupiter.api.Assertions;\n"
        "import org.junit.jupiter.api.DisplayName;\n"
        "import org.junit.jupiter.api.Test;\n\n"
        "public class Claim{word}Test {{\n"
    ),
    _JUNIT4: (
        "package claimcanary{word};\n\n"
        "import org.junit.Assert;\n"
        "import org.junit.Test;\n\n"
        "public class Claim{word}Test {{\n"
    ),
}
_CANARY_METHOD = {
    _JUPITER: (
        '    @Test\n    @DisplayName("{name}")\n    public void {name}() {{\n'
        '        Assertions.assertEquals("{expected}", new StringBuilder("{value}").toString());\n'
        "    }}\n"
    ),
    _JUNIT4: (
        "    @Test\n    public void {name}() {{\n"
        '        Assert.assertEquals("{expected}", new StringBuilder("{value}").toString());\n'
        "    }}\n"
    ),
}
# In the sandbox, before the build: each module's canary in the JUnit its tests use (JUnit 5 when
# any of them names org.junit.jupiter, else JUnit 4), the other one removed. Arguments: each
# canary's path without its ending and its module's test folder, then --, then the build.
_CHOOSE = (
    'while [ "$1" != -- ]; do\n'
    "  canary=$1; tests=$2; shift 2\n"
    "  if grep -rqs --include='*.java' --include='*.kt' -e 'org\\.junit\\.jupiter' \\\n"
    '    -- "$tests"; then\n'
    f'    mv -f -- "$canary{_JUPITER}" "$canary"; rm -f -- "$canary{_JUNIT4}"\n'
    f'  else mv -f -- "$canary{_JUNIT4}" "$canary"; rm -f -- "$canary{_JUPITER}"; fi\n'
    "done\n"
    'shift; exec "$@"\n'
)


def java_protected(rel: bytes) -> bool:
    """What decides which Java tests run and how, for either build tool: test source sets
    (``src/test``, ``src/integrationTest``, ``src/testFixtures``), the JUnit Platform's
    configuration, service files hooking into a test engine or the build, and classes in a test
    library's packages."""
    parts = rel.split(b"/")
    name = parts[-1]
    if name == b"junit-platform.properties":
        return True
    if parts[-3:-1] == [b"META-INF", b"services"] and name.startswith(_HOOK_SERVICE_PREFIXES):
        return True
    for index, part in enumerate(parts[:-2]):
        if part == b"src" and b"test" in parts[index + 1].lower():
            return True
    folders = [*parts[:-1], name.split(b".")[0]]
    return any(
        tuple(folders[start : start + len(package)]) == package
        for package in _TEST_LIBRARY_PACKAGES
        for start in range(len(folders) - len(package) + 1)
    )


class Maven(Runner):
    """``mvn test`` (or ``verify``): Surefire's and Failsafe's reports, every module's."""

    name = "maven"
    # Surefire's and Failsafe's test JVMs are started through its bin/java (their ``jvm``): the
    # tests run where no report folder can be written.
    preload = FORK_FOLDER
    example_test = "com.example.CalcTest::add"
    ecosystem = "java"
    examples = (
        "pom.xml", ".mvn/maven.config", "mvnw", "src/test/java/X.java",
        "src/integrationTest/java/X.java", "src/main/resources/junit-platform.properties",
        "src/main/resources/META-INF/services/org.junit.platform.launcher.PostDiscoveryFilter",
        "src/main/java/org/junit/jupiter/api/Assertions.java",
    )  # fmt: skip

    def recognises(self, command: Sequence[str]) -> bool:
        return program_name(command) in ({"mvn"} | _MAVEN_WRAPPERS)

    def detect(self, root: Path) -> Detected | None:
        if not (root / "pom.xml").is_file():
            return None
        return Detected(("mvn", "test"), "pom.xml (Maven)", _found_home("mvn", "MAVEN_HOME"))

    def protected(self, rel: bytes) -> bool:
        """Every POM (``pom.xml``, and any ``*pom*.xml`` a command could name with ``-f``),
        ``.mvn/`` (maven.config, jvm.config, extensions.xml), the wrapper, and Java's own."""
        parts = rel.split(b"/")
        name = parts[-1]
        if b".mvn" in parts[:-1] or name.removesuffix(b".cmd") == b"mvnw":
            return True
        return (b"pom" in name and name.endswith(b".xml")) or java_protected(rel)

    def configuration(self, rel: bytes) -> bool:
        parts = rel.split(b"/")
        return parts[-1] in (b"pom.xml", b"junit-platform.properties") or b".mvn" in parts[:-1]

    def check(self, command: Sequence[str], report: str | None) -> None:
        if program_name(command) in _MAVEN_WRAPPERS:
            raise UsageError(
                f"{command[0]} is the project's own script (it downloads and runs the Maven the "
                "work tree names): write mvn instead; the observer runs the operator's Maven"
            )
        _refuse_report(self, report)
        _refuse_relative_files(command, _MAVEN_FILE_OPTIONS, "Maven")
        repository = _repository(command)
        if repository is not None and not os.path.isabs(repository):
            raise UsageError(
                f"{_REPOSITORY_OPTION}{repository}: name the repository by an absolute path "
                "outside the work tree"
            )

    def toolchain(self, command: Sequence[str], chosen: str | None, workspace: Path) -> Toolchain:
        program = _program("mvn", chosen, workspace)
        home = os.path.dirname(os.path.dirname(program))
        # Maven's own files, but not conf/settings.xml: it may hold the operator's credentials.
        folders = [os.path.join(home, sub) for sub in ("bin", "boot", "lib")]
        folders += [os.path.join(home, "conf", "logging"), os.path.join(home, "bin", "m2.conf")]
        readable = [os.path.realpath(path) for path in folders if os.path.exists(path)]
        repository = _repository(command)
        if repository is not None:
            readable.append(_outside(repository, workspace, "the Maven repository"))
            held = [
                name for name in _MAVEN_SETTINGS if os.path.exists(os.path.join(repository, name))
            ]
            if held:
                raise UsageError(
                    f"{_REPOSITORY_OPTION}{repository} holds {held[0]}, which may hold "
                    "credentials, and the run would see it: name the repository folder itself "
                    "(~/.m2/repository)"
                )
        return _with_jdk(program, readable, workspace, {"MAVEN_SKIP_RC": "1"})

    def dependencies(
        self, command: Sequence[str], read: Callable[[str], bytes | None]
    ) -> Dependencies | None:
        if _repository(command) is not None:
            return None  # the operator's own repository, mounted as it is
        return Dependencies(
            lockfiles=("pom.xml",),
            install=("mvn", "-B", "dependency:go-offline"),
            mounts={_MAVEN_REPOSITORY_MOUNT: None},
            install_env={"MAVEN_OPTS": "-Dmaven.repo.local={entry}/" + _MAVEN_REPOSITORY_MOUNT},
        )

    def canaries(
        self, command: Sequence[str], files: Sequence[bytes], draw: Draw
    ) -> Canaries | None:
        """A must-pass and a must-fail test in every module with Java tests."""
        return _canaries(files, {b"pom.xml"}, draw)

    def invocation(self, command: Sequence[str], context: RunContext) -> Invocation:
        assert context.toolchain.program is not None  # the toolchain resolves mvn
        assert context.preload is not None  # the test JVM's wrapper, the observer's
        given = [arg for arg in command[1:] if arg not in _MAVEN_OWN_OPTIONS]
        argv = [context.toolchain.program, "-B", "-o", f"-Djvm={context.preload}/bin/java"]
        if _MAVEN_REPOSITORY_MOUNT in context.dependencies:
            repository = context.dependencies[_MAVEN_REPOSITORY_MOUNT]
            argv.append(f"{_REPOSITORY_OPTION}{repository}")
        if context.canaries is not None:
            # A module whose must-fail canary failed would stop the build before the next
            # module's tests, canaries included: the reports say which tests failed.
            argv.append("-Dmaven.test.failure.ignore=true")
            classes = ",".join(dict.fromkeys(map(_canary_class, context.canaries.tests)))
            given = [f"{arg},{classes}" if arg.startswith("-Dtest=") else arg for arg in given]
        env = _confined(context, {"pom.xml"}, "target", ("surefire-reports", "failsafe-reports"))
        return Invocation(_choosing((*argv, *given), context), env, source=ReportSource.BUILD)

    def outputs(self, files: Iterable[str]) -> list[str]:
        return _beside(files, {"pom.xml"}, ("target",))

    def is_report(self, rel: str) -> bool:
        parts = rel.split("/")
        return (
            len(parts) >= 3
            and parts[-3] == "target"
            and parts[-2] in ("surefire-reports", "failsafe-reports")
            and _report_file(parts[-1])
        )

    def build_results(self, reports: Sequence[bytes]) -> Results:
        for report in reports:
            _require_wrapped(report)
        return _reports_results(reports, "target/surefire-reports/TEST-*.xml")

    def cut_short(self, output: Path) -> str | None:
        """Surefire's word that a test JVM ended before it said goodbye (``System.exit`` in a
        test): with failures ignored (the must-fail canary's), Maven then still exits 0, and the
        classes that JVM had not finished have no report."""
        with open(output, "rb") as lines:
            for line in lines:
                if any(said in line for said in _SUREFIRE_CUT_SHORT):
                    said_so = line.decode(errors="replace").strip()[:200]
                    return f"Surefire says a test JVM ended early ({said_so})"
        return None


class Gradle(Runner):
    """``gradle test``: the JUnit XML reports of every module's test tasks."""

    name = "gradle"
    # Every Test task starts its test JVMs through its bin/java (claim.gradle, an init script):
    # the tests run where no report folder can be written.
    preload = FORK_FOLDER
    example_test = "com.example.CalcTest::add"
    ecosystem = "java"
    examples = (
        "build.gradle", "build.gradle.kts", "settings.gradle.kts", "gradle.properties",
        "gradle/libs.versions.toml", "gradlew", "buildSrc/build.gradle.kts", "ci/x.gradle",
        "gradle.lockfile",
    )  # fmt: skip

    def recognises(self, command: Sequence[str]) -> bool:
        return program_name(command) in ({"gradle"} | _GRADLE_WRAPPERS)

    def detect(self, root: Path) -> Detected | None:
        found = sorted(name for name in _GRADLE_BUILD_FILES if (root / name).is_file())
        if not found:
            return None
        why = f"{found[0]} (Gradle; run by the operator's gradle, never the project's gradlew)"
        return Detected(("gradle", "test"), why, _found_home("gradle", "GRADLE_HOME"))

    def protected(self, rel: bytes) -> bool:
        """Build scripts (``*.gradle``, ``*.gradle.kts``: applied scripts too), settings,
        ``gradle.properties``, ``gradle/`` (wrapper, version catalogs), ``buildSrc/`` (build
        logic), lockfiles, the wrapper, and Java's own."""
        parts = rel.split(b"/")
        name = parts[-1]
        if name.endswith((b".gradle", b".gradle.kts", b".lockfile")):
            return True
        if name in (b"gradle.properties", b"gradlew", b"gradlew.bat"):
            return True
        return b"gradle" in parts[:-1] or b"buildSrc" in parts[:-1] or java_protected(rel)

    def configuration(self, rel: bytes) -> bool:
        name = rel.rsplit(b"/", 1)[-1]
        return name.endswith((b".gradle", b".gradle.kts")) or name in (
            b"gradle.properties",
            b"junit-platform.properties",
        )

    def check(self, command: Sequence[str], report: str | None) -> None:
        if program_name(command) in _GRADLE_WRAPPERS:
            raise UsageError(
                f"{command[0]} is the project's own script (it downloads and runs the Gradle "
                "distribution the work tree names): write gradle instead; the observer runs "
                "the operator's Gradle"
            )
        _refuse_report(self, report)
        _refuse_relative_files(command, _GRADLE_FILE_OPTIONS, "Gradle")

    def toolchain(self, command: Sequence[str], chosen: str | None, workspace: Path) -> Toolchain:
        program = _program("gradle", chosen, workspace)
        home = os.path.dirname(os.path.dirname(program))
        readable = [os.path.realpath(home)]
        env = {"GRADLE_USER_HOME": "/tmp/gradle-home"}  # noqa: S108 - the run's own tmpfs
        cache = os.environ.get("GRADLE_RO_DEP_CACHE")
        if cache:
            readable.append(_outside(cache, workspace, "GRADLE_RO_DEP_CACHE"))
            env["GRADLE_RO_DEP_CACHE"] = cache
        return _with_jdk(program, readable, workspace, env)

    def canaries(
        self, command: Sequence[str], files: Sequence[bytes], draw: Draw
    ) -> Canaries | None:
        """A must-pass and a must-fail test in every project with Java tests."""
        return _canaries(files, {os.fsencode(name) for name in _GRADLE_BUILD_FILES}, draw)

    def invocation(self, command: Sequence[str], context: RunContext) -> Invocation:
        assert context.toolchain.program is not None  # the toolchain resolves gradle
        assert context.preload is not None  # the test JVM's wrapper, the observer's
        _require_confinable(context.toolchain.program)
        given = [arg for arg in command[1:] if arg not in _GRADLE_OWN_OPTIONS]
        argv = (context.toolchain.program, "--offline", "--no-daemon", "--console=plain",
                "--init-script", f"{context.preload}/claim.gradle", *given)  # fmt: skip
        env = _confined(context, _GRADLE_BUILD_FILES, "build", ("test-results",))
        if context.canaries is not None:
            # claim.gradle: each Test task runs them (its filters let them through) and goes on
            # when its must-fail canary fails, so that every project's tests run.
            env["CLAIM_CANARIES"] = "claimcanary*"
        return Invocation(_choosing(argv, context), env, source=ReportSource.BUILD)

    def outputs(self, files: Iterable[str]) -> list[str]:
        return _beside(files, _GRADLE_BUILD_FILES, ("build", ".gradle"))

    def is_report(self, rel: str) -> bool:
        parts = rel.split("/")
        return "build" in parts and "test-results" in parts and _report_file(parts[-1])

    def build_results(self, reports: Sequence[bytes]) -> Results:
        return _reports_results(reports, "build/test-results/<task>/TEST-*.xml")


# --- shared -----------------------------------------------------------------------------------


def _confined(
    context: RunContext, build_files: Iterable[str], output: str, reports: Iterable[str]
) -> dict[str, str]:
    """What the test JVMs' wrapper reads: the report folders (in ``output``, beside each of the
    run's ``build_files``) that it makes read-only for them."""
    return {
        "CLAIM_FORK_WORK": context.work,
        "CLAIM_FORK_BUILD_FILES": "\n".join(sorted(build_files)),
        "CLAIM_FORK_OUTPUT": output,
        "CLAIM_FORK_REPORTS": "\n".join(f"{output}/{report}" for report in reports),
    }


def _canaries(files: Sequence[bytes], build_files: set[bytes], draw: Draw) -> Canaries | None:
    """The canaries of every module (a folder with one of ``build_files``) whose
    ``src/test/java`` holds a file: a class of its own each, the same two tests in each."""
    modules = {rel.rpartition(b"/")[0] for rel in files if rel.rpartition(b"/")[2] in build_files}
    marker = f"/{_CANARY_TESTS}/".encode()
    tested = sorted({folder for rel in files
                     if marker in b"/" + rel
                     and (folder := (b"/" + rel).split(marker, 1)[0][1:]) in modules})  # fmt: skip
    if not tested:
        return None
    value, other = draw(), draw()
    names = (f"canary_{draw()}", f"canary_{draw()}")
    sources: dict[str, bytes] = {}
    tests: list[Canary] = []
    for module in tested:
        word = draw()
        prefix = os.fsdecode(module + b"/") if module else ""
        path = f"{prefix}{_CANARY_TESTS}/{_CANARY_CLASS.format(word=word)}"
        for kind in (_JUPITER, _JUNIT4):
            methods = "".join(
                _CANARY_METHOD[kind].format(name=name, value=value,
                                            expected=value if passes else other)
                for name, passes in sorted(zip(names, (True, False), strict=True))
            )  # fmt: skip
            sources[path + kind] = (_CANARY_HEAD[kind].format(word=word) + methods + "}\n").encode()
        cls = f"claimcanary{word}.Claim{word}Test"
        tests += [Canary(f"{cls}::{names[0]}", True), Canary(f"{cls}::{names[1]}", False)]
    # The build goes on past a failed test (the must-fail canary's): it exits 0. A command that
    # runs no tests (mvn compile) reports none: nothing to expect of them then.
    return Canaries(files=sources, tests=tuple(tests), failed_exit_code=0, optional=True)


def _canary_class(canary: Canary) -> str:
    return canary.name.split("::", 1)[0].rpartition(".")[2]


def _choosing(argv: Sequence[str], context: RunContext) -> tuple[str, ...]:
    """``argv`` started by the shell that turns each module's canary into the JUnit its tests
    use (_CHOOSE)."""
    if context.canaries is None:
        return tuple(argv)
    chosen: list[str] = []
    for rel in context.canaries.files:
        if rel.endswith(_JUPITER):
            canary = rel.removesuffix(_JUPITER)
            chosen += [canary, canary.split(f"{_CANARY_TESTS}/", 1)[0] + "src/test"]
    return ("/bin/sh", "-c", _CHOOSE, "sh", *chosen, "--", *argv)


def gradle_version(program: str) -> tuple[int, ...] | None:
    """The version of the Gradle distribution ``program`` starts, by its launcher's jar
    (``lib/gradle-launcher-<version>.jar``), or None when it has none."""
    lib = Path(os.path.realpath(program)).parent.parent / "lib"
    for jar in lib.glob("gradle-launcher-*.jar"):
        found = re.fullmatch(r"gradle-launcher-(\d+)\.(\d+)(?:\.(\d+))?.*\.jar", jar.name)
        if found:
            return tuple(int(part) for part in found.groups() if part is not None)
    return None


def _require_confinable(program: str) -> None:
    """Gradle 6.7 and later start a Test task's JVM from its ``javaLauncher`` (its toolchain),
    which claim.gradle cannot point at the observer's wrapper: the tests would run where they
    can rewrite the reports the build writes. Such a run is not verified, nor one of a Gradle
    whose version cannot be told."""
    version = gradle_version(program)
    if version is None or version >= _GRADLE_LAUNCHERS:
        which = "of unknown version" if version is None else ".".join(map(str, version))
        raise ObservationFailed(
            f"Gradle {which} starts each Test task's JVM from its javaLauncher (a toolchain, "
            "Gradle 6.7 and later), which the observer cannot start through its wrapper: the "
            "tests could rewrite the reports, so the run is not verified; run the tests with "
            "a Gradle before 6.7"
        )


def _require_wrapped(report: bytes) -> None:
    """A Surefire report records the test JVM's system properties: a JVM of the build's own
    (Surefire's ``forkCount`` 0 runs the tests in Maven's JVM; a ``jvm`` the POM sets names
    another java) ran the tests where they can rewrite every report afterwards."""
    root = junit_root(report)
    name, value = WRAPPED_PROPERTY
    found = [prop.get("value") for prop in root.iter("property") if prop.get("name") == name]
    if found != [value]:
        suite = root.get("name") or "a test class"
        raise ObservationFailed(
            f"{suite} ran in a JVM the observer's wrapper did not start (Surefire's forkCount=0 "
            "runs the tests in Maven's own JVM; a jvm setting names another java): the tests "
            "could rewrite the reports, so the run is not verified; let Surefire fork"
        )


def _report_file(name: str) -> bool:
    return name.startswith("TEST-") and name.endswith(".xml")


def _reports_results(reports: Sequence[bytes], where: str) -> Results:
    if not reports:
        return no_counts(f"the build wrote no test report ({where}): no test ran")
    return tally(itertools.chain.from_iterable(junit_cases(report) for report in reports))


def _beside(
    files: Iterable[str], markers: set[str] | frozenset[str], names: Sequence[str]
) -> list[str]:
    """The folders ``names`` beside each marker file (a module's build file)."""
    modules = sorted({os.path.dirname(rel) for rel in files if os.path.basename(rel) in markers})
    return [os.path.join(module, name) for module in modules for name in names]


def _refuse_report(runner: Runner, report: str | None) -> None:
    if report is not None:
        raise UsageError(
            f"--junit is for other commands: {runner.name}'s reports are read from the folders "
            "its build writes them into"
        )


def _refuse_relative_files(command: Sequence[str], options: Sequence[str], tool: str) -> None:
    """A file the command names by a relative path lies in the work tree: the agent's."""
    for option, value in itertools.pairwise(command):
        if option in options and not os.path.isabs(value):
            raise UsageError(
                f"{option} {value}: {tool} would read it from the work tree, which the agent "
                "controls; name a file outside it by its absolute path"
            )


def _repository(command: Sequence[str]) -> str | None:
    found = [arg.removeprefix(_REPOSITORY_OPTION) for arg in command
             if arg.startswith(_REPOSITORY_OPTION)]  # fmt: skip
    return found[-1] if found else None


def _found_home(program: str, variable: str) -> str | None:
    """For ``claim init``: the tool's folder when it is not on the PATH but its variable names
    one."""
    if shutil.which(program):
        return None
    home = os.environ.get(variable)
    return home if home and os.path.isfile(os.path.join(home, "bin", program)) else None


def _program(name: str, chosen: str | None, workspace: Path) -> str:
    """The build tool's real path: the chosen folder's ``bin/<name>`` (or ``<name>``), the
    chosen program, or ``<name>`` on the observer's PATH; never one in the work tree."""
    if chosen is None:
        found = shutil.which(name)
    elif os.path.isdir(chosen):
        found = next((candidate for candidate in (os.path.join(chosen, "bin", name),
                                                   os.path.join(chosen, name))
                      if os.path.isfile(candidate)), None)  # fmt: skip
    else:
        found = chosen if os.path.isfile(chosen) else None
    if found is None:
        where = f"in {chosen}" if chosen else "on the PATH"
        raise UsageError(f"no {name} {where}: name its folder with the check's toolchain")
    return _outside(found, workspace, name)


def _outside(path: str, workspace: Path, what: str) -> str:
    real = os.path.realpath(path)
    if inside(path, workspace) or inside(real, workspace):
        raise UsageError(
            f"{what} {path} is inside the work tree, which the agent controls; use one outside it"
        )
    return real


def _with_jdk(program: str, readable: list[str], workspace: Path, env: dict[str, str]) -> Toolchain:
    """The build tool's toolchain with the JDK it runs on: ``JAVA_HOME``'s, or that of ``java``
    on the PATH. A JDK's configuration may live outside it (Debian's, in /etc/java-N-openjdk, by
    links): those folders are mounted too."""
    java_home = os.environ.get("JAVA_HOME")
    if not java_home:
        java = shutil.which("java")
        if java is None:
            raise UsageError("no java on the PATH and no JAVA_HOME: the build needs a JDK")
        java_home = os.path.dirname(os.path.dirname(os.path.realpath(java)))
    java_home = _outside(java_home, workspace, "the JDK")
    java = os.path.join(java_home, "bin", "java")
    if not os.path.isfile(java):
        raise UsageError(f"{java_home} is not a JDK: it has no bin/java")
    folders = {*readable, java_home, *_linked_from(java_home)}
    kept = sorted(f for f in folders if not any(inside(f, system) for system in _SYSTEM_DIRS))
    kept = [f for f in kept if not any(o != f and inside(f, o) for o in kept)]
    return Toolchain(
        readable=tuple(kept),
        path=(os.path.join(java_home, "bin"), os.path.dirname(program)),
        env={"JAVA_HOME": java_home, **env},
        program=program,
        probe=(java, "-version"),
    )


def _linked_from(home: str) -> set[str]:
    """The folders outside ``home`` that links inside it point into."""
    found = set()
    for parent, folders, files in os.walk(home):
        for name in (*folders, *files):
            path = os.path.join(parent, name)
            if os.path.islink(path):
                target = os.path.realpath(path)
                if not inside(target, home) and os.path.exists(target):
                    found.add(target if os.path.isdir(target) else os.path.dirname(target))
    return found
