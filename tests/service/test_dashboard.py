"""The dashboard: its pages rendered from real verdicts (every claim string hostile), then served
by a real uvicorn over a real SQLite ledger and driven in Debian's Chromium."""

from __future__ import annotations

import hashlib
import html
import json
import re
import sqlite3
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from markupsafe import escape
from playwright.sync_api import Browser
from playwright.sync_api import Page as BrowserPage

from completion_claim.service import _pages
from completion_claim.service.app import create_app
from completion_claim.service.charts import STATE_COLOURS, cut
from completion_claim.service.ledger import Ledger
from completion_claim.service.records import Entry, Page, StateCounts, Stats
from completion_claim.service.settings import ServiceSettings
from completion_claim.service.tree_head import sign_tree_head
from completion_claim.timefmt import format_time
from completion_claim.trust.canonical import canonical_bytes
from completion_claim.trust.keys import SigningKey, write_private_key
from tests.builders import at, claim_doc, evidence, mutation
from tests.service.conftest import LOG_KEY, fresh_entry, record_dialog

from ._dashboard import (
    HOSTILE,
    Parsed,
    assert_inert,
    decision,
    failing_test_run,
    rgb,
    serving,
)

RECORDED = at(100)


def decided(
    doc: dict[str, Any], *, index: int = 0, agent: str = "ci/main", recorded: datetime = RECORDED
) -> Entry:
    """An entry as the ledger would hold it, for rendering without a ledger."""
    new = decision(doc, agent, recorded)
    leaf = hashlib.sha256(b"\x00" + canonical_bytes(new.leaf_document())).hexdigest()
    return Entry(**vars(new), index=index, leaf_hash=leaf)


def hostile_doc() -> dict[str, Any]:
    """A refuted claim in which every string a submitter controls is markup."""
    return claim_doc(
        mutations=[mutation(HOSTILE, kind=HOSTILE, target=HOSTILE, digest=HOSTILE)],
        evidence_items=[
            evidence(
                covers=[HOSTILE],
                id=HOSTILE,
                target=HOSTILE,
                verifier={"id": HOSTILE, "kind": "independent"},
                expected={HOSTILE: HOSTILE},
                observed_value={HOSTILE: 1},
                details={HOSTILE: HOSTILE},
            ),
            evidence(check_type="x" + HOSTILE, covers=[HOSTILE]),
        ],
        task={"id": HOSTILE, "description": HOSTILE},
        claimed_outcome=HOSTILE,
    )


# --- pages rendered from values -----------------------------------------------------------


def test_attack_18_every_claim_string_on_the_claim_page_is_text() -> None:
    entry = decided(hostile_doc(), agent=HOSTILE)
    assert entry.state == "refuted"
    parsed = assert_inert(_pages.render_claim(entry, _pages.ProofStatus(ok=False, text=HOSTILE)))
    # Task id, description, outcome, submitter, proof line, mutation id/kind/target/digest,
    # evidence ref/target/verifier/expected/observed/details, the mismatch, the reasons and
    # the unmet list all show the string literally: at least one per field.
    assert parsed.text.count(HOSTILE) >= 15


def test_every_claim_string_in_the_list_is_text_and_rows_carry_their_state() -> None:
    entries = (
        decided(hostile_doc(), index=2, agent=HOSTILE),
        decided(claim_doc(), index=1),
        decided(claim_doc(evidence_items=[]), index=0),
    )
    page = _pages.render_list(
        Page(entries, next_before=None), {"agent": HOSTILE, "task": HOSTILE}, older_url=None
    )
    parsed = assert_inert(page)
    # The task, outcome and agent cells show it cut short (no word breaks in the table), and
    # whole in their titles; the two filter inputs are refilled with it.
    assert parsed.text.count(cut(HOSTILE, 28)) == 3  # the outcome's first word is as long
    assert page.count(f'title="{escape(HOSTILE)}"') == 3
    assert page.count('value="&lt;script&gt;') == 2
    for index, state in ((2, "refuted"), (1, "verified"), (0, "unverified")):
        # Posted, independence declared: the row says so (attack 156).
        assert f'<tr class="state-{state} declared posted" data-index="{index}">' in page
        assert f'<span class="state">{state} (declared, posted)</span>' in page


