"""What the gate adds per stop in each ecosystem, and what the dependency cache costs, side by side.

Each ``benchmarks/ecosystem_<name>.py`` measures one ecosystem on a small project of its own
(bare test command, ``claim gate`` on a change, the dependency cache's first and later installs)
and returns ``(label, seconds)`` rows; this runs them all in one process, one after another, and
prints the rows with the gate's added time (gate minus bare test run) and its ratio. An ecosystem
whose toolchain is missing here says so and is left out. Run:
``.venv/bin/python benchmarks/ecosystems.py``.
"""

from __future__ import annotations

import importlib
import sys
from pathlib import Path

import goals  # benchmarks/goals.py, beside this script

BARE, GATE = "bare test run", "claim gate"


def main() -> int:
    here = Path(__file__).parent
    sys.path.insert(0, str(here))
    print(f"{'ecosystem':<12} {'measure':<44} {'seconds':>8}")
    for module_path in sorted(here.glob("ecosystem_*.py")):
        name = module_path.stem.removeprefix("ecosystem_")
        module = importlib.import_module(module_path.stem)
        if not hasattr(module, "measure"):
            continue  # ecosystem_common.py: what the others share
        try:
            rows = module.measure()
        except FileNotFoundError as missing:  # a toolchain this machine does not have
            print(f"{name:<12} left out: {missing}")
            continue
        except SystemExit as failed:  # a command that failed: said, and the others still run
            print(f"{name:<12} failed: {failed}")
            continue
        for label, seconds in rows:
            print(f"{name:<12} {label:<44} {seconds:>8.3f}")
        found = dict(rows)
        if BARE in found and GATE in found:
            added = found[GATE] - found[BARE]
            ratio = found[GATE] / found[BARE]
            print(f"{name:<12} {'added per stop (gate - bare)':<44} {added:>8.3f}  x{ratio:.1f}")
            goals.record(goals.gate_added(name), added, goals.GATE_ADDED_S, "s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
