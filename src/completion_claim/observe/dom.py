"""dom_assertion observed (experimental): one page, loaded in a fresh browser context that holds
nothing of the agent's (no profile, cookies or storage, unless the operator passes a storage
state file), read through Playwright selectors only.

No JavaScript from the claim or the command line is ever evaluated: locators are ``css=``,
``text=`` or ``role=`` selectors, the only actions are clicks, and waiting is on conditions
(Playwright's auto-waiting assertions), never a fixed sleep. What the located elements show is
read by the observer's own fixed script (visible.js): only what a person can see of them.
Only http(s) is loaded, and only from the URL's host and the hosts the operator allows: a
request anywhere else is refused, and a page that ends up on another host is refused as an
observation, naming where it went.
"""

from __future__ import annotations

import os
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache, partial
from html.parser import HTMLParser
from importlib import resources
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from .._files import write_atomic
from ..checks.dom_assertion import (
    ADDRESS_KEY,
    ATTR_KEY,
    COUNT_KEY,
    HIDDEN_BY_KEY,
    HIDDEN_KEY,
    INCLUDES_KEY,
    LOCATOR_KEY,
    PREP_KEY,
    REQUESTED_PATH_KEY,
    TEMPLATE_INCLUDES_KEY,
    TEXT_KEY,
    VISIBLE_KEY,
    WHOLE_DOCUMENT_KEY,
    engine_allowed,
    whole_document,
)
from ..errors import ObservationFailed, UsageError
from ..model import DOM_ASSERTION
from ._common import Observation
from .values import redact_url, refuse_ambiguous_url, sha256_digest

if TYPE_CHECKING:
    from playwright.sync_api import Browser, CDPSession, Page, Response, Route, WebSocketRoute

CHECK_TYPE = DOM_ASSERTION
CHROMIUM_ENV = "CLAIM_CHROMIUM"
DEFAULT_CHROMIUM = "/usr/bin/chromium"
MAX_TEXT_CHARS = 2000
"""The longest text recorded whole, and so the longest ``--expect-text``; a longer text is
recorded cut, marked so that it can never equal an expectation."""
CUT_MARK = " [cut]"
PREP_ACTIONS = ("click",)
LAUNCH_TIMEOUT_S = 60.0
"""Starting Chromium is the machine's business, not the page's: it is not charged to
``--timeout``."""
READ_TIMEOUT_S = 10.0
"""The least time reading what the page shows (text, digest, screenshot) is given, after the
waits (which may have used all of ``--timeout`` on a condition that never came)."""
_CHROMIUM_ARGS = (
    "--disable-gpu",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--dns-prefetch-disable",
    "--force-webrtc-ip-handling-policy=disable_non_proxied_udp",
)
_SKIPPED_TAGS = frozenset({"script", "style", "template", "noscript"})
_LOCATED_ENGINE = "claim-located"
_LOCATED_SCRIPT = """{
  queryAll(root, key) {
    const located = (globalThis[key] ||= []);
    if (!located.includes(root)) located.push(root);
    return [root];
  },
  query(root, key) { return this.queryAll(root, key)[0]; },
}"""
"""A selector engine of the observer's own, run as a content script (in Playwright's isolated
world, out of the page's reach): it matches what it is given and keeps the elements located,
in order, under a key the page cannot guess, for the reading to take up in the same world."""


def chromium_path(given: str | None) -> str:
    """``--chromium``, else ``$CLAIM_CHROMIUM``, else Debian's ``/usr/bin/chromium``."""
    return given or os.environ.get(CHROMIUM_ENV) or DEFAULT_CHROMIUM


def check_locator(locator: str, option: str) -> str:
    """A selector the observer may use: a Playwright css=, text= or role= selector, never one
    that evaluates code (xpath= is refused too: a selector language the claim need not use)."""
    selector = locator.strip()
    if not engine_allowed(selector):
        raise UsageError(
            f"{option}: {locator[:60]!r} must start with css=, text= or role= "
            "(no other selector engine, and never JavaScript)"
        )
    return selector


