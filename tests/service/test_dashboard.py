"""The dashboard: its pages rendered from real verdicts (every claim string hostile), then served
by a real uvicorn over a real SQLite ledger and driven in Debian's Chromium."""

from __future__ import annotations

import hashlib
from datetime import datetime
from html.parser import HTMLParser
from typing import Any

from completion_claim import parse_claim, verify
from completion_claim.gate.run import policy_json
from completion_claim.model import BUILTIN_POLICY
from completion_claim.service import _pages
from completion_claim.service.records import Entry, NewEntry, Page, StateCounts, Stats
from completion_claim.trust.canonical import canonical_bytes
from tests.builders import at, claim_doc, evidence, mutation

HOSTILE = "<script>alert(1)</script><img src=x onerror=alert(2)>\"'&"
# Every element the templates and charts write; anything else came from a claim string.
OWN_TAGS = {
    *("html", "head", "meta", "title", "style", "body", "header", "main", "nav", "a", "h1", "h2"),
    *("p", "span", "strong", "code", "div", "ul", "li", "dl", "dt", "dd", "form", "label"),
    *("select", "option", "input", "button", "table", "thead", "tbody", "tr", "th", "td"),
    *("figure", "details", "summary", "svg", "rect", "text", "line"),
}


class Parsed(HTMLParser):
    """A page's elements, attributes and visible text, as a browser's parser would split them."""

    def __init__(self, page: str) -> None:
        super().__init__(convert_charrefs=True)
        self.tags: set[str] = set()
        self.attributes: set[str] = set()
        self.chunks: list[str] = []
        self.feed(page)
        self.close()

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        self.attributes.update(name for name, _ in attrs)

    def handle_data(self, data: str) -> None:
        self.chunks.append(data)

    @property
    def text(self) -> str:
        return "".join(self.chunks)


def assert_inert(page: str) -> Parsed:
    """No element or event handler came from a claim string: only the page's own tags."""
    parsed = Parsed(page)
    assert parsed.tags <= OWN_TAGS, parsed.tags - OWN_TAGS
    assert not any(name.startswith("on") for name in parsed.attributes)
    return parsed


RECORDED = at(100)


def decided(
    doc: dict[str, Any], *, index: int = 0, agent: str = "ci/main", recorded: datetime = RECORDED
) -> Entry:
    """An entry as the ledger would hold it: the claim verified for real under the operator's
    policy."""
    verdict = verify(parse_claim(doc), recorded, BUILTIN_POLICY)
    new = NewEntry(
        claim=doc,
        policy=policy_json(BUILTIN_POLICY),
        verdict=verdict.to_json(),
        submitted_by=agent,
        via="api",
        recorded_at=recorded,
    )
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


def failing_test_run() -> dict[str, Any]:
    return claim_doc(
        evidence_items=[
            evidence(
                check_type="test_run",
                target="pytest -q",
                expected={"exit_code": 0},
                observed_value={"exit_code": 1, "passed": 3, "failed": 1},
            )
        ]
    )


# --- pages rendered from values -----------------------------------------------------------


def test_every_claim_string_on_the_claim_page_is_text() -> None:
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
    # The outcome and agent cells, the task link, and the two filter inputs refilled.
    assert parsed.text.count(HOSTILE) == 3
    assert page.count('value="&lt;script&gt;') == 2
    for index, state in ((2, "refuted"), (1, "verified"), (0, "unverified")):
        assert f'<tr class="state-{state}" data-index="{index}">' in page


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
