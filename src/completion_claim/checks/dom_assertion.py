"""dom_assertion (experimental): a rendered page read in a browser the agent does not own.

The expectation names what the located element(s) must show; the observer records, beside it,
how the page was located and read (``details``), which is what this module judges. A page is
weaker proof than the record behind it: where a backend holds the state, a state_readback of it
is preferred (docs/spec.md).
"""

from __future__ import annotations

from typing import Any

from ..model import Evidence, Policy

ADDRESS_KEY = "address"
"""The path and query of the page's final URL (named so that a page that went elsewhere, a
login page, is the first mismatch the verdict names)."""
TEXT_KEY = "text"
INCLUDES_KEY = "includes"
ATTR_KEY = "attr"
COUNT_KEY = "count"
ASSERTIONS = (TEXT_KEY, INCLUDES_KEY, ATTR_KEY, COUNT_KEY)
"""What the located element(s) may be asserted to show, beside the page's URL path."""
READINGS = (TEXT_KEY, INCLUDES_KEY, ATTR_KEY)
"""What is read of one element, and counts only when a person can see that element."""
VISIBLE_KEY = "visible"
"""``observed_value.visible``: whether a person can see the element that was read."""
HIDDEN_KEY = "hidden"
"""``observed_value.hidden``: how many matched elements no person can see; ``count`` leaves
them out. Its presence says the count is of visible elements only."""
HIDDEN_BY_KEY = "hidden_by"
"""``details.hidden_by``: why the element that was read cannot be seen (for a person; the
verifier does not read it)."""
LOCATOR_KEY = "locator"
"""``details.locator``: the Playwright selector the observer located the element(s) with."""
REQUESTED_PATH_KEY = "requested_path"
"""``details.requested_path``: the path (and query) of the URL the observer was asked to load."""
PREP_KEY = "prep"
"""``details.prep``: the actions the observer took on the page before reading it."""
TEMPLATE_INCLUDES_KEY = "template_includes"
"""``details.template_includes``: for each must-include string, whether it occurs in the page's
template, the text of the document as the server sent it, before any script or action ran."""
WHOLE_DOCUMENT_KEY = "whole_document"
"""``details.whole_document``: true when the located element was the document or its body,
however its selector was spelt."""
BASELINE_KEY = "baseline"
SELECTOR_ENGINES = ("css=", "text=", "role=")
"""The only selector engines allowed: none of them evaluates code from the claim."""
_WHOLE_DOCUMENT = frozenset(
    {"html", "body", ":root", "*", "html>body", "html body", ":root>body", ":root body"}
)


def why_not_discriminating(item: Evidence, policy: Policy) -> str | None:
    del policy
    expected = item.expected
    if type(expected) is not dict:
        return "expects no object of address, text, includes, attr or count"
    details = item.details or {}
    if details.get(WHOLE_DOCUMENT_KEY) is not None and details[WHOLE_DOCUMENT_KEY] is not False:
        return "the located element was the whole document"
    return (
        _locator_problem(details.get(LOCATOR_KEY))
        or _not_seen(expected, item.observed_value)
        or _url_only(expected, details)
        or _no_element_expected(expected, details)
        or _in_template(expected, details)
    )


def whole_document(locator: str) -> bool:
    """Whether ``locator`` selects the whole document, whose text holds every string on the
    page (the WebArena weakness of a page-wide must-include)."""
    selector = locator.strip()
    if selector.lower().startswith("css="):
        selector = selector[4:]
    compact = "".join(selector.lower().split())
    spaced = " ".join(selector.lower().split())
    return compact in _WHOLE_DOCUMENT or spaced in _WHOLE_DOCUMENT or compact == "role=document"


def engine_allowed(locator: str) -> bool:
    """Every part of a Playwright selector chain (``a >> b``) names an allowed engine: a chain
    may not slip another engine (``xpath=``, an internal one) in after a ``css=`` part."""
    return all(
        part.strip().startswith(SELECTOR_ENGINES) and bool(part.split("=", 1)[1].strip())
        for part in locator.split(">>")
    )


def _locator_problem(locator: Any) -> str | None:
    if type(locator) is not str or not locator.strip():
        return "the observer recorded no locator (details.locator)"
    if whole_document(locator):
        return f"locator {locator[:60]!r} matches the whole document"
    if not engine_allowed(locator):
        return f"locator {locator[:60]!r} is not a css=, text= or role= selector"
    return None


def _not_seen(expected: dict[str, Any], observed: Any) -> str | None:
    """Text, attributes or a count of elements nobody can see (display: none, off-screen,
    covered) prove nothing a person was shown. An item recorded before visibility was, which
    lacks the member, is judged the same way: it does not count."""
    if type(observed) is not dict:
        return None
    read = any(key in observed for key in READINGS)
    if read and any(key in expected for key in READINGS):
        visible = observed.get(VISIBLE_KEY)
        if visible is False:
            return "the element it read cannot be seen by a person"
        if visible is not True:
            return "the observer recorded no visibility of the element it read (visible)"
    if COUNT_KEY in expected:
        hidden = observed.get(HIDDEN_KEY)
        if type(hidden) is not int or hidden < 0:
            return (
                "the observer recorded no count of hidden elements (hidden), so its count may "
                "include elements no person can see"
            )
    return None


def _url_only(expected: dict[str, Any], details: dict[str, Any]) -> str | None:
    """The path of the page the observer was sent to, asserted alone, holds whenever the page
    did not redirect; it says something only after an action or a redirect the change made."""
    if any(key in expected for key in ASSERTIONS):
        return None
    if ADDRESS_KEY not in expected:
        return "expects no address, text, includes, attr or count"
    if details.get(PREP_KEY):
        return None
    if details.get(REQUESTED_PATH_KEY) != expected[ADDRESS_KEY]:
        return None
    return "asserts only the path of the URL it was sent to, which holds without any change"


def _no_element_expected(expected: dict[str, Any], details: dict[str, Any]) -> str | None:
    """A misspelt locator also finds nothing: expecting no element proves something only
    against a baseline that found one."""
    count = expected.get(COUNT_KEY)
    if type(count) is int and count == 0 and BASELINE_KEY not in details:
        return "expects no element, which a wrong locator also shows (take a baseline)"
    return None


def _in_template(expected: dict[str, Any], details: dict[str, Any]) -> str | None:
    """A must-include of a string the served page already holds could pass on template text
    (a label, a help line); a baseline that did not show it is the only answer to that."""
    wanted = expected.get(INCLUDES_KEY)
    if wanted is None or BASELINE_KEY in details:
        return None
    if type(wanted) is not dict:
        return "its includes is not an object of strings"
    template = details.get(TEMPLATE_INCLUDES_KEY)
    if type(template) is not dict:
        return "the observer recorded no reading of the page's template (details.template_includes)"
    for text in sorted(wanted):
        if template.get(text) is not False:
            return f"{text[:60]!r} is in the page's static template, so it shows without any change"
    return None