def normalize(text: str) -> str:
    """Whitespace collapsed and trimmed, as a reader sees the text."""
    return " ".join(text.split())


@dataclass(frozen=True)
class DomCheck:
    url: str
    locator: str
    expect_text: str | None
    expect_includes: tuple[str, ...]
    expect_attr: tuple[str, str] | None
    expect_count: int | None
    expect_address: str | None
    wait_for: str | None
    prep: tuple[str, ...]  # "click:SELECTOR", in order
    storage_state: str | None
    allow_hosts: tuple[str, ...]
    timeout: float
    chromium: str

    @property
    def target(self) -> str:
        return f"{redact_url(self.url)} {self.locator}"

    @property
    def address(self) -> str:
        """Where the page must end up, as the browser's URL has it (secrets included)."""
        return self.expect_address or raw_address(self.url)

    @property
    def requested_address(self) -> str:
        return address_of(self.url)

    def expected(self) -> dict[str, Any]:
        """The page's address (the one loaded, unless --expect-url-path says where the page
        must end up) and what the located element(s) must show."""
        expected: dict[str, Any] = {ADDRESS_KEY: address_of(f"http://host{self.address}")}
        if self.expect_text is not None:
            expected[TEXT_KEY] = self.expect_text
        if self.expect_includes:
            expected[INCLUDES_KEY] = dict.fromkeys(self.expect_includes, True)
        if self.expect_attr is not None:
            name, value = self.expect_attr
            expected[ATTR_KEY] = {name: value}
        if self.expect_count is not None:
            expected[COUNT_KEY] = self.expect_count
        return expected

    @property
    def reads_one_element(self) -> bool:
        return self.expect_text is not None or bool(self.expect_includes) or bool(self.expect_attr)


def raw_address(url: str) -> str:
    """The path and query of a URL: what the page's address is compared by (the host is
    checked apart, and a fragment never reaches the server)."""
    parts = urlsplit(url)
    return (parts.path or "/") + (f"?{parts.query}" if parts.query else "")


def address_of(url: str) -> str:
    """The address as recorded: secret-named query parameters masked (``?token=***``), the
    same way in the expectation and the observation."""
    return raw_address(redact_url(url))


def dom_check(
    url: str,
    locator: str,
    *,
    expect_text: str | None = None,
    expect_includes: tuple[str, ...] = (),
    expect_attr: str | None = None,
    expect_count: int | None = None,
    expect_address: str | None = None,
    wait_for: str | None = None,
    prep: tuple[str, ...] = (),
    storage_state: str | None = None,
    allow_hosts: tuple[str, ...] = (),
    timeout: float = 10.0,
    chromium: str | None = None,
) -> DomCheck:
    """Validate the options; a check that could not fail is refused here, before any page."""
    refuse_ambiguous_url(url)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise UsageError(f"URL {redact_url(url)!r}: expected an http:// or https:// URL")
    selector = check_locator(locator, "--locator")
    if whole_document(selector):
        raise UsageError(
            f"--locator: {selector!r} matches the whole document, whose text holds every "
            "string on the page; locate the element the change shows in"
        )
    asked = (expect_text, expect_attr, expect_count, expect_address)
    if not expect_includes and all(option is None for option in asked):
        raise UsageError(
            "say what the page must show: --expect-text, --expect-includes, --expect-attr, "
            "--expect-count or --expect-url-path"
        )
    if expect_count is not None and expect_count < 0:
        raise UsageError("--expect-count: must be 0 or more")
    attr = None
    if expect_attr is not None:
        name, sep, value = expect_attr.partition("=")
        if not sep or not name:
            raise UsageError(f"--expect-attr: expected NAME=VALUE, got {expect_attr!r}")
        attr = (name, value)
    if expect_address is not None and not expect_address.startswith("/"):
        raise UsageError(f"--expect-url-path: {expect_address!r} must start with '/'")
    actions = tuple(_prep_action(action) for action in prep)
    if wait_for is not None:
        wait_for = check_locator(wait_for, "--wait-for")
    if storage_state is not None and not Path(storage_state).is_file():
        raise UsageError(f"--storage-state: {storage_state} is not a file")
    hosts = tuple(host.strip().lower() for host in allow_hosts if host.strip())
    includes = tuple(dict.fromkeys(normalize(text) for text in expect_includes))
    text = None if expect_text is None else normalize(expect_text)
    if "" in (*includes, text):
        raise UsageError("--expect-text, --expect-includes: an empty text asserts nothing")
    if text is not None and len(text) > MAX_TEXT_CHARS:
        raise UsageError(f"--expect-text: longer than {MAX_TEXT_CHARS} characters")
    return DomCheck(
        url, selector, text, includes, attr, expect_count, expect_address,
        wait_for, actions, storage_state, hosts, timeout, chromium_path(chromium),
    )  # fmt: skip


