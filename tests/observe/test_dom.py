"""``claim observe dom``: Playwright driving Debian's Chromium against small pages served by the
test on 127.0.0.1 (the six scenarios of issue 12, and the observer's refusals)."""

from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from completion_claim import load_claim, verify
from completion_claim.cli import run
from completion_claim.errors import UsageError
from completion_claim.observe.dom import dom_check
from tests.fixtures.pages import HOSTILE_PAGE, Site, needs_chromium, served_site

from .conftest import last_evidence, verdict_of

MakeClaim = Callable[..., Path]


@pytest.fixture(autouse=True)
def chromium() -> None:
    needs_chromium()


@pytest.fixture
def site() -> Iterator[Site]:
    yield from served_site()


@pytest.fixture
def canary() -> Iterator[Site]:
    """Another server on another port: a hostile page must not reach it through the observer."""
    yield from served_site()


@pytest.fixture
def ui_claim(make_claim: MakeClaim) -> Path:
    return make_claim(kind="ui_action", target="settings/display-name")


def observe(path: Path, url: str, *options: str) -> int:
    return run(["observe", "dom", str(path), url, "--timeout", "5", *options])


def agent_submits(site: Site, name: str) -> None:
    """What the agent did through the UI, reduced to the request the form sends."""
    site.respond("POST", "/settings", f"name={name}".encode(), "")