def test_the_claim_page_shows_the_mismatch_line_and_why_evidence_does_not_count() -> None:
    doc = failing_test_run()
    doc["evidence"].append(evidence(verifier={"id": "agent", "kind": "self_attested"}))
    parsed = assert_inert(
        _pages.render_claim(decided(doc), _pages.ProofStatus(ok=True, text="included"))
    )
    assert "exit_code: expected 0, observed 1" in parsed.text
    assert "contradicted by evidence[0] (test_run)" in " ".join(parsed.text.split())
    assert "self-attested: the agent's own report never satisfies a requirement" in parsed.text


def test_the_stats_page_escapes_agents_and_unmet_codes_in_charts_and_tables() -> None:
    stats = Stats(
        total=StateCounts(verified=2, unverified=1, refuted=1),
        by_day=((at(0).date(), StateCounts(verified=2, unverified=1, refuted=1)),),
        by_agent=((HOSTILE, StateCounts(refuted=1)), ("ci/main", StateCounts(2, 1, 0))),
        by_policy=((HOSTILE, StateCounts(2, 1, 1)),),
        top_unmet=((HOSTILE, 2),),
        said_done=4,
        said_done_refuted=1,
    )
    page = _pages.render_stats(stats)
    parsed = assert_inert(page)
    # Agent: chart label, bar title, table; policy: table; unmet code: label, title, table.
    assert parsed.text.count(HOSTILE) >= 5
    assert "25.0% (1 of 4 claims that said done were refuted)" in parsed.text
    assert parsed.tags >= {"svg", "rect", "details"}


# --- served by a real uvicorn over a real SQLite ledger ------------------------------------

SCRIPT_OUTCOME = "<script>alert(1)</script>"
FILLER = 51  # verified claims first, so the list has a second page (PAGE_SIZE is 50)


@dataclass(frozen=True)
class Served:
    base: str
    key: SigningKey
    ledger_url: str
    verified: int  # the index of one entry in each state, and of the script outcome
    unverified: int
    refuted: int
    script: int
    size: int


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("dashboard")
    key = SigningKey.generate()
    key_path = folder / "service.key"
    write_private_key(str(key_path), key)
    url = f"sqlite:///{folder / 'ledger.sqlite'}"
    ledger = Ledger.open(url, key)
    decisions = [fresh_entry(agent="ci/main", recorded_at=at(100 + n)) for n in range(FILLER)]
    decisions += [
        fresh_entry("unverified", agent="agent-b", recorded_at=at(200)),
        decision(failing_test_run(), "agent-b", at(201)),
        fresh_entry(agent="agent-c", outcome=SCRIPT_OUTCOME, recorded_at=at(202)),
    ]
    indices = [ledger.append(new).index for new in decisions]
    settings = ServiceSettings(ledger_url=url, key_path=key_path)
    try:
        with serving(create_app(settings, ledger)) as base:
            yield Served(
                base=base,
                key=key,
                ledger_url=url,
                verified=indices[FILLER - 1],
                unverified=indices[FILLER],
                refuted=indices[FILLER + 1],
                script=indices[FILLER + 2],
                size=len(indices),
            )
    finally:
        ledger.close()


def screenshot(page: BrowserPage, folder: Path, name: str) -> None:
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.stat().st_size > 0
    assert path.read_bytes().startswith(b"\x89PNG")


def test_the_list_shows_the_three_states_in_their_colours_with_a_label(
    served: Served, page: BrowserPage, tmp_path: Path
) -> None:
    page.goto(served.base + "/")
    for index, state in (
        (served.verified, "verified"),
        (served.unverified, "unverified"),
        (served.refuted, "refuted"),
    ):
        row = page.locator(f'tr[data-index="{index}"]')
        assert row.get_attribute("class") == f"state-{state} declared posted"
        label = row.locator(".state")
        # The state in words too, never colour alone; and how it was decided (every entry
        # here was posted with its independence declared: hollow, never the gate's fill).
        assert label.inner_text() == f"{state} (declared, posted)"
        colour = rgb(STATE_COLOURS[state])
        assert label.evaluate("e => getComputedStyle(e).color") == colour
        assert label.evaluate("e => getComputedStyle(e).borderTopStyle") == "dashed"
        assert label.evaluate("e => getComputedStyle(e).backgroundColor") == "rgb(255, 255, 255)"
        edge = row.locator("td").first
        assert edge.evaluate("e => getComputedStyle(e).borderLeftColor") == colour
        screenshot(page, tmp_path, f"list-{state}")


