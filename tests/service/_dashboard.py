"""Helpers for the dashboard and report tests: hostile strings, an HTML inspector, decided
entries, and a real uvicorn serving an app on a loopback port."""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime
from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import uvicorn
from fastapi import FastAPI

from completion_claim import parse_claim, verify
from completion_claim.gate.run import policy_json
from completion_claim.model import BUILTIN_POLICY
from completion_claim.service.ledger import Ledger
from completion_claim.service.records import NewEntry
from completion_claim.trust.keys import SigningKey
from tests.builders import at, claim_doc, evidence
from tests.fixtures.serve import running

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


def decision(doc: dict[str, Any], agent: str, recorded: datetime) -> NewEntry:
    """The claim verified for real under the operator's policy, ready to append."""
    verdict = verify(parse_claim(doc), recorded, BUILTIN_POLICY)
    return NewEntry(
        claim=doc,
        policy=policy_json(BUILTIN_POLICY),
        verdict=verdict.to_json(),
        submitted_by=agent,
        via="api",
        recorded_at=recorded,
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


@contextmanager
def serving(app: FastAPI) -> Iterator[str]:
    """``app`` served by a real uvicorn in a thread on a free loopback port; yields its base
    URL once it accepts connections."""
    with socket.socket() as listener:
        listener.bind(("127.0.0.1", 0))
        port = listener.getsockname()[1]
        server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
        with running(server, [listener]):
            yield f"http://127.0.0.1:{port}"


def assert_self_contained(page: str) -> None:
    """Nothing a browser would fetch: no script, no link or source attribute, no CSS import
    or url(); the charts are inline SVG."""
    parsed = assert_inert(page)
    assert "script" not in parsed.tags
    assert not parsed.attributes & {"src", "href", "action", "srcset", "xlink:href", "poster"}
    assert "url(" not in page
    assert "@import" not in page


def ledger_with_entries(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'ledger.sqlite'}"
    ledger = Ledger.open(url, SigningKey.generate())
    try:
        ledger.append(decision(claim_doc(), "ci/main", at(100)))
        ledger.append(decision(failing_test_run(), HOSTILE, at(101)))
        ledger.append(decision(claim_doc(evidence_items=[]), HOSTILE, at(90_000)))
    finally:
        ledger.close()
    return url


def rgb(colour: str) -> str:
    """``#1a7f37`` as a computed style gives it: ``rgb(26, 127, 55)``."""
    red, green, blue = (int(colour[n : n + 2], 16) for n in (1, 3, 5))
    return f"rgb({red}, {green}, {blue})"