def test_a_form_that_changed_the_label_verifies(
    site: Site, ui_claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    agent_submits(site, "Bob")
    args = ("--locator", "css=#label", "--expect-text", "Bob")
    assert observe(ui_claim, f"{site.url}/settings", *args) == 0
    assert "observed as expected" in capsys.readouterr().out
    item = last_evidence(ui_claim)
    assert item["check_type"] == "dom_assertion"
    assert item["covers"] == ["m1"]
    assert item["expected"] == {"address": "/settings", "text": "Bob"}
    assert item["observed_value"] == {
        "address": "/settings",
        "count": 1,
        "hidden": 0,
        "text": "Bob",
        "visible": True,
    }
    assert item["subject"] == "sha256:" + hashlib.sha256(b'<span id="label">Bob</span>').hexdigest()
    assert item["details"]["locator"] == "css=#label"
    shot = item["details"]["screenshot"]
    image = (ui_claim.parent / shot["file"]).read_bytes()
    assert image.startswith(b"\x89PNG")
    assert shot["digest"] == "sha256:" + hashlib.sha256(image).hexdigest()
    assert verdict_of(ui_claim) == "verified"


def test_a_page_still_showing_the_old_value_refutes(site: Site, ui_claim: Path) -> None:
    args = ("--locator", "css=#label", "--expect-text", "Bob", "--timeout", "2")
    assert observe(ui_claim, f"{site.url}/settings", *args) == 0
    item = last_evidence(ui_claim)
    assert item["observed_value"]["text"] == "Alice"
    assert item["details"]["conditions_met"]["text"] is False
    assert verdict_of(ui_claim) == "refuted"


def test_attack_34_a_redirect_to_the_login_page_refutes_naming_the_url(
    site: Site, ui_claim: Path
) -> None:
    args = ("--locator", "css=#plan", "--expect-text", "Plan: pro", "--timeout", "2")
    assert observe(ui_claim, f"{site.url}/account", *args) == 0
    item = last_evidence(ui_claim)
    assert item["observed_value"] == {"address": "/login?next=/account", "count": 0, "hidden": 0}
    verdict = verify(load_claim(ui_claim.read_bytes()), datetime.now(UTC))
    assert verdict.state == "refuted"
    assert '"/login?next=/account"' in verdict.reason


def test_a_storage_state_logs_the_observer_in(site: Site, ui_claim: Path, tmp_path: Path) -> None:
    host = "127.0.0.1"
    state = {"cookies": [{"name": "session", "value": "ok", "domain": host, "path": "/",
                          "expires": -1, "httpOnly": False, "secure": False, "sameSite": "Lax"}],
             "origins": []}  # fmt: skip
    state_file = tmp_path / "state.json"
    state_file.write_text(json.dumps(state))
    args = (
        "--locator",
        "css=#plan",
        "--expect-text",
        "Plan: pro",
        "--storage-state",
        str(state_file),
    )
    assert observe(ui_claim, f"{site.url}/account", *args) == 0
    assert verdict_of(ui_claim) == "verified"


def test_a_value_rendered_after_a_delayed_fetch_verifies_without_sleeping(
    site: Site, ui_claim: Path
) -> None:
    # The page fills the value 400 ms after loading; the observer waits on the condition.
    args = ("--locator", "css=#balance", "--expect-includes", "120.00")
    assert observe(ui_claim, f"{site.url}/delayed", *args) == 0
    item = last_evidence(ui_claim)
    assert item["observed_value"]["includes"] == {"120.00": True}
    assert item["details"]["template_includes"] == {"120.00": False}
    assert verdict_of(ui_claim) == "verified"


def test_attack_29_a_string_already_in_the_static_page_does_not_count(
    site: Site, ui_claim: Path
) -> None:
    args = ("--locator", "css=#panel", "--expect-includes", "Saved")
    assert observe(ui_claim, f"{site.url}/static", *args) == 0
    item = last_evidence(ui_claim)
    assert item["details"]["template_includes"] == {"Saved": True}
    verdict = verify(load_claim(ui_claim.read_bytes()), datetime.now(UTC))
    assert verdict.state == "unverified"
    [result] = verdict.evidence
    assert [f.code for f in result.reasons] == ["not_discriminating"]
    assert "static template" in (result.reasons[0].detail or "")


def test_attack_30_a_hostile_page_runs_nothing_outside_itself(
    site: Site, canary: Site, ui_claim: Path, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    socket = canary.url.replace("http://", "ws://")
    site.hostile = HOSTILE_PAGE.format(marker=marker, canary=canary.url, canary_socket=socket)
    args = ("--locator", "css=#payload", "--expect-includes", "touch")
    assert observe(ui_claim, f"{site.url}/hostile", *args) == 0
    item = last_evidence(ui_claim)
    # The page's text is recorded as data, word for word, and nothing ran it.
    assert f"$(touch {marker})" in item["observed_value"]["text"]
    assert not marker.exists()
    # Its requests to another port were refused before leaving the browser.
    assert canary.hits == []
    refused = item["details"]["refused_requests"]
    assert f"{canary.url}/fetched" in refused
    assert f"{canary.url}/image" in refused
    assert f"{socket}/socket" in refused


def test_attack_31_a_redirect_to_another_host_is_refused_unless_allowed(
    site: Site, ui_claim: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ("--locator", "css=#label", "--expect-text", "Alice")
    assert observe(ui_claim, f"{site.url}/elsewhere", *args, "--record-failure") == 5
    error = capsys.readouterr().err
    assert "on another host" in error
    assert "localhost" in error
    assert "observed_value" not in last_evidence(ui_claim)
    assert observe(ui_claim, f"{site.url}/elsewhere", *args, "--allow-host", "localhost",
                   "--expect-url-path", "/settings") == 0  # fmt: skip
    assert last_evidence(ui_claim)["observed_value"]["text"] == "Alice"


def test_a_prep_click_runs_before_reading(site: Site, ui_claim: Path) -> None:
    site.hostile = (
        "<button onclick=\"document.getElementById('out').textContent='opened'\">open</button>"
        '<span id="out">closed</span>'
    )
    prep = "click:role=button[name='open']"
    args = ("--locator", "css=#out", "--expect-text", "opened", "--prep", prep)
    assert observe(ui_claim, f"{site.url}/hostile", *args) == 0
    item = last_evidence(ui_claim)
    assert item["observed_value"]["text"] == "opened"
    assert item["details"]["prep"] == ["click:role=button[name='open']"]


@pytest.mark.parametrize(
    ("url", "options", "message"),
    [
        ("file:///etc/passwd", ("--locator", "css=p", "--expect-text", "x"), "http"),
        ("javascript:alert(1)", ("--locator", "css=p", "--expect-text", "x"), "http"),
        ("http://h/", ("--locator", "xpath=//p", "--expect-text", "x"), "css=, text= or role="),
        ("http://h/", ("--locator", "#p", "--expect-text", "x"), "css=, text= or role="),
        ("http://h/", ("--locator", "css=p >> xpath=..", "--expect-text", "x"), "css=, text="),
        ("http://h/", ("--locator", "css=p >> nth=0", "--expect-text", "x"), "css=, text="),
        ("http://h/", ("--locator", "css=body", "--expect-text", "x"), "whole document"),
        ("http://h/", ("--locator", "css= html ", "--expect-text", "x"), "whole document"),
        ("http://h/", ("--locator", "css=p"), "say what the page must show"),
        ("http://h/", ("--locator", "css=p", "--expect-text", "  "), "asserts nothing"),
        ("http://h/", ("--locator", "css=p", "--expect-attr", "x"), "NAME=VALUE"),
        ("http://h/", ("--locator", "css=p", "--expect-text", "x" * 2001), "longer than 2000"),
        ("http://h/", ("--locator", "css=p", "--expect-text", "x", "--prep", "fill:css=p"),
         "click:SELECTOR"),
        ("http://h/", ("--locator", "css=p", "--expect-text", "x", "--prep",
                       "click:javascript:alert(1)"), "css=, text= or role="),
    ],
)  # fmt: skip
def test_attack_33_refused_before_any_page(
    ui_claim: Path, url: str, options: tuple[str, ...], message: str,
    capsys: pytest.CaptureFixture[str],
) -> None:  # fmt: skip
    assert run(["observe", "dom", str(ui_claim), url, *options]) == 4
    assert message in capsys.readouterr().err
    assert json.loads(ui_claim.read_text())["evidence"] == []


def test_a_missing_chromium_is_named(ui_claim: Path, capsys: pytest.CaptureFixture[str]) -> None:
    args = ("--locator", "css=p", "--expect-text", "x", "--chromium", "/nonexistent/chromium")
    assert observe(ui_claim, "http://127.0.0.1:9/", *args) == 4
    assert "/nonexistent/chromium" in capsys.readouterr().err


def test_the_expected_value_needs_no_browser() -> None:
    check = dom_check("http://h/a?b=1", "css=#x", expect_attr="data-state=done", expect_count=1)
    assert check.expected() == {"address": "/a?b=1", "attr": {"data-state": "done"}, "count": 1}
    with pytest.raises(UsageError):
        dom_check("http://h/", "css=#x", expect_address="no-slash")


def test_without_playwright_the_command_names_the_extra(ui_claim: Path) -> None:
    # A Python that cannot import Playwright, as after `pip install completion-claim` alone.
    blocked = (
        "import sys; sys.modules['playwright'] = None; sys.modules['playwright.sync_api'] = None;"
        "from completion_claim.cli import main; main()"
    )
    args = ["observe", "dom", str(ui_claim), "http://127.0.0.1:9/", "--locator", "css=p",
            "--expect-text", "x"]  # fmt: skip
    done = subprocess.run(
        [sys.executable, "-c", blocked, *args], capture_output=True, text=True, check=False
    )
    assert done.returncode == 4
    assert done.stderr.strip().splitlines() == [
        "claim: claim observe dom needs playwright, which is not installed: "
        "pip install 'completion-claim[browser]'"
    ]


def test_a_secret_in_the_query_is_never_recorded(site: Site, ui_claim: Path) -> None:
    agent_submits(site, "Bob")
    url = f"{site.url}/settings?token=s3cret"
    assert observe(ui_claim, url, "--locator", "css=#label", "--expect-text", "Bob") == 0
    assert "s3cret" not in ui_claim.read_text()
    item = last_evidence(ui_claim)
    assert item["observed_value"]["address"] == item["expected"]["address"] == "/settings?token=***"
    assert verdict_of(ui_claim) == "verified"


def test_a_long_text_is_recorded_cut_and_never_equals_its_prefix(
    site: Site, ui_claim: Path
) -> None:
    # Wrapped: one line as wide as 18 screens would be captured in more parts than are taken.
    site.hostile = f'<p id="long" style="word-break:break-all">{"a" * 2500}</p>'
    args = ("--locator", "css=#long", "--expect-text", "a" * 2000, "--timeout", "2")
    assert observe(ui_claim, f"{site.url}/hostile", *args) == 0
    assert last_evidence(ui_claim)["observed_value"]["text"] == "a" * 2000 + " [cut]"
    assert verdict_of(ui_claim) == "refuted"


@pytest.mark.parametrize(
    "locator", ["css=:is(html)", "css=body:first-of-type", "css=:root:not(.none)"]
)
def test_attack_28_a_whole_document_however_spelt_does_not_count(
    site: Site, ui_claim: Path, locator: str
) -> None:
    agent_submits(site, "Bob")
    args = ("--locator", locator, "--expect-includes", "Bob", "--timeout", "2")
    assert observe(ui_claim, f"{site.url}/settings", *args) == 0
    assert last_evidence(ui_claim)["details"]["whole_document"] is True
    verdict = verify(load_claim(ui_claim.read_bytes()), datetime.now(UTC))
    assert verdict.state == "unverified"
    [result] = verdict.evidence
    assert [f.detail for f in result.reasons] == ["the located element was the whole document"]


# --- only what a person can see (attacks 46, 58, 59) -----------------------------------------

NOT_SEEN = "the element it read cannot be seen by a person"
NOT_SAVED = "<p>Your change was not saved.</p>"
HIDING = {
    "display-none": '<div id="status" style="display:none">Saved</div>',
    "visibility-hidden": '<div id="status" style="visibility:hidden">Saved</div>',
    "visibility-collapse": '<div id="status" style="visibility:collapse">Saved</div>',
    "hidden-attribute": '<div id="status" hidden>Saved</div>',
    "opacity-0": '<div id="status" style="opacity:0">Saved</div>',
    "opacity-0-ancestor": '<div style="opacity:0"><div id="status">Saved</div></div>',
    "filter-opacity-0": '<div id="status" style="filter:opacity(0)">Saved</div>',
    "blurred": '<div id="status" style="filter:blur(6px)">Saved</div>',
    "behind-a-backdrop-blur": (
        '<div id="status">Saved</div><div style="position:absolute;top:0;left:0;width:100%;'
        'height:200px;backdrop-filter:blur(10px)"></div>'
    ),
    "zero-size-overflow-hidden": (
        '<div id="status" style="width:0;height:0;overflow:hidden">Saved</div>'
    ),
    "clip-rect": '<div id="status" style="position:absolute;clip:rect(0 0 0 0)">Saved</div>',
    "clip-path": '<div id="status" style="clip-path:inset(100%)">Saved</div>',
    "absolute-off-screen": '<div id="status" style="position:absolute;left:-9999px">Saved</div>',
    "fixed-off-screen": '<div id="status" style="position:fixed;top:-9999px">Saved</div>',
    "text-indent": '<div id="status" style="text-indent:-9999px">Saved</div>',
    "translated-away": '<div id="status" style="transform:translateX(-200vw)">Saved</div>',
    "scaled-to-nothing": '<div id="status" style="transform:scale(0)">Saved</div>',
    "font-size-0": '<div id="status" style="font-size:0">Saved</div>',
    "colour-of-background": (
        '<div style="background:#fff"><div id="status" style="color:#fff">Saved</div></div>'
    ),
    "colour-nearly-background": '<div id="status" style="color:#fdfdfd">Saved</div>',
    "transparent-text": '<div id="status" style="color:transparent">Saved</div>',
    "covered": (
        '<div id="status">Saved</div><div style="position:absolute;top:0;left:0;'
        'width:100%;height:200px;background:#fff"></div>'
    ),
    "covered-pointer-events-none": (
        '<div id="status">Saved</div><div style="position:absolute;top:0;left:0;width:100%;'
        'height:200px;background:#fff;pointer-events:none !important"></div>'
    ),
    "under-its-parent": (
        '<div style="background:#fff"><span id="status" style="position:relative;'
        'z-index:-1">Saved</span></div>'
    ),
    "closed-details": '<details><summary>More</summary><div id="status">Saved</div></details>',
    "content-visibility-hidden": (
        '<div style="content-visibility:hidden"><div id="status">Saved</div></div>'
    ),
    "scrolled-out-of-overflow-hidden": (
        '<div id="box" style="height:40px;overflow:hidden"><div id="status">Saved</div>'
        '<div style="height:400px">not saved</div></div>'
        "<script>document.getElementById('box').scrollTop = 200;</script>"
    ),
    "max-height-0": '<div style="max-height:0;overflow:hidden"><div id="status">Saved</div></div>',
    "hidden-text-in-an-empty-box": (
        '<div id="status" style="height:30px"><span hidden>Saved</span></div>'
    ),
}


DRAWN_OVER = {
    "thick-border": (
        '<div id="status" style="display:inline-block;position:relative">Saved</div>'
        '<div style="position:absolute;top:0;left:0;width:0;height:0;'
        'border:60px solid #fff"></div>'
    ),
    "parent-after-box": (
        "<style>#box::after { content: ''; position: absolute; inset: 0; "
        "border: 40px solid #fff; }</style>"
        '<div id="box" style="position:relative;width:200px;height:40px">'
        '<span id="status">Saved</span></div>'
    ),
    "outer-box-shadow": (
        '<div id="status">Saved</div><div style="position:absolute;top:0;left:0;width:1px;'
        'height:1px;box-shadow:0 0 0 300px #fff"></div>'
    ),
    "inset-box-shadow": (
        '<div style="position:relative"><div id="status">Saved</div>'
        '<div style="position:absolute;inset:0;width:300px;height:60px;'
        'box-shadow:inset 0 0 0 100px #fff"></div></div>'
    ),
    "outline": (
        '<div id="status">Saved</div><div style="position:absolute;top:30px;left:30px;'
        'width:1px;height:1px;outline:200px solid #fff"></div>'
    ),
    "border-image-fill": (
        '<div id="status">Saved</div><div style="position:absolute;top:0;left:0;width:300px;'
        'height:60px;border:1px solid;border-image:linear-gradient(#fff,#fff) 1 fill"></div>'
    ),
    "first-letter-under-a-box-shadow": (
        '<div id="status">Saved</div><div style="position:absolute;top:0;left:0;width:1px;'
        'height:1px;box-shadow:0 0 0 21px #fff"></div>'
    ),
}
SELF_HIDDEN = {
    "mask-image-transparent": (
        '<div id="status" style="mask-image:linear-gradient(transparent,transparent)">Saved</div>'
    ),
    "webkit-mask-image-transparent": (
        '<div id="status" style="-webkit-mask-image:linear-gradient(transparent,transparent)">'
        "Saved</div>"
    ),
    "transform-scale-tenth": '<div id="status" style="transform:scale(0.1)">Saved</div>',
    "zoom-tenth": '<div id="status" style="zoom:0.1">Saved</div>',
}
COVER = '<div id="cover" style="position:absolute;top:0;left:0;width:1px;height:1px;{}"></div>'
ANSWERING = {
    # Paints the cover black while the reading has made the text transparent, white otherwise.
    "mutation-observer": '<div id="status">Saved</div>'
    + COVER.format("box-shadow:0 0 0 300px #fff")
    + (
        "<script>const status = document.getElementById('status');"
        "new MutationObserver(() => { document.getElementById('cover').style.boxShadow ="
        " '0 0 0 300px ' + (status.style.webkitTextFillColor === 'transparent' ? '#000' : '#fff');"
        "}).observe(status, { attributes: true });</script>"
    ),
    "animation-frames": '<div id="status">Saved</div>'
    + COVER.format("box-shadow:0 0 0 300px #fff")
    + (
        "<script>const status = document.getElementById('status');"
        "const cover = document.getElementById('cover');"
        "(function paint() { const bare = getComputedStyle(status).webkitTextFillColor"
        " === 'rgba(0, 0, 0, 0)'; cover.style.boxShadow = '0 0 0 300px ' + (bare ? '#000' :"
        " '#fff'); requestAnimationFrame(paint); })();</script>"
    ),
    "flickering-cover": (
        "<style>@keyframes flicker { 0% { box-shadow: 0 0 0 300px #fff; } 50% { box-shadow:"
        " 0 0 0 300px #000; } }</style>"
    )
    + '<div id="status">Saved</div>'
    + COVER.format("animation:flicker 16ms steps(1) infinite"),
}


def observe_status(site: Site, claim: Path, body: str, *options: str) -> dict[str, object]:
    site.hostile = f"<!doctype html><html><body>{body}</body></html>"
    args = ("--locator", "css=#status", "--expect-text", "Saved", "--timeout", "3", *options)
    assert observe(claim, f"{site.url}/hostile", *args) == 0
    return last_evidence(claim)


def not_counted(claim: Path) -> list[str]:
    verdict = verify(load_claim(claim.read_bytes()), datetime.now(UTC))
    assert verdict.state == "unverified"
    [result] = verdict.evidence
    return [f"{f.code}: {f.detail}" for f in result.reasons]


def test_attack_46_a_hidden_saved_beside_a_visible_not_saved_does_not_count(
    site: Site, ui_claim: Path
) -> None:
    # Issue 17, finding 7: this page was recorded as text 'Saved', verified.
    page = f'<div id="status" style="display:none">Saved</div>{NOT_SAVED}'
    item = observe_status(site, ui_claim, page)
    assert item["observed_value"] == {
        "address": "/hostile",
        "count": 0,
        "hidden": 1,
        "text": "",
        "visible": False,
    }
    hidden_by = item["details"]["hidden_by"]  # type: ignore[index]
    assert hidden_by == "its text is not rendered (display: none)"
    assert not_counted(ui_claim) == [f"not_discriminating: {NOT_SEEN}"]


def assert_not_seen(site: Site, ui_claim: Path, page: str) -> None:
    """The page with "Saved" in it, hidden some way: read as not visible, and the evidence
    does not count."""
    item = observe_status(site, ui_claim, page + NOT_SAVED)
    assert item["observed_value"]["visible"] is False  # type: ignore[index]
    assert not_counted(ui_claim) == [f"not_discriminating: {NOT_SEEN}"]


@pytest.mark.parametrize("page", HIDING.values(), ids=HIDING.keys())
def test_attack_46_no_way_of_hiding_an_element_counts(
    site: Site, ui_claim: Path, page: str
) -> None:
    assert_not_seen(site, ui_claim, page)


@pytest.mark.parametrize("page", DRAWN_OVER.values(), ids=DRAWN_OVER.keys())
def test_attack_146_text_drawn_over_by_what_css_does_not_call_a_cover_does_not_count(
    site: Site, ui_claim: Path, page: str
) -> None:
    # Issue 31, finding 5: each was verified, and a screenshot showed no "Saved".
    assert_not_seen(site, ui_claim, page)


@pytest.mark.parametrize("page", SELF_HIDDEN.values(), ids=SELF_HIDDEN.keys())
def test_attack_147_text_its_own_style_masks_or_shrinks_does_not_count(
    site: Site, ui_claim: Path, page: str
) -> None:
    # Issue 31, finding 6: a mask, or a font size that is readable only before the transform.
    assert_not_seen(site, ui_claim, page)


@pytest.mark.parametrize("page", ANSWERING.values(), ids=ANSWERING.keys())
def test_attack_148_a_page_that_answers_the_reading_cannot_fake_drawn_text(
    site: Site, ui_claim: Path, page: str
) -> None:
    # A covered "Saved" whose cover turns black while the text is transparent (as the page sees
    # the reading's change) or flickers by itself: the captures would differ without the text.
    assert_not_seen(site, ui_claim, page)


GENERATED = "<style>#status::before { content: 'Saved'; }</style><div id=\"status\"></div>"


@pytest.mark.parametrize(
    ("cover", "visible"),
    [
        ('<div style="position:absolute;top:0;left:0;width:100%;height:200px;'
         'background:#fff"></div>', False),
        ('<div style="position:absolute;top:0;left:0;width:1px;height:1px;'
         'box-shadow:0 0 0 300px #fff"></div>', False),
        ("", True),
    ],
    ids=["under-a-background", "under-a-box-shadow", "control-drawn"],
)  # fmt: skip
def test_attack_150_generated_text_under_a_cover_does_not_count(
    site: Site, ui_claim: Path, cover: str, visible: bool
) -> None:
    # A ::before "Saved" was read by its style alone, never hit-tested: even under a white box
    # it was verified. Its element's box is now captured with and without it.
    item = observe_status(site, ui_claim, GENERATED + cover + NOT_SAVED)
    assert item["observed_value"]["visible"] is visible  # type: ignore[index]
    if visible:
        assert verdict_of(ui_claim) == "verified"
    else:
        assert not_counted(ui_claim) == [f"not_discriminating: {NOT_SEEN}"]


FAR_DOWN = (
    '<div id="status"><p>Your change was not saved.</p><div style="height:1500px"></div>'
    '<p style="position:relative">Saved{}</p></div>'
)


@pytest.mark.parametrize(
    ("cover", "text"),
    [
        ('<span style="position:absolute;left:0;top:0;width:1px;height:1px;'
         'box-shadow:0 0 0 60px #fff"></span>', "Your change was not saved."),
        ("", "Your change was not saved. Saved"),
    ],
    ids=["covered", "control-drawn"],
)  # fmt: skip
def test_attack_149_text_a_screen_away_in_the_element_read_is_judged_by_its_pixels_too(
    site: Site, ui_claim: Path, cover: str, text: str
) -> None:
    # The element's first line is drawn; a covered "Saved" 1500 px further down it is judged
    # in a capture of its own, and left out of the text read.
    site.hostile = f"<!doctype html><html><body>{FAR_DOWN.format(cover)}</body></html>"
    args = ("--locator", "css=#status", "--expect-includes", "Saved", "--timeout", "3")
    assert observe(ui_claim, f"{site.url}/hostile", *args) == 0
    observed = last_evidence(ui_claim)["observed_value"]
    assert (observed["visible"], observed["text"]) == (True, text)
    assert observed["includes"] == {"Saved": text.endswith("Saved")}


@pytest.mark.parametrize(
    "page",
    [
        '<div id="status">Saved</div>',
        '<div style="height:3000px"></div><div id="status">Saved</div>',  # below the fold
        '<div style="height:40px;overflow:auto"><div style="height:400px"></div>'
        '<div id="status">Saved</div></div>',  # in a box a person can scroll
        '<div id="status" aria-hidden="true">Saved</div>',  # hidden from screen readers only
        '<div style="height:3000px"></div><div style="content-visibility:auto">'
        '<div id="status">Saved</div></div>',  # laid out once a person scrolls near
        '<div id="status" style="pointer-events:none">Saved</div>',
        '<div style="opacity:0.5"><div id="status">Saved</div></div>',
        '<div style="position:relative"><div style="height:80px;background:#000"></div>'
        '<span id="status" style="position:absolute;top:10px;color:#fff">Saved</span></div>',
        '<div id="status" style="background:#0a3;color:#fff;padding:4px">Saved</div>',
        '<div id="status" style="border:6px solid #333;padding:8px;width:200px">Saved</div>',
        '<div id="status" style="box-shadow:0 0 12px 6px #888;margin:20px;width:120px">'
        "Saved</div>",
        '<div id="status" style="outline:3px solid #06c;outline-offset:2px">Saved</div>',
        '<div id="status" style="font-size:9px;color:#777">Saved</div>',
        '<a id="status" href="#" style="transition:all 1s">Saved</a>',
        '<div id="status" style="background:linear-gradient(90deg,#c00,#00c);'
        'background-clip:text;color:transparent">Saved</div>',
    ],
    ids=["plain", "below-the-fold", "scrollable-box", "aria-hidden", "content-visibility-auto",
         "pointer-events-none", "half-opacity", "light-on-dark-sibling", "coloured-background",
         "bordered-box", "box-shadow-around", "outline-around", "small-but-readable",
         "link-with-a-transition", "gradient-text"],
)  # fmt: skip
def test_a_saved_a_person_can_see_verifies(site: Site, ui_claim: Path, page: str) -> None:
    item = observe_status(site, ui_claim, page)
    assert item["observed_value"]["visible"] is True  # type: ignore[index]
    assert verdict_of(ui_claim) == "verified"


@pytest.mark.parametrize(
    "locator", ["text=Saved", "role=status", "css=main >> role=status", "css=main >> text=Saved"]
)
def test_every_selector_engine_reaches_the_reading(
    site: Site, ui_claim: Path, locator: str
) -> None:
    site.hostile = '<main><p role="status">Saved</p><p hidden>Saved</p></main>'
    args = ("--locator", locator, "--expect-text", "Saved", "--timeout", "3")
    assert observe(ui_claim, f"{site.url}/hostile", *args) == 0
    observed = last_evidence(ui_claim)["observed_value"]
    assert (observed["visible"], observed["text"]) == (True, "Saved")
    assert verdict_of(ui_claim) == "verified"


def test_a_visible_element_beside_hidden_ones_of_the_same_selector_is_the_one_read(
    site: Site, ui_claim: Path
) -> None:
    page = (
        '<div class="toast" hidden>Not saved</div><div class="toast">Saved</div>'
        '<div class="toast" style="opacity:0">Error</div>'
    )
    site.hostile = f"<!doctype html><html><body>{page}</body></html>"
    args = ("--locator", "css=.toast", "--expect-text", "Saved", "--timeout", "2")
    assert observe(ui_claim, f"{site.url}/hostile", *args) == 0
    observed = last_evidence(ui_claim)["observed_value"]
    assert observed == {"address": "/hostile", "count": 1, "hidden": 2, "text": "Saved",
                        "visible": True}  # fmt: skip
    assert verdict_of(ui_claim) == "verified"


FORGED_BROWSER = """<script>
const shown = { display: "block", visibility: "visible", opacity: "1", filter: "none",
  fontSize: "16px", pointerEvents: "auto", contentVisibility: "visible", position: "static",
  content: "normal", backgroundColor: "rgba(0, 0, 0, 0)", backgroundImage: "none",
  color: "rgb(0, 0, 0)", webkitTextFillColor: "rgb(0, 0, 0)", textShadow: "none" };
window.getComputedStyle = () => new Proxy({}, { get: (_, name) => shown[name] ?? "" });
Element.prototype.checkVisibility = () => true;
Element.prototype.getClientRects = () => [{ left: 10, top: 10, right: 90, bottom: 30,
  width: 80, height: 20 }];
Range.prototype.getClientRects = Element.prototype.getClientRects;
Document.prototype.elementsFromPoint = () => [document.getElementById("status")];
Array.prototype.map = function () { return [true]; };
</script>"""


def test_attack_46_a_page_that_rewrites_the_browser_cannot_fake_visibility(
    site: Site, ui_claim: Path
) -> None:
    # The page's scripts run in another world than the observer's reading: replacing
    # getComputedStyle, checkVisibility, elementsFromPoint or Array's methods changes nothing.
    page = f'<div id="status" style="display:none">Saved</div>{NOT_SAVED}{FORGED_BROWSER}'
    item = observe_status(site, ui_claim, page)
    assert item["observed_value"]["visible"] is False  # type: ignore[index]
    assert not_counted(ui_claim) == [f"not_discriminating: {NOT_SEEN}"]


def test_attack_59_elements_nobody_can_see_are_not_counted(
    site: Site, ui_claim: Path, make_claim: MakeClaim
) -> None:
    page = (
        '<li class="row">a</li><li class="row" hidden>b</li>'
        '<li class="row" style="opacity:0">c</li>'
    )
    site.hostile = f"<!doctype html><html><body><ul>{page}</ul></body></html>"
    args = ("--locator", "css=.row", "--expect-count", "3", "--timeout", "3")
    assert observe(ui_claim, f"{site.url}/hostile", *args) == 0
    observed = last_evidence(ui_claim)["observed_value"]
    assert (observed["count"], observed["hidden"]) == (1, 2)
    assert verdict_of(ui_claim) == "refuted"
    one = make_claim(kind="ui_action", target="settings/display-name")
    assert observe(one, f"{site.url}/hostile", *args[:3], "1") == 0
    assert verdict_of(one) == "verified"


def test_attack_58_only_the_rendered_text_of_an_element_is_read(site: Site, ui_claim: Path) -> None:
    item = observe_status(site, ui_claim, '<div id="status">Not <span hidden>Saved</span></div>')
    assert item["observed_value"]["text"] == "Not"  # type: ignore[index]
    assert verdict_of(ui_claim) == "refuted"
    hidden_parts = (
        '<div id="status">Not <span style="opacity:0">Saved</span>'
        '<span style="position:absolute;left:-9999px">Saved</span></div>'
    )
    item = observe_status(site, ui_claim, hidden_parts)
    assert item["observed_value"]["text"] == "Not"  # type: ignore[index]


def test_attack_58_generated_text_is_read_with_the_element(
    site: Site, ui_claim: Path, make_claim: MakeClaim
) -> None:
    page = '<style>#status::before { content: "Not "; }</style><div id="status">Saved</div>'
    item = observe_status(site, ui_claim, page)
    assert item["observed_value"]["text"] == "Not Saved"  # type: ignore[index]
    assert verdict_of(ui_claim) == "refuted"
    # Taken out of the flow, nobody can tell where it shows: the element does not count.
    placed = '<style>#status::before { content: "Not "; position: absolute; }</style>'
    other = make_claim(kind="ui_action", target="settings/display-name")
    item = observe_status(site, other, placed + '<div id="status">Saved</div>')
    assert item["observed_value"]["visible"] is False  # type: ignore[index]
    assert not_counted(other) == [f"not_discriminating: {NOT_SEEN}"]


def test_an_element_in_a_template_noscript_or_iframe_is_never_located(
    site: Site, ui_claim: Path
) -> None:
    page = (
        '<template><div id="status">Saved</div></template>'
        '<noscript><div id="status">Saved</div></noscript>'
        '<iframe srcdoc="<div id=status>Saved</div>"></iframe>'
    )
    item = observe_status(site, ui_claim, page)
    assert item["observed_value"] == {"address": "/hostile", "count": 0, "hidden": 0}
    assert verdict_of(ui_claim) == "refuted"