def test_the_list_is_newest_first_and_pages_back_through_older_claims(
    served: Served, page: BrowserPage
) -> None:
    page.goto(served.base + "/")
    shown = [
        int(i or "-1")
        for i in page.locator("tr[data-index]").evaluate_all(
            "rows => rows.map(r => r.dataset.index)"
        )
    ]
    assert shown == list(range(served.size - 1, served.size - 51, -1))
    page.get_by_role("link", name="Older claims").click()
    page.wait_for_url("**/?before=*")
    rest = page.locator("tr[data-index]").count()
    assert rest == served.size - 50
    assert page.get_by_role("link", name="Older claims").count() == 0

    # The next page keeps the filters.
    page.goto(served.base + "/?state=verified&agent=ci%2Fmain")
    page.get_by_role("link", name="Older claims").click()
    page.wait_for_url("**before=*")
    assert page.url.startswith(served.base + "/?state=verified&agent=ci%2Fmain&before=")
    assert page.locator("tr[data-index]").count() == FILLER - 50


def test_a_filter_narrows_the_list(served: Served, page: BrowserPage, tmp_path: Path) -> None:
    page.goto(served.base + "/")
    everything = page.locator("tr[data-index]").count()
    page.select_option("select[name=state]", "refuted")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**/?state=refuted*")
    rows = page.locator("tr[data-index]")
    assert 0 < rows.count() < everything
    classes = set(rows.evaluate_all("rows => rows.map(r => r.className)"))
    assert classes == {"state-refuted declared posted"}
    assert page.locator("select[name=state]").input_value() == "refuted"
    screenshot(page, tmp_path, "list-refuted")

    page.fill("input[name=agent]", "nobody")
    page.get_by_role("button", name="Filter").click()
    page.wait_for_url("**agent=nobody*")
    assert page.locator("tr[data-index]").count() == 0
    assert "No claims match these filters." in page.inner_text("main")


def test_a_claim_page_shows_the_mismatch_and_the_checked_proof(
    served: Served, page: BrowserPage, tmp_path: Path
) -> None:
    page.goto(served.base + f"/claims/{served.refuted}")
    mismatch = page.locator(".mismatch")
    assert mismatch.inner_text() == "exit_code: expected 0, observed 1"
    assert mismatch.is_visible()
    proof = page.locator(".proof")
    assert proof.get_attribute("class") == "proof proof-ok"
    assert proof.inner_text().startswith(f"included in the signed tree of size {served.size}")
    assert page.locator("h1 .state").inner_text() == "refuted (declared, posted)"
    screenshot(page, tmp_path, "claim")


def test_attack_18_a_script_outcome_renders_as_text_and_never_runs(
    served: Served, browser: Browser, page: BrowserPage, dialogs: list[str], tmp_path: Path
) -> None:
    page.goto(served.base + f"/claims/{served.script}")
    assert page.locator(".outcome").inner_text() == SCRIPT_OUTCOME
    assert page.get_by_text(SCRIPT_OUTCOME, exact=True).is_visible()
    screenshot(page, tmp_path, "claim-script")
    page.goto(served.base + "/")
    cell = page.locator(f'tr[data-index="{served.script}"] td').nth(3)
    assert cell.inner_text() == SCRIPT_OUTCOME
    assert dialogs == []

    # The control: the same handler does see an alert when a page really runs one.
    control = browser.new_page()
    seen: list[str] = []
    control.on("dialog", lambda dialog: record_dialog(dialog, seen))
    control.set_content(SCRIPT_OUTCOME)
    control.close()
    assert seen == ["1"]