def _prep_action(action: str) -> str:
    verb, sep, selector = action.partition(":")
    if not sep or verb not in PREP_ACTIONS:
        raise UsageError(f"--prep: {action[:60]!r} is not click:SELECTOR")
    return f"{verb}:{check_locator(selector, '--prep')}"


class _Deadline:
    def __init__(self, seconds: float) -> None:
        self.end = time.monotonic() + seconds

    def ms(self) -> float:
        """What is left, in milliseconds, never 0 (Playwright reads 0 as no limit)."""
        return max((self.end - time.monotonic()) * 1000, 1.0)


class _Guard:
    """Every request the page makes passes here: another host, or another port of the URL's
    host, is refused (and remembered), so a page cannot use the observer to reach anything the
    operator did not name. ``--allow-host H`` allows H on any port, ``H:PORT`` on that one."""

    def __init__(self, check: DomCheck) -> None:
        self.origin = _host_port(check.url)
        self.allowed = check.allow_hosts
        self.refused: list[str] = []

    def allows(self, url: str) -> bool:
        parts = urlsplit(url)
        if parts.scheme in ("data", "blob", "about"):
            return True  # made by the page itself, no request leaves the browser
        if parts.scheme not in ("http", "https"):
            return False
        host, port = _host_port(url)
        return (host, port) == self.origin or any(
            allowed in (host, f"{host}:{port}") for allowed in self.allowed
        )

    def route(self, route: Route) -> None:
        url = route.request.url
        if self.allows(url):
            route.continue_()
        else:
            self.refused.append(redact_url(url))
            route.abort("blockedbyclient")

    def route_socket(self, socket: WebSocketRoute) -> None:
        """WebSockets bypass ``route``: the same rule, on the URL as its HTTP handshake."""
        if self.allows(re.sub(r"^ws", "http", socket.url)):
            socket.connect_to_server()
        else:
            self.refused.append(redact_url(socket.url))
            socket.close()


def _host_port(url: str) -> tuple[str, int]:
    parts = urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    return (parts.hostname or "").lower(), port or (443 if parts.scheme == "https" else 80)


def observe_dom(check: DomCheck, screenshot_dir: Path | None) -> Observation:
    """Load the page in a fresh context, run the prep actions, wait for the expectations (up to
    the timeout), and record what the located element(s) show, with a screenshot saved in
    ``screenshot_dir`` (none when it is None: a baseline)."""
    if not os.path.isfile(check.chromium):
        raise UsageError(
            f"Chromium is not at {check.chromium}: install it (apt-get install chromium) or "
            f"name it with --chromium or ${CHROMIUM_ENV}"
        )
    from playwright.sync_api import Error as PlaywrightError  # noqa: PLC0415
    from playwright.sync_api import sync_playwright  # noqa: PLC0415

    try:
        with sync_playwright() as playwright:
            playwright.selectors.register(_LOCATED_ENGINE, _LOCATED_SCRIPT, content_script=True)
            args = [*_CHROMIUM_ARGS, *(("--no-sandbox",) if os.geteuid() == 0 else ())]
            browser = playwright.chromium.launch(
                executable_path=check.chromium, args=args, timeout=LAUNCH_TIMEOUT_S * 1000
            )
            try:
                return _observe_page(check, browser, screenshot_dir)
            finally:
                browser.close()
    except PlaywrightError as error:
        first = normalize(str(error).split("\n", 1)[0])[:300]
        raise ObservationFailed(f"{check.target}: {first}") from None


