"""The gate as the service runs it: the repository must be under the observe root, the operator's
config and the service's key decide (never the work tree's claim.toml), and the decision is
appended to a real SQLite ledger with its claim, policy and signed evidence."""

from __future__ import annotations

import os
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from completion_claim.gate.baseline import StartExists
from completion_claim.gate.run import GATE_VERIFIER_ID
from completion_claim.model import parse_claim, parse_policy
from completion_claim.observe.repository import run_git
from completion_claim.service.gate_service import (
    BadGateRequest,
    GateNotConfigured,
    GateRequest,
    NotARepository,
    RepoRefused,
    decide,
    gate_request,
    resolve_repo,
    start,
)
from completion_claim.service.ledger import Ledger
from completion_claim.service.records import Entry
from completion_claim.service.settings import ServiceSettings
from completion_claim.timefmt import parse_time
from completion_claim.trust import check_signatures
from completion_claim.trust.dsse import Signers, decode_envelope
from completion_claim.trust.keys import SigningKey, load_signing_key
from completion_claim.verify import verify
from tests.fixtures.gate_service import buggy_project, write_operator
from tests.fixtures.projects import CALC, TEST_CALC, make_repo, write_files

NOW = datetime(2026, 11, 30, 18, 0, tzinfo=UTC)


@pytest.fixture
def observed(tmp_path: Path) -> Path:
    root = tmp_path / "observed"
    root.mkdir()
    return root


@pytest.fixture
def settings(tmp_path: Path, observed: Path, ledger_url: str) -> ServiceSettings:
    """The service's settings over a new ledger: SQLite, then PostgreSQL (conftest)."""
    ops = tmp_path / "ops"
    ops.mkdir()
    config, key = write_operator(ops)
    return ServiceSettings(
        ledger_url=ledger_url,
        key_path=key,
        observe_root=observed,
        gate_config=config,
    )


@pytest.fixture
def ledger(settings: ServiceSettings) -> Iterator[Ledger]:
    """The ledger opened with the service's key (the key signs its tree heads)."""
    opened = Ledger.open(settings.ledger_url, load_signing_key(str(settings.key_path)))
    try:
        yield opened
    finally:
        opened.close()


# --- where the repository is ------------------------------------------------------------------


def test_a_repository_under_the_root_resolves_to_its_real_top(observed: Path) -> None:
    repo = make_repo(observed / "team" / "repo", {"a.txt": "a"})
    (repo / "sub").mkdir()
    assert resolve_repo(observed, str(repo / "sub")) == Path(os.path.realpath(repo))


def test_a_link_under_the_root_to_a_repository_under_it_is_followed(observed: Path) -> None:
    repo = make_repo(observed / "repo", {"a.txt": "a"})
    (observed / "alias").symlink_to(repo)
    assert resolve_repo(observed, str(observed / "alias")) == Path(os.path.realpath(repo))


def test_attack_19_a_link_out_of_the_root_is_refused(tmp_path: Path, observed: Path) -> None:
    outside = make_repo(tmp_path / "outside", {"a.txt": "a"})
    (observed / "escape").symlink_to(outside)
    with pytest.raises(RepoRefused, match="not under the service's observe root"):
        resolve_repo(observed, str(observed / "escape"))


def _git_file_out(spy: Path, private: Path) -> None:
    spy.mkdir()
    (spy / ".git").write_text(f"gitdir: {private / '.git'}\n", encoding="utf-8")


def _git_link_out(spy: Path, private: Path) -> None:
    spy.mkdir()
    (spy / ".git").symlink_to(private / ".git")


def _alternates_out(spy: Path, private: Path) -> None:
    make_repo(spy, {"a.txt": "a"})
    alternates = spy / ".git" / "objects" / "info" / "alternates"
    alternates.write_text(f"{private / '.git' / 'objects'}\n", encoding="utf-8")


def _quoted_alternates_out(spy: Path, private: Path) -> None:
    make_repo(spy, {"a.txt": "a"})
    alternates = spy / ".git" / "objects" / "info" / "alternates"
    alternates.write_text(f'"{private / ".git" / "objects"}"\n', encoding="utf-8")


