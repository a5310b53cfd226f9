"""``claim verify``: exit codes, the readable report, JSON output, batch mode, errors."""

from __future__ import annotations

import json
import os
import pty
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from completion_claim.cli import run

from ..builders import claim_doc, evidence, mutation
from ..fixtures.projects import CALC, CALC_BUGGY, TEST_CALC, make_repo, write_files
from ..test_files import CLAIM_SCRIPT, HANG_TIMEOUT_S, claim_script

DECIDE = "2026-08-27T18:00:20Z"


def write(path: Path, doc: Any) -> str:
    path.write_text(json.dumps(doc))
    return str(path)


def claim_file(tmp_path: Path, **over: Any) -> str:
    return write(tmp_path / "claim.json", claim_doc(**over))


@pytest.mark.parametrize(
    ("items", "code", "state"),
    [
        ([evidence()], 0, "VERIFIED"),
        ([], 1, "UNVERIFIED"),
        ([evidence(observed_value={"billing_zip": "0"})], 2, "REFUTED"),
    ],
)
def test_exit_code_follows_the_state(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], items: list[Any], code: int, state: str
) -> None:
    path = claim_file(tmp_path, evidence_items=items)
    assert run(["verify", path, "--at", DECIDE]) == code
    assert capsys.readouterr().out.startswith(state)


def test_json_prints_the_verdict_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["verify", claim_file(tmp_path), "--at", DECIDE, "--json"]) == 0
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["state"] == "verified"
    assert verdict["decided_at"] == DECIDE


def test_a_recorded_verdict_that_differs_is_named_and_the_recomputed_one_decides(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    said = {"state": "unverified", "unmet": [{"code": "no_mutations"}], "reason": "gate"}
    path = claim_file(tmp_path, verdict=said)
    assert run(["verify", path, "--at", DECIDE]) == 0
    out = capsys.readouterr().out
    assert out.startswith("VERIFIED")
    assert out.splitlines()[-1] == (
        "note: the document records another verdict (unverified; unmet: no_mutations); the "
        "verdict above, reached now under the policy applied, is the one that counts"
    )
    assert run(["verify", path, "--at", DECIDE, "--json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["state"] == "verified"
    assert shown["recorded_verdict_differs"] == {
        "state": "unverified",
        "unmet": [{"code": "no_mutations"}],
    }
    assert run(["-q", "verify", path, "--at", DECIDE]) == 0
    assert "note:" not in capsys.readouterr().out


def test_a_recorded_verdict_that_agrees_is_not_mentioned(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = claim_file(tmp_path, verdict={"state": "verified", "unmet": [], "reason": "other"})
    assert run(["verify", path, "--at", DECIDE]) == 0
    assert "note:" not in capsys.readouterr().out
    assert run(["verify", path, "--at", DECIDE, "--json"]) == 0
    assert "recorded_verdict_differs" not in json.loads(capsys.readouterr().out)


def test_report_lists_coverage_and_why_items_do_not_count(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    items = [
        evidence(id="ok", covers=["m1"]),
        evidence(id="late", t=-1, covers=["m1"]),
        evidence(id="mine", verifier={"id": "agent", "kind": "self_attested"}),
    ]
    muts = [mutation("m1"), mutation("m2", 1, target="other")]
    path = claim_file(tmp_path, mutations=muts, evidence_items=items)
    assert run(["verify", path, "--at", DECIDE]) == 1
    out = capsys.readouterr().out
    assert "m1  state_write accounts/4471" in out
    assert "covered by ok (state_readback)" in out
    assert "NOT COVERED" in out
    assert "late  state_readback" in out
    assert "not collected strictly after mutation m1" in out
    assert "self-attested" in out
    assert "mutation m2 is not covered" in out


def test_stdin_is_read_with_dash(monkeypatch: pytest.MonkeyPatch) -> None:
    data = json.dumps(claim_doc()).encode()
    result = subprocess.run(
        [sys.executable, "-m", "completion_claim", "verify", "-", "--at", DECIDE, "--json"],
        input=data,
        capture_output=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["state"] == "verified"


def test_operator_policy_replaces_embedded(tmp_path: Path) -> None:
    path = claim_file(tmp_path, policy={"id": "mine", "requires": [], "max_age_s": 1})
    assert run(["verify", path, "--at", "2026-08-27T18:05:00Z"]) == 1
    policy = write(tmp_path / "policy.json", {"id": "ops", "requires": [], "max_age_s": 600})
    assert run(["verify", path, "--at", "2026-08-27T18:05:00Z", "--policy", policy]) == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b'{"spec_version": "0.1"', "claim.json: not JSON: Expecting"),
        (b"[]", "claim.json: expected an object, got an array"),
        (b"\xff\xfe{}", "claim.json: not UTF-8: invalid byte at offset 0"),
        (
            json.dumps(claim_doc(evidence_items=[evidence(at="2026-08-27T18:00:10")])).encode(),
            "claim.json: evidence[0].at: no UTC offset",
        ),
    ],
)
def test_invalid_claim_exits_3_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes, message: str
) -> None:
    (tmp_path / "claim.json").write_bytes(content)
    assert run(["verify", str(tmp_path / "claim.json")]) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert message in err
    assert "Traceback" not in err


def test_invalid_policy_exits_3_naming_the_policy_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    policy = write(tmp_path / "p.json", {"id": "x", "requires": [], "max_age_s": 0})
    assert run(["verify", claim_file(tmp_path), "--policy", policy]) == 3
    assert f"{policy}: max_age_s: must be greater than 0" in capsys.readouterr().err


def test_max_bytes_limits_the_document(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["verify", claim_file(tmp_path), "--max-bytes", "100"]) == 3
    assert "over the size limit of 100 bytes" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["verify", "missing.json"], "cannot read missing.json"),
        (["verify", "x.json", "--at", "2026-08-27T18:00:00"], "--at: no UTC offset"),
        (["verify", "x.json", "--bogus"], "No such option"),
        (["verify"], "Missing argument"),
        (["verify", "x.json", "--jobs", "2"], "--jobs goes with --batch"),
    ],
)
def test_usage_errors_exit_4(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "x.json").write_text(json.dumps(claim_doc()))
    assert run(argv) == 4
    err = capsys.readouterr().err
    assert message in err
    assert err.startswith("claim: ")


