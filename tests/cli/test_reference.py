"""docs/cli.md and docs/concepts.md are generated from the commands and the help topics."""

from __future__ import annotations

from pathlib import Path

import click

from completion_claim.cli import app
from completion_claim.cli._reference import (
    cli_page,
    concepts_page,
    write_pages,
)
from completion_claim.cli.help_cmd import CLI_TOPICS, CONCEPT_TOPICS, TOPICS, topic_markdown

DOCS = Path(__file__).parent.parent.parent / "docs"


def test_committed_cli_reference_equals_the_one_generated() -> None:
    assert (DOCS / "cli.md").read_text() == cli_page(), "run `make reference` and commit"


def test_committed_concepts_page_equals_the_one_generated() -> None:
    assert (DOCS / "concepts.md").read_text() == concepts_page(), "run `make reference` and commit"


def test_write_pages_writes_both(tmp_path: Path) -> None:
    write_pages(tmp_path)
    assert (tmp_path / "cli.md").read_text() == cli_page()
    assert (tmp_path / "concepts.md").read_text() == concepts_page()


def _visible(group: click.Group, path: str) -> list[tuple[str, click.Command]]:
    found = []
    for name, command in group.commands.items():
        if not command.hidden:
            found.append((f"{path} {name}", command))
            if isinstance(command, click.Group):
                found.extend(_visible(command, f"{path} {name}"))
    return found


def test_every_command_has_a_section_listing_each_of_its_options() -> None:
    sections = {block.split("\n", 1)[0]: block for block in cli_page().split("\n### ")[1:]}
    for path, command in _visible(app, "claim"):
        assert path in sections, path
        listed = [
            set(line.split("`")[1].replace(",", " ").replace("/", " ").split())
            for line in sections[path].splitlines()
            if line.startswith("- `")
        ]
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                names = set(param.opts + param.secondary_opts)
                assert any(names <= item for item in listed), (path, param.opts)


def test_every_topic_is_on_exactly_one_generated_page() -> None:
    assert sorted(CONCEPT_TOPICS + CLI_TOPICS) == sorted(TOPICS)
    cli, concepts = cli_page(), concepts_page()
    for name in TOPICS:
        body = topic_markdown(name).split("\n", 1)[1]
        assert (body in cli) != (body in concepts), name


def test_topic_headings_become_sections_but_code_comments_stay() -> None:
    page = cli_page()
    assert "\n## Shell completion\n" in page
    assert "\n# bash, in ~/.bashrc\n" in page


def test_help_text_is_escaped_outside_code_spans_and_kept_inside() -> None:
    page = cli_page()
    assert r"(\_\_pycache\_\_/, \*.pyc, .pytest\_cache/)" in page
    assert "`claim verify --sign-key --out`" in page


def test_a_paragraph_click_keeps_unwrapped_keeps_its_lines() -> None:
    page = cli_page()
    assert (
        '```text\nExample: claim observe test-run claim.json --trusted-ref "$BASE_SHA" -- '
        "python -m pytest -q\n```"
    ) in page
