"""The dashboard shows a gate page check's screenshot, and serves no other file: a real
uvicorn over a real SQLite ledger, a real runs folder."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from completion_claim.service.app import create_app
from completion_claim.service.ledger import Ledger
from completion_claim.service.records import NewEntry
from completion_claim.service.settings import ServiceSettings
from completion_claim.trust.keys import SigningKey, write_private_key
from tests.builders import at, claim_doc, evidence, mutation

from ._dashboard import decision, serving

IMAGE = b"\x89PNG\r\n\x1a\n" + b"a page as the gate saw it"
DIGEST = "sha256:" + hashlib.sha256(IMAGE).hexdigest()
NAME = f"dom-{DIGEST[7:39]}.png"
ZERO = "sha256:" + "0" * 64
RUN = "shop-0a1b2c3d/20261130T200000000000Z-1a2b3c4d"


@dataclass(frozen=True)
class Served:
    base: str
    runs: Path
    index: dict[str, int]


def page_check(**details: Any) -> dict[str, Any]:
    shown = {"screenshot": {"file": NAME, "digest": DIGEST}, "run": RUN, "locator": "css=#x"}
    return claim_doc(
        [mutation(kind="ui_action", target="settings/name")],
        [
            evidence(
                check_type="dom_assertion",
                target="http://app/settings css=#x",
                expected={"address": "/settings", "text": "Bob"},
                observed_value={"address": "/settings", "count": 1, "text": "Bob"},
                details={**shown, **details},
            )
        ],
    )


def by_gate(doc: dict[str, Any], seconds: float) -> NewEntry:
    """An entry as the service's own gate appends it."""
    return replace(decision(doc, "gate", at(seconds)), via="gate")


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Served]:
    folder = tmp_path_factory.mktemp("screenshots")
    runs = folder / "runs"
    (runs / RUN).mkdir(parents=True)
    (runs / RUN / NAME).write_bytes(IMAGE)
    (folder / "secret.png").write_bytes(b"not for the dashboard")
    (folder / "work").mkdir()
    config = folder / "ops" / "claim.toml"
    config.parent.mkdir()
    config.write_text(f'[gate]\nruns_dir = "{runs}"\n')
    key = SigningKey.generate()
    write_private_key(str(folder / "service.key"), key)
    url = f"sqlite:///{folder / 'ledger.sqlite'}"
    ledger = Ledger.open(url, key)
    entries = {
        "gate": by_gate(page_check(), 100),
        "api": decision(page_check(), "agent", at(101)),
        "traversal": by_gate(page_check(run="../secret.png/.."), 102),
        "other-file": by_gate(page_check(screenshot={"file": "secret.png", "digest": DIGEST}), 103),
        "other-digest": by_gate(page_check(screenshot={"file": NAME, "digest": ZERO}), 104),
    }
    index = {name: ledger.append(entry).index for name, entry in entries.items()}
    settings = ServiceSettings(
        ledger_url=url,
        key_path=folder / "service.key",
        observe_root=folder / "work",
        gate_config=config,
    )
    try:
        with serving(create_app(settings, ledger)) as base:
            yield Served(base, runs, index)
    finally:
        ledger.close()


def test_the_claim_page_shows_the_gate_screenshot(served: Served) -> None:
    index = served.index["gate"]
    page = httpx.get(f"{served.base}/claims/{index}").text
    assert f'<img src="/claims/{index}/screenshots/0"' in page
    image = httpx.get(f"{served.base}/claims/{index}/screenshots/0")
    assert (image.status_code, image.content) == (200, IMAGE)
    assert image.headers["content-type"] == "image/png"
    assert image.headers["x-content-type-options"] == "nosniff"
    assert image.headers["content-security-policy"] == "default-src 'none'"


@pytest.mark.parametrize("name", ["api", "traversal", "other-file", "other-digest"])
def test_attack_32_no_other_file_is_served(served: Served, name: str) -> None:
    index = served.index[name]
    shown = "<img" in httpx.get(f"{served.base}/claims/{index}").text
    assert shown == (name == "other-digest")  # its names have the right shape: only reading tells
    answer = httpx.get(f"{served.base}/claims/{index}/screenshots/0")
    assert answer.status_code == 404
    assert b"not for the dashboard" not in answer.content
    assert IMAGE not in answer.content


@pytest.mark.parametrize("position", ["1", "-1", "x", "99999999999999999999"])
def test_an_item_without_a_screenshot_is_not_found(served: Served, position: str) -> None:
    answer = httpx.get(f"{served.base}/claims/{served.index['gate']}/screenshots/{position}")
    assert answer.status_code == 404


def test_attack_32_a_screenshot_changed_after_the_run_is_not_served(served: Served) -> None:
    path = served.runs / RUN / NAME
    path.write_bytes(IMAGE + b"edited")
    try:
        answer = httpx.get(f"{served.base}/claims/{served.index['gate']}/screenshots/0")
        assert answer.status_code == 404
    finally:
        path.write_bytes(IMAGE)
