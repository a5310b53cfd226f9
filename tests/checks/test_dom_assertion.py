"""dom_assertion judged by the pure verifier: what makes a page observation not count."""

from __future__ import annotations

from typing import Any

import pytest

from completion_claim import verify
from completion_claim.checks.dom_assertion import whole_document
from completion_claim.model import BUILTIN_COVERED_BY, Policy, parse_policy
from tests.builders import at, build, evidence, mutation

DECIDE = at(60)
LABEL = {"address": "/settings", "text": "Bob"}
SEEN = {"count": 1, "hidden": 0, "visible": True}


def dom_item(expected: Any = LABEL, observed: Any = None, **details: Any) -> dict[str, Any]:
    return evidence(
        check_type="dom_assertion",
        target="http://app.test/settings css=#label",
        expected=expected,
        observed_value=SEEN | expected if observed is None else observed,
        details={"locator": "css=#label", "requested_path": "/settings", **details},
    )


def judged(item: dict[str, Any], policy: Policy | None = None) -> tuple[str, list[str]]:
    claim = build([mutation(kind="ui_action", target="settings/name")], [item])
    verdict = verify(claim, DECIDE, policy)
    [result] = verdict.evidence
    return verdict.state, [f"{f.code}: {f.detail}" for f in result.reasons]


def test_a_located_element_showing_the_new_value_verifies() -> None:
    assert judged(dom_item()) == ("verified", [])


def test_a_page_elsewhere_refutes() -> None:
    state, reasons = judged(dom_item(observed={"address": "/login", "count": 0}))
    assert (state, reasons) == ("refuted", [])


def test_attack_46_text_of_an_element_nobody_can_see_does_not_count() -> None:
    # <div id="status" style="display:none">Saved</div> beside a visible "not saved".
    expected = {"address": "/settings", "text": "Saved"}
    observed = {"address": "/settings", "count": 0, "hidden": 1, "text": "", "visible": False}
    state, reasons = judged(dom_item(expected, observed))
    assert state == "unverified"
    assert reasons == ["not_discriminating: the element it read cannot be seen by a person"]


@pytest.mark.parametrize("reading", [{"text": "Bob"}, {"includes": {"Bob": True}},
                                     {"attr": {"data-state": "done"}}])  # fmt: skip
def test_attack_46_no_reading_of_a_hidden_element_counts(reading: dict[str, Any]) -> None:
    expected = {"address": "/settings", **reading}
    observed = {"address": "/settings", "count": 0, "hidden": 1, "visible": False, **reading}
    item = dom_item(expected, observed, template_includes={"Bob": False})
    assert judged(item) == (
        "unverified",
        ["not_discriminating: the element it read cannot be seen by a person"],
    )
    observed["visible"] = True
    observed["count"], observed["hidden"] = 1, 0
    assert judged(item)[0] == "verified"


def test_attack_46_a_hidden_element_showing_another_value_does_not_refute() -> None:
    observed = {"address": "/settings", "count": 0, "hidden": 1, "text": "Alice", "visible": False}
    assert judged(dom_item(observed=observed))[0] == "unverified"


@pytest.mark.parametrize("visible", [None, 1, "true", [True], {}])
def test_attack_46_an_item_without_a_true_visibility_does_not_count(visible: Any) -> None:
    observed = {"address": "/settings", "count": 1, "hidden": 0, "text": "Bob"}
    if visible is not None:
        observed["visible"] = visible
    state, reasons = judged(dom_item(observed=observed))
    assert state == "unverified"
    assert "recorded no visibility of the element it read" in reasons[0]


@pytest.mark.parametrize("hidden", [None, -1, True, "0", 1.5])
def test_attack_59_a_count_without_a_count_of_hidden_elements_does_not_count(
    hidden: Any,
) -> None:
    expected = {"address": "/settings", "count": 2}
    observed = {"address": "/settings", "count": 2}
    if hidden is not None:
        observed["hidden"] = hidden
    state, reasons = judged(dom_item(expected, observed))
    assert state == "unverified"
    assert "no count of hidden elements" in reasons[0]


def test_a_count_of_visible_elements_beside_hidden_ones_counts() -> None:
    expected = {"address": "/settings", "count": 2}
    observed = {"address": "/settings", "count": 2, "hidden": 3}
    assert judged(dom_item(expected, observed)) == ("verified", [])


def test_a_page_that_showed_nothing_still_refutes_a_text() -> None:
    # Nothing was read, so nothing hidden was: the missing text contradicts.
    observed = {"address": "/settings", "count": 0, "hidden": 0}
    assert judged(dom_item(observed=observed)) == ("refuted", [])


def test_ui_action_is_covered_by_a_page_or_a_readback() -> None:
    assert BUILTIN_COVERED_BY["ui_action"] == ("dom_assertion", "state_readback")


