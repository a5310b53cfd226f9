"""Gradle: what the gate adds per stop on a small Gradle project (Calc.add and its JUnit 4 test,
fixed in the work tree), against the same ``gradle test`` run bare (offline, no daemon, from a
clean ``build/``), medians of interleaved runs.

The build reads JUnit from Debian's repository as a ``file:`` repository: no dependency cache is
involved. Run: ``.venv/bin/python benchmarks/ecosystem_gradle.py``.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

from ecosystem_common import fixed_repo, gate_config
from ecosystem_java import MAIN, calc, gate_against_bare

BUILD = """apply plugin: 'java'

repositories {
    maven { url 'file:///usr/share/maven-repo' }
}

dependencies {
    testCompile 'junit:junit:4.13.2'
}
"""
TEST = """package com.example;

import static org.junit.Assert.assertEquals;

import org.junit.Test;

public class CalcTest {
    @Test
    public void add() {
        assertEquals(5, Calc.add(2, 3));
    }
}
"""


def measure() -> list[tuple[str, float]]:
    if shutil.which("gradle") is None:
        raise FileNotFoundError("gradle (make toolchains)")
    with tempfile.TemporaryDirectory(prefix="bench-gradle-") as folder:
        root = Path(folder)
        repo = fixed_repo(
            root,
            {"build.gradle": BUILD, "settings.gradle": "rootProject.name = 'calc'\n",
             MAIN: calc("-"), "src/test/java/com/example/CalcTest.java": TEST},
            {MAIN: calc("+")},
        )  # fmt: skip
        bare = ["gradle", "--offline", "--no-daemon", "-q", "test"]
        return gate_against_bare(
            repo, gate_config(root, ["gradle", "test"]), bare, ["build", ".gradle"]
        )


if __name__ == "__main__":
    for label, seconds in measure():
        print(f"{label:<44} {seconds:>8.3f}")
