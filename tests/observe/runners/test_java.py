"""The Maven and Gradle runners: commands, detection, protected paths, the reports real builds
wrote (tests/observe/runners/reports), and real offline builds through ``claim observe
test-run`` in the sandbox."""

from __future__ import annotations

import json
import os
import subprocess
import time
from dataclasses import replace
from pathlib import Path

import pytest

from completion_claim.cli import run
from completion_claim.errors import ObservationFailed, UsageError
from completion_claim.observe import test_run
from completion_claim.observe.runners import RUNNERS, runner_for
from completion_claim.observe.runners.base import RunContext, Toolchain
from completion_claim.observe.runners.java import FORK_FOLDER, Gradle, Maven, gradle_version
from tests.fixtures.java import (
    CALC,
    CALC_BUGGY,
    GRADLE_TEST,
    IN_MAVEN_POM,
    MAIN,
    MAVEN_TEST,
    PARENT_POM,
    POM,
    TEST,
    gradle_project,
    jupiter_test,
    maven_project,
)
from tests.fixtures.projects import git, head_commit, make_repo, write_files
from tests.observe.runners.observing import observed

REPORTS = Path(__file__).parent / "reports"
MAVEN, GRADLE = Maven(), Gradle()


def reports(folder: str) -> list[bytes]:
    return [path.read_bytes() for path in sorted((REPORTS / folder).glob("TEST-*.xml"))]


# --- commands -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "name"),
    [
        (["mvn", "test"], "maven"),
        (["/usr/share/maven/bin/mvn", "-q", "verify"], "maven"),
        (["./mvnw", "test"], "maven"),
        (["gradle", "test"], "gradle"),
        (["./gradlew", "check"], "gradle"),
        (["python", "-m", "pytest"], "pytest"),
        (["make", "test"], "pytest"),  # not a build tool's: the fallback
    ],
)
def test_each_build_tool_is_recognised_by_its_program(command: list[str], name: str) -> None:
    assert runner_for(command).name == name


def test_the_build_tools_come_before_pytest_in_the_registry() -> None:
    names = [runner.name for runner in RUNNERS]
    assert names.index("maven") < names.index("pytest")
    assert names.index("gradle") < names.index("pytest")


@pytest.mark.parametrize(
    ("command", "says"),
    [
        (["./mvnw", "test"], "write mvn instead"),
        (["./gradlew", "test"], "write gradle instead"),
        (["mvn", "-s", "ci/settings.xml", "test"], "-s ci/settings.xml: Maven would read it"),
        (["mvn", "-Dmaven.repo.local=repo", "test"], "absolute path outside the work tree"),
        (["gradle", "-I", "init.gradle", "test"], "-I init.gradle: Gradle would read it"),
    ],
)
def test_commands_that_would_run_the_work_trees_own_files_are_refused(
    tmp_path: Path, command: list[str], says: str
) -> None:
    with pytest.raises(UsageError, match=says):
        test_run.prepare(command, tmp_path, None, (), 10.0, ())


def test_a_junit_file_is_refused_the_builds_reports_are_found(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="maven's reports are read from the folders"):
        test_run.prepare(["mvn", "test"], tmp_path, "report.xml", (), 10.0, ())


def test_detection_writes_the_build_tools_own_command(tmp_path: Path) -> None:
    assert MAVEN.detect(tmp_path) is None
    assert GRADLE.detect(tmp_path) is None
    write_files(tmp_path, {"pom.xml": POM, "settings.gradle.kts": "", "gradlew": ""})
    maven, gradle = MAVEN.detect(tmp_path), GRADLE.detect(tmp_path)
    assert maven is not None
    assert gradle is not None
    assert (maven.command, maven.why) == (("mvn", "test"), "pom.xml (Maven)")
    assert gradle.command == ("gradle", "test")
    assert "never the project's gradlew" in gradle.why


# --- protected paths ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    [
        "pom.xml",
        "core/pom.xml",
        "ci-pom.xml",
        ".mvn/maven.config",
        ".mvn/wrapper/maven-wrapper.properties",
        "mvnw",
        "src/test/java/com/example/CalcTest.java",
        "core/src/integrationTest/kotlin/CalcIT.kt",
        "src/testFixtures/java/Fixture.java",
        "src/test/resources/junit-platform.properties",
        "src/main/resources/junit-platform.properties",
        "src/main/resources/META-INF/services/org.junit.platform.launcher.PostDiscoveryFilter",
        "src/main/resources/META-INF/services/javax.annotation.processing.Processor",
        "src/main/java/org/junit/jupiter/api/Assertions.java",
        "src/main/resources/org/opentest4j/AssertionFailedError.class",
        "src/main/kotlin/kotlin/test/Assertions.kt",
    ],
)
def test_what_decides_a_maven_run_is_protected(path: str) -> None:
    assert MAVEN.protected(path.encode())


@pytest.mark.parametrize(
    "path",
    [
        "build.gradle",
        "app/build.gradle.kts",
        "settings.gradle.kts",
        "gradle.properties",
        "gradle/libs.versions.toml",
        "gradle/wrapper/gradle-wrapper.jar",
        "gradlew",
        "buildSrc/src/main/kotlin/conventions.kt",
        "ci/tests.gradle",
        "gradle.lockfile",
        "src/test/java/com/example/CalcTest.java",
        "src/main/resources/META-INF/services/org.junit.jupiter.api.extension.Extension",
    ],
)
def test_what_decides_a_gradle_run_is_protected(path: str) -> None:
    assert GRADLE.protected(path.encode())