def test_the_stats_page_draws_its_charts_on_the_server(
    served: Served, page: BrowserPage, tmp_path: Path
) -> None:
    page.goto(served.base + "/stats")
    assert page.locator("figure svg").count() == 3
    totals = page.locator("table.totals td").all_inner_texts()
    assert totals[:4] == [str(served.size), str(served.size - 2), "1", "1"]
    screenshot(page, tmp_path, "stats")


def test_an_unknown_claim_is_a_404_page(served: Served, page: BrowserPage, tmp_path: Path) -> None:
    answer = page.goto(served.base + f"/claims/{served.size}")
    assert answer is not None
    assert answer.status == 404
    assert f"the ledger holds no claim '{served.size}'" in page.inner_text("main")
    screenshot(page, tmp_path, "not-found")


@pytest.mark.parametrize(
    "path",
    [
        *("/", "/claims/0", "/stats", "/claims/nope", "/?state=maybe", "/?unmet=contradicted"),
        *("/stats?since=2026-08-27", "/agent?agent=agent-b", "/agent", "/agent?agent=%3Cscript%3E"),
    ],
)
def test_every_page_forbids_scripts(served: Served, path: str) -> None:
    answer = httpx.get(served.base + path)
    assert answer.headers["content-type"].startswith("text/html")
    policy = answer.headers["content-security-policy"]
    assert policy.startswith("default-src 'none'; style-src 'unsafe-inline'; img-src data:")
    assert "script-src" not in policy
    assert "<script" not in answer.text
    head = httpx.head(served.base + path)
    assert (head.status_code, head.content) == (answer.status_code, b"")
    assert head.headers["content-security-policy"] == policy


@pytest.mark.parametrize(
    ("path", "status", "line"),
    [
        ("/claims/-1", 404, "the ledger holds no claim '-1'"),
        ("/claims/1e3", 404, "the ledger holds no claim '1e3'"),
        ("/claims/" + "9" * 40, 404, "the ledger holds no claim '" + "9" * 40 + "'"),
        ("/?state=maybe", 422, "state: 'maybe' is not one of verified, unverified, refuted"),
        ("/?since=yesterday", 422, "since: "),
        ("/?before=x", 422, "before: 'x' is not an entry index"),
        ("/claims/%3Cimg%20src=x%20onerror=alert(1)%3E", 404, "claim '<img src=x onerror"),
        ("/?state=%3Cscript%3Ealert(1)%3C/script%3E", 422, "state: '<script>alert(1)</script>'"),
    ],
)
def test_bad_addresses_get_an_html_page_with_one_line(
    served: Served, path: str, status: int, line: str
) -> None:
    answer = httpx.get(served.base + path)
    assert answer.status_code == status
    assert line in assert_inert(answer.text).text


def listed(served: Served, query: str) -> list[int]:
    answer = httpx.get(served.base + "/?" + query)
    assert answer.status_code == 200
    return [int(index) for index in re.findall(r'data-index="(\d+)"', answer.text)]


def test_the_time_filters_bound_the_recording_time(served: Served) -> None:
    # since is inclusive, until exclusive; a bare date is that day's midnight UTC.
    assert listed(served, "since=" + quote(format_time(at(202)))) == [served.script]
    assert listed(served, "until=" + quote(format_time(at(101)))) == [0]
    assert listed(served, "since=" + at(0).date().isoformat()) == listed(served, "")
    assert listed(served, "until=" + at(0).date().isoformat()) == []
    assert listed(served, "agent=agent-b&state=refuted") == [served.refuted]


def proof_line(base: str, index: int) -> tuple[str, str]:
    answer = httpx.get(f"{base}/claims/{index}")
    assert answer.status_code == 200
    found = re.search(r'<dd class="proof (proof-\w+)">([^<]*)</dd>', answer.text)
    assert found is not None
    return found[1], html.unescape(found[2])


