"""The signed workflow on the command line: keygen, pubkey, observe --sign-key, verify under a
signed policy, tamper, verify again, signed verdicts, check-verdict and in-toto export."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import sqlite3
import stat
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from google.protobuf import json_format
from in_toto.exceptions import SignatureVerificationError
from in_toto.models.metadata import Envelope as InTotoEnvelope
from in_toto.models.metadata import Metadata as InTotoMetadata
from in_toto_attestation.v1.resource_descriptor import ResourceDescriptor
from in_toto_attestation.v1.statement import Statement
from in_toto_attestation.v1.statement_pb2 import Statement as StatementProto
from securesystemslib.dsse import Envelope as SslibEnvelope

# securesystemslib re-exports these without marking them for mypy.
from securesystemslib.signer import CryptoSigner, SSlibKey  # type: ignore[attr-defined]

from completion_claim.cli import run
from completion_claim.errors import ObservationFailed
from completion_claim.observe._common import Observation, ObserverSettings, run_observer
from completion_claim.timefmt import parse_time
from completion_claim.trust.keys import load_signing_key
from completion_claim.trust.verdicts import (
    CLAIM_PREDICATE_TYPE,
    claim_digest,
    intoto_statement,
    sign_statement,
)

from ..builders import claim_doc, evidence, mutation
from ..signing import AGENT, CI, CI_ID, DIGEST, STRANGER, genuine_doc, policy_doc, sign

DECIDE = "2026-08-27T18:00:20Z"
Json = Any


def write(path: Path, doc: Json) -> str:
    path.write_text(json.dumps(doc, indent=2))
    return str(path)


def read(path: Path | str) -> Json:
    return json.loads(Path(path).read_text())


@pytest.fixture
def ci_key(tmp_path: Path) -> str:
    path = tmp_path / "ci.key"
    path.write_bytes(CI.pem())
    return str(path)


@pytest.fixture
def signed_policy(tmp_path: Path) -> str:
    return write(tmp_path / "policy.json", policy_doc())


# --- keygen and pubkey --------------------------------------------------------------------------


def test_keygen_writes_a_private_key_readable_by_its_owner_only(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key_path = tmp_path / "observer.key"
    assert run(["keygen", "--out", str(key_path)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert stat.S_IMODE(key_path.stat().st_mode) == 0o600
    assert key_path.read_bytes().startswith(b"-----BEGIN PRIVATE KEY-----")
    key = load_signing_key(str(key_path))
    assert lines == [
        f"wrote private key {key_path} (mode 0600)",
        f"public key: {key.public.text}",
        f"key id: {hashlib.sha256(key.public.raw).hexdigest()}",
    ]
    assert run(["pubkey", str(key_path)]) == 0
    assert capsys.readouterr().out == key.public.text + "\n"


def test_keygen_refuses_to_overwrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key_path = tmp_path / "observer.key"
    key_path.write_text("precious")
    assert run(["keygen", "--out", str(key_path)]) == 4
    assert "already exists; refusing to overwrite" in capsys.readouterr().err
    assert key_path.read_text() == "precious"
    assert [p.name for p in tmp_path.iterdir()] == ["observer.key"]  # no temporary file left


def test_keygen_into_a_missing_folder_fails_cleanly(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["keygen", "--out", str(tmp_path / "no" / "k.key")]) == 4
    assert capsys.readouterr().err.startswith("claim: cannot write")


def test_two_keygens_make_different_keys(tmp_path: Path) -> None:
    for name in ("a.key", "b.key"):
        assert run(["keygen", "--out", str(tmp_path / name)]) == 0
    a, b = (load_signing_key(str(tmp_path / name)).public for name in ("a.key", "b.key"))
    assert a != b


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (None, "cannot read key"),
        (b"not a key", "is not an unencrypted PEM private key"),
        (CI.public.text.encode(), "is not an unencrypted PEM private key"),
    ],
)
def test_pubkey_of_something_else_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: bytes | None, problem: str
) -> None:
    path = tmp_path / "k"
    if content is not None:
        path.write_bytes(content)
    assert run(["pubkey", str(path)]) == 4
    err = capsys.readouterr().err
    assert problem in err
    assert err.count("\n") == 1


def test_pubkey_refuses_a_key_of_another_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
    )

    other = ec.generate_private_key(ec.SECP256R1())
    path = tmp_path / "ec.key"
    path.write_bytes(other.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()))
    assert run(["pubkey", str(path)]) == 4
    assert "is not an Ed25519 private key" in capsys.readouterr().err


# --- observers sign -----------------------------------------------------------------------------


def observe_readback(claim_path: str, **settings: Any) -> dict[str, Any]:
    """Record one readback through the shared observer path, as every observe command does."""
    defaults: dict[str, Any] = {
        "claim_path": claim_path,
        "covers": None,
        "verifier_id": CI_ID,
        "self_attested": False,
        "print_only": False,
        "record_failure": False,
        "evidence_id": None,
        "sign_key_path": str(Path(claim_path).with_name("ci.key")),
    }
    Path(defaults["sign_key_path"]).write_bytes(CI.pem())
    defaults.update(settings)
    return run_observer(
        ObserverSettings(**defaults),
        "state_readback",
        lambda: Observation("accounts/4471", {"billing_zip": "94107"}, {"billing_zip": "94107"}),
        "accounts/4471",
        {"billing_zip": "94107"},
    )


def recent_claim(tmp_path: Path) -> str:
    written = datetime.now(UTC).isoformat()
    return write(tmp_path / "claim.json", claim_doc([mutation(at=written, digest=DIGEST)], []))


def test_observer_signs_the_item_it_records(
    tmp_path: Path, signed_policy: str, capsys: pytest.CaptureFixture[str]
) -> None:
    claim_path = recent_claim(tmp_path)
    item = observe_readback(claim_path)
    (stored,) = read(claim_path)["evidence"]
    assert stored == item
    payload = json.loads(base64.b64decode(stored["attestation"]["payload"]))
    assert payload["task_id"] == "deploy-4471"
    (written,) = read(claim_path)["mutations"]
    (bound,) = payload["mutations"]
    assert parse_time(bound.pop("at"), "") == parse_time(written.pop("at"), "")
    assert bound == written
    assert run(["verify", claim_path, "--policy", signed_policy]) == 0
    assert "independence proven" in capsys.readouterr().out


def test_print_only_signs_too(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    claim_path = recent_claim(tmp_path)
    observe_readback(claim_path, print_only=True)
    printed = json.loads(capsys.readouterr().out)
    assert printed["attestation"]["signatures"][0]["keyid"] == CI.public.keyid
    assert read(claim_path)["evidence"] == []


def test_a_recorded_failure_is_signed_and_still_does_not_count(
    tmp_path: Path, ci_key: str, signed_policy: str, capsys: pytest.CaptureFixture[str]
) -> None:
    claim_path = recent_claim(tmp_path)

    def refused() -> Observation:
        raise ObservationFailed("connection refused")

    settings = ObserverSettings(claim_path, None, CI_ID, False, False, True, None, ci_key)
    with pytest.raises(ObservationFailed):
        run_observer(settings, "state_readback", refused, "accounts/4471", {"billing_zip": "1"})
    (stored,) = read(claim_path)["evidence"]
    assert "observed_value" not in stored
    assert "attestation" in stored
    assert run(["verify", claim_path, "--policy", signed_policy, "--json"]) == 1
    reasons = json.loads(capsys.readouterr().out)["evidence"][0]["reasons"]
    assert [r["code"] for r in reasons] == ["no_observation"]


def test_observe_with_a_bad_key_fails_before_observing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    claim_path = recent_claim(tmp_path)
    missing = str(tmp_path / "missing.key")
    command = [sys.executable, "-c", "raise SystemExit(0)"]
    code = run(["observe", "test-run", claim_path, "--sign-key", missing, "--", *command])
    assert code == 4
    assert "cannot read key" in capsys.readouterr().err
    assert read(claim_path)["evidence"] == []


# --- a self-attested observation, signed ---------------------------------------------------------


def observe_sqlite_readback(tmp_path: Path, ci_key: str, *flags: str) -> tuple[str, int]:
    """A claim of one state write, read back from a real SQLite table by the signing CI
    observer with ``flags``; the claim's path and the observer's exit code."""
    database = tmp_path / "accounts.db"
    with sqlite3.connect(database) as conn:
        conn.execute("CREATE TABLE accounts (id INTEGER PRIMARY KEY, billing_zip TEXT)")
        conn.execute("INSERT INTO accounts VALUES (4471, '94107')")
    conn.close()
    claim_path = str(tmp_path / "claim.json")
    assert run(["new", claim_path, "--task-id", "t-6", "--outcome", "zip updated"]) == 0
    assert run(["mutate", claim_path, "--kind", "state_write", "--target", "accounts/4471"]) == 0
    code = run(
        [
            "observe", "readback", claim_path, f"sqlite:///{database}",
            "--table", "accounts", "--key", "id=4471", "--expect", "billing_zip=94107",
            "--verifier-id", CI_ID, "--sign-key", ci_key, *flags,
        ]
    )  # fmt: skip
    return claim_path, code


def test_attack_06_self_attested_signed_item_does_not_count(
    tmp_path: Path, ci_key: str, signed_policy: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # The observer was told the observation is the agent's own report, and signed that: the
    # signature proves who wrote the item, and the item says it is self-attested. Rule 1.
    claim_path, observed = observe_sqlite_readback(tmp_path, ci_key, "--self-attested")
    assert observed == 0
    capsys.readouterr()
    assert run(["verify", claim_path, "--policy", signed_policy, "--json"]) == 1
    verdict = json.loads(capsys.readouterr().out)
    assert verdict["state"] == "unverified"
    assert [r["code"] for r in verdict["evidence"][0]["reasons"]] == ["self_attested"]
    # Flipping the written kind afterwards breaks the signature instead.
    doc = read(claim_path)
    doc["evidence"][0]["verifier"]["kind"] = "independent"
    write(Path(claim_path), doc)
    assert run(["verify", claim_path, "--policy", signed_policy]) == 1
    assert "not as signed: verifier.kind" in capsys.readouterr().out


def test_attack_06_control_independent_signed_item_counts(
    tmp_path: Path, ci_key: str, signed_policy: str, capsys: pytest.CaptureFixture[str]
) -> None:
    claim_path, observed = observe_sqlite_readback(tmp_path, ci_key)
    assert observed == 0
    capsys.readouterr()
    assert run(["verify", claim_path, "--policy", signed_policy]) == 0
    assert "independence proven" in capsys.readouterr().out


# --- the walkthrough: observe a real test run signed, verify, tamper, verify again --------------

TEST_FILE = "def test_add():\n    assert 1 + 1 == 2\n"


def test_signed_test_run_then_tamper(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    project = tmp_path / "project"
    project.mkdir()
    (project / "test_add.py").write_text(TEST_FILE)
    (project / "helper.py").write_text(TEST_FILE)  # m2 records its digest
    claim_path = str(tmp_path / "claim.json")
    key_path = tmp_path / "ci.key"
    assert run(["keygen", "--out", str(key_path)]) == 0
    assert run(["pubkey", str(key_path)]) == 0
    public_key = capsys.readouterr().out.splitlines()[-1]
    policy = {
        "id": "signed-ci",
        "requires": ["test_run"],
        "max_age_s": 300,
        # Outside git every test file is a change to the tests: this walkthrough allows them.
        "allow_test_changes": True,
        "trust": {
            "mode": "signed",
            "observers": [{"id": "ci/1", "public_key": public_key, "check_types": ["test_run"]}],
        },
    }
    policy_path = write(tmp_path / "policy.json", policy)
    digest = "sha256:" + hashlib.sha256(TEST_FILE.encode()).hexdigest()
    assert run(["new", claim_path, "--task-id", "t-1", "--outcome", "added test_add"]) == 0
    assert run(["mutate", claim_path, "--kind", "file_write", "--target", "test_add.py"]) == 0
    write_helper = ["--kind", "file_write", "--target", "helper.py", "--digest", digest]
    assert run(["mutate", claim_path, *write_helper]) == 0
    observe = ["observe", "test-run", claim_path, "--cwd", str(project), "--verifier-id", "ci/1"]
    pytest_cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider"]
    assert run([*observe, "--sign-key", str(key_path), "--", *pytest_cmd]) == 0
    capsys.readouterr()

    assert run(["verify", claim_path, "--policy", policy_path]) == 0
    assert "independence proven" in capsys.readouterr().out

    doc = read(claim_path)
    doc["evidence"][0]["observed_value"]["passed"] = 7  # the agent "improves" the result
    write(Path(claim_path), doc)
    assert run(["verify", claim_path, "--policy", policy_path]) == 1
    report = capsys.readouterr().out
    assert "edited after signing (not as signed: observed_value)" in report

    doc["evidence"][0]["observed_value"]["passed"] = 1
    doc["mutations"][1]["digest"] = "sha256:" + "0" * 64  # the agent swaps what was tested
    write(Path(claim_path), doc)
    assert run(["verify", claim_path, "--policy", policy_path]) == 1
    assert "mutation m2 changed after it was observed" in capsys.readouterr().out


# --- signed verdicts ----------------------------------------------------------------------------


@pytest.fixture
def signed_verdict(
    tmp_path: Path, ci_key: str, signed_policy: str, capsys: pytest.CaptureFixture[str]
) -> Path:
    claim_path = write(tmp_path / "claim.json", genuine_doc())
    out = tmp_path / "signed.json"
    args = ["verify", claim_path, "--policy", signed_policy, "--at", DECIDE]
    assert run([*args, "--sign-key", ci_key, "--out", str(out)]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("VERIFIED")
    assert (
        captured.err
        == f"wrote {out}: the claim with its verdict, signed by key {CI.public.keyid[:16]}\n"
    )
    return out


def check(path: Path, key: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = run(["check-verdict", str(path), "--public-key", key])
    return code, capsys.readouterr().out


def test_signed_verdict_is_checked(
    signed_verdict: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    document = read(signed_verdict)
    assert document["verdict"]["state"] == "verified"
    assert document["verdict"]["independence"] == "proven"
    assert document["verdict_attestation"]["payloadType"] == (
        "application/vnd.completion-claim.verdict+json"
    )
    code, out = check(signed_verdict, CI.public.text, capsys)
    assert (code, out) == (
        0,
        f"valid: verdict verified, independence proven, decided at {DECIDE} under policy "
        f"signed-ops, signed by key {CI.public.keyid[:16]}\n",
    )
    assert run(["verify", str(signed_verdict), "--at", DECIDE]) == 0  # still a claim


def test_check_verdict_reads_the_key_from_a_file(
    signed_verdict: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key_file = tmp_path / "gate.pub"
    key_file.write_text(CI.public.text + "\n")
    assert check(signed_verdict, str(key_file), capsys)[0] == 0


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (lambda d: d["verdict"].update(state="refuted"), "the verdict is not the one signed"),
        (lambda d: d["evidence"][0].update(target="elsewhere"), "the claim is not the one signed"),
        (lambda d: d.pop("verdict_attestation"), "its verdict is not signed"),
    ],
)
def test_tampered_signed_verdict_exits_1(
    signed_verdict: Path, capsys: pytest.CaptureFixture[str], change: Any, reason: str
) -> None:
    document = read(signed_verdict)
    change(document)
    write(signed_verdict, document)
    code, out = check(signed_verdict, CI.public.text, capsys)
    assert code == 1
    assert out.startswith("INVALID: ")
    assert reason in out
    assert out.count("\n") == 1


def signed_verdict_of(tmp_path: Path, doc: Json, ci_key: str, *policy: str) -> tuple[Path, int]:
    """``doc`` verified (under ``--policy`` when given) and its verdict signed by the gate."""
    claim_path = write(tmp_path / "claim.json", doc)
    out = tmp_path / "signed.json"
    args = ["verify", claim_path, *policy, "--at", DECIDE, "--sign-key", ci_key, "--out", str(out)]
    return out, run(args)


def test_attack_12_check_verdict_refuted_exits_nonzero(
    tmp_path: Path, ci_key: str, signed_policy: str, capsys: pytest.CaptureFixture[str]
) -> None:
    contradicted = genuine_doc(observed_value={"billing_zip": "10001"})
    out, verified = signed_verdict_of(tmp_path, contradicted, ci_key, "--policy", signed_policy)
    assert verified == 2
    capsys.readouterr()
    code, printed = check(out, CI.public.text, capsys)
    assert code == 2
    assert printed.startswith("valid: verdict refuted, independence proven, ")
    assert printed.count("\n") == 1


def test_attack_12_check_verdict_unverified_exits_nonzero(
    tmp_path: Path, ci_key: str, signed_policy: str, capsys: pytest.CaptureFixture[str]
) -> None:
    unsigned = claim_doc([mutation(digest=DIGEST)], [evidence(id="e1")])
    out, verified = signed_verdict_of(tmp_path, unsigned, ci_key, "--policy", signed_policy)
    assert verified == 1
    capsys.readouterr()
    code, printed = check(out, CI.public.text, capsys)
    assert code == 1
    assert printed.startswith("valid: verdict unverified, independence proven, ")


def test_attack_12_check_verdict_self_trusting_policy_exits_nonzero(
    tmp_path: Path, ci_key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    # The agent embeds a signed-mode policy that trusts its own key and signs its own readback;
    # a gate run without --policy applies it and (truthfully) signs "verified, declared".
    own = policy_doc(
        observers=[
            {"id": CI_ID, "public_key": AGENT.public.text, "check_types": ["state_readback"]}
        ],
        agent_keys=[],
    )
    doc = {**sign(claim_doc([mutation(digest=DIGEST)], [evidence(id="e1")]), AGENT), "policy": own}
    out, verified = signed_verdict_of(tmp_path, doc, ci_key)
    assert verified == 0
    assert read(out)["verdict"]["independence"] == "declared"
    capsys.readouterr()
    code, printed = check(out, CI.public.text, capsys)
    assert code == 1
    first, second = printed.splitlines()
    assert first.startswith("valid: verdict verified, independence declared, ")
    assert second.startswith("not accepted: independence was not proven")


def test_signed_verdict_with_the_wrong_key_exits_1(
    signed_verdict: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out = check(signed_verdict, STRANGER.public.text, capsys)
    assert code == 1
    assert "no signature verifies with key" in out


@pytest.mark.parametrize(
    ("content", "code", "message"),
    [
        ("not json", 3, "not JSON"),
        ('{"spec_version": "0.1"}', 3, "task: required member is missing"),
    ],
)
def test_check_verdict_on_malformed_input_exits_3(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str, code: int, message: str
) -> None:
    path = tmp_path / "x.json"
    path.write_text(content)
    assert run(["check-verdict", str(path), "--public-key", CI.public.text]) == code
    assert message in capsys.readouterr().err


@pytest.mark.parametrize("key", ["ed25519:AAAA", "/no/such/file"])
def test_check_verdict_with_a_bad_public_key_is_a_usage_error(
    signed_verdict: Path, capsys: pytest.CaptureFixture[str], key: str
) -> None:
    assert run(["check-verdict", str(signed_verdict), "--public-key", key]) == 4
    assert capsys.readouterr().err.startswith("claim: --public-key: ")


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--sign-key", "k"], "--sign-key and --out go together"),
        (["--out", "o"], "--sign-key and --out go together"),
        (["--sign-key", "k", "--out", "o", "--batch"], "does not go with --batch"),
    ],
)
def test_verify_signing_options_are_checked(
    tmp_path: Path, ci_key: str, capsys: pytest.CaptureFixture[str], extra: list[str], message: str
) -> None:
    claim_path = write(tmp_path / "claim.json", genuine_doc())
    extra = [ci_key if arg == "k" else arg for arg in extra]
    assert run(["verify", claim_path, *extra]) == 4
    assert message in capsys.readouterr().err
    assert not (Path(os.getcwd()) / "o").exists()


# --- in-toto export -----------------------------------------------------------------------------


def test_export_in_toto(
    tmp_path: Path, ci_key: str, signed_policy: str, capsys: pytest.CaptureFixture[str]
) -> None:
    claim_path = write(tmp_path / "claim.json", genuine_doc())
    args = ["export", claim_path, "--in-toto", "--sign-key", ci_key, "--at", DECIDE]
    assert run([*args, "--policy", signed_policy]) == 0
    envelope = json.loads(capsys.readouterr().out)
    assert envelope["payloadType"] == "application/vnd.in-toto+json"
    statement = json.loads(base64.b64decode(envelope["payload"]))
    assert statement["_type"] == "https://in-toto.io/Statement/v1"
    assert statement["predicateType"] == CLAIM_PREDICATE_TYPE
    (subject,) = statement["subject"]
    assert subject["name"] == "deploy-4471"
    assert list(subject["digest"]) == ["sha256"]
    assert statement["predicate"]["verdict"]["state"] == "verified"
    assert statement["predicate"]["verdict"]["independence"] == "proven"
    key = SSlibKey.from_crypto(CI.private.public_key(), keyid=CI.public.keyid)
    assert list(SslibEnvelope.from_dict(envelope).verify([key], 1)) == [CI.public.keyid]

    out = tmp_path / "claim.intoto.json"
    assert run([*args, "--out", str(out)]) == 0
    digest = claim_digest(read(claim_path))
    assert capsys.readouterr().out == (
        f"wrote {out}: in-toto statement for task deploy-4471, claim sha256:{digest}, "
        f"verdict verified, signed by key {CI.public.keyid[:16]}\n"
    )
    assert read(out)["payloadType"] == "application/vnd.in-toto+json"


def test_in_toto_is_the_default_format(
    tmp_path: Path, ci_key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """--in-toto stays accepted, and changes nothing (Ed25519 signatures are deterministic)."""
    claim_path = write(tmp_path / "claim.json", genuine_doc())
    args = ["export", claim_path, "--sign-key", ci_key, "--at", DECIDE]
    assert run(args) == 0
    default = capsys.readouterr().out
    assert run([*args, "--in-toto"]) == 0
    assert capsys.readouterr().out == default
    assert json.loads(default)["payloadType"] == "application/vnd.in-toto+json"


def test_export_of_an_invalid_claim_exits_3(
    tmp_path: Path, ci_key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = claim_doc([mutation()], [evidence(at="2026-08-27T18:00:10")])
    claim_path = write(tmp_path / "claim.json", doc)
    assert run(["export", claim_path, "--in-toto", "--sign-key", ci_key]) == 3
    assert "evidence[0].at: no UTC offset" in capsys.readouterr().err


# --- checking an in-toto export -----------------------------------------------------------------


@pytest.fixture
def exported(tmp_path: Path, ci_key: str, signed_policy: str) -> tuple[str, str]:
    """A claim verified with independence proven, and its export."""
    claim_path = write(tmp_path / "claim.json", genuine_doc())
    out = str(tmp_path / "claim.intoto.json")
    args = ["export", claim_path, "--sign-key", ci_key, "--policy", signed_policy, "--at", DECIDE]
    assert run([*args, "--out", out]) == 0
    return claim_path, out


def check_export(path: str, *more: str) -> list[str]:
    return ["check-verdict", path, "--public-key", CI.public.text, *more]


def test_check_verdict_accepts_an_export(
    exported: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    claim_path, out = exported
    capsys.readouterr()
    assert run(check_export(out)) == 0
    digest = claim_digest(read(claim_path))
    assert capsys.readouterr().out == (
        f"valid: in-toto statement for task deploy-4471 (claim sha256:{digest}), verdict "
        f"verified, independence proven, decided at {DECIDE} under policy signed-ops, signed by "
        f"key {CI.public.keyid[:16]}\n"
    )
    assert run(check_export(out, "--claim", claim_path)) == 0


def test_check_verdict_rejects_an_export_about_another_claim(
    tmp_path: Path, exported: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _, out = exported
    other = write(tmp_path / "other.json", genuine_doc(target="accounts/9"))
    capsys.readouterr()
    assert run(check_export(out, "--claim", other)) == 1
    assert capsys.readouterr().out.startswith("INVALID: the claim is not the one attested (sha256 ")


def test_check_verdict_rejects_an_export_under_another_key(
    exported: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _, out = exported
    capsys.readouterr()
    assert run(["check-verdict", out, "--public-key", STRANGER.public.text]) == 1
    assert capsys.readouterr().out == (
        f"INVALID: no signature verifies with key {STRANGER.public.keyid[:16]}\n"
    )


def test_check_verdict_rejects_an_edited_export(
    exported: tuple[str, str], capsys: pytest.CaptureFixture[str]
) -> None:
    _, out = exported
    envelope = read(out)
    statement = json.loads(base64.b64decode(envelope["payload"]))
    statement["predicate"]["verdict"]["state"] = "verified"
    statement["predicate"]["claimed_outcome"] = "something else"
    envelope["payload"] = base64.b64encode(json.dumps(statement).encode()).decode()
    write(Path(out), envelope)
    capsys.readouterr()
    assert run(check_export(out)) == 1
    assert capsys.readouterr().out.startswith("INVALID: no signature verifies")


def signed_statement(tmp_path: Path, statement: Json, payload_type: str | None = None) -> str:
    envelope = sign_statement(statement, CI)
    if payload_type is not None:
        envelope = CI.sign_envelope(payload_type, base64.b64decode(envelope["payload"]))
    return write(tmp_path / "crafted.intoto.json", envelope)


@pytest.mark.parametrize(
    ("change", "reason"),
    [
        (
            {"_type": "https://in-toto.io/Statement/v0.1"},
            "signed payload: not an in-toto Statement",
        ),
        ({"predicateType": "https://slsa.dev/provenance/v1"}, "predicate type 'https://slsa.dev"),
        ({"subject": []}, "the statement must have exactly one subject, the claim"),
        ({"subject": [{"name": "t", "digest": {"sha512": "00"}}]}, "the subject has no name or"),
        ({"subject": [{"name": "t", "digest": {"sha256": "00" * 32}}]}, "the subject is not the"),
        ({"predicate": {"task": {}}}, "the predicate is not a claim with its verdict"),
    ],
)
def test_check_verdict_checks_the_statement_a_key_signed(
    tmp_path: Path, change: Json, reason: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A valid signature is not enough: the statement must be the kind `claim export` writes,
    about the claim it carries."""
    doc = genuine_doc()
    statement = {**intoto_statement(doc, {"state": "verified"}, "deploy-4471"), **change}
    path = signed_statement(tmp_path, statement)
    assert run(check_export(path)) == 1
    assert capsys.readouterr().out.startswith(f"INVALID: {reason}")