def _observe_page(check: DomCheck, browser: Browser, screenshot_dir: Path | None) -> Observation:
    deadline = _Deadline(check.timeout)
    guard = _Guard(check)
    context = browser.new_context(
        storage_state=check.storage_state, accept_downloads=False, service_workers="block"
    )
    try:
        context.route("**/*", guard.route)
        context.route_web_socket(re.compile(".*"), guard.route_socket)
        page = context.new_page()
        documents: list[Response] = []

        def keep_document(response: Response) -> None:
            if response.request.is_navigation_request() and response.frame == page.main_frame:
                documents.append(response)

        page.on("response", keep_document)
        page.goto(check.url, wait_until="load", timeout=deadline.ms())
        _refuse_other_host(page.url, guard)
        for action in check.prep:
            _, selector = action.split(":", 1)
            page.locator(selector).first.click(timeout=deadline.ms())
        waited = _wait(check, page, deadline)
        _refuse_other_host(page.url, guard)
        reading = _Deadline(max(check.timeout, READ_TIMEOUT_S))
        return _read(check, page, documents, guard, waited, screenshot_dir, reading)
    finally:
        context.close()


def _refuse_other_host(url: str, guard: _Guard) -> None:
    if not guard.allows(url):
        host = urlsplit(url).hostname or url[:60]
        raise ObservationFailed(
            f"the page went to {redact_url(url)}, on another host; --allow-host {host} to "
            "observe it there"
        )


def _wait(check: DomCheck, page: Page, deadline: _Deadline) -> dict[str, bool]:
    """Wait for each condition until it holds or the time is up; one that never holds is
    recorded as it stands, not as a failed observation."""
    from playwright.sync_api import Error as PlaywrightError  # noqa: PLC0415
    from playwright.sync_api import expect  # noqa: PLC0415

    # Waiting is on what Playwright takes as visible (a box, no visibility: hidden): hidden
    # siblings neither hold a wait up nor end it early. What counts is decided in the reading.
    located = expect(page.locator(check.locator).filter(visible=True))
    address = check.address
    pattern = re.compile(r"^https?://[^/?#]+" + re.escape(address) + r"(#.*)?$")
    conditions: list[tuple[str, Callable[..., None]]] = []
    if check.wait_for is not None:
        conditions.append(("wait_for", page.locator(check.wait_for).first.wait_for))
    conditions.append((ADDRESS_KEY, partial(expect(page).to_have_url, pattern)))
    if check.expect_count is not None:
        conditions.append((COUNT_KEY, partial(located.to_have_count, check.expect_count)))
    if check.expect_text is not None:
        text = check.expect_text
        conditions.append((TEXT_KEY, partial(located.to_have_text, text, use_inner_text=True)))
    for included in check.expect_includes:
        conditions.append(
            (INCLUDES_KEY, partial(located.to_contain_text, included, use_inner_text=True))
        )
    if check.expect_attr is not None:
        conditions.append((ATTR_KEY, partial(located.to_have_attribute, *check.expect_attr)))
    met: dict[str, bool] = {}
    for name, condition in conditions:
        try:
            condition(timeout=deadline.ms())
        except (AssertionError, PlaywrightError):  # a timeout, or several elements for a text
            met[name] = False
        else:
            met.setdefault(name, True)
    return met