def test_a_row_edited_in_the_database_is_shown_unproven(tmp_path: Path) -> None:
    key = SigningKey.generate()
    key_path = tmp_path / "service.key"
    write_private_key(str(key_path), key)
    database = tmp_path / "ledger.sqlite"
    url = f"sqlite:///{database}"
    ledger = Ledger.open(url, key)
    for n in range(3):
        ledger.append(decision(failing_test_run(), "agent-b", at(100 + n)))
    # Someone with the database file makes entry 1 read as a success, past the service.
    with sqlite3.connect(database) as conn:
        (leaf,) = conn.execute("SELECT leaf FROM ledger_entries WHERE entry_index = 1").fetchone()
        edited = bytes(leaf).replace(b'"refuted"', b'"verified"')
        assert edited != leaf
        conn.execute("UPDATE ledger_entries SET leaf = ? WHERE entry_index = 1", (edited,))
    try:
        with serving(
            create_app(ServiceSettings(ledger_url=url, key_path=key_path), ledger)
        ) as base:
            assert proof_line(base, 0) == (
                "proof-ok",
                f"included in the signed tree of size 3 (root {ledger.tree_head().root_hash})",
            )
            assert proof_line(base, 1) == (
                "proof-failed",
                "not proven: the log's leaf is not the hash of this entry's contents",
            )
    finally:
        ledger.close()


def test_a_tree_head_signed_by_another_key_is_shown_unproven(tmp_path: Path) -> None:
    """Someone with the database but not the service's key re-signs the latest head."""
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    key_path = tmp_path / "service.key"
    write_private_key(str(key_path), LOG_KEY)
    ledger = Ledger.open(url, LOG_KEY)
    ledger.append(fresh_entry())
    genuine = ledger.tree_head()
    intruder = SigningKey.generate()
    forged = sign_tree_head(intruder, genuine.size, genuine.root_hash, genuine.timestamp)
    with sqlite3.connect(tmp_path / "ledger.sqlite") as conn:
        conn.execute(
            "UPDATE ledger_heads SET envelope = ? WHERE size = ?",
            (json.dumps(forged.to_json()), genuine.size),
        )
    conn.close()
    try:
        with serving(
            create_app(ServiceSettings(ledger_url=url, key_path=key_path), ledger)
        ) as base:
            status, line = proof_line(base, 0)
    finally:
        ledger.close()
    assert status == "proof-failed"
    assert line.startswith("not proven: ")
    assert intruder.public.text in line


def test_a_sequenced_entry_not_yet_integrated_is_shown_as_such(tmp_path: Path) -> None:
    """Between its 201 and its tree head an entry is durable but unproven: the page says that,
    not that the log lacks it."""
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    key_path = tmp_path / "service.key"
    write_private_key(str(key_path), LOG_KEY)
    ledger = Ledger.open(url, LOG_KEY, merge_delay=600.0)  # no pass of its own while we look
    try:
        ledger.append(fresh_entry())
        with serving(
            create_app(ServiceSettings(ledger_url=url, key_path=key_path), ledger)
        ) as base:
            assert proof_line(base, 0) == (
                "proof-failed",
                "not proven yet: sequenced at index 0, not yet under a signed tree head (the "
                "latest has size 0; one comes within the merge delay)",
            )
            ledger.integrate()
            assert proof_line(base, 0)[0] == "proof-ok"
    finally:
        ledger.close()


def test_the_pages_read_either_backend(ledger: Ledger, ledger_url: str, tmp_path: Path) -> None:
    """List, claim page with its proof, and stats on SQLite and on the real PostgreSQL (the
    ``ledger_url`` fixture runs this on both)."""
    key_path = tmp_path / "service.key"
    write_private_key(str(key_path), LOG_KEY)
    ledger.append(fresh_entry("verified"))
    ledger.append(fresh_entry("refuted", agent="ci-runner-2"))
    with serving(
        create_app(ServiceSettings(ledger_url=ledger_url, key_path=key_path), ledger)
    ) as base:
        rows = re.findall(r'<tr class="state-(\w+)[^"]*" data-index="(\d+)">', httpx.get(base).text)
        assert rows == [("refuted", "1"), ("verified", "0")]
        filtered = httpx.get(base + "/?agent=ci-runner-2").text
        assert re.findall(r'data-index="(\d+)"', filtered) == ["1"]
        assert proof_line(base, 1) == (
            "proof-ok",
            f"included in the signed tree of size 2 (root {ledger.tree_head().root_hash})",
        )
        stats = Parsed(httpx.get(base + "/stats").text).text
        assert "1 of 2 claims that said done were refuted" in stats
