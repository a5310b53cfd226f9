"""Gate tests: real git repositories, real sandboxed pytest runs, real SQLite and PostgreSQL.

The PostgreSQL fixtures (a superuser connection for set-up, a role that may only read) and the
local HTTP service are the observer tests' own, imported so both suites use one definition.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from completion_claim.cli import run
from completion_claim.gate.config import GateConfig, load_config
from tests.observe.conftest import postgres, postgres_reader, site  # noqa: F401 - fixtures

# No test baseline at the start (attack 93; test_test_baseline.py takes real ones): it would add a
# sandboxed run to every start here, and a baseline only ever adds requirements.
TEST_RUN_CHECK = """
[[check]]
type = "test_run"
command = ["python", "-m", "pytest", "-q"]
baseline = false
"""
POLICY = """
[policy]
id = "ops/gate"
requires = ["test_run"]
max_age_s = 600
"""

WriteConfig = Callable[..., GateConfig]


@pytest.fixture
def write_config(tmp_path: Path) -> WriteConfig:
    """Write claim.toml (outside the repository, like an operator's) with the runs recorded in
    the test's own folder; return it loaded."""

    def write(body: str, *, environ: dict[str, str] | None = None) -> GateConfig:
        path = tmp_path / "ops" / "claim.toml"
        path.parent.mkdir(exist_ok=True)
        runs = tmp_path / "runs"
        text = body if "[gate]" in body else f'[gate]\nruns_dir = "{runs}"\n{body}'
        path.write_text(text, encoding="utf-8")
        return load_config(path, dict(os.environ) if environ is None else environ)

    return write


def reverify(claim_path: Path, capsys: pytest.CaptureFixture[str]) -> dict[str, object]:
    """``claim verify --json`` of a claim the gate recorded, at the gate's own decision time:
    the verdict any verifier reaches from the document alone."""
    recorded = json.loads(claim_path.read_text(encoding="utf-8"))["verdict"]
    capsys.readouterr()
    code = run(["verify", str(claim_path), "--json", "--at", recorded["decided_at"]])
    verdict: dict[str, object] = json.loads(capsys.readouterr().out)
    assert code == {"verified": 0, "unverified": 1, "refuted": 2}[str(verdict["state"])]
    return verdict


@pytest.fixture(autouse=True)
def _one_verdict_everywhere(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Iterator[None]:
    """Every claim a gate test recorded re-verifies, from the document alone, to the verdict
    the gate reached: the same state and the same unmet list (attack 48)."""
    yield
    # <runs>/<repository>/<run>/claim.json: not a claim.json the agent left in the mirror's tree.
    for claim_path in sorted((tmp_path / "runs").glob("*/*/claim.json")):
        recorded = json.loads(claim_path.read_text(encoding="utf-8"))["verdict"]
        again = reverify(claim_path, capsys)
        assert (again["state"], again["unmet"]) == (recorded["state"], recorded["unmet"])
        assert "recorded_verdict_differs" not in again
