"""The stats charts: well-formed SVG, figures that match the counts, hostile labels escaped."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from datetime import date

from completion_claim.service import charts
from completion_claim.service.records import StateCounts

SVG = "{http://www.w3.org/2000/svg}"
HOSTILE = "<script>alert(1)</script>&\"'"


def parse(svg: str) -> ET.Element:
    """The chart as XML: a stray ``<`` from an unescaped label would make this fail."""
    return ET.fromstring(svg)


def titles(root: ET.Element) -> list[str]:
    return [element.text or "" for element in root.iter(f"{SVG}title")]


def bars(root: ET.Element) -> list[ET.Element]:
    return [rect for rect in root.iter(f"{SVG}rect") if rect.find(f"{SVG}title") is not None]


def test_verdicts_by_day_stacks_one_bar_per_state_with_its_colour() -> None:
    root = parse(
        charts.verdicts_by_day(
            [
                (date(2026, 8, 27), StateCounts(verified=3, unverified=1, refuted=2)),
                (date(2026, 8, 28), StateCounts(verified=0, unverified=0, refuted=1)),
            ]
        )
    )
    assert titles(root)[0] == "Verdicts per UTC day"
    drawn = [(rect.get("class"), rect.get("fill")) for rect in bars(root)]
    # A state with no entries that day draws nothing (no zero-height bar to hover).
    assert drawn == [
        ("verified", charts.STATE_COLOURS["verified"]),
        ("unverified", charts.STATE_COLOURS["unverified"]),
        ("refuted", charts.STATE_COLOURS["refuted"]),
        ("refuted", charts.STATE_COLOURS["refuted"]),
    ]
    assert "2026-08-27: 3 verified, 1 unverified, 2 refuted" in titles(root)
    heights = [float(rect.get("height", "0")) for rect in bars(root)]
    # The tallest day fills the plot; heights are proportional to the counts.
    # (rounded to a tenth of a pixel in the drawing)
    assert abs(heights[0] - 3 * heights[1]) < 0.5
    assert abs(sum(heights[:3]) - 6 * heights[3]) < 0.5


def test_verdicts_by_day_labels_at_most_eight_days_so_they_never_overlap() -> None:
    days = [(date(2026, 1, 1 + n), StateCounts(verified=1)) for n in range(29)]
    root = parse(charts.verdicts_by_day(days))
    day_labels = [t.text for t in root.iter(f"{SVG}text") if t.text and t.text.startswith("2026")]
    assert 1 < len(day_labels) <= 8
    assert day_labels[0] == "2026-01-01"
    assert len(bars(root)) == 29
    # Centred labels stay whole inside the drawing, even under the first and last bars.
    for label in root.iter(f"{SVG}text"):
        if (label.text or "").startswith("2026"):
            assert 32 <= float(label.get("x", "0")) <= charts.WIDTH - 32


def test_refuted_rate_by_agent_escapes_the_agent_name_and_gives_the_figures() -> None:
    svg = charts.refuted_rate_by_agent(
        [(HOSTILE, StateCounts(verified=1, refuted=3)), ("ci/main", StateCounts(verified=2))]
    )
    assert "<script" not in svg
    root = parse(svg)
    assert f"{HOSTILE}: 75% (3 of 4)" in titles(root)
    assert "ci/main: 0% (0 of 2)" in titles(root)
    widths = [float(rect.get("width", "0")) for rect in bars(root)]
    assert widths[0] > 0
    assert widths[1] == 0


def test_long_labels_are_cut_on_the_drawing_but_whole_in_the_bar_title() -> None:
    name = "agent-" + "x" * 100
    root = parse(charts.refuted_rate_by_agent([(name, StateCounts(refuted=1))]))
    drawn = [t.text or "" for t in root.iter(f"{SVG}text")]
    assert all(len(text) <= 28 for text in drawn)
    assert f"{name}: 100% (1 of 1)" in titles(root)


def test_top_unmet_codes_scale_to_the_most_frequent() -> None:
    root = parse(charts.top_unmet_codes([("mutation_uncovered", 4), (HOSTILE, 1)]))
    widths = [float(rect.get("width", "0")) for rect in bars(root)]
    assert widths[0] == 4 * widths[1]
    assert f"{HOSTILE}: 1" in titles(root)


def test_empty_charts_say_so_rather_than_draw_nothing() -> None:
    for svg in (
        charts.verdicts_by_day([]),
        charts.refuted_rate_by_agent([]),
        charts.top_unmet_codes([]),
    ):
        root = parse(svg)
        assert [t.text for t in root.iter(f"{SVG}text")] == ["No entries."]
        assert bars(root) == []
