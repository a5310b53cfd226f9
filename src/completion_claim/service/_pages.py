"""The dashboard's pages as HTML text, rendered from ledger values; no I/O but the templates.

Every string in an entry came from whoever submitted the claim (outcome, task, ids, evidence
details, even unmet codes echo ids), so it is hostile input: the environment autoescapes every
template, whatever its file name, and the only markup that enters unescaped is the SVG that
``charts`` builds (escaping its own text). The router (``dashboard``) and the static report
(``static_report``) both render through here, so the report is the stats page, not a copy.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import urlencode

from jinja2 import Environment, PackageLoader, StrictUndefined

from ..report import describe_finding, describe_unmet
from ..timefmt import format_time
from ..verify import Finding, Unmet
from . import charts
from .records import STATES, Entry, Page, Stats
from .screenshots import screenshot_reference

_VALUE_CHARS = 400  # an expected or observed value longer than this is cut on the page
_OUTCOME_CHARS = 120  # in the list; the claim page shows it whole
# In the list, a name (agent, task, policy) longer than this is cut, and so is any word of the
# outcome: seven columns at 1280 px then never need to break a word (the full text is the
# cell's title, and the claim page's).
_CELL_CHARS = 28
_TITLE_CHARS = 400
_OBSERVATION = {
    "matches": "the observation matches the expectation",
    "differs": "the observation contradicts the expectation",
    "absent": "no observation",
}
FILTER_FIELDS = ("state", "policy", "agent", "task", "unmet", "since", "until")
RANGE_FIELDS = ("since", "until")

_ENV = Environment(
    loader=PackageLoader("completion_claim.service", "templates"),
    autoescape=True,  # every template, not only *.html: claim strings are hostile
    undefined=StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)
_ENV.globals["STATE_COLOURS"] = charts.STATE_COLOURS
_ENV.globals["STATES"] = STATES


@dataclass(frozen=True)
class ProofStatus:
    """Whether an entry's inclusion proof checked against the current signed tree head."""

    ok: bool
    text: str


def render_list(
    page: Page, form: Mapping[str, str], older_url: str | None, count: int | None = None
) -> str:
    """The claims list, newest first; ``form`` refills the filter inputs as the reader typed
    them; ``older_url`` is the next page's link, None on the last page; ``count`` is how many
    claims the filters match."""
    rows = [
        {
            "index": entry.index,
            "state": _state(entry),
            "label": state_label(entry),
            "classes": _row_classes(entry),
            "task": _cell("task", _text(entry.claim.get("task", {}).get("id"))),
            "agent": _cell("agent", entry.submitted_by),
            "policy": _cell("policy", _text(entry.verdict.get("policy_id"))),
            "recorded_at": format_time(entry.recorded_at).replace("T", " ").rstrip("Z"),
            "outcome": _short_words(charts.cut(entry.outcome, _OUTCOME_CHARS)),
            "outcome_title": charts.cut(entry.outcome, _TITLE_CHARS),
        }
        for entry in page.items
    ]
    values = {name: form.get(name, "") for name in FILTER_FIELDS}
    return _ENV.get_template("list.html").render(
        rows=rows,
        form=values,
        older_url=older_url,
        filtered=any(values.values()),
        count=count,
        csv_url=export_url(values, "csv"),
        json_url=export_url(values, "json"),
    )


def render_claim(entry: Entry, proof: ProofStatus, for_agent: Sequence[str] = ()) -> str:
    """One entry: what was claimed, the failed tests, what the gate would tell the agent
    (``for_agent``), how each mutation is covered, why each evidence item counts or not, what
    is unmet, who sent it, and whether the log provably holds it."""
    verdict = entry.verdict
    task = entry.claim.get("task", {})
    results = {_text(r.get("evidence")): r for r in verdict.get("evidence", ())}
    evidence = [
        _evidence_view(item, position, results) | {"screenshot": _screenshot_url(entry, position)}
        for position, item in enumerate(entry.claim.get("evidence", ()))
    ]
    check_types = {view["ref"]: view["check_type"] for view in evidence}
    coverage = {_text(c.get("mutation")): c for c in verdict.get("coverage", ())}
    mutations = [
        _mutation_view(mutation, coverage.get(_text(mutation.get("id")), {}), check_types)
        for mutation in entry.claim.get("mutations", ())
    ]
    unmet = [
        {
            "code": _text(item.get("code")),
            "url": list_url(unmet=_text(item.get("code"))),
            "text": describe_unmet(
                Unmet(
                    code=_text(item.get("code")),
                    mutation=item.get("mutation"),
                    check_type=item.get("check_type"),
                    evidence=item.get("evidence"),
                )
            ),
        }
        for item in verdict.get("unmet", ())
    ]
    return _ENV.get_template("claim.html").render(
        index=entry.index,
        state=_state(entry),
        label=state_label(entry),
        classes=_row_classes(entry),
        decided_by=_DECIDED_BY_TEXT[entry.decided_by],
        reason=_text(verdict.get("reason")),
        task_id=_text(task.get("id")),
        task_url=list_url(task=_text(task.get("id"))),
        agent_url=agent_url(entry.submitted_by),
        policy_url=list_url(policy=_text(verdict.get("policy_id"))),
        failures=_failures(entry),
        for_agent=for_agent,
        task_description=_text(task.get("description")),
        outcome=entry.outcome,
        policy=_text(verdict.get("policy_id")),
        independence=_text(verdict.get("independence")),
        decided_at=_text(verdict.get("decided_at")),
        submitted_by=entry.submitted_by,
        via=entry.via,
        start_index=entry.start_index,
        recorded_at=format_time(entry.recorded_at),
        leaf_hash=entry.leaf_hash,
        mutations=mutations,
        evidence=evidence,
        unmet=unmet,
        proof=proof,
    )


