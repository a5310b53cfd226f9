"""The goals ``make bench`` holds the project to, beside the figures this run measured.

A benchmark measuring a goal calls ``record(label, value, goal)``; the figure is added to the file
``CLAIM_BENCH_FIGURES`` names (``make bench`` empties it first, and runs this script last to print
the table). Without the variable nothing is recorded: a benchmark run alone prints its own figures.
A goal whose benchmark did not run (a toolchain missing here) is shown as not measured.

Run: ``.venv/bin/python benchmarks/goals.py`` (reads ``CLAIM_BENCH_FIGURES``).
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

VARIABLE = "CLAIM_BENCH_FIGURES"

BATCH_WALL = "claim verify --batch wall, default jobs, over the json.loads floor"
BATCH_MEMORY = "claim verify --batch peak RSS, 4x the lines over 1x (flat memory)"
GATE_ADDED_S = 0.5
ECOSYSTEMS = ("pytest", "unittest", "node", "go", "rust", "java", "gradle")


def gate_added(ecosystem: str) -> str:
    return f"gate added per stop, {ecosystem} (gate - bare warm run)"


SERVICE_CLAIMS_S = "claim serve, SQLite, 1 process, claims/s (8 clients)"
SERVICE_P99_MS = "claim serve, SQLite, 1 process, p99 of POST /v1/claims"
SERVICE_POSTGRES_SCALING = "claim serve, PostgreSQL, 2 processes' claims/s over 1's"

# Issue 33's goals, in the order the table shows them: (label, goal, unit, at least).
GOALS: tuple[tuple[str, float, str, bool], ...] = (
    (SERVICE_CLAIMS_S, 1000.0, "/s", True),
    (SERVICE_P99_MS, 100.0, " ms", False),
    (SERVICE_POSTGRES_SCALING, 1.6, "x", True),
    (BATCH_WALL, 6.0, "x", False),
    (BATCH_MEMORY, 1.25, "x", False),
    *((gate_added(ecosystem), GATE_ADDED_S, "s", False) for ecosystem in ECOSYSTEMS),
)


def record(label: str, value: float, goal: float, unit: str = "", at_least: bool = False) -> None:
    """Add one figure to this run's file, replacing one of the same label (written atomically:
    the file is whole at every moment); nothing without ``CLAIM_BENCH_FIGURES``."""
    path = os.environ.get(VARIABLE)
    if not path:
        return
    figures = [f for f in _read(Path(path)) if f["label"] != label]
    figures.append(
        {"label": label, "value": value, "goal": goal, "unit": unit, "at_least": at_least}
    )
    folder = Path(path).parent
    folder.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile("w", dir=folder, delete=False, suffix=".tmp") as out:
        json.dump(figures, out, indent=1)
    os.replace(out.name, path)


def _read(path: Path) -> list[dict[str, Any]]:
    try:
        figures: list[dict[str, Any]] = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    return figures


def table(figures: list[dict[str, Any]]) -> list[str]:
    """One line per goal (those of ``GOALS`` first, then any other recorded): the figure, the
    goal, and whether it was met."""
    found = {f["label"]: f for f in figures}
    rows = [
        found.pop(label, {"label": label, "goal": goal, "unit": unit, "at_least": at_least})
        for label, goal, unit, at_least in GOALS
    ]
    rows += found.values()
    width = max(len(row["label"]) for row in rows)
    lines = [f"  {'goal':<{width}}  {'measured':>10}  {'target':>10}"]
    for row in rows:
        sign = ">=" if row["at_least"] else "<="
        target = f"{sign} {row['goal']:g}{row['unit']}"
        if "value" not in row:
            lines.append(f"  {row['label']:<{width}}  {'-':>10}  {target:>10}  not measured")
            continue
        value = row["value"]
        met = value >= row["goal"] if row["at_least"] else value <= row["goal"]
        shown = f"{value:.2f}{row['unit']}"
        lines.append(
            f"  {row['label']:<{width}}  {shown:>10}  {target:>10}  {'PASS' if met else 'MISS'}"
        )
    return lines


def main() -> int:
    path = os.environ.get(VARIABLE)
    if not path:
        sys.exit(f"goals: set {VARIABLE} to the file the benchmarks recorded into")
    load = " ".join(f"{figure:.2f}" for figure in os.getloadavg())
    print()
    print(f"Goals (issue 33), this run; load averages now {load}")
    for line in table(_read(Path(path))):
        print(line)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
