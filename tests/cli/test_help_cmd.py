"""``claim help [TOPIC]``: the topics the documentation site is generated from."""

from __future__ import annotations

from importlib import resources

import pytest

from completion_claim.cli import run
from completion_claim.cli.help_cmd import TOPICS, render_for_terminal, topic_markdown


def test_the_topics_are_exactly_the_shipped_pages() -> None:
    shipped = resources.files("completion_claim.cli").joinpath("topics")
    names = {
        page.name.removesuffix(".md") for page in shipped.iterdir() if page.name.endswith(".md")
    }
    assert names == set(TOPICS)


def test_help_alone_lists_every_topic_with_its_title(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["help"]) == 0
    out = capsys.readouterr().out
    for name in TOPICS:
        assert any(line.split()[:1] == [name] for line in out.splitlines()), name
    assert "Exit codes" in out
    assert "The six rules" in out


@pytest.mark.parametrize("name", TOPICS)
def test_each_topic_prints_its_page_as_plain_text(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert run(["help", name]) == 0
    out = capsys.readouterr().out
    title = topic_markdown(name).splitlines()[0].removeprefix("# ")
    assert out.startswith(f"{title.replace('`', '')}\n{'=' * len(title.replace('`', ''))}\n")
    assert "```" not in out
    assert "](" not in out


def test_the_rules_topic_states_the_six_rules(capsys: pytest.CaptureFixture[str]) -> None:
    assert run(["help", "rules"]) == 0
    out = capsys.readouterr().out
    assert "4. Absence is unverified, never verified." in out


def test_an_unknown_topic_is_a_usage_error_listing_the_topics(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert run(["help", "rulez"]) == 4
    captured = capsys.readouterr()
    assert captured.out == ""
    assert captured.err == f"claim: no help topic 'rulez'; topics: {', '.join(TOPICS)}\n"


def test_terminal_rendering_keeps_code_drops_link_targets_and_aligns_tables() -> None:
    markdown = (
        "# Title\n"
        "\n"
        "See [the spec](spec.md#5-the-verdict) and [a site](https://example.org/x), *twice*.\n"
        "\n"
        "```sh\n"
        "claim verify `x` claim.json\n"
        "```\n"
        "\n"
        "| exit | meaning |\n"
        "| ---- | ------- |\n"
        "| 0 | `verified` `*.pyc` |\n"
        "| 10 | other |\n"
    )
    assert render_for_terminal(markdown) == (
        "Title\n"
        "=====\n"
        "\n"
        "See the spec and a site <https://example.org/x>, twice.\n"
        "\n"
        "    claim verify `x` claim.json\n"
        "\n"
        "  exit  meaning\n"
        "  0     verified *.pyc\n"
        "  10    other\n"
    )