def render_stats(
    stats: Stats,
    *,
    standalone: bool = False,
    generated_at: datetime | None = None,
    form: Mapping[str, str] | None = None,
    agent: str | None = None,
) -> str:
    """The stats page, or with ``agent`` one agent's page. ``standalone`` is the report file: no
    links back into a service that may not be there, no form, and the time it was written.
    ``form`` is the date range as the reader typed it."""
    rate = stats.false_success_rate
    dates = {name: (form or {}).get(name, "") for name in RANGE_FIELDS}
    scope = {"agent": agent or ""}
    return _ENV.get_template("stats.html").render(
        stats=stats,
        total=stats.total,
        false_success=None if rate is None else f"{rate:.1%}",
        by_day_chart=charts.verdicts_by_day(stats.by_day),
        by_agent_chart=charts.refuted_rate_by_agent(stats.by_agent),
        unmet_chart=charts.top_unmet_codes(stats.top_unmet),
        by_day=[(day.isoformat(), counts) for day, counts in stats.by_day],
        by_agent=[
            (name, counts, _percent(counts.refuted, counts.total), agent_url(name, **dates))
            for name, counts in stats.by_agent
        ],
        by_policy=[
            (policy, counts, list_url(**scope, policy=policy, **dates))
            for policy, counts in stats.by_policy
        ],
        top_unmet=[
            (code, count, list_url(**scope, unmet=code, **dates)) for code, count in stats.top_unmet
        ],
        by_decided_by=[(_DECIDED_BY_ROW[how], counts) for how, counts in stats.by_decided_by],
        agent=agent,
        agent_list_url=None if agent is None else list_url(agent=agent, **dates),
        range_action="/stats" if agent is None else "/agent",
        form=dates,
        ranged=any(dates.values()),
        standalone=standalone,
        generated_at=None if generated_at is None else format_time(generated_at),
    )


def render_error(status: int, message: str) -> str:
    return _ENV.get_template("error.html").render(status=status, message=message)


def older_url(form: Mapping[str, str], before: int) -> str:
    """The list's next page: the same filters, entries below ``before``."""
    return "/?" + urlencode([*_kept(form), ("before", str(before))])


def list_url(**filters: str) -> str:
    """The claims list under these filters (empty ones left out). Every link to a filtered view
    is built here, from the values themselves: an agent's name or a task id is the submitter's
    text, and ``urlencode`` leaves no ``&``, ``#``, quote or space of it to end the parameter."""
    kept = _kept(filters)
    return "/?" + urlencode(kept) if kept else "/"


def agent_url(agent: str, **dates: str) -> str:
    """The agent's own page (``dates`` the range it covers)."""
    return "/agent?" + urlencode([("agent", agent), *_kept(dates)])


def export_url(form: Mapping[str, str], extension: str) -> str:
    """The export of the list as filtered: ``/claims.csv`` or ``/claims.json``."""
    kept = _kept(form)
    return f"/claims.{extension}" + ("?" + urlencode(kept) if kept else "")


def export_row(entry: Entry) -> dict[str, Any]:
    """One claim as the exports write it: what the list shows, whole, and where its page is."""
    return {
        "index": entry.index,
        "recorded_at": format_time(entry.recorded_at),
        "state": _state(entry),
        "agent": entry.submitted_by,
        "task": _text(entry.claim.get("task", {}).get("id")),
        "policy": _text(entry.verdict.get("policy_id")),
        "via": entry.via,
        "decided_by": entry.decided_by,
        "independence": entry.independence,
        "start_index": entry.start_index,
        "unmet": list(entry.unmet_codes),
        "outcome": entry.outcome,
        "url": f"/claims/{entry.index}",
    }


def _kept(form: Mapping[str, str]) -> list[tuple[str, str]]:
    return [(name, form[name]) for name in FILTER_FIELDS if form.get(name)]


def _cell(field: str, value: str) -> dict[str, str]:
    """A name in the list: shown cut, whole in its title, and a link to the list filtered by it
    (the agent's to its own page)."""
    url = agent_url(value) if field == "agent" else list_url(**{field: value})
    return {
        "text": charts.cut(value, _CELL_CHARS),
        "title": charts.cut(value, _TITLE_CHARS),
        "url": url,
    }