@pytest.mark.parametrize(
    "locator",
    [
        "css=html",
        "html",
        "body",
        "css=:root",
        " css= BODY ",
        "*",
        "css=html > body",
        "role=document",
    ],
)
def test_attack_28_a_locator_of_the_whole_document_does_not_count(locator: str) -> None:
    assert whole_document(locator)
    state, reasons = judged(dom_item(locator=locator))
    assert state == "unverified"
    assert reasons == [f"not_discriminating: locator {locator!r} matches the whole document"]


@pytest.mark.parametrize(
    "locator", ["css=#label", "text=Saved", "role=status", "css=body #x", "css=main >> text=Bob"]
)
def test_a_located_element_is_not_the_whole_document(locator: str) -> None:
    assert not whole_document(locator)
    assert judged(dom_item(locator=locator)) == ("verified", [])


def test_attack_28_an_element_the_observer_saw_was_the_document_does_not_count() -> None:
    state, reasons = judged(dom_item(locator="css=:is(html)", whole_document=True))
    assert (state, reasons) == (
        "unverified",
        ["not_discriminating: the located element was the whole document"],
    )


@pytest.mark.parametrize(("locator", "why"), [
    (None, "recorded no locator"),
    ("xpath=//p", "is not a css=, text= or role= selector"),
    ("#label", "is not a css=, text= or role= selector"),
    ("css=", "is not a css=, text= or role= selector"),
    ("css=#label >> xpath=..", "is not a css=, text= or role= selector"),
])  # fmt: skip
def test_attack_33_a_locator_the_observer_would_refuse_does_not_count(
    locator: Any, why: str
) -> None:
    item = dom_item()
    item["details"]["locator"] = locator
    state, reasons = judged(item)
    assert state == "unverified"
    assert why in reasons[0]


def test_an_expectation_met_at_the_baseline_does_not_count() -> None:
    state, reasons = judged(dom_item(baseline={"address": "/settings", "count": 1, "text": "Bob"}))
    assert state == "unverified"
    assert reasons == [
        "not_discriminating: the value observed before the change already met the expectation"
    ]


def test_a_baseline_with_the_old_value_lets_it_count() -> None:
    assert judged(dom_item(baseline={"address": "/settings", "count": 1, "text": "Al"}))[0] == (
        "verified"
    )


def test_attack_29_a_must_include_of_template_text_does_not_count() -> None:
    expected = {"address": "/", "includes": {"Saved": True}}
    state, reasons = judged(dom_item(expected, template_includes={"Saved": True}))
    assert state == "unverified"
    assert "'Saved' is in the page's static template" in reasons[0]


def test_a_must_include_the_template_lacks_counts() -> None:
    expected = {"address": "/", "includes": {"Saved": True}}
    assert judged(dom_item(expected, template_includes={"Saved": False}))[0] == "verified"


def test_a_must_include_without_a_template_reading_does_not_count() -> None:
    expected = {"address": "/", "includes": {"Saved": True}}
    state, reasons = judged(dom_item(expected))
    assert state == "unverified"
    assert "no reading of the page's template" in reasons[0]


def test_a_must_include_against_a_baseline_is_judged_by_the_baseline() -> None:
    expected = {"address": "/", "includes": {"Saved": True}}
    baseline = {"address": "/", "count": 1, "includes": {"Saved": False}}
    item = dom_item(expected, template_includes={"Saved": True}, baseline=baseline)
    assert judged(item)[0] == "verified"


def test_the_address_alone_where_the_observer_was_sent_does_not_count() -> None:
    state, reasons = judged(dom_item({"address": "/settings"}))
    assert state == "unverified"
    assert "only the path of the URL it was sent to" in reasons[0]


def test_the_address_reached_by_an_action_counts() -> None:
    item = dom_item({"address": "/orders/42"}, prep=["click:role=button[name='Place order']"])
    assert judged(item)[0] == "verified"


def test_expecting_no_element_needs_a_baseline() -> None:
    expected = {"address": "/settings", "count": 0}
    state, reasons = judged(dom_item(expected))
    assert state == "unverified"
    assert "a wrong locator also shows" in reasons[0]
    with_baseline = dom_item(expected, baseline={"address": "/settings", "count": 1})
    assert judged(with_baseline)[0] == "verified"


def test_an_expectation_that_is_not_an_object_does_not_count() -> None:
    state, reasons = judged(dom_item("Bob", observed="Bob"))
    assert state == "unverified"
    assert "expects no object" in reasons[0]


def test_a_policy_can_switch_experimental_checks_off() -> None:
    policy = parse_policy({"id": "strict", "requires": [], "max_age_s": 300,
                           "experimental_checks": False})  # fmt: skip
    state, reasons = judged(dom_item(), policy)
    assert state == "unverified"
    assert reasons == ["experimental_off: dom_assertion is experimental"]


def test_experimental_checks_are_on_by_default() -> None:
    assert parse_policy({"id": "p", "requires": [], "max_age_s": 300}).experimental_checks