def test_real_console_script_exit_code(tmp_path: Path) -> None:
    claim = Path(sys.executable).with_name("claim")
    result = subprocess.run(
        [str(claim), "verify", claim_file(tmp_path, evidence_items=[])],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 1
    assert result.stdout.startswith("UNVERIFIED")


def test_schema_command_prints_the_shipped_schema(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"


# --- batch ------------------------------------------------------------------------------------


def batch_lines() -> list[bytes]:
    return [
        json.dumps(claim_doc()).encode(),
        b'{"not": "a claim"}',
        json.dumps(claim_doc(evidence_items=[])).encode(),
        b"{truncated",
        json.dumps(
            claim_doc(evidence_items=[evidence(observed_value={"billing_zip": 1})])
        ).encode(),
    ]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_batch_gives_one_verdict_per_line_in_order(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], jobs: str
) -> None:
    lines = batch_lines() * 150  # several chunks, so order across processes is exercised
    path = tmp_path / "claims.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert run(["verify", "--batch", str(path), "--at", DECIDE, "--jobs", jobs]) == 0
    out = capsys.readouterr().out.splitlines()
    states = [json.loads(line)["state"] for line in out]
    assert states == ["verified", "invalid", "unverified", "invalid", "refuted"] * 150


def test_batch_invalid_line_says_why(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "claims.jsonl"
    path.write_bytes(b'{"spec_version": "9"}\n')
    assert run(["verify", "--batch", str(path)]) == 0
    line = json.loads(capsys.readouterr().out)
    assert line == {
        "line": 1,
        "state": "invalid",
        "error": "spec_version: unsupported spec_version '9' (this reads 0.x)",
    }


@pytest.mark.parametrize(
    ("fail_on", "code"),
    [
        ([], 0),  # every line was processed
        (["--fail-on", "unverified"], 2),  # not all verified; the worst is a refuted line
        (["--fail-on", "refuted"], 2),
        (["--fail-on", "invalid"], 3),
        (["--fail-on", "refuted", "--fail-on", "invalid"], 3),  # the worst named applies
    ],
)
def test_batch_fail_on_sets_the_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], fail_on: list[str], code: int
) -> None:
    path = tmp_path / "claims.jsonl"
    path.write_bytes(b"\n".join(batch_lines()) + b"\n")
    assert run(["verify", "--batch", str(path), "--at", DECIDE, *fail_on]) == code
    assert len(capsys.readouterr().out.splitlines()) == 5