def _object_linked_out(spy: Path, private: Path) -> None:
    make_repo(spy, {"a.txt": "a"})
    head = run_git(private, "rev-parse", "HEAD").decode().strip()
    folder = spy / ".git" / "objects" / head[:2]
    folder.mkdir(exist_ok=True)
    (folder / head[2:]).symlink_to(private / ".git" / "objects" / head[:2] / head[2:])


@pytest.mark.parametrize(
    "plant",
    [_git_file_out, _git_link_out, _alternates_out, _quoted_alternates_out, _object_linked_out],
)
def test_attack_25_git_data_out_of_the_root_is_refused(
    tmp_path: Path, observed: Path, plant: Any
) -> None:
    """A folder under the root whose ``.git`` (a file naming a git dir, a link) or object
    alternates lie outside it: the service read another repository with its own rights, and
    its answer and the public ledger listed that repository's files (and confirmed guesses
    at their contents)."""
    private = make_repo(tmp_path / "private", {"SECRET-plan.txt": "the plan\n"})
    spy = observed / "spy"
    plant(spy, private)
    with pytest.raises(RepoRefused, match="outside the observe root"):
        resolve_repo(observed, str(spy))


def test_a_linked_work_tree_of_a_repository_under_the_root_resolves(observed: Path) -> None:
    repo = make_repo(observed / "repo", {"a.txt": "a"})
    (repo / ".git" / "objects" / "info").mkdir(exist_ok=True)
    linked = observed / "linked"
    run_git(repo, "worktree", "add", "--quiet", "--detach", str(linked))
    assert resolve_repo(observed, str(linked)) == Path(os.path.realpath(linked))


def test_attack_26_a_work_tree_whose_real_path_is_not_utf8_is_one_line_not_a_500(
    observed: Path,
) -> None:
    """The agent renames its work tree to a name that is not UTF-8 and leaves a link at the
    path its hook names: the gate failed on the name with an exception the service answered
    500. It is now a 422 naming the problem (and the requester's own path only)."""
    repo = make_repo(observed / "repo", {"a.txt": "a"})
    renamed = os.path.join(os.fsencode(observed), b"repo\xff")
    os.rename(os.fsencode(repo), renamed)
    os.symlink(renamed, os.fsencode(repo))
    with pytest.raises(NotARepository, match="not UTF-8"):
        resolve_repo(observed, str(repo))


def test_dot_dot_is_refused_even_when_it_lands_inside(observed: Path) -> None:
    make_repo(observed / "repo", {"a.txt": "a"})
    (observed / "other").mkdir()
    with pytest.raises(RepoRefused, match=r"contains '\.\.'"):
        resolve_repo(observed, str(observed / "other" / ".." / "repo"))


def test_a_path_outside_the_root_is_refused(tmp_path: Path, observed: Path) -> None:
    outside = make_repo(tmp_path / "outside", {"a.txt": "a"})
    with pytest.raises(RepoRefused):
        resolve_repo(observed, str(outside))


def test_a_folder_whose_repository_starts_above_the_root_is_refused(tmp_path: Path) -> None:
    """Judging it would read the whole repository, most of it outside the root."""
    repo = make_repo(tmp_path / "big", {"a.txt": "a"})
    root = repo / "observed"
    (root / "project").mkdir(parents=True)
    with pytest.raises(RepoRefused, match="repository outside the observe root"):
        resolve_repo(root, str(root / "project"))


@pytest.mark.parametrize(
    ("name", "problem"),
    [("plain", "not in a git work tree"), ("missing", "not a directory")],
)
def test_what_is_not_a_work_tree_is_refused(observed: Path, name: str, problem: str) -> None:
    (observed / "plain").mkdir()
    with pytest.raises(NotARepository, match=problem):
        resolve_repo(observed, str(observed / name))


def test_a_name_too_long_for_the_file_system_is_not_a_repository(observed: Path) -> None:
    with pytest.raises(NotARepository, match="File name too long"):
        resolve_repo(observed, str(observed / ("a" * 300)))


