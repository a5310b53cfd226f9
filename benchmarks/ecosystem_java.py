"""Java: what the gate adds per stop on a small Maven project (Calc.add and its JUnit 5 test, fixed
in the work tree), against the same ``mvn test`` run bare in the work tree from a clean
``target/`` (as the gate's copy starts), medians of RUNS interleaved runs.

Maven Central is not reachable here: both use Debian's repository (/usr/share/maven-repo) as the
operator's, so there is no dependency cache install to time (``mvn dependency:go-offline`` needs
Central). Run: ``.venv/bin/python benchmarks/ecosystem_java.py``.
"""

from __future__ import annotations

import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from ecosystem_common import fixed_repo, gate_config  # benchmarks/, beside this script

CLAIM = str(Path(sys.executable).with_name("claim"))
RUNS = 3
REPOSITORY = "/usr/share/maven-repo"
BARE, GATE = "bare test run", "claim gate"
POM = """<?xml version="1.0" encoding="UTF-8"?>
<project xmlns="http://maven.apache.org/POM/4.0.0">
  <modelVersion>4.0.0</modelVersion>
  <groupId>com.example</groupId>
  <artifactId>calc</artifactId>
  <version>1.0</version>
  <properties><maven.compiler.release>17</maven.compiler.release></properties>
  <dependencies>
    <dependency><groupId>org.junit.jupiter</groupId><artifactId>junit-jupiter-engine</artifactId>
      <version>5.9.2</version><scope>test</scope></dependency>
  </dependencies>
  <build><plugins>
    <plugin><artifactId>maven-resources-plugin</artifactId><version>3.3.0</version></plugin>
    <plugin><artifactId>maven-compiler-plugin</artifactId><version>3.10.1</version></plugin>
    <plugin><artifactId>maven-surefire-plugin</artifactId><version>2.22.3</version></plugin>
  </plugins></build>
</project>
"""
TEST = """package com.example;

import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

class CalcTest {
    @Test
    void add() {
        assertEquals(5, Calc.add(2, 3));
    }
}
"""
MAIN = "src/main/java/com/example/Calc.java"


def calc(operator: str) -> str:
    return (
        "package com.example;\n\npublic final class Calc {\n"
        f"    public static int add(int a, int b) {{\n        return a {operator} b;\n    }}\n}}\n"
    )


def timed(argv: list[str], cwd: Path, before: Callable[[], None] = lambda: None) -> float:
    before()
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, capture_output=True, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"{argv[:2]} exited {done.returncode}: {done.stdout[-800:]!r}")
    return elapsed


def gate_against_bare(
    repo: Path, config: Path, bare: list[str], outputs: list[str], runs: int = RUNS
) -> list[tuple[str, float]]:
    """Medians of ``runs`` interleaved gate and bare runs; the bare run starts without the
    build's ``outputs`` each time, as the gate's copy does."""
    gate = [CLAIM, "gate", "--config", str(config), "--repo", str(repo), "--json"]
    subprocess.run([CLAIM, "gate", "--config", str(config), "--repo", str(repo), "--start"],
                   check=True, capture_output=True)  # fmt: skip

    def clean() -> None:
        for name in outputs:
            shutil.rmtree(repo / name, ignore_errors=True)

    gate_s, bare_s = [], []
    for _ in range(runs):
        gate_s.append(timed(gate, repo))
        bare_s.append(timed(bare, repo, clean))
    clean()
    return [(BARE, statistics.median(bare_s)), (GATE, statistics.median(gate_s))]


def measure() -> list[tuple[str, float]]:
    if shutil.which("mvn") is None or not Path(REPOSITORY).is_dir():
        raise FileNotFoundError("mvn and Debian's maven repository (make toolchains)")
    with tempfile.TemporaryDirectory(prefix="bench-java-") as folder:
        root = Path(folder)
        repo = fixed_repo(
            root,
            {"pom.xml": POM, MAIN: calc("-"), "src/test/java/com/example/CalcTest.java": TEST},
            {MAIN: calc("+")},
        )
        command = ["mvn", f"-Dmaven.repo.local={REPOSITORY}", "test"]
        bare = ["mvn", "-o", "-B", "-q", *command[1:]]
        return gate_against_bare(repo, gate_config(root, command), bare, ["target"])


if __name__ == "__main__":
    for label, seconds in measure():
        print(f"{label:<44} {seconds:>8.3f}")