@pytest.mark.parametrize(
    ("lines", "code"),
    [
        ([json.dumps(claim_doc(evidence_items=[])).encode()], 1),
        ([json.dumps(claim_doc()).encode()], 0),
    ],
)
def test_batch_fail_on_unverified_is_zero_only_when_all_verified(
    tmp_path: Path, lines: list[bytes], code: int
) -> None:
    path = tmp_path / "claims.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    assert run(["verify", "--batch", str(path), "--at", DECIDE, "--fail-on", "unverified"]) == code


def test_fail_on_goes_with_batch() -> None:
    assert run(["verify", "x.json", "--fail-on", "refuted"]) == 4


def test_batch_into_a_closed_pipe_stops_quietly(tmp_path: Path) -> None:
    """``claim verify --batch big.jsonl | head -1``: the reader leaves; no traceback, no
    "Broken pipe", and the exit code is the batch's, not the one for "unverified"."""
    (tmp_path / "claims.jsonl").write_bytes((json.dumps(claim_doc()).encode() + b"\n") * 3000)
    shell = f"{CLAIM_SCRIPT} verify --batch claims.jsonl --at {DECIDE} | head -1"
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", shell], cwd=tmp_path, capture_output=True, check=False
    )
    assert (done.returncode, done.stderr) == (0, b"")
    assert json.loads(done.stdout)["state"] == "verified"