def _read(
    check: DomCheck,
    page: Page,
    documents: list[Response],
    guard: _Guard,
    waited: dict[str, bool],
    screenshot_dir: Path | None,
    deadline: _Deadline,
) -> Observation:
    attr = None if check.expect_attr is None else check.expect_attr[0]
    seen = _read_visible(page, check.locator, attr)
    count = sum(1 for visible in seen["visible"] if visible is True)
    if count > 1 and check.reads_one_element:
        raise ObservationFailed(
            f"--locator {check.locator!r} matches {count} elements a person can see; a text, "
            "includes or attribute expectation reads exactly one (narrow the locator)"
        )
    observed: dict[str, Any] = {
        ADDRESS_KEY: address_of(page.url),
        COUNT_KEY: count,
        HIDDEN_KEY: len(seen["visible"]) - count,
    }
    details: dict[str, Any] = {
        "url": redact_url(page.url),
        REQUESTED_PATH_KEY: check.requested_address,
        LOCATOR_KEY: check.locator,
        "conditions_met": waited,
        "browser": f"chromium/{page.context.browser.version if page.context.browser else '?'}",
    }
    subject = None
    read = seen["read"]
    if read is not None:
        # The element a person sees (the first matched when none is seen), read in the same
        # reading as its visibility, the page's scripts stopped, so it cannot change in between.
        text = normalize(str(read["text"]))
        cut = len(text) > MAX_TEXT_CHARS
        observed[TEXT_KEY] = text[:MAX_TEXT_CHARS] + CUT_MARK if cut else text
        observed[VISIBLE_KEY] = read["visible"] is True
        if read["hidden_by"] is not None:
            details[HIDDEN_BY_KEY] = str(read["hidden_by"])
        if check.expect_includes:
            observed[INCLUDES_KEY] = {t: t in text for t in check.expect_includes}
        if attr is not None:
            observed[ATTR_KEY] = {attr: read["attr"]}
        subject = sha256_digest(str(read["html"]).encode("utf-8", "surrogatepass"))
        details["html_digest"] = subject
        # However the selector was spelt (css=:is(html), css=body:first-of-type), an element
        # that is the document or its body holds every string on the page.
        if read["whole_document"] is True:
            details[WHOLE_DOCUMENT_KEY] = True
    if check.prep:
        details[PREP_KEY] = list(check.prep)
    if check.wait_for is not None:
        details["wait_for"] = check.wait_for
    template = _template_text(documents) if check.expect_includes else None
    if template is not None:
        details[TEMPLATE_INCLUDES_KEY] = {t: t in template for t in check.expect_includes}
    if guard.refused:
        details["refused_requests"] = sorted(set(guard.refused))[:20]
    if screenshot_dir is not None:
        details["screenshot"] = _screenshot(page, screenshot_dir, deadline)
    return Observation(
        target=check.target,
        expected=check.expected(),
        observed_value=observed,
        subject=subject,
        details=details,
    )


def _read_visible(page: Page, locator: str, attr: str | None) -> dict[str, Any]:
    """What a person can see of the elements ``locator`` matches, judged by the observer's own
    script in an isolated world: the page's scripts run in another, so a page that rewrites
    the browser's functions (getComputedStyle, checkVisibility, elementsFromPoint, Array's
    methods) changes nothing the reading uses. Playwright's own evaluate runs in the page's
    world, so the script is run through the DevTools protocol in the world where the
    content-script engine kept the elements. The page's scripts and animations are stopped
    while it reads, so nothing of the page's moves between the layout read and the captures of
    the text (and none of its callbacks answers the reading's changes)."""
    key = f"__claim_located_{secrets.token_hex(16)}"
    if page.locator(f"{locator} >> {_LOCATED_ENGINE}={key}").count() == 0:
        return {"visible": [], "read": None}
    session = page.context.new_cdp_session(page)
    try:
        isolated: list[int] = []
        session.on(
            "Runtime.executionContextCreated",
            lambda event: (
                None if event["context"]["auxData"].get("isDefault", True)
                else isolated.append(event["context"]["id"])
            ),
        )  # fmt: skip
        session.send("Runtime.enable")
        session.send("Emulation.setScriptExecutionDisabled", {"value": True})
        session.send("Animation.enable")
        session.send("Animation.setPlaybackRate", {"playbackRate": 0})
        try:
            for context in isolated:
                step = partial(_call, session, context, key)
                if step("read", attr) is True:
                    try:
                        _judge_drawn(session, step)
                    finally:
                        found = step("finish")
                    if type(found) is not dict:
                        raise ObservationFailed("reading what a person can see gave no answer")
                    return found
        finally:
            session.send("Animation.setPlaybackRate", {"playbackRate": 1})
            session.send("Emulation.setScriptExecutionDisabled", {"value": False})
    finally:
        session.detach()
    raise ObservationFailed(
        "the located elements were not found in the observer's isolated world (did the page "
        "navigate while it was read?)"
    )