def _short_words(text: str, limit: int = _CELL_CHARS) -> list[str]:
    """The words of ``text``, each longer than ``limit`` cut: the list wraps between them."""
    return [charts.cut(word, limit) for word in text.split()]


def _failures(entry: Entry) -> list[dict[str, str]]:
    """Every failed test a test run recorded (``details.failures``), in evidence order."""
    found = []
    for item in entry.claim.get("evidence", ()):
        details = item.get("details") if isinstance(item, Mapping) else None
        failures = details.get("failures") if isinstance(details, Mapping) else None
        for failure in failures if isinstance(failures, list) else ():
            if isinstance(failure, Mapping):
                found.append(
                    {
                        "test": _text(failure.get("test")),
                        "outcome": "errored" if failure.get("outcome") == "error" else "failed",
                        "message": _text(failure.get("message")),
                    }
                )
    return found


def _evidence_view(
    item: Mapping[str, Any], position: int, results: Mapping[str, Mapping[str, Any]]
) -> dict[str, Any]:
    # The verdict names an item by its id, else by its place (verify.evidence_ref).
    ref = _text(item["id"]) if "id" in item else f"evidence[{position}]"
    result = results.get(ref, {})
    verifier = item.get("verifier", {})
    return {
        "ref": ref,
        "check_type": _text(item.get("check_type")),
        "target": _text(item.get("target")),
        "at": _text(item.get("at")),
        "covers": [_text(m) for m in item.get("covers", ())],
        "verifier": _text(verifier.get("id")),
        "verifier_kind": _text(verifier.get("kind")),
        "counts": bool(result.get("counts")),
        "observation": _OBSERVATION.get(_text(result.get("observation")), "no observation"),
        "reasons": [_finding(f) for f in result.get("reasons", ())],
        "mismatch": result.get("mismatch"),
        "expected": _json(item.get("expected")) if "expected" in item else None,
        "observed": _json(item.get("observed_value")) if "observed_value" in item else None,
        "details": _json(item["details"]) if item.get("details") else None,
        "signed": "attestation" in item,
    }


def _screenshot_url(entry: Entry, position: int) -> str | None:
    """Where the dashboard serves this item's screenshot, when it may (``screenshots``)."""
    if screenshot_reference(entry, position) is None:
        return None
    return f"/claims/{entry.index}/screenshots/{position}"


def _mutation_view(
    mutation: Mapping[str, Any], cover: Mapping[str, Any], check_types: Mapping[str, str]
) -> dict[str, Any]:
    def named(refs: Sequence[Any]) -> list[tuple[str, str]]:
        return [(_text(ref), check_types.get(_text(ref), "")) for ref in refs]

    return {
        "id": _text(mutation.get("id")),
        "kind": _text(mutation.get("kind")),
        "target": _text(mutation.get("target")),
        "at": _text(mutation.get("at")),
        "digest": mutation.get("digest"),
        "covered_by": named(cover.get("covered_by", ())),
        "contradicted_by": named(cover.get("contradicted_by", ())),
        "not_counted": [
            (_text(r.get("evidence")), [_finding(f) for f in r.get("reasons", ())])
            for r in cover.get("not_counted", ())
        ],
    }


def _finding(finding: Mapping[str, Any]) -> str:
    return describe_finding(
        Finding(
            code=_text(finding.get("code")),
            mutation=finding.get("mutation"),
            detail=finding.get("detail"),
        )
    )


def state_label(entry: Entry) -> str:
    """The state as the dashboard writes it: the gate's own verdict (its evidence signed by a
    trusted observer) bare, anything less saying so: ``verified (declared, posted)`` is the
    requester's own evidence, weighed under the operator's policy but observed by nobody the
    operator trusts."""
    how = []
    if entry.independence != "proven":
        how.append(entry.independence)
    if entry.decided_by == "post":
        how.append("posted")
    return f"{_state(entry)} ({', '.join(how)})" if how else _state(entry)


def _row_classes(entry: Entry) -> str:
    """The state's class, then ``declared`` and ``posted`` where they apply (the style that
    keeps such a verdict from looking like the gate's)."""
    classes = [f"state-{_state(entry)}"]
    if entry.independence != "proven":
        classes.append("declared")
    if entry.decided_by == "post":
        classes.append("posted")
    return " ".join(classes)


_DECIDED_BY_ROW = {
    "gate": "the gate (the service ran the checks)",
    "post": "posted (the poster's evidence)",
}
_DECIDED_BY_TEXT = {
    "gate": "the gate: the service ran the operator's checks (POST /v1/gate)",
    "post": "posted by its submitter (POST /v1/claims): the evidence is the submitter's, "
    "weighed under the operator's policy",
}


def _state(entry: Entry) -> str:
    # A class name and a colour come from this: only the three known states pass through.
    return entry.state if entry.state in STATES else "unverified"


def _text(value: object) -> str:
    return "" if value is None else str(value)


def _json(value: object) -> str:
    return charts.cut(json.dumps(value, ensure_ascii=False, sort_keys=True), _VALUE_CHARS)


def _percent(part: int, whole: int) -> str:
    return "" if whole == 0 else f"{part / whole:.0%}"
