"""``claim observe endpoint``: real requests against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from completion_claim.cli import run
from completion_claim.errors import UsageError
from completion_claim.model import ABSENT
from completion_claim.observe.endpoint import pointer_tokens, resolve_pointer

from .conftest import Site, closed_port, last_evidence, verdict_of

CLAIM = str(Path(sys.executable).parent / "claim")
MakeClaim = Callable[..., Path]


def observe(path: Path, url: str, *options: str) -> int:
    return run(["observe", "endpoint", str(path), url, *options])


@pytest.fixture
def deploy_claim(make_claim: MakeClaim) -> Path:
    return make_claim(kind="deploy", target="web")


def test_the_claim_verifies_only_after_the_deploy(
    site: Site, deploy_claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The agent says it deployed b2, but the server still serves b1: a contradiction.
    assert observe(deploy_claim, f"{site.url}/health", "--expect-json", "/build=b2") == 0
    assert "differs from expected" in capsys.readouterr().out
    first = last_evidence(deploy_claim)
    assert first["observed_value"] == {"status": 200, "json": {"/build": "b1"}}
    assert first["expected"] == {"status": 200, "json": {"/build": "b2"}}
    assert verdict_of(deploy_claim) == "refuted"

    site.build = "b2"  # the real deploy, recorded as a new mutation of the same target
    assert run(["mutate", str(deploy_claim), "--kind", "deploy", "--target", "web"]) == 0
    assert observe(deploy_claim, f"{site.url}/health", "--expect-json", "/build=b2") == 0
    assert "observed as expected" in capsys.readouterr().out
    assert verdict_of(deploy_claim) == "verified"


def test_the_evidence_records_the_body_digest_not_the_body(site: Site, deploy_claim: Path) -> None:
    assert observe(deploy_claim, f"{site.url}/health", "--expect-json", "/build=b1") == 0
    item = last_evidence(deploy_claim)
    _, _, body = Site(build="b1").respond("/health")
    assert item["subject"] == "sha256:" + hashlib.sha256(body).hexdigest()
    assert item["check_type"] == "endpoint_health"
    assert item["target"] == f"GET {site.url}/health"
    assert item["covers"] == ["m1"]
    assert item["verifier"]["kind"] == "independent"
    assert "slashed" not in deploy_claim.read_text()
    assert item["details"]["content_type"] == "application/json"


def test_a_503_is_an_observation_that_refutes(site: Site, deploy_claim: Path) -> None:
    site.build = "b2"
    assert observe(deploy_claim, f"{site.url}/down", "--expect-json", "/build=b2") == 0
    assert last_evidence(deploy_claim)["observed_value"]["status"] == 503
    assert verdict_of(deploy_claim) == "refuted"


def test_an_expected_503_can_be_asserted(site: Site, deploy_claim: Path) -> None:
    args = ("--expect-status", "503", "--expect-json", "/build=b1")
    assert observe(deploy_claim, f"{site.url}/down", *args) == 0
    assert verdict_of(deploy_claim) == "verified"


def test_connection_refused_fails_the_observation_and_records_nothing(
    deploy_claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = deploy_claim.read_bytes()
    url = f"http://127.0.0.1:{closed_port()}/health"
    assert observe(deploy_claim, url, "--expect-json", "/build=b2") == 5
    err = capsys.readouterr().err
    assert err.startswith(f"claim: GET {url}: cannot connect")
    assert len(err.splitlines()) == 1
    assert deploy_claim.read_bytes() == before
    assert verdict_of(deploy_claim) == "unverified"


def test_a_recorded_failure_leaves_the_claim_unverified_with_the_reason(
    deploy_claim: Path,
) -> None:
    url = f"http://127.0.0.1:{closed_port()}/health"
    assert observe(deploy_claim, url, "--expect-json", "/build=b2", "--record-failure") == 5
    item = last_evidence(deploy_claim)
    assert "observed_value" not in item
    assert "cannot connect" in item["details"]["error"]
    assert item["expected"] == {"status": 200, "json": {"/build": "b2"}}
    assert verdict_of(deploy_claim) == "unverified"


def test_a_dns_failure_is_an_observation_failure(deploy_claim: Path) -> None:
    url = "http://no-such-host.invalid/health"
    assert observe(deploy_claim, url, "--expect-json", "/build=b2", "--timeout", "5") == 5


def test_a_tls_failure_is_an_observation_failure(
    site: Site, deploy_claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The server speaks plain HTTP, so the TLS handshake fails.
    url = site.url.replace("http://", "https://") + "/health"
    assert observe(deploy_claim, url, "--expect-json", "/build=b1", "--timeout", "5") == 5
    assert "cannot connect" in capsys.readouterr().err
    assert verdict_of(deploy_claim) == "unverified"


def test_a_slow_server_times_out(
    site: Site, deploy_claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    assert (
        observe(deploy_claim, f"{site.url}/slow", "--expect-json", "/build=b1", "--timeout", "0.3")
        == 5
    )
    assert time.monotonic() - started < site.delay_s
    assert "no response within 0.3s" in capsys.readouterr().err
    assert verdict_of(deploy_claim) == "unverified"


def test_a_slow_server_within_the_timeout_is_observed(site: Site, deploy_claim: Path) -> None:
    site.delay_s = 0.2
    assert (
        observe(deploy_claim, f"{site.url}/slow", "--expect-json", "/build=b1", "--timeout", "5")
        == 0
    )
    assert verdict_of(deploy_claim) == "verified"


@pytest.mark.parametrize("status", [[], ["--expect-status", "200"]])
def test_a_status_only_check_is_refused_before_any_request(
    site: Site, deploy_claim: Path, capsys: pytest.CaptureFixture[str], status: list[str]
) -> None:
    before = deploy_claim.read_bytes()
    assert observe(deploy_claim, f"{site.url}/health", *status) == 4
    err = capsys.readouterr().err
    assert "a 200 that would be 200 either way is not evidence about this deploy" in err
    assert site.requests == 0
    assert deploy_claim.read_bytes() == before


def test_a_body_that_is_not_json_contradicts(site: Site, deploy_claim: Path) -> None:
    assert observe(deploy_claim, f"{site.url}/html", "--expect-json", "/build=b2") == 0
    item = last_evidence(deploy_claim)
    assert item["observed_value"] == {"status": 200, "json": {}}
    assert item["details"]["body"] == "not JSON"
    assert verdict_of(deploy_claim) == "refuted"


@pytest.mark.parametrize("expectation", ["/nope=b2", "/nope=null", "/checks/5/ok=true"])
def test_a_missing_pointer_contradicts_even_null(
    site: Site, deploy_claim: Path, expectation: str
) -> None:
    assert observe(deploy_claim, f"{site.url}/health", "--expect-json", expectation) == 0
    item = last_evidence(deploy_claim)
    assert item["observed_value"]["json"] == {}
    assert item["details"]["missing_pointers"] == [expectation.partition("=")[0]]
    assert verdict_of(deploy_claim) == "refuted"


def test_pointers_reach_into_arrays_and_escaped_keys(site: Site, deploy_claim: Path) -> None:
    args = [
        "--expect-json",
        "/checks/0/ok=true",
        "--expect-json",
        "/a~1b/m~0n=slashed",
        "--expect-json",
        "/maybe=null",
        "--expect-json",
        "/version=3",
    ]
    assert observe(deploy_claim, f"{site.url}/health", *args) == 0
    item = last_evidence(deploy_claim)
    assert item["observed_value"]["json"] == {
        "/checks/0/ok": True,
        "/a~1b/m~0n": "slashed",
        "/maybe": None,
        "/version": 3,
    }
    assert item["expected"]["json"] == item["observed_value"]["json"]
    assert verdict_of(deploy_claim) == "verified"


def test_a_json_quoted_value_is_a_string_and_does_not_match_a_number(
    site: Site, deploy_claim: Path
) -> None:
    assert observe(deploy_claim, f"{site.url}/health", "--expect-json", '/version="3"') == 0
    assert last_evidence(deploy_claim)["expected"]["json"] == {"/version": "3"}
    assert verdict_of(deploy_claim) == "refuted"


def test_a_header_assertion_matches_case_insensitively(site: Site, deploy_claim: Path) -> None:
    assert observe(deploy_claim, f"{site.url}/health", "--expect-header", "X-Build=b1") == 0
    item = last_evidence(deploy_claim)
    assert item["observed_value"] == {"status": 200, "headers": {"x-build": "b1"}}
    assert verdict_of(deploy_claim) == "verified"


def test_a_missing_or_different_header_contradicts(site: Site, deploy_claim: Path) -> None:
    args = ["--expect-header", "x-build=b2", "--expect-header", "x-missing=1"]
    assert observe(deploy_claim, f"{site.url}/health", *args) == 0
    assert last_evidence(deploy_claim)["observed_value"]["headers"] == {
        "x-build": "b1",
        "x-missing": None,
    }
    assert verdict_of(deploy_claim) == "refuted"


def test_a_redirect_is_not_followed_by_default(site: Site, deploy_claim: Path) -> None:
    assert observe(deploy_claim, f"{site.url}/old", "--expect-json", "/build=b1") == 0
    assert last_evidence(deploy_claim)["observed_value"] == {"status": 302, "json": {}}
    assert site.requests == 1
    assert verdict_of(deploy_claim) == "refuted"


def test_a_redirect_is_followed_on_request(site: Site, deploy_claim: Path) -> None:
    args = ("--expect-json", "/build=b1", "--follow-redirects")
    assert observe(deploy_claim, f"{site.url}/old", *args) == 0
    item = last_evidence(deploy_claim)
    assert item["details"]["redirected_to"] == f"{site.url}/health"
    assert verdict_of(deploy_claim) == "verified"


def test_a_password_in_the_url_is_never_recorded_or_printed(
    site: Site, deploy_claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = site.url.replace("http://", "http://ops:s3cret@") + "/health"
    assert observe(deploy_claim, url, "--expect-json", "/build=b1") == 0
    assert last_evidence(deploy_claim)["target"].startswith("GET http://ops:***@127.0.0.1:")
    closed = f"http://ops:s3cret@127.0.0.1:{closed_port()}/health"
    assert observe(deploy_claim, closed, "--expect-json", "/build=b1", "--record-failure") == 5
    captured = capsys.readouterr()
    assert "s3cret" not in captured.out + captured.err
    assert "s3cret" not in deploy_claim.read_text()


def test_attack_09_api_key_query_parameter_never_leaks(
    site: Site, deploy_claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    url = f"{site.url}/health?api_key=pw-one&ACCESS_TOKEN=pw-two&v=1"
    assert observe(deploy_claim, url, "--expect-json", "/build=b1") == 0
    item = last_evidence(deploy_claim)
    assert item["target"] == f"GET {site.url}/health?api_key=***&ACCESS_TOKEN=***&v=1"
    assert verdict_of(deploy_claim) == "verified"
    unreachable = f"http://127.0.0.1:{closed_port()}/health?auth=pw-three"
    assert observe(deploy_claim, unreachable, "--expect-json", "/build=b1", "--record-failure") == 5
    captured = capsys.readouterr()
    for piece in ("pw-one", "pw-two", "pw-three"):
        assert piece not in captured.out + captured.err
        assert piece not in deploy_claim.read_text()
    assert "auth=***" in captured.err


@pytest.mark.parametrize("password", ["pw-one#pw-two", "pw-one?pw-two"])
def test_attack_09_hash_in_an_http_password_is_refused_unshown(
    site: Site, deploy_claim: Path, capsys: pytest.CaptureFixture[str], password: str
) -> None:
    """httpx would read the text after '#' or '?' as a fragment or query: refused (exit 4)
    before any request, showing the scheme only."""
    before = deploy_claim.read_bytes()
    url = site.url.replace("http://", f"http://ops:{password}@") + "/health"
    assert observe(deploy_claim, url, "--expect-json", "/build=b1", "--record-failure") == 4
    captured = capsys.readouterr()
    assert captured.err.startswith("claim: URL 'http://***': percent-encode '#', '?'")
    assert "pw-" not in captured.out + captured.err
    assert deploy_claim.read_bytes() == before
    assert site.requests == 0


def test_print_shows_the_evidence_and_leaves_the_claim_alone(
    site: Site, deploy_claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = deploy_claim.read_bytes()
    assert observe(deploy_claim, f"{site.url}/health", "--expect-json", "/build=b1", "--print") == 0
    printed = json.loads(capsys.readouterr().out)
    assert printed["observed_value"]["json"] == {"/build": "b1"}
    assert deploy_claim.read_bytes() == before


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--expect-json", "build=b1"], "is not a JSON pointer"),
        (["--expect-json", "/a~2=b1"], "'~' must be followed by 0 or 1"),
        (["--expect-json", "/build"], "expected NAME=VALUE"),
        (["--expect-json", "/b=1", "--expect-json", "/b=2"], "given twice"),
        (["--expect-header", "X-A=1", "--expect-header", "x-a=2"], "given twice"),
        (["--expect-json", "/b=1", "--method", "GE T"], "not an HTTP method"),
        (["--expect-json", "/b=1", "--timeout", "0"], "--timeout"),
    ],
)
def test_bad_options_are_usage_errors(
    site: Site,
    deploy_claim: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    message: str,
) -> None:
    assert observe(deploy_claim, f"{site.url}/health", *args) == 4
    assert message in capsys.readouterr().err
    assert site.requests == 0


def test_a_url_that_is_not_http_is_a_usage_error(
    deploy_claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert observe(deploy_claim, "ftp://127.0.0.1/x", "--expect-json", "/b=1") == 4
    assert "http:// or https://" in capsys.readouterr().err


def test_the_real_command_observes_and_fails_with_exit_codes(
    site: Site, deploy_claim: Path
) -> None:
    site.build = "b2"
    ok = subprocess.run(
        [
            CLAIM,
            "observe",
            "endpoint",
            str(deploy_claim),
            f"{site.url}/health",
            "--expect-json",
            "/build=b2",
            "--expect-header",
            "x-build=b2",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert ok.returncode == 0, ok.stderr
    assert ok.stdout.startswith("recorded e1: endpoint_health GET ")
    verified = subprocess.run(
        [CLAIM, "verify", str(deploy_claim)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert verified.returncode == 0, verified.stdout
    refused = subprocess.run(
        [
            CLAIM,
            "observe",
            "endpoint",
            str(deploy_claim),
            f"http://127.0.0.1:{closed_port()}/",
            "--expect-json",
            "/build=b2",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert refused.returncode == 5
    assert refused.stderr.count("\n") == 1
    assert "Traceback" not in refused.stderr


@pytest.mark.parametrize(
    ("pointer", "expected"),
    [
        ("", {"a/b": [10, {"~": "t"}], "": "empty", "0": "zero"}),
        ("/a~1b/0", 10),
        ("/a~1b/1/~0", "t"),
        ("/", "empty"),
        ("/0", "zero"),
        ("/a~1b/01", ABSENT),
        ("/a~1b/-", ABSENT),
        ("/a~1b/2", ABSENT),
        ("/a~1b/0/x", ABSENT),
        ("/ab", ABSENT),
    ],
)
def test_rfc_6901_resolution(pointer: str, expected: Any) -> None:
    document = {"a/b": [10, {"~": "t"}], "": "empty", "0": "zero"}
    assert resolve_pointer(document, pointer_tokens(pointer)) == expected


def test_tilde_escapes_are_decoded_in_order() -> None:
    assert pointer_tokens("/~01") == ["~1"]
    with pytest.raises(UsageError):
        pointer_tokens("/~")