def _judge_drawn(session: CDPSession, step: Callable[..., Any]) -> None:
    """The text of the element read counts where it is drawn: each part of it that fits on the
    screen captured with its glyphs, without them, and with them again (the page holds still,
    so only the glyphs may differ); the script judges the pixels (spec 7.4)."""
    while (clip := step("nextArea")) is not None:
        shots = [_capture(session, clip)]
        step("hideText")
        shots.append(_capture(session, clip))
        step("showText")
        shots.append(_capture(session, clip))
        step("judgeDrawn", *shots)


def _capture(session: CDPSession, clip: dict[str, Any]) -> str:
    """The clip of the page as drawn now, a PNG in base64."""
    shot = session.send(
        "Page.captureScreenshot", {"format": "png", "clip": clip, "captureBeyondViewport": False}
    )
    return str(shot["data"])


def _call(session: CDPSession, context: int, key: str, step: str, *args: Any) -> Any:
    """One step of the reading (visible.js) in the isolated world ``context``: ``read`` starts
    it on the elements kept under ``key`` (true when they were there), the others are the
    reading's own methods, ``finish`` the last."""
    answer = session.send(
        "Runtime.callFunctionOn",
        {
            "functionDeclaration": _visible_function(),
            "executionContextId": context,
            "arguments": [{"value": key}, {"value": step}, {"value": list(args)}],
            "returnByValue": True,
            "awaitPromise": True,
        },
    )
    if "exceptionDetails" in answer:
        why = answer["exceptionDetails"].get("exception", {}).get("description", "")
        raise ObservationFailed(f"reading what a person can see failed: {why[:200]}")
    return answer["result"].get("value")


@cache
def _visible_function() -> str:
    script = resources.files(__package__).joinpath("visible.js").read_text("utf-8")
    return (
        "function (key, step, args) {\n  const located = globalThis[key];\n"
        "  if (located === undefined) return null;\n"
        "  if (step !== 'read') {\n"
        "    if (step === 'finish') delete globalThis[key];\n"
        "    return located[step](...args);\n  }\n"
        f"  globalThis[key] = ({script}\n  )(located, ...args);\n"
        "  return true;\n}"
    )


class _TextOnly(HTMLParser):
    """The text a document's markup holds, without scripts and styles."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        del attrs
        if tag in _SKIPPED_TAGS:
            self.skipping += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in _SKIPPED_TAGS and self.skipping:
            self.skipping -= 1

    def handle_data(self, data: str) -> None:
        if not self.skipping:
            self.parts.append(data)


def _template_text(documents: list[Response]) -> str | None:
    """The text of the last document the page loaded, as the server sent it: what the page
    shows before any script or action ran. None when it cannot be read: then nothing is
    recorded, and a must-include does not count (the verifier asks for the reading)."""
    from playwright.sync_api import Error as PlaywrightError  # noqa: PLC0415

    if not documents:
        return None
    try:
        body = documents[-1].body()
    except PlaywrightError:
        return None
    parser = _TextOnly()
    parser.feed(body.decode("utf-8", "replace"))
    parser.close()
    return normalize(" ".join(parser.parts))


def _screenshot(page: Page, folder: Path, deadline: _Deadline) -> dict[str, str]:
    """The page as it was read, saved by its digest beside the claim (never overwriting
    another, never named by anything the page chose)."""
    image = page.screenshot(full_page=True, type="png", timeout=deadline.ms())
    digest = sha256_digest(image)
    name = f"dom-{digest.removeprefix('sha256:')[:32]}.png"
    write_atomic(folder / name, image)
    return {"file": name, "digest": digest}
