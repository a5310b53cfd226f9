"""`make demo`: verify the bundled example claims, one per verdict, and print their reports."""

from __future__ import annotations

import sys
from pathlib import Path

from completion_claim.cli import run

EXAMPLES = Path(__file__).parent
DECISION_TIME = "2026-08-27T18:04:10Z"


def main() -> int:
    expected = {"format-note": 0, "unverified": 1, "refuted": 2}
    for name, code in expected.items():
        print(f"$ claim verify examples/{name}.claim.json --at {DECISION_TIME}")
        got = run(["verify", str(EXAMPLES / f"{name}.claim.json"), "--at", DECISION_TIME])
        print(f"(exit {got})\n")
        if got != code:
            print(f"demo: expected exit {code} for {name}, got {got}", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
