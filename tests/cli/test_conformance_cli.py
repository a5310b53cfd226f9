"""Every conformance vector, through the ``claim verify`` command: exit code, state, unmet."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from conformance.vectors import Vector, load_vectors

from completion_claim.cli import run

VECTORS = load_vectors()


@pytest.mark.parametrize("vector", VECTORS, ids=[v.name for v in VECTORS])
def test_claim_verify_behaves_as_the_vector_says(
    vector: Vector, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claim_path = tmp_path / "claim.json"
    claim_path.write_bytes(vector.claim_bytes)
    argv = ["verify", str(claim_path), "--at", vector.at, "--json"]
    if vector.policy_bytes is not None:
        policy_path = tmp_path / "policy.json"
        policy_path.write_bytes(vector.policy_bytes)
        argv += ["--policy", str(policy_path)]
    assert run(argv) == vector.exit_code
    out, err = capsys.readouterr()
    if vector.state == "invalid":
        assert out == ""
        assert err.count("\n") == 1
        assert "Traceback" not in err
        source = "policy.json" if vector.invalid_policy else "claim.json"
        assert source in err
        assert f": {vector.error_path}: " in err or vector.error_path == ""
    else:
        verdict = json.loads(out)
        assert verdict["state"] == vector.state
        assert sorted(u["code"] for u in verdict["unmet"]) == list(vector.unmet)
