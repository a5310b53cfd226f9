"""The stats page's charts as inline SVG, drawn on the server: no JavaScript, no external asset.

Each function returns one ``<svg>`` element as ``Markup`` for a template to place as is. Every
text inside (agent names, unmet codes) comes from submitted claims, and these strings enter the
page without the template's autoescape, so every fragment here is a literal ``Markup`` template
filled by ``Markup.format``, which escapes each value it is given. Each chart carries a
``<title>`` (its accessible name) and a ``<title>`` per bar with the exact figures; the page adds
a table with the same numbers for readers who cannot see the drawing.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date

from markupsafe import Markup

from .records import STATES, StateCounts

STATE_COLOURS = {"verified": "#1a7f37", "unverified": "#b26a00", "refuted": "#c62828"}
NEUTRAL = "#4a5a6a"

WIDTH = 640
_LABEL_WIDTH = 200  # room left of horizontal bars for the agent name or unmet code
_BAR_HEIGHT = 18
_BAR_GAP = 6
_LABEL_CHARS = 28  # longer names are cut (the table beside the chart has them whole)
_AXIS_LABELS = 8  # at most this many day labels under the bars, so they never overlap
_DAY_LABEL_HALF = 32.0  # half the width of "2026-08-27" in the 11px font
_DAY_BAR_MAX = 40.0  # a few days' bars stay bars, not slabs


def verdicts_by_day(by_day: Sequence[tuple[date, StateCounts]]) -> Markup:
    """Stacked bars, one per UTC day with entries (oldest left): verified at the bottom, then
    unverified, then refuted."""
    title = "Verdicts per UTC day"
    if not by_day:
        return _empty(title)
    height, top, bottom, left = 220, 16, 40, 40
    plot_width, plot_height = WIDTH - left - 8, height - top - bottom
    peak = max(counts.total for _, counts in by_day)
    step = plot_width / len(by_day)
    bar = min(max(step * 0.8, 1.0), _DAY_BAR_MAX)
    parts = [
        Markup('<line x1="{}" y1="{}" x2="{}" y2="{}" stroke="{}"/>').format(
            left, top + plot_height, WIDTH - 8, top + plot_height, NEUTRAL
        ),
        _text(left - 4, top + 10, str(peak), anchor="end"),
        _text(left - 4, top + plot_height, "0", anchor="end"),
    ]
    every = -(-len(by_day) // _AXIS_LABELS)  # ceiling division
    for position, (day, counts) in enumerate(by_day):
        x = left + position * step + (step - bar) / 2
        base = float(top + plot_height)
        tip = f"{day.isoformat()}: " + ", ".join(
            f"{count_of(counts, state)} {state}" for state in STATES
        )
        for state in STATES:
            size = count_of(counts, state) / peak * plot_height
            if size <= 0:
                continue
            base -= size
            parts.append(
                Markup(
                    '<rect class="{}" x="{:.1f}" y="{:.1f}" width="{:.1f}" height="{:.1f}" '
                    'fill="{}"><title>{}</title></rect>'
                ).format(state, x, base, bar, size, STATE_COLOURS[state], tip)
            )
        if position % every == 0:
            # Kept whole inside the drawing: a label under an edge bar would be cut off.
            middle = min(max(x + bar / 2, _DAY_LABEL_HALF), WIDTH - _DAY_LABEL_HALF)
            parts.append(_text(middle, height - bottom + 16, day.isoformat(), anchor="middle"))
    parts.append(_legend(left, height - 8))
    return _svg(title, height, parts)


def refuted_rate_by_agent(by_agent: Sequence[tuple[str, StateCounts]]) -> Markup:
    """One horizontal bar per agent: the share of its entries that were refuted."""
    rows = [
        (
            agent,
            counts.refuted / counts.total,
            f"{counts.refuted / counts.total:.0%} ({counts.refuted} of {counts.total})",
        )
        for agent, counts in by_agent
        if counts.total
    ]
    return _horizontal_bars("Refuted rate by agent", rows, STATE_COLOURS["refuted"])


def top_unmet_codes(top_unmet: Sequence[tuple[str, int]]) -> Markup:
    """One horizontal bar per unmet code, scaled to the most frequent."""
    peak = max((count for _, count in top_unmet), default=0)
    rows = [(code, count / peak, str(count)) for code, count in top_unmet if peak]
    return _horizontal_bars("Top unmet codes", rows, NEUTRAL)


def count_of(counts: StateCounts, state: str) -> int:
    """The count for one of ``records.STATES``."""
    return {
        "verified": counts.verified,
        "unverified": counts.unverified,
        "refuted": counts.refuted,
    }[state]


def _horizontal_bars(title: str, rows: Sequence[tuple[str, float, str]], colour: str) -> Markup:
    if not rows:
        return _empty(title)
    top = 8
    height = top + len(rows) * (_BAR_HEIGHT + _BAR_GAP) + 8
    span = WIDTH - _LABEL_WIDTH - 120  # the rest holds the figure after the bar
    parts = []
    for position, (label, share, figure) in enumerate(rows):
        y = top + position * (_BAR_HEIGHT + _BAR_GAP)
        length = max(share * span, 0.0)
        middle = y + _BAR_HEIGHT / 2 + 4
        parts += [
            _text(_LABEL_WIDTH - 6, middle, cut(label, _LABEL_CHARS), anchor="end"),
            Markup(
                '<rect x="{}" y="{}" width="{:.1f}" height="{}" fill="{}">'
                "<title>{}: {}</title></rect>"
            ).format(_LABEL_WIDTH, y, length, _BAR_HEIGHT, colour, label, figure),
            _text(_LABEL_WIDTH + length + 6, middle, figure, anchor="start"),
        ]
    return _svg(title, height, parts)


def _svg(title: str, height: int, parts: Sequence[Markup]) -> Markup:
    return Markup(
        '<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{}" height="{}" '
        'viewBox="0 0 {} {}" font-family="sans-serif" font-size="11"><title>{}</title>{}</svg>'
    ).format(WIDTH, height, WIDTH, height, title, Markup("").join(parts))


def _empty(title: str) -> Markup:
    return _svg(title, 40, [_text(8, 24, "No entries.", anchor="start")])


def _text(x: float, y: float, text: str, *, anchor: str) -> Markup:
    return Markup('<text x="{:.1f}" y="{:.1f}" text-anchor="{}">{}</text>').format(
        x, y, anchor, text
    )


def _legend(x: float, y: float) -> Markup:
    parts = []
    for state in STATES:
        parts += [
            Markup('<rect x="{:.1f}" y="{:.1f}" width="10" height="10" fill="{}"/>').format(
                x, y - 9, STATE_COLOURS[state]
            ),
            _text(x + 14, y, state, anchor="start"),
        ]
        x += 90
    return Markup("").join(parts)


def cut(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, an ellipsis showing where it was cut."""
    return text if len(text) <= limit else text[: limit - 1] + "\u2026"