def test_a_relative_path_is_refused(observed: Path) -> None:
    with pytest.raises(NotARepository, match="not an absolute path"):
        resolve_repo(observed, "repo")


# --- the request ------------------------------------------------------------------------------


def test_a_full_request_is_read() -> None:
    asked = gate_request({"repo": "/r", "outcome": "done", "session": "s", "task_id": "t"})
    assert asked == GateRequest("/r", "done", "s", "t")
    assert gate_request({"repo": "/r", "outcome": None}) == GateRequest("/r")


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ([], "must be a JSON object"),
        ({}, "repo: required"),
        ({"repo": 1}, "repo: expected a string"),
        ({"repo": "/r", "policy": {}}, "policy: unknown member"),
        ({"repo": "/r", "session": "x" * 201}, "session: longer than 200"),
        ({"repo": "/r\0"}, "repo: contains a NUL"),
    ],
)
def test_a_bad_request_names_the_member(body: Any, problem: str) -> None:
    with pytest.raises(BadGateRequest, match=problem):
        gate_request(body)


def test_a_start_request_takes_only_repo_and_session() -> None:
    assert gate_request({"repo": "/r", "session": "s"}, start=True) == GateRequest(
        "/r", session="s"
    )
    with pytest.raises(BadGateRequest, match="outcome: unknown member"):
        gate_request({"repo": "/r", "outcome": "done"}, start=True)


# --- the decision -----------------------------------------------------------------------------


def test_a_false_done_is_refuted_under_the_operators_config_and_recorded(
    settings: ServiceSettings, ledger: Ledger, observed: Path
) -> None:
    """The agent's own claim.toml asks for nothing; the operator's runs the tests."""
    repo = buggy_project(observed / "repo")
    start(settings, ledger, GateRequest(str(repo), session="s-1"), submitted_by="ops", now=NOW)
    write_files(repo, {"README.md": "fixed, promise\n"})

    asked = GateRequest(str(repo), "Done. All tests pass.", "s-1", "task-9")
    decision = decide(settings, ledger, asked, submitted_by="agent-1", now=NOW)

    assert decision.result.verdict.state == "refuted"
    assert decision.result.exit_code == 2
    assert decision.max_blocks == 2
    stored = ledger.get(decision.entry.index)
    assert stored is not None
    assert (stored.via, stored.submitted_by, stored.recorded_at) == ("gate", "agent-1", NOW)
    assert stored.verdict["state"] == "refuted"
    assert stored.policy["id"] == "ops/service-gate"
    assert stored.claim["task"]["id"] == "task-9"
    assert stored.claim["claimed_outcome"] == "Done. All tests pass."
    assert not {"policy", "verdict", "verdict_attestation"} & set(stored.claim)


def test_an_honest_fix_is_verified_with_evidence_signed_by_the_service_key(
    settings: ServiceSettings, ledger: Ledger, observed: Path
) -> None:
    repo = buggy_project(observed / "repo")
    start(settings, ledger, GateRequest(str(repo)), submitted_by="ops", now=NOW)
    write_files(repo, {"calc.py": CALC})

    decision = decide(settings, ledger, GateRequest(str(repo), "Fixed add()."),
                      submitted_by="agent-1", now=NOW)  # fmt: skip

    assert decision.result.verdict.state == "verified"
    assert decision.result.verdict.independence == "proven"
    stored = ledger.get(decision.entry.index)
    assert stored is not None
    service_key = load_signing_key(str(settings.key_path)).public
    (observer,) = stored.policy["trust"]["observers"]
    assert (observer["id"], observer["public_key"]) == (GATE_VERIFIER_ID, service_key.text)
    (item,) = stored.claim["evidence"]
    signers = Signers(decode_envelope(item["attestation"]))
    assert signers.signed(service_key)
    assert not signers.signed(SigningKey.generate().public)
    assert reverified(stored) == ("verified", [])