@pytest.mark.parametrize(
    "path",
    [
        "src/main/java/com/example/Calc.java",
        "src/main/resources/application.properties",
        "src/main/resources/META-INF/services/com.example.Plugin",
        "src/main/java/org/example/junitish/Thing.java",
        "README.md",
    ],
)
def test_the_code_under_test_is_not_protected(path: str) -> None:
    assert not MAVEN.protected(path.encode())
    assert not GRADLE.protected(path.encode())


def test_the_build_files_are_recorded_as_configuration() -> None:
    assert MAVEN.configuration(b"pom.xml")
    assert MAVEN.configuration(b".mvn/maven.config")
    assert GRADLE.configuration(b"app/build.gradle.kts")
    assert GRADLE.configuration(b"gradle.properties")
    assert not MAVEN.configuration(b"src/main/java/Calc.java")


# --- outputs and reports ------------------------------------------------------------------------


def test_the_output_folders_are_those_beside_each_build_file() -> None:
    files = ["pom.xml", "core/pom.xml", "core/src/main/java/A.java", "docs/target/x.md"]
    assert MAVEN.outputs(files) == ["target", "core/target"]
    files = ["settings.gradle", "app/build.gradle.kts", "lib/src/Main.java"]
    assert GRADLE.outputs(files) == ["build", ".gradle", "app/build", "app/.gradle"]


@pytest.mark.parametrize(
    ("runner", "path", "is_report"),
    [
        (MAVEN, "target/surefire-reports/TEST-com.example.CalcTest.xml", True),
        (MAVEN, "core/target/failsafe-reports/TEST-com.example.CalcIT.xml", True),
        (MAVEN, "target/surefire-reports/com.example.CalcTest.txt", False),
        (MAVEN, "target/surefire-reports/testng-results.xml", False),
        (GRADLE, "build/test-results/test/TEST-com.example.CalcTest.xml", True),
        (GRADLE, "app/build/test-results/integrationTest/TEST-com.example.CalcIT.xml", True),
        (GRADLE, "build/test-results/test/binary/results.bin", False),
        (GRADLE, "build/reports/tests/test/index.html", False),
    ],
)
def test_report_files_are_known_by_their_folder_and_name(
    runner: Maven | Gradle, path: str, is_report: bool
) -> None:
    assert runner.is_report(path) is is_report


def test_a_real_surefire_run_is_read_as_one_result() -> None:
    results = MAVEN.build_results(reports("surefire"))
    assert {key: results.counts[key] for key in ("passed", "failed", "errors", "skipped")} == {
        "passed": 3,
        "failed": 2,
        "errors": 2,
        "skipped": 1,
    }
    assert results.counts["tests"] == {
        "com.example.BrokenSetupTest::com.example.BrokenSetupTest": "error",
        "com.example.ShapesTest::errors": "error",
        "com.example.ShapesTest::passes": "passed",
        "com.example.ShapesTest::parameterized{int}[1]": "passed",
        "com.example.ShapesTest::parameterized{int}[2]": "passed",
        "com.example.ShapesTest::fails": "failed",
        "com.example.ShapesTest::disabled": "skipped",
        "com.example.ShapesTest$Inner::nestedFails": "failed",
    }
    assert {failure["test"]: failure["message"] for failure in results.failures} == {
        "com.example.BrokenSetupTest::com.example.BrokenSetupTest": "no database",
        "com.example.ShapesTest::errors": "no calculator today",
        "com.example.ShapesTest::fails": "2 + 3 ==> expected: <5> but was: <-1>",
        "com.example.ShapesTest$Inner::nestedFails": "expected: <4> but was: <0>",
    }


def test_a_real_gradle_run_is_read_as_one_result() -> None:
    results = GRADLE.build_results(reports("gradle"))
    assert results.counts["tests"] == {
        "com.example.BrokenSetupTest::classMethod": "failed",
        "com.example.ShapesTest::errors": "failed",  # JUnit 4 under Gradle: any throw fails
        "com.example.ShapesTest::passes": "passed",
        "com.example.ShapesTest::fails": "failed",
        "com.example.ShapesTest::ignored": "skipped",
    }
    assert results.failures[0] == {
        "test": "com.example.BrokenSetupTest::classMethod",
        "outcome": "failed",
        "message": "java.lang.IllegalStateException: no database",
    }