def test_check_verdict_checks_the_payload_type(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    doc = genuine_doc()
    statement = intoto_statement(doc, {"state": "verified"}, "deploy-4471")
    path = signed_statement(tmp_path, statement, "application/vnd.completion-claim.verdict+json")
    assert run(check_export(path)) == 1
    assert capsys.readouterr().out == (
        "INVALID: payload type 'application/vnd.completion-claim.verdict+json', expected "
        "'application/vnd.in-toto+json'\n"
    )


def test_an_export_of_an_unverified_claim_exits_1(
    tmp_path: Path, ci_key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    claim_path = write(tmp_path / "claim.json", genuine_doc())
    out = str(tmp_path / "claim.intoto.json")
    # the claim's own (declared) policy: verified, but independence is not proven
    assert run(["export", claim_path, "--sign-key", ci_key, "--at", DECIDE, "--out", out]) == 0
    capsys.readouterr()
    assert run(check_export(out)) == 1
    assert "not accepted: independence was not proven" in capsys.readouterr().out


def test_claim_option_goes_with_an_export_only(
    tmp_path: Path, ci_key: str, capsys: pytest.CaptureFixture[str]
) -> None:
    claim_path = write(tmp_path / "claim.json", genuine_doc())
    assert run(check_export(claim_path, "--claim", claim_path)) == 4
    assert "--claim goes with an in-toto export" in capsys.readouterr().err


# --- round trip with the in-toto project's own implementation ----------------------------------


def their_key() -> SSlibKey:
    # securesystemslib matches signatures to keys by keyid, so give it ours.
    return SSlibKey.from_crypto(CI.private.public_key(), keyid=CI.public.keyid)


def test_in_toto_verifies_what_export_writes(exported: tuple[str, str]) -> None:
    """in-toto's DSSE envelope checks the signature; in-toto-attestation's Statement v1 checks
    the statement; the subject is the claim's digest."""
    claim_path, out = exported
    envelope = InTotoMetadata.from_dict(read(out))
    assert isinstance(envelope, InTotoEnvelope)
    envelope.verify_signature({**their_key().to_dict(), "keyid": CI.public.keyid})
    statement = Statement.copy_from_pb(json_format.Parse(envelope.payload, StatementProto()))
    statement.validate()
    assert statement.pb.predicate_type == CLAIM_PREDICATE_TYPE
    (subject,) = statement.pb.subject
    assert dict(subject.digest) == {"sha256": claim_digest(read(claim_path))}
    assert subject.name == "deploy-4471"


def test_in_toto_rejects_an_export_under_another_key(exported: tuple[str, str]) -> None:
    envelope = InTotoMetadata.from_dict(read(exported[1]))
    wrong = SSlibKey.from_crypto(STRANGER.private.public_key(), keyid=CI.public.keyid)
    with pytest.raises(SignatureVerificationError):
        envelope.verify_signature({**wrong.to_dict(), "keyid": CI.public.keyid})


def test_check_verdict_accepts_a_statement_in_toto_signed(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """The other way round: a statement built and signed by the in-toto libraries, about a claim
    and its verdict, passes `claim check-verdict --claim`."""
    doc = genuine_doc()
    claim_path = write(tmp_path / "claim.json", doc)
    verdict = {"state": "verified", "independence": "proven", "decided_at": DECIDE}
    subject = ResourceDescriptor(name="deploy-4471", digest={"sha256": claim_digest(doc)})
    statement = Statement([subject.pb], CLAIM_PREDICATE_TYPE, {**doc, "verdict": verdict})
    statement.validate()
    payload = json.dumps(json_format.MessageToDict(statement.pb)).encode()
    theirs = InTotoEnvelope(payload, "application/vnd.in-toto+json", {})
    theirs.create_signature(CryptoSigner(CI.private, their_key()))
    path = write(tmp_path / "theirs.intoto.json", theirs.to_dict())
    assert run(check_export(path, "--claim", claim_path)) == 0
    assert capsys.readouterr().out.startswith(
        f"valid: in-toto statement for task deploy-4471 (claim sha256:{claim_digest(doc)}), "
        f"verdict verified, independence proven, decided at {DECIDE}"
    )
