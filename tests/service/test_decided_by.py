"""How each ledger entry was decided: a new token runs the gate and nothing else, and a claim the
requester posted (its independence declared by the claim itself) never reads as the gate's own
verdict, in the API or on the dashboard. Against a real ``claim serve`` on loopback."""

from __future__ import annotations

import re
import subprocess
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx

from completion_claim.service.charts import STATE_COLOURS
from completion_claim.timefmt import format_time
from tests.builders import claim_doc, evidence, mutation
from tests.fixtures.gate_service import false_done_for_a_tokenless_service
from tests.fixtures.serve import CLAIM, Served, served
from tests.service._dashboard import rgb

if TYPE_CHECKING:  # the browser extra is imported when a test asks for the browser
    from playwright.sync_api import Locator
    from playwright.sync_api import Page as BrowserPage

GATE_TIMEOUT_S = 120


def token_add(tokens: Path, name: str, *scopes: str) -> str:
    """``claim token add NAME [--scope S]...``, as the operator runs it; the token printed."""
    chosen = [arg for scope in scopes for arg in ("--scope", scope)]
    added = subprocess.run(
        [str(CLAIM), "token", "add", name, "--tokens", str(tokens), *chosen],
        capture_output=True,
        text=True,
        check=True,
    )
    return added.stdout.strip()


def declared_done(task_id: str) -> dict[str, Any]:
    """What an agent can write itself: a read-back it says an independent verifier made, of
    the value it says it wrote, half a minute old. Verified under the built-in policy."""
    now = datetime.now(UTC)
    return claim_doc(
        [mutation(at=format_time(now - timedelta(seconds=60)))],
        [evidence(at=format_time(now - timedelta(seconds=30)))],
        task={"id": task_id, "description": "fix add()"},
    )


def post(service: Served, path: str, body: dict[str, Any], token: str) -> httpx.Response:
    return httpx.post(
        service.url + path,
        json=body,
        headers={"Authorization": f"Bearer {token}"},
        timeout=GATE_TIMEOUT_S,
    )


def listed_rows(service: Served) -> dict[int, tuple[str, str]]:
    """The dashboard list's rows: index -> (the row's classes, the state label's text)."""
    page = httpx.get(service.url + "/", timeout=10).text
    rows = re.findall(
        r'<tr class="([^"]*)" data-index="(\d+)"[^>]*>.*?<span class="state">([^<]*)</span>',
        page,
        re.S,
    )
    return {int(index): (classes, label) for classes, index, label in rows}


def gated_service(
    base: Path, *token_scopes: tuple[str, ...]
) -> tuple[Path, tuple[str, ...], list[str]]:
    """A false done under a gate service with a token file: the repository, the service's
    arguments, and one token per scope set (none: ``claim token add``'s default)."""
    repo, args = false_done_for_a_tokenless_service(base)
    tokens_path = base / "ops" / "tokens.jsonl"
    tokens = [
        token_add(tokens_path, f"token-{number}", *scopes)
        for number, scopes in enumerate(token_scopes)
    ]
    return repo, (*args, "--tokens", str(tokens_path), "--port", "0"), tokens


def test_attack_156_the_hooks_token_cannot_post_a_verified_claim_beside_the_gates_refusal(
    tmp_path: Path,
) -> None:
    """The operator gives the agent's hook a token as ``claim token add`` makes it. The gate
    refutes the false done; the agent then posts its own "independent" read-back for the same
    task. That post is refused (a new token has the gate scope only), saying which scope is
    missing and how to give it, and the ledger holds the gate's refusal alone."""
    repo, args, (hook_token,) = gated_service(tmp_path, ())
    with served(*args) as service:
        gated = post(service, "/v1/gate", {"repo": str(repo), "outcome": "fixed add()"}, hook_token)
        assert gated.status_code == 200, gated.text
        assert gated.json()["verdict"]["state"] == "refuted"
        task = httpx.get(f"{service.url}/v1/claims/{gated.json()['index']}").json()["claim"]
        posted = post(service, "/v1/claims", declared_done(task["task"]["id"]), hook_token)
        rows = listed_rows(service)
    assert posted.status_code == 403, posted.text
    error = posted.json()["error"]
    assert "lacks the scope 'post'" in error
    assert "--scope post" in error
    assert posted.headers["www-authenticate"] == 'Bearer error="insufficient_scope", scope="post"'
    assert list(rows) == [0]
    assert rows[0][1] == "refuted"


def test_a_declared_post_is_shown_as_posted_and_declared_beside_the_gates_verdict(
    tmp_path: Path, page: BrowserPage
) -> None:
    """The control: a token the operator gave ``post`` by name records the claim, verified
    under the built-in policy, and the API and the dashboard say it was posted with its
    independence declared, drawn hollow where the gate's own verdict is filled."""
    repo, args, (hook_token, poster) = gated_service(tmp_path, (), ("post",))
    with served(*args) as service:
        gated = post(service, "/v1/gate", {"repo": str(repo), "outcome": "fixed add()"}, hook_token)
        posted = post(service, "/v1/claims", declared_done("fix-add"), poster)
        assert posted.status_code == 201, posted.text
        gate_entry = httpx.get(f"{service.url}/v1/claims/{gated.json()['index']}").json()
        post_entry = httpx.get(f"{service.url}/v1/claims/{posted.json()['index']}").json()
        listed = httpx.get(f"{service.url}/v1/claims").json()["items"]
        rows = listed_rows(service)
        claim_page = httpx.get(f"{service.url}/claims/{posted.json()['index']}").text
        stats = httpx.get(f"{service.url}/v1/stats").json()
        stats_page = httpx.get(f"{service.url}/stats").text
        page.goto(service.url + "/")
        gate_label, post_label = (page.locator(f'tr[data-index="{i}"] .state') for i in (0, 1))
        gate_style = computed(gate_label)
        post_style = computed(post_label)
    assert (gate_entry["decided_by"], gate_entry["independence"]) == ("gate", "proven")
    assert (post_entry["decided_by"], post_entry["independence"]) == ("post", "declared")
    assert post_entry["verdict"]["state"] == "verified"
    assert [(item["decided_by"], item["independence"]) for item in listed] == [
        ("post", "declared"),
        ("gate", "proven"),
    ]
    assert rows[0] == ("state-refuted", "refuted")
    assert rows[1] == ("state-verified declared posted", "verified (declared, posted)")
    # Counted apart too: the gate's verdicts first, the posted ones after.
    assert stats["by_decided_by"] == [
        {"decided_by": "gate", "verified": 0, "unverified": 0, "refuted": 1, "total": 1},
        {"decided_by": "post", "verified": 1, "unverified": 0, "refuted": 0, "total": 1},
    ]
    assert "<td>posted (the poster&#39;s evidence)</td><td>1</td><td>1</td>" in stats_page
    assert "verified (declared, posted)" in claim_page
    assert "posted by its submitter (POST /v1/claims)" in claim_page
    assert gate_style == {"color": WHITE, "background": rgb(STATE_COLOURS["refuted"]),
                          "border": "none"}  # fmt: skip
    assert post_style == {"color": rgb(STATE_COLOURS["verified"]), "background": WHITE,
                          "border": "dashed"}  # fmt: skip


WHITE = "rgb(255, 255, 255)"


def computed(label: Locator) -> dict[str, str]:
    return {
        "color": label.evaluate("e => getComputedStyle(e).color"),
        "background": label.evaluate("e => getComputedStyle(e).backgroundColor"),
        "border": label.evaluate("e => getComputedStyle(e).borderTopStyle"),
    }