def test_no_report_is_no_counts_and_a_cut_report_is_refused() -> None:
    assert MAVEN.build_results([]).none_because.startswith("the build wrote no test report")
    whole = reports("surefire")[0]
    with pytest.raises(ObservationFailed, match="not XML"):
        MAVEN.build_results([reports("surefire")[1], whole[: len(whole) // 2]])


def test_the_jdk_and_maven_are_mounted_without_mavens_settings(tmp_path: Path) -> None:
    toolchain = MAVEN.toolchain(["mvn", "test"], None, tmp_path)
    assert toolchain.program is not None
    assert toolchain.program.endswith("/bin/mvn")
    assert "JAVA_HOME" in toolchain.env
    assert toolchain.probe[-1] == "-version"
    assert not any(path.endswith("settings.xml") for path in toolchain.readable)
    assert not any(path.startswith("/usr/") for path in toolchain.readable)  # mounted anyway


def test_a_build_tool_in_the_work_tree_is_refused(tmp_path: Path) -> None:
    tool = tmp_path / "tools" / "bin" / "mvn"
    tool.parent.mkdir(parents=True)
    tool.write_text("#!/bin/sh\nexit 0\n")
    with pytest.raises(UsageError, match="inside the work tree"):
        MAVEN.toolchain(["mvn", "test"], str(tmp_path / "tools"), tmp_path)
    with pytest.raises(UsageError, match="inside the work tree"):
        MAVEN.toolchain(["mvn", f"-Dmaven.repo.local={tmp_path}/m2", "test"], None, tmp_path)


def test_a_repository_beside_mavens_settings_is_refused(tmp_path: Path) -> None:
    m2 = tmp_path / "home" / ".m2"
    (m2 / "repository").mkdir(parents=True)
    (m2 / "settings.xml").write_text("<settings/>")
    with pytest.raises(UsageError, match=r"holds settings\.xml, which may hold credentials"):
        MAVEN.toolchain(["mvn", f"-Dmaven.repo.local={m2}", "test"], None, tmp_path / "repo")
    MAVEN.toolchain(["mvn", f"-Dmaven.repo.local={m2}/repository", "test"], None, tmp_path / "r")


def test_maven_dependencies_come_from_the_cache_unless_the_command_names_a_repository() -> None:
    spec = MAVEN.dependencies(["mvn", "test"], lambda _: None)
    assert spec is not None
    assert (spec.lockfiles, spec.install) == (("pom.xml",), ("mvn", "-B", "dependency:go-offline"))
    assert MAVEN.dependencies(list(MAVEN_TEST), lambda _: None) is None
    assert GRADLE.dependencies(list(GRADLE_TEST), lambda _: None) is None


# --- real builds --------------------------------------------------------------------------------


def test_a_maven_build_reports_each_test_and_its_failure(tmp_path: Path, claim: Path) -> None:
    repo = maven_project(tmp_path / "repo")

    item = observed(claim, repo, "--", *MAVEN_TEST)

    # The build goes on past a failed test (the must-fail canary's): the reports tell.
    assert item["observed_value"] == {
        "exit_code": 0,
        "passed": 1,
        "failed": 1,
        "errors": 0,
        "skipped": 0,
        "tests": {"com.example.CalcTest::add": "failed", "com.example.CalcTest::addZero": "passed"},
        "canaries": "held",
    }
    assert item["expected"] == {"exit_code": 0, "failed": 0, "errors": 0, "canaries": "held"}
    details = item["details"]
    assert details["runner"] == "maven"
    assert details["canaries"] == {"planted": 2, "state": "held"}
    # The test JVM is started through the observer's wrapper (attack 172).
    wrapper = "/run/claim/plugin/java_fork/bin/java"
    build = details["argv"][details["argv"].index("--") + 1 :]
    assert build == ["/usr/share/maven/bin/mvn", "-B", "-o", f"-Djvm={wrapper}",
                     "-Dmaven.test.failure.ignore=true", *MAVEN_TEST[1:]]  # fmt: skip
    assert details["failures"] == [
        {"test": "com.example.CalcTest::add", "outcome": "failed",
         "message": "expected: <5> but was: <-1>"}
    ]  # fmt: skip
    assert "pom.xml" in details["test_config"]
    assert "build_outputs_removed" not in details  # nothing of target/ was in the tree


def test_a_maven_build_of_several_modules_reads_every_modules_reports(
    tmp_path: Path, claim: Path
) -> None:
    maven_project(tmp_path / "unused")  # for the skip when Maven is missing
    module = POM.replace("<artifactId>ARTIFACT</artifactId>", "<artifactId>MODULE</artifactId>")
    parent = "<parent><groupId>com.example</groupId><artifactId>parent</artifactId>"
    parent += "<version>1.0</version></parent>\n  <modelVersion>"
    files = {"pom.xml": PARENT_POM}
    for name, code in (("core", CALC), ("extra", CALC_BUGGY)):
        files[f"{name}/pom.xml"] = module.replace("MODULE", name).replace(
            "<modelVersion>", parent, 1
        )
        files[f"{name}/{MAIN}"] = code
        files[f"{name}/{TEST}"] = jupiter_test()
    repo = make_repo(tmp_path / "repo", files)

    item = observed(claim, repo, "--", *MAVEN_TEST[:-1], "--fail-at-end", "test")

    # Both modules' CalcTest share a name: the worse outcome stands, each run is counted.
    assert (item["observed_value"]["passed"], item["observed_value"]["failed"]) == (3, 1)
    assert item["observed_value"]["tests"]["com.example.CalcTest::add"] == "failed"


def test_a_gradle_build_reports_each_test(tmp_path: Path, claim: Path) -> None:
    """The command's own test filter (--tests) lets the observer's canaries through too."""
    repo = gradle_project(tmp_path / "repo", CALC)

    item = observed(claim, repo, "--", *GRADLE_TEST, "--tests", "com.example.CalcTest")

    assert item["observed_value"] == {
        "exit_code": 0,
        "passed": 2,
        "failed": 0,
        "errors": 0,
        "skipped": 0,
        "tests": {"com.example.CalcTest::add": "passed", "com.example.CalcTest::addZero": "passed"},
        "canaries": "held",
    }
    assert item["details"]["canaries"] == {"planted": 2, "state": "held"}
    build = item["details"]["argv"][item["details"]["argv"].index("--") + 1 :]
    assert build[1:4] == ["--offline", "--no-daemon", "--console=plain"]


def test_attack_91_build_output_left_in_the_tree_is_not_the_runs(
    tmp_path: Path, claim: Path
) -> None:
    """The agent leaves the buggy source, with a correct class compiled beside it and a report
    saying every test passed, in target/ (committed, so the claim records them): the run starts
    from sources, and reads only what it wrote."""
    fixed = maven_project(tmp_path / "fixed", CALC)
    subprocess.run(["javac", "-d", str(fixed / "target" / "classes"), str(fixed / MAIN)],
                   check=True)  # fmt: skip
    repo = maven_project(tmp_path / "repo")
    forged = (
        '<testsuite name="com.example.CalcTest" tests="2">'
        '<testcase name="add" classname="com.example.CalcTest"/>'
        '<testcase name="addZero" classname="com.example.CalcTest"/></testsuite>'
    )
    write_files(repo, {"target/surefire-reports/TEST-com.example.CalcTest.xml": forged})
    classes = repo / "target" / "classes" / "com" / "example"
    classes.mkdir(parents=True)
    (classes / "Calc.class").write_bytes(
        (fixed / "target" / "classes" / "com" / "example" / "Calc.class").read_bytes()
    )
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "built")

    item = observed(claim, repo, "--", *MAVEN_TEST)

    assert item["observed_value"]["tests"]["com.example.CalcTest::add"] == "failed"
    assert item["details"]["build_outputs_removed"] == ["target"]


def test_attack_91_a_run_that_writes_no_report_reads_none(tmp_path: Path, claim: Path) -> None:
    """With no test run, nothing of target/ left in the tree is read as its report."""
    repo = maven_project(tmp_path / "repo", CALC)
    forged = '<testsuite><testcase name="add" classname="com.example.CalcTest"/></testsuite>'
    write_files(repo, {"target/surefire-reports/TEST-com.example.CalcTest.xml": forged})
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "report")

    item = observed(claim, repo, "--", *MAVEN_TEST[:-1], "compile")

    assert item["observed_value"] == {"exit_code": 0}
    assert item["details"]["no_counts"].startswith("the build wrote no test report")


HIDE_SOURCE = """package com.example;

import org.junit.platform.engine.FilterResult;
import org.junit.platform.engine.TestDescriptor;
import org.junit.platform.launcher.PostDiscoveryFilter;

public class Hide implements PostDiscoveryFilter {
    @Override
    public FilterResult apply(TestDescriptor descriptor) {
        return FilterResult.includedIf(!descriptor.getDisplayName().equals("add()"));
    }
}
"""
FAKE_ASSERTIONS = """package org.junit.jupiter.api;

public final class Assertions {
    public static void assertEquals(int expected, int actual) {
    }
}
"""
SERVICES = "src/main/resources/META-INF/services"
LAUNCHER_JARS = ":".join(
    f"/usr/share/java/junit-platform-{name}.jar" for name in ("launcher", "engine", "commons")
)


def hiding_filter(tmp_path: Path) -> dict[str, bytes]:
    """A PostDiscoveryFilter dropping the test named add(), compiled into the code's resources,
    and the service file that registers it with the JUnit Platform."""
    source = tmp_path / "hide" / "Hide.java"
    source.parent.mkdir()
    source.write_text(HIDE_SOURCE)
    subprocess.run(["javac", "--release", "11", "-cp", LAUNCHER_JARS, "-d", str(source.parent),
                    str(source)], check=True)  # fmt: skip
    return {
        "src/main/resources/com/example/Hide.class": (
            source.parent / "com" / "example" / "Hide.class"
        ).read_bytes(),
        f"{SERVICES}/org.junit.platform.launcher.PostDiscoveryFilter": b"com.example.Hide\n",
    }


def write_bytes(repo: Path, files: dict[str, bytes]) -> None:
    """The agent's changes, left in the work tree (the claim records them)."""
    for name, data in files.items():
        path = repo / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


@pytest.mark.parametrize("hook", ["post-discovery-filter", "shadowed-assertions"])
@pytest.mark.parametrize("trusted", [True, False], ids=["trusted-ref", "no-ref"])
def test_attack_90_the_code_cannot_hook_into_the_test_engine(
    tmp_path: Path, claim: Path, hook: str, trusted: bool
) -> None:
    """The agent leaves add() broken and makes its own code decide the run: a PostDiscoveryFilter
    registered from its resources drops the failing test (the build passes, one test run), or a
    class of its own named org.junit.jupiter.api.Assertions comes before JUnit's on the test
    class path, and assertEquals never fails. Both are protected paths: restored from the
    trusted ref (so removed), or changes that do not count."""
    repo = maven_project(tmp_path / "repo", CALC_BUGGY)
    base = head_commit(repo)
    if hook == "post-discovery-filter":
        write_bytes(repo, hiding_filter(tmp_path))
        hook_path = f"{SERVICES}/org.junit.platform.launcher.PostDiscoveryFilter"
    else:
        hook_path = "src/main/java/org/junit/jupiter/api/Assertions.java"
        write_bytes(repo, {hook_path: FAKE_ASSERTIONS.encode()})
    options = ["--trusted-ref", base] if trusted else []

    item = observed(claim, repo, *options, "--", *MAVEN_TEST)

    if trusted:
        assert item["details"]["protected_restored"]["removed"] == [hook_path]
        assert item["observed_value"]["tests"]["com.example.CalcTest::add"] == "failed"
    else:
        assert hook_path in item["details"]["test_config_changed"]


@pytest.mark.parametrize("hook", ["post-discovery-filter", "shadowed-assertions"])
def test_attack_90_control_unprotected_the_hook_would_pass_the_broken_code(
    tmp_path: Path, hook: str
) -> None:
    """What the hooks above do to a build that does not protect them (run here by hand, outside
    the observer): the broken add() passes."""
    repo = maven_project(tmp_path / "repo", CALC_BUGGY)
    if hook == "post-discovery-filter":
        write_bytes(repo, hiding_filter(tmp_path))
    else:
        write_bytes(repo, {"src/main/java/org/junit/jupiter/api/Assertions.java":
                            FAKE_ASSERTIONS.encode()})  # fmt: skip
    done = subprocess.run(["mvn", "-o", "-B", *MAVEN_TEST[1:]], cwd=repo, capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:]
    assert "BUILD SUCCESS" in done.stdout


@pytest.mark.parametrize("trusted", [True, False], ids=["trusted-ref", "no-ref"])
def test_attack_92_the_builds_own_configuration_cannot_pick_the_tests(
    tmp_path: Path, claim: Path, trusted: bool
) -> None:
    """.mvn/maven.config adds options to every mvn command: -Dtest=CalcTest#addZero runs only
    the passing test (the build passes). It is a protected path."""
    repo = maven_project(tmp_path / "repo", CALC_BUGGY)
    base = head_commit(repo)
    write_bytes(repo, {".mvn/maven.config": b"-Dtest=CalcTest#addZero\n"})
    options = ["--trusted-ref", base] if trusted else []

    item = observed(claim, repo, *options, "--", *MAVEN_TEST)

    if trusted:
        assert item["details"]["protected_restored"]["removed"] == [".mvn/maven.config"]
        assert item["observed_value"]["failed"] == 1
    else:
        assert item["details"]["test_config_changed"] == [".mvn/maven.config"]


def test_attack_92_the_projects_wrapper_is_never_run(tmp_path: Path, claim: Path) -> None:
    repo = gradle_project(tmp_path / "repo")
    write_bytes(repo, {"gradlew": b"#!/bin/sh\necho BUILD SUCCESSFUL\nexit 0\n"})
    (repo / "gradlew").chmod(0o755)
    assert run(["capture-git", str(claim), "--repo", str(repo)]) == 0

    code = run(["observe", "test-run", str(claim), "--cwd", str(repo), "--", "./gradlew", "test"])

    assert code == 4  # a usage error: nothing ran
    assert json.loads(claim.read_text())["evidence"] == []


# --- 172: the test JVM rewrites the reports the build wrote ---------------------------------------


def skipping_add(exception: str) -> str:
    """Calc's add(), broken, and the end of its class: it throws ``exception`` (found by name,
    as the main code compiles without the test libraries), which makes JUnit file the test that
    called it as skipped."""
    return (
        "    public static int add(int a, int b) {\n"
        "        try {\n"
        f'            throw (RuntimeException) Class.forName("{exception}")\n'
        '                .getConstructor(String.class).newInstance("not on this platform");\n'
        "        } catch (ReflectiveOperationException absent) {\n"
        "            return a - b;\n"
        "        }\n"
        "    }\n"
        "}\n"
    )


def observed_skipped(claim: Path, repo: Path, base: str, command: tuple[str, ...]) -> None:
    """The run of the tests at ``base`` on the broken code: both tests skipped, as they ran."""
    item = observed(claim, repo, "--trusted-ref", base,
                    "--require-test", "com.example.CalcTest::add", "--", *command)  # fmt: skip
    assert item["observed_value"]["tests"] == {
        "com.example.CalcTest::add": "skipped",
        "com.example.CalcTest::addZero": "skipped",
    }


# Broken add(), which aborts the test that calls it (JUnit files an aborted test as skipped, and
# the build passes), and a shutdown hook of the test JVM that, once the build has written the
# report, takes the skips out of it: every test then reads as passed.
REWRITES_ITS_REPORT = """package com.example;

import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

public final class Calc {
    static {
        Runtime.getRuntime().addShutdownHook(new Thread(Calc::rewrite));
    }

    private static void rewrite() {
        Path folder = Paths.get("target", "sure" + "fire-reports");
        for (int attempt = 0; attempt < 100; attempt++) {
            boolean rewritten = false;
            try (DirectoryStream<Path> reports = Files.newDirectoryStream(folder, "TEST-*.xml")) {
                for (Path report : reports) {
                    String text = new String(Files.readAllBytes(report), StandardCharsets.UTF_8);
                    if (text.contains("<skipped")) {
                        text = text
                            .replaceAll("(?s)<skipped[^>]*/>|<skipped[^>]*>.*?</skipped>", "")
                            .replace("skipped=\\"2\\"", "skipped=\\"0\\"");
                        Files.write(report, text.getBytes(StandardCharsets.UTF_8));
                        rewritten = true;
                    }
                }
            } catch (Exception notYet) {
                // the build has not written its report yet
            }
            if (rewritten) {
                return;
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException stopped) {
                return;
            }
        }
    }

""" + skipping_add("org.opentest4j.TestAbortedException")


def test_attack_172_the_test_jvm_cannot_rewrite_the_report_the_build_wrote(
    tmp_path: Path, claim: Path
) -> None:
    repo = maven_project(tmp_path / "repo", CALC_BUGGY)
    base = head_commit(repo)
    write_files(repo, {MAIN: REWRITES_ITS_REPORT})

    observed_skipped(claim, repo, base, MAVEN_TEST)


def test_attack_172_control_a_test_jvm_of_the_builds_own_rewrites_its_report(
    tmp_path: Path,
) -> None:
    """The same build run by hand, its test JVM started as Maven starts it: the report then
    says both tests passed."""
    repo = maven_project(tmp_path / "repo", REWRITES_ITS_REPORT)
    done = subprocess.run(["mvn", "-o", "-B", *MAVEN_TEST[1:]], cwd=repo, capture_output=True,
                          text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:]
    report = (repo / "target/surefire-reports/TEST-com.example.CalcTest.xml").read_text()
    assert "<testcase" in report
    assert "<skipped" not in report


# Broken add(), which makes JUnit 4 file the test that calls it as skipped (an assumption that
# failed), and a process the test worker leaves behind that takes the skips out of the report
# once Gradle has written it.
LEAVES_A_REWRITER = """package com.example;

public final class Calc {
    static {
        String rewrite = "for attempt in $(seq 400); do"
            + " for report in build/test-results/test/TEST-*.xml; do"
            + "  if grep -q '<skipped' \\"$report\\" 2>/dev/null; then"
            + "   sed -i -e 's|<skipped/>||g' -e 's|skipped=\\"2\\"|skipped=\\"0\\"|'"
            + "    \\"$report\\"; exit 0;"
            + "  fi;"
            + " done; sleep 0.05;"
            + " done";
        try {
            new ProcessBuilder("setsid", "sh", "-c", rewrite).start();
        } catch (java.io.IOException absent) {
            // no shell: nothing to leave behind
        }
    }

""" + skipping_add("org.junit.AssumptionViolatedException")


def test_attack_173_a_process_the_test_worker_leaves_cannot_rewrite_gradles_report(
    tmp_path: Path, claim: Path
) -> None:
    repo = gradle_project(tmp_path / "repo")
    base = head_commit(repo)
    write_files(repo, {MAIN: LEAVES_A_REWRITER})

    observed_skipped(claim, repo, base, GRADLE_TEST)


def test_attack_173_control_a_test_worker_of_the_builds_own_leaves_a_rewriter(
    tmp_path: Path,
) -> None:
    """The same build run by hand: the report then says both tests passed."""
    repo = gradle_project(tmp_path / "repo", LEAVES_A_REWRITER)
    done = subprocess.run(["gradle", "--offline", "--no-daemon", "test"], cwd=repo,
                          capture_output=True, text=True, check=False)  # fmt: skip
    assert done.returncode == 0, done.stdout[-2000:]
    # The build is over; the process it left may still be at work.
    report = repo / "build/test-results/test/TEST-com.example.CalcTest.xml"
    for _ in range(100):
        if "<skipped" not in report.read_text():
            break
        time.sleep(0.05)
    assert "<testcase" in report.read_text()
    assert "<skipped" not in report.read_text()


# The JVM the wrapper starts, as a script: it writes where it is told and says what happened.
TRIES_TO_WRITE = """#!/bin/sh
shift  # the wrapper's mark, a system property
for target in "$@"; do
    if (echo forged > "$target") 2>/dev/null; then echo "wrote $target"
    else echo "refused $target"; fi
done
"""


@pytest.mark.needs_tool("bwrap")
def test_the_test_jvms_wrapper_leaves_no_modules_report_folder_writable(tmp_path: Path) -> None:
    """Every module's report folders are read-only for the JVM, directly or through the build
    tool's /proc/PID/root (its mount namespace, where they are writable); the rest of the tree
    stays writable (tests write files)."""
    work = tmp_path / "work"
    write_files(work, {"pom.xml": "<project/>", "lib/pom.xml": "<project/>"})
    jdk = tmp_path / "jdk"
    write_files(jdk, {"bin/java": TRIES_TO_WRITE})
    (jdk / "bin/java").chmod(0o755)
    reports = [work / "target/surefire-reports/TEST-x.xml",
               work / "lib/target/failsafe-reports/TEST-y.xml"]  # fmt: skip
    through_proc = Path(f"/proc/{os.getpid()}/root{reports[0]}")
    free = work / "lib/src-output.txt"
    context = RunContext(Toolchain(program="mvn"), None, {}, {}, str(work), str(work), "/r",
                         preload=str(FORK_FOLDER))  # fmt: skip
    env = dict(Maven().invocation(["mvn", "test"], context).env)

    done = subprocess.run(
        [FORK_FOLDER / "bin/java", *reports, through_proc, free],
        env=os.environ | env | {"JAVA_HOME": str(jdk)}, capture_output=True, text=True, check=True,
    )  # fmt: skip

    assert done.stdout.splitlines() == [
        f"refused {reports[0]}", f"refused {reports[1]}", f"refused {through_proc}",
        f"wrote {free}",
    ]  # fmt: skip
    assert not any(report.exists() for report in reports)


# --- canaries (issue 30) -------------------------------------------------------------------------


def test_each_module_with_java_tests_gets_a_canary_class_in_either_junit() -> None:
    """Two modules with Java tests (the root and lib) get a class each, with the same must-pass
    and must-fail test; a module without tests gets none. The build goes on past the failed
    one: the run exits 0."""
    files = [b"pom.xml", b"src/main/java/C.java", b"src/test/java/com/x/CTest.java",
             b"lib/pom.xml", b"lib/src/test/java/LTest.java", b"docs/pom.xml",
             b"docs/src/main/java/D.java"]  # fmt: skip
    words = iter(("c0ffee01", "5eed0002", "0dd00003", "a11ce004", "b0b00005", "f00d0006"))

    canaries = MAVEN.canaries(["mvn", "test"], files, lambda: next(words))

    assert canaries is not None
    assert canaries.failed_exit_code == 0
    assert [(canary.name, canary.passes) for canary in canaries.tests] == [
        ("claimcanaryb0b00005.Claimb0b00005Test::canary_0dd00003", True),
        ("claimcanaryb0b00005.Claimb0b00005Test::canary_a11ce004", False),
        ("claimcanaryf00d0006.Claimf00d0006Test::canary_0dd00003", True),
        ("claimcanaryf00d0006.Claimf00d0006Test::canary_a11ce004", False),
    ]
    root = "src/test/java/claimcanaryb0b00005/Claimb0b00005Test.java"
    assert sorted(canaries.files) == sorted(
        [f"{root}.jupiter", f"{root}.junit4",
         f"lib/{root.replace('b0b00005', 'f00d0006')}.jupiter",
         f"lib/{root.replace('b0b00005', 'f00d0006')}.junit4"]
    )  # fmt: skip
    jupiter = canaries.files[f"{root}.jupiter"].decode()
    assert 'Assertions.assertEquals("c0ffee01", new StringBuilder("c0ffee01")' in jupiter
    assert 'Assertions.assertEquals("5eed0002", new StringBuilder("c0ffee01")' in jupiter
    assert '@DisplayName("canary_0dd00003")' in jupiter  # Gradle names JUnit 5 tests by it
    assert "Assert.assertEquals" in canaries.files[f"{root}.junit4"].decode()
    assert MAVEN.canaries(["mvn", "test"], [b"pom.xml", b"src/main/java/C.java"], str) is None


def test_the_build_runs_the_canaries_whatever_its_test_filter(tmp_path: Path) -> None:
    files = [b"pom.xml", b"src/test/java/CTest.java"]
    words = iter(("c0ffee01", "5eed0002", "0dd00003", "a11ce004", "b0b00005"))
    canaries = MAVEN.canaries(["mvn", "test"], files, lambda: next(words))
    context = RunContext(Toolchain(program="/usr/share/maven/bin/mvn"), None, {}, {}, "/w", "/w",
                         "/r", canaries=canaries, preload="/p")  # fmt: skip

    argv = MAVEN.invocation(["mvn", "-Dtest=CTest", "test"], context).argv

    assert argv[:3] == ("/bin/sh", "-c", argv[2])
    canary = "src/test/java/claimcanaryb0b00005/Claimb0b00005Test.java"
    assert argv[3:7] == ("sh", canary, "src/test", "--")
    assert argv[-2:] == ("-Dtest=CTest,Claimb0b00005Test", "test")
    assert "-Dmaven.test.failure.ignore=true" in argv
    write_files(tmp_path, {"bin/gradle": "", "lib/gradle-launcher-4.4.1.jar": ""})
    gradle = replace(context, toolchain=Toolchain(program=str(tmp_path / "bin/gradle")))
    env = Gradle().invocation(["gradle", "test"], gradle).env
    assert env["CLAIM_CANARIES"] == "claimcanary*"  # claim.gradle adds it to every filter


@pytest.mark.parametrize(
    ("jar", "version"),
    [("gradle-launcher-4.4.1.jar", (4, 4, 1)), ("gradle-launcher-8.10.jar", (8, 10)),
     ("gradle-launcher-6.7-rc-1.jar", (6, 7))],
)  # fmt: skip
def test_gradles_version_is_read_from_its_launcher(
    tmp_path: Path, jar: str, version: tuple[int, ...]
) -> None:
    write_files(tmp_path, {"bin/gradle": "", f"lib/{jar}": ""})
    assert gradle_version(str(tmp_path / "bin/gradle")) == version


@pytest.mark.parametrize("jar", ["gradle-launcher-6.7.jar", "gradle-launcher-8.10.2.jar", None])
def test_attack_182_a_gradle_with_toolchain_launchers_is_not_verified(
    tmp_path: Path, jar: str | None
) -> None:
    """From 6.7 Gradle starts a Test task's JVM from its javaLauncher, which claim.gradle cannot
    point at the wrapper: the tests would run unconfined, and rewrite the reports (attack 173).
    Such a Gradle, or one whose version cannot be told, is not verified, said by the setting."""
    write_files(tmp_path, {"bin/gradle": "", **({f"lib/{jar}": ""} if jar else {})})
    context = RunContext(Toolchain(program=str(tmp_path / "bin/gradle")), None, {}, {}, "/w",
                         "/w", "/r", preload="/p")  # fmt: skip

    with pytest.raises(ObservationFailed, match=r"javaLauncher .* not verified"):
        Gradle().invocation(["gradle", "test"], context)


# Broken add(), and a shutdown hook of the JVM that ran the tests which, once Maven has written
# every report, makes every test in them pass (the observer's canaries too): failures out, and,
# with MARK, the wrapper's mark in.
REWRITES_EVERY_REPORT = """package com.example;

import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;

public final class Calc {
    static {
        Runtime.getRuntime().addShutdownHook(new Thread(Calc::rewrite));
    }

    private static void rewrite() {
        Path folder = Paths.get("target", "sure" + "fire-reports");
        try (DirectoryStream<Path> reports = Files.newDirectoryStream(folder, "TEST-*.xml")) {
            for (Path report : reports) {
                String text = new String(Files.readAllBytes(report), StandardCharsets.UTF_8)
                    .replaceAll("(?s)<failure[^>]*/>|<failure[^>]*>.*?</failure>", "")
                    .replaceAll("failures=\\"\\\\d+\\"", "failures=\\"0\\"")
                    .replace("<properties/>", "<properties>MARK</properties>");
                Files.write(report, text.getBytes(StandardCharsets.UTF_8));
            }
        } catch (Exception absent) {
            // no report to rewrite
        }
    }

    public static int add(int a, int b) {
        return a - b;
    }
}
"""


@pytest.mark.parametrize("mark", [False, True], ids=["unmarked", "forged-mark"])
def test_attack_180_181_tests_in_mavens_own_jvm_rewrite_its_reports_and_are_not_verified(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str], mark: bool
) -> None:
    """Surefire's forkCount=0 runs the tests in Maven's JVM, where the wrapper cannot keep them
    from the reports: a shutdown hook takes every failure out once Maven has written them. A
    report without the wrapper's mark is not verified (180); one whose hook forges the mark too
    made the must-fail canary pass, and is forged (181)."""
    forged = "<property name='claim.test.jvm' value='wrapped'/>" if mark else ""
    repo = make_repo(tmp_path / "repo", {"pom.xml": IN_MAVEN_POM.replace("ARTIFACT", "calc"),
                                         MAIN: CALC_BUGGY, TEST: jupiter_test()})  # fmt: skip
    maven_project(tmp_path / "unused")  # for the skip when Maven is missing
    base = head_commit(repo)
    write_files(repo, {MAIN: REWRITES_EVERY_REPORT.replace("MARK", forged)})
    assert run(["capture-git", str(claim), "--repo", str(repo)]) == 0

    code = run(["observe", "test-run", str(claim), "--cwd", str(repo), "--trusted-ref", base,
                "--", *MAVEN_TEST])  # fmt: skip

    evidence = json.loads(claim.read_text()).get("evidence", [])
    if not mark:
        assert (code, evidence) == (5, [])
        assert "forkCount=0" in capsys.readouterr().err
        return
    assert code == 0
    [item] = evidence
    assert item["observed_value"]["tests"] == {
        "com.example.CalcTest::add": "passed",  # rewritten
        "com.example.CalcTest::addZero": "passed",
    }
    assert item["observed_value"]["canaries"] == "forged"
    assert item["expected"]["canaries"] == "held"
    [wrong] = item["details"]["canaries"]["wrong"]
    assert (wrong["planted"], wrong["reported"]) == ("failed", "passed")


def test_a_test_jvm_that_exits_mid_run_is_not_verified_though_maven_exits_0(
    tmp_path: Path, claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The broken add() calls System.exit(0): the test JVM ends before its report is written.
    Maven, told to go on past failed tests (the must-fail canary's), exits 0; Surefire's own
    line about the JVM that did not say goodbye makes the run not verified."""
    repo = maven_project(tmp_path / "repo", CALC_BUGGY.replace("return a - b;", "System.exit(0);"
                                                               " return a - b;"))  # fmt: skip
    assert run(["capture-git", str(claim), "--repo", str(repo)]) == 0

    code = run(["observe", "test-run", str(claim), "--cwd", str(repo), "--", *MAVEN_TEST])

    assert (code, json.loads(claim.read_text()).get("evidence", [])) == (5, [])
    assert "Surefire says a test JVM ended early" in capsys.readouterr().err