def reverified(entry: Entry) -> tuple[str, list[Any]]:
    """The entry's claim judged again under the policy the entry records, when it was decided:
    what any auditor of the ledger reaches."""
    claim = parse_claim(entry.claim)
    decided_at = parse_time(entry.verdict["decided_at"], "decided_at")
    again = verify(claim, decided_at, parse_policy(entry.policy), signatures=check_signatures)
    return again.state, [u.to_json() for u in again.unmet]


def test_attack_48_a_run_where_nothing_changed_is_not_verified_in_the_ledger(
    settings: ServiceSettings, ledger: Ledger, observed: Path
) -> None:
    """The tests pass and nothing changed: the ledger entry is unverified, and its claim under
    its policy re-verifies so (it said "verified, covering 0 mutations")."""
    repo = make_repo(observed / "repo", {"calc.py": CALC, "tests/test_calc.py": TEST_CALC})
    start(settings, ledger, GateRequest(str(repo)), submitted_by="ops", now=NOW)

    decision = decide(settings, ledger, GateRequest(str(repo), "Done."),
                      submitted_by="agent-1", now=NOW)  # fmt: skip

    stored = ledger.get(decision.entry.index)
    assert stored is not None
    assert stored.verdict["state"] == "unverified"
    assert "no_mutations" in [u["code"] for u in stored.verdict["unmet"]]
    assert reverified(stored) == ("unverified", stored.verdict["unmet"])


def test_a_repository_outside_the_root_appends_nothing(
    tmp_path: Path, settings: ServiceSettings, ledger: Ledger
) -> None:
    repo = buggy_project(tmp_path / "elsewhere")
    with pytest.raises(RepoRefused):
        decide(settings, ledger, GateRequest(str(repo)), submitted_by="a", now=NOW)
    assert ledger.tree_head().size == 0


def test_without_an_operator_config_the_gate_refuses(
    settings: ServiceSettings, ledger: Ledger, observed: Path
) -> None:
    """Falling back to the work tree's claim.toml would let the agent write its own rules."""
    repo = buggy_project(observed / "repo")
    bare = ServiceSettings(settings.ledger_url, settings.key_path, observe_root=observed)
    with pytest.raises(GateNotConfigured):
        decide(bare, ledger, GateRequest(str(repo)), submitted_by="a", now=NOW)
    with pytest.raises(GateNotConfigured):
        start(bare, ledger, GateRequest(str(repo)), submitted_by="ops", now=NOW)


def test_attack_19_runs_kept_under_the_observe_root_are_refused(
    settings: ServiceSettings, ledger: Ledger, observed: Path
) -> None:
    """An agent that could edit a start record there would choose the base it is judged from."""
    assert settings.gate_config is not None
    text = settings.gate_config.read_text()
    settings.gate_config.write_text(
        text.replace(f'runs_dir = "{settings.gate_config.parent / "runs"}"',
                     f'runs_dir = "{observed / "runs"}"')
    )  # fmt: skip
    repo = buggy_project(observed / "repo")
    with pytest.raises(GateNotConfigured, match="under the observe root"):
        start(settings, ledger, GateRequest(str(repo)), submitted_by="ops", now=NOW)


def test_start_records_the_base_the_next_decision_measures_from(
    settings: ServiceSettings, ledger: Ledger, observed: Path
) -> None:
    repo = buggy_project(observed / "repo")
    begun = GateRequest(str(repo), session="s-1")
    root, logged = start(settings, ledger, begun, submitted_by="ops", now=NOW)
    assert root == Path(os.path.realpath(repo))
    assert (logged.index, logged.session, logged.submitted_by) == (0, "s-1", "ops")
    write_files(repo, {"calc.py": CALC})

    asked = GateRequest(str(repo), "Fixed.", session="s-1")
    decision = decide(settings, ledger, asked, submitted_by="a", now=NOW)

    assert "the start record" in decision.result.report
    assert decision.entry.start_index == 0
    with pytest.raises(StartExists, match=r"session 's-1' was started already .*ledger entry 0"):
        start(settings, ledger, begun, submitted_by="ops", now=NOW)