def test_batch_shows_progress_on_a_terminal_only(tmp_path: Path) -> None:
    """A large file with stderr on a terminal draws a bar there; stdout stays the verdicts."""
    line = json.dumps(claim_doc()).encode() + b"\n"
    (tmp_path / "claims.jsonl").write_bytes(line * (5 * 1024 * 1024 // len(line)))
    argv = [str(CLAIM_SCRIPT), "verify", "--batch", "claims.jsonl", "--at", DECIDE]
    leader, follower = pty.openpty()
    drawn: list[bytes] = []
    # The terminal is drained while the batch runs: a full one would stop the bar, and the batch.
    reader = threading.Thread(target=lambda: drawn.append(_read_all(leader)))
    try:
        with subprocess.Popen(argv, cwd=tmp_path, stdout=subprocess.PIPE, stderr=follower) as batch:
            os.close(follower)
            reader.start()
            out, _ = batch.communicate(timeout=HANG_TIMEOUT_S * 6)
        reader.join(timeout=HANG_TIMEOUT_S)
    finally:
        os.close(leader)
    assert batch.returncode == 0
    assert b"verifying" in b"".join(drawn)
    assert out.count(b"\n") == 5 * 1024 * 1024 // len(line)
    plain = subprocess.run(argv, cwd=tmp_path, capture_output=True, check=False)
    assert (plain.returncode, plain.stderr) == (0, b"")


def _read_all(fd: int) -> bytes:
    chunks = []
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the terminal's other side is closed: all was read
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


def test_batch_line_over_the_limit_is_invalid_and_the_batch_goes_on(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    small = json.dumps(claim_doc()).encode()
    path = tmp_path / "claims.jsonl"
    path.write_bytes(b"[" + b"1," * 5000 + b"1]\n" + small + b"\n")
    assert run(["verify", "--batch", str(path), "--at", DECIDE, "--max-bytes", "2000"]) == 0
    out = [json.loads(line) for line in capsys.readouterr().out.splitlines()]
    assert [o["state"] for o in out] == ["invalid", "verified"]
    assert "over the size limit" in out[0]["error"]


# --- --workspace: the work tree as it is at decision time -----------------------------------------

TEST_RUN_POLICY = {"id": "ci", "requires": ["test_run"], "max_age_s": 600}


@pytest.fixture
def tested_fix(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> tuple[Path, Path, str]:
    """The standard flow: the agent fixes calc.add, CI captures the change and runs the tests,
    which pass. Returns the work tree, the claim and the policy file."""
    workspace = make_repo(tmp_path / "ws", {"calc.py": CALC_BUGGY, "tests/test_calc.py": TEST_CALC})
    claim = tmp_path / "claim.json"
    assert run(["new", str(claim), "--task-id", "fix-add", "--outcome", "fixed add()"]) == 0
    write_files(workspace, {"calc.py": CALC})
    assert run(["capture-git", str(claim), "--repo", str(workspace)]) == 0
    pytest_argv = ["--", sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    assert run(["observe", "test-run", str(claim), "--cwd", str(workspace), *pytest_argv]) == 0
    capsys.readouterr()
    return workspace, claim, write(tmp_path / "policy.json", TEST_RUN_POLICY)


def verify_workspace(claim: Path, workspace: Path, *args: str) -> int:
    return run(["verify", str(claim), "--workspace", str(workspace), "--json", *args])


def test_attack_14_edit_after_test_run_is_caught_by_verify_workspace(
    tested_fix: tuple[Path, Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    workspace, claim, policy = tested_fix
    write_files(workspace, {"calc.py": CALC_BUGGY})  # broken after the run, nobody re-captures
    long_ago = 1_000_000_000  # and dated before the run, which changes nothing
    os.utime(workspace / "calc.py", (long_ago, long_ago))

    assert verify_workspace(claim, workspace, "--policy", policy) == 1

    captured = capsys.readouterr()
    verdict = json.loads(captured.out)
    assert verdict["state"] == "unverified"
    assert {"code": "mutation_uncovered", "mutation": "workspace:calc.py"} in verdict["unmet"]
    (run_item,) = verdict["evidence"]
    assert {"code": "superseded", "mutation": "workspace:calc.py"}.items() <= (
        run_item["reasons"][0].items()
    )
    assert captured.err == (
        f"workspace {workspace}: 1 work-tree change the claim does not hold: calc.py\n"
    )


def test_an_untouched_workspace_still_verifies(
    tested_fix: tuple[Path, Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    workspace, claim, policy = tested_fix

    assert verify_workspace(claim, workspace, "--policy", policy) == 0

    assert json.loads(capsys.readouterr().out)["state"] == "verified"
    assert run(["verify", str(claim), "--workspace", str(workspace), "--policy", policy]) == 0
    err = capsys.readouterr().err
    assert err == f"workspace {workspace}: 0 work-tree changes the claim does not hold\n"


def test_an_unrecorded_file_and_a_deletion_are_named(
    tested_fix: tuple[Path, Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    workspace, claim, policy = tested_fix
    write_files(workspace, {"calc_helpers.py": "X = 1\n"})
    (workspace / "tests" / "test_calc.py").unlink()

    assert verify_workspace(claim, workspace, "--policy", policy) == 1

    captured = capsys.readouterr()
    unmet = {item.get("mutation") for item in json.loads(captured.out)["unmet"]}
    assert {"workspace:calc_helpers.py", "workspace:tests/test_calc.py"} <= unmet
    assert "2 work-tree changes the claim does not hold" in captured.err


def test_a_signed_verdict_holds_the_workspace_changes_it_judged(
    tested_fix: tuple[Path, Path, str], tmp_path: Path
) -> None:
    workspace, claim, policy = tested_fix
    key, out = tmp_path / "gate.key", tmp_path / "signed.json"
    assert run(["keygen", "--out", str(key)]) == 0
    write_files(workspace, {"calc.py": CALC_BUGGY})

    signing = ("--policy", policy, "--sign-key", str(key), "--out", str(out))

    assert verify_workspace(claim, workspace, *signing) == 1

    signed = json.loads(out.read_text())
    assert signed["mutations"][-1]["id"] == "workspace:calc.py"
    assert signed["mutations"][-1]["at"] == signed["verdict"]["decided_at"]
    assert signed["verdict"]["state"] == "unverified"


def test_an_id_the_claim_already_uses_is_not_reused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workspace = make_repo(tmp_path / "ws", {"calc.py": CALC})
    write_files(workspace, {"calc.py": CALC_BUGGY})
    path = claim_file(
        tmp_path, mutations=[mutation("workspace:calc.py", target="calc.py")], evidence_items=[]
    )

    assert verify_workspace(Path(path), workspace) == 1

    unmet = {item.get("mutation") for item in json.loads(capsys.readouterr().out)["unmet"]}
    assert "workspace:calc.py#1" in unmet


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--base", "HEAD"], "--base goes with --workspace"),
        (["--batch", "--workspace", "."], "--workspace does not go with --batch"),
        (["--workspace", "."], "is not inside a git repository"),
    ],
)
def test_workspace_usage_errors_exit_4(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))  # wherever the temp folder is
    path = claim_file(tmp_path)
    assert run(["verify", path, *argv]) == 4
    assert message in capsys.readouterr().err


def test_a_bad_base_is_a_usage_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    workspace = make_repo(tmp_path / "ws", {"calc.py": CALC})
    path = claim_file(tmp_path)
    assert run(["verify", path, "--workspace", str(workspace), "--base", "nope"]) == 4
    assert "--base: no commit 'nope'" in capsys.readouterr().err


# --- crashes that are verdicts or invalid input (issue 7, item 10) ----------------------------


def script(tmp_path: Path, *argv: str) -> tuple[int, str, str]:
    """The real console script: its own stdout encoding, nothing captured in-process."""
    result = claim_script(*argv, cwd=tmp_path)
    return result.returncode, result.stdout.decode(), result.stderr.decode()


def test_attack_10_lone_surrogate_is_invalid_input(tmp_path: Path) -> None:
    """``"id": "\\ud800"`` used to verify, then crash printing the report or the JSON."""
    bad = claim_doc(evidence_items=[evidence(id="\ud800")])
    (tmp_path / "claim.json").write_text(json.dumps(bad))  # ensure_ascii: the escape \ud800
    problem = "claim.json: evidence[0].id: lone surrogate U+D800, which is not a character"
    assert script(tmp_path, "verify", "claim.json", "--at", DECIDE) == (
        3,
        "",
        f"claim: {problem}\n",
    )
    # With --json the same error is one JSON object.
    code, out, err = script(tmp_path, "verify", "claim.json", "--at", DECIDE, "--json")
    assert (code, out, json.loads(err)) == (3, "", {"error": problem, "exit_code": 3})
    good = json.dumps(claim_doc())
    (tmp_path / "claims.jsonl").write_text(f"{good}\n{json.dumps(bad)}\n{good}\n")
    code, out, err = script(tmp_path, "verify", "--batch", "claims.jsonl", "--at", DECIDE)
    assert (code, err) == (0, "")
    lines = [json.loads(line) for line in out.splitlines()]
    assert [line["state"] for line in lines] == ["verified", "invalid", "verified"]
    assert lines[1]["error"] == "evidence[0].id: lone surrogate U+D800, which is not a character"


def test_a_surrogate_pair_verifies_and_prints(tmp_path: Path) -> None:
    """Control: ``"\\ud83d\\ude00"`` is one character (U+1F600), in the report and the JSON."""
    doc = claim_doc(evidence_items=[evidence(id="\U0001f600", observed_value={"billing_zip": 1})])
    (tmp_path / "claim.json").write_text(json.dumps(doc))
    assert "\\ud83d\\ude00" in (tmp_path / "claim.json").read_text()
    code, out, _ = script(tmp_path, "verify", "claim.json", "--at", DECIDE)
    assert code == 2
    assert "contradicted by \U0001f600 (state_readback)" in out
    code, out, _ = script(tmp_path, "verify", "claim.json", "--at", DECIDE, "--json")
    assert json.loads(out)["evidence"][0]["evidence"] == "\U0001f600"


@pytest.mark.parametrize(
    ("mutation_at", "evidence_at", "path"),
    [
        ("0001-01-01T00:00:00+23:59", "2026-08-27T18:00:10Z", "mutations[0].at"),
        ("2026-08-27T18:00:00Z", "9999-12-31T23:59:59-23:59", "evidence[0].at"),
    ],
)
def test_attack_10_extreme_offset_times(
    tmp_path: Path, mutation_at: str, evidence_at: str, path: str
) -> None:
    """Valid RFC 3339 whose instant in UTC is outside years 1-9999: the report used to crash
    converting it; now it is invalid input naming the place, never a traceback."""
    doc = claim_doc(mutations=[mutation(at=mutation_at)], evidence_items=[evidence(at=evidence_at)])
    (tmp_path / "claim.json").write_text(json.dumps(doc))
    problem = "is outside the representable range (years 1 to 9999) in UTC"
    code, out, err = script(tmp_path, "verify", "claim.json", "--at", DECIDE)
    assert (code, out) == (3, "")
    assert err.startswith(f"claim: claim.json: {path}: ")
    assert err.endswith(f"{problem}\n")
    assert err.count("\n") == 1
    code, out, err = script(tmp_path, "verify", "claim.json", "--at", DECIDE, "--json")
    assert (code, out, err.count("\n")) == (3, "", 1)
    error = json.loads(err)
    assert error["exit_code"] == 3
    assert error["error"].startswith(f"claim.json: {path}: ")
    assert error["error"].endswith(problem)
    (tmp_path / "claims.jsonl").write_text(json.dumps(doc) + "\n")
    code, out, _ = script(tmp_path, "verify", "--batch", "claims.jsonl", "--at", DECIDE)
    assert code == 0
    assert json.loads(out)["state"] == "invalid"
    assert problem in json.loads(out)["error"]
    code, _, err = script(tmp_path, "verify", "claim.json", "--at", "0001-01-01T00:00:00+23:59")
    assert (code, err) == (4, f"claim: --at: '0001-01-01T00:00:00+23:59' {problem}\n")


def test_the_edge_times_that_are_valid_render_everywhere(tmp_path: Path) -> None:
    """Control: a mutation at the first instant of year 1 (written with +23:59), observed and
    decided at the end of year 9999 (written with -23:59), verifies and prints in RFC 3339."""
    doc = claim_doc(
        mutations=[mutation(at="0001-01-01T23:59:00+23:59")],
        evidence_items=[evidence(at="9999-12-31T00:00:00-23:59")],
    )
    (tmp_path / "claim.json").write_text(json.dumps(doc))
    (tmp_path / "claims.jsonl").write_text(json.dumps(doc) + "\n")
    decide = ["--at", "9999-12-31T00:00:30-23:59"]
    code, out, err = script(tmp_path, "verify", "claim.json", *decide)
    assert (code, err) == (0, "")
    assert "decided at 9999-12-31T23:59:30Z" in out
    assert "m1  state_write accounts/4471 at 0001-01-01T00:00:00Z" in out
    code, out, _ = script(tmp_path, "verify", "claim.json", *decide, "--json")
    assert (code, json.loads(out)["decided_at"]) == (0, "9999-12-31T23:59:30Z")
    code, out, _ = script(tmp_path, "verify", "--batch", "claims.jsonl", *decide)
    assert json.loads(out)["state"] == "verified"
    assert json.loads(out)["decided_at"] == "9999-12-31T23:59:30Z"
