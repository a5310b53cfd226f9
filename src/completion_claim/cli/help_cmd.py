"""``claim help [TOPIC]``: the pages under ``topics/``, which docs/concepts.md and docs/cli.md
are generated from, so the terminal and the site never say different things."""

from __future__ import annotations

import re
from importlib import resources

import click
from click.shell_completion import CompletionItem

from ..errors import UsageError
from . import app

CONCEPT_TOPICS = (
    "claim",
    "mutation",
    "evidence",
    "policy",
    "verdict",
    "rules",
    "independence",
    "trust",
    "gate",
)
"""The topics the site's concepts page is made of, in its order."""
CLI_TOPICS = ("exit-codes", "completion")
"""The topics the command-line reference ends with."""
TOPICS = CONCEPT_TOPICS + CLI_TOPICS

_LINK = re.compile(r"\[([^\]]+)\]\(([^)\s]+)\)")
_EMPHASIS = re.compile(r"\*{1,2}([^*\s][^*]*?)\*{1,2}")
_FENCE = "```"


def topic_markdown(name: str) -> str:
    return resources.files(__package__).joinpath("topics", f"{name}.md").read_text("utf-8")


def topic_title(name: str) -> str:
    return topic_markdown(name).splitlines()[0].removeprefix("# ")


def render_for_terminal(markdown: str) -> str:
    """Markdown as plain text: headings underlined, code indented, tables aligned, and links
    reduced to their words (a relative link means nothing outside the site)."""
    out: list[str] = []
    table: list[list[str]] = []
    in_code = False
    for line in markdown.splitlines():
        if line.startswith(_FENCE):
            in_code = not in_code
            continue
        if in_code:
            out.append(f"    {line}" if line else "")
            continue
        if line.startswith("|"):
            cells = [_plain(cell.strip()) for cell in line.strip().strip("|").split("|")]
            if not all(set(cell) <= {"-", ":"} for cell in cells):
                table.append(cells)
            continue
        if table:
            out.extend(_aligned(table))
            table = []
        heading = re.match(r"(#+) (.*)", line)
        if heading:
            title = _plain(heading[2])
            out.extend([title, ("=" if len(heading[1]) == 1 else "-") * len(title)])
        else:
            out.append(_plain(line))
    out.extend(_aligned(table))
    return "\n".join(out).rstrip("\n") + "\n"


def _plain(text: str) -> str:
    def words(link: re.Match[str]) -> str:
        target = link[2]
        return f"{link[1]} <{target}>" if target.startswith(("http://", "https://")) else link[1]

    pieces = _LINK.sub(words, text).split("`")
    # Odd pieces are code spans, where a star is a star.
    return "".join(p if i % 2 else _EMPHASIS.sub(r"\1", p) for i, p in enumerate(pieces))


def _aligned(rows: list[list[str]]) -> list[str]:
    columns = max((len(row) for row in rows), default=0)
    padded = [row + [""] * (columns - len(row)) for row in rows]
    widths = [max(len(row[i]) for row in padded) for i in range(columns)]
    return [
        "  " + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in padded
    ]


def _complete_topic(
    _ctx: click.Context, _param: click.Parameter, incomplete: str
) -> list[CompletionItem]:
    return [CompletionItem(name) for name in TOPICS if name.startswith(incomplete)]


@app.command("help")
@click.argument("topic", required=False, shell_complete=_complete_topic)
def help_command(topic: str | None) -> int:
    """Explain a concept (the rules, exit codes, policy, evidence, trust, the gate, ...);
    without TOPIC, list the topics. The same text as the documentation site."""
    if topic is None:
        width = max(map(len, TOPICS))
        click.echo("Topics (claim help TOPIC):")
        for name in TOPICS:
            click.echo(f"  {name.ljust(width)}  {_plain(topic_title(name))}")
        click.echo("Each command's arguments and options: claim COMMAND --help.")
        return 0
    if topic not in TOPICS:
        raise UsageError(f"no help topic {topic!r}; topics: {', '.join(TOPICS)}")
    click.echo(render_for_terminal(topic_markdown(topic)), nl=False)
    return 0
