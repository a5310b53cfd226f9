"""``static_report``: the stats page as one self-contained file, written from a real SQLite
ledger opened read-only."""

from __future__ import annotations

import re
import socket
from pathlib import Path

import pytest

from completion_claim.errors import UsageError
from completion_claim.service.app import create_app
from completion_claim.service.ledger import Ledger, LedgerError
from completion_claim.service.records import StateCounts, Stats
from completion_claim.service.settings import ServiceSettings
from completion_claim.service.static_report import (
    ledger_stats,
    render_report,
    service_stats,
    stats_from_json,
    write_report,
)
from completion_claim.trust.keys import SigningKey, write_private_key
from tests.builders import at
from tests.service.conftest import fresh_entry

from ._dashboard import HOSTILE, assert_self_contained, ledger_with_entries, serving

WRITTEN_AT = at(3600)
COUNTS = {"verified": 1, "unverified": 0, "refuted": 2}


def test_the_report_is_self_contained_and_escapes_every_claim_string() -> None:
    stats = Stats(
        total=StateCounts(verified=1, refuted=1),
        by_day=((at(0).date(), StateCounts(verified=1, refuted=1)),),
        by_agent=((HOSTILE, StateCounts(verified=1, refuted=1)),),
        by_policy=((HOSTILE, StateCounts(verified=1, refuted=1)),),
        top_unmet=((HOSTILE, 1),),
        said_done=2,
        said_done_refuted=1,
    )
    page = render_report(stats, WRITTEN_AT)
    assert_self_contained(page)
    assert "Written at 2026-08-27T19:00:00Z (UTC)." in page
    assert page.count("<svg") == 3


def test_write_report_gives_the_ledger_figures_in_one_file(tmp_path: Path) -> None:
    url = ledger_with_entries(tmp_path)
    stats = ledger_stats(url)
    assert stats.total == StateCounts(verified=1, unverified=1, refuted=1)
    assert [day for day, _ in stats.by_day] == [at(0).date(), at(90_000).date()]

    target = tmp_path / "report.html"
    target.write_text("an older report")
    write_report(url, target, WRITTEN_AT)
    page = target.read_text(encoding="utf-8")
    assert_self_contained(page)
    assert page == render_report(stats, WRITTEN_AT)
    # Replaced in one step: no temporary file is left beside it.
    assert [p.name for p in tmp_path.iterdir() if "report" in p.name] == ["report.html"]


def test_a_missing_ledger_file_is_refused_rather_than_created(tmp_path: Path) -> None:
    missing = tmp_path / "nope.sqlite"
    for url in (str(missing), f"sqlite:///{missing}"):
        with pytest.raises(LedgerError, match=f"^no ledger at {missing}$"):
            write_report(url, tmp_path / "report.html", WRITTEN_AT)
    assert list(tmp_path.iterdir()) == []


def test_an_unwritable_target_is_one_line_naming_it(tmp_path: Path) -> None:
    url = ledger_with_entries(tmp_path)
    target = tmp_path / "absent" / "report.html"
    with pytest.raises(UsageError, match=f"cannot write {target}: "):
        write_report(url, target, WRITTEN_AT)


def test_a_service_url_gives_the_same_report_as_its_ledger(tmp_path: Path) -> None:
    url = ledger_with_entries(tmp_path)
    key_path = tmp_path / "service.key"
    write_private_key(str(key_path), SigningKey.generate())
    ledger = Ledger.open(url, key=None)
    try:
        app = create_app(ServiceSettings(ledger_url=url, key_path=key_path), ledger)
        with serving(app) as base:
            assert service_stats(base + "/") == ledger_stats(url)
            write_report(base, tmp_path / "report.html", WRITTEN_AT)
            with pytest.raises(LedgerError, match=r"/nowhere/v1/stats answered 404: \S"):
                service_stats(base + "/nowhere")
    finally:
        ledger.close()
    assert (tmp_path / "report.html").read_text() == render_report(ledger_stats(url), WRITTEN_AT)


def test_a_service_that_is_not_there_is_one_line(tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(LedgerError, match=f"^cannot read http://127.0.0.1:{port}/v1/stats: "):
        service_stats(f"http://127.0.0.1:{port}")


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ([], "stats: expected dict, got list"),
        ({"total": {}}, "stats: total.verified: expected a count"),
        ({"total": COUNTS | {"refuted": True}}, "stats: total.refuted: expected a count"),
        ({"total": COUNTS | {"refuted": -1}}, "stats: total.refuted: expected a count"),
        ({"total": COUNTS, "by_day": [COUNTS | {"day": "today"}]}, "stats: by_day[0].day: not"),
        ({"total": COUNTS, "by_day": [], "by_agent": [COUNTS]}, "stats: by_agent[0].agent: exp"),
    ],
)
def test_a_malformed_stats_answer_is_one_line_naming_the_place(
    document: object, problem: str
) -> None:
    with pytest.raises(LedgerError, match="^" + re.escape(problem)):
        stats_from_json(document, "stats")


def test_the_report_reads_either_backend(ledger: Ledger, ledger_url: str, tmp_path: Path) -> None:
    """The same figures from SQLite and from the real PostgreSQL (the ``ledger_url`` fixture runs
    this on both), through a second, read-only connection to the database."""
    ledger.append(fresh_entry("verified", agent="ci-runner-1", recorded_at=at(100)))
    ledger.append(fresh_entry("refuted", agent="ci-runner-2", recorded_at=at(101)))
    ledger.append(fresh_entry("refuted", agent="ci-runner-2", recorded_at=at(90_000)))
    target = tmp_path / "report.html"
    write_report(ledger_url, target, WRITTEN_AT)
    page = target.read_text(encoding="utf-8")
    assert_self_contained(page)
    assert "2 of 3 claims that said done were refuted" in page
    assert "ci-runner-2: 100% (2 of 2)" in page
    assert ledger_stats(ledger_url) == ledger.stats()
