"""How commands print: the global ``--color``, ``-q`` and ``-v``, ``--json`` objects, tables.

Plain text when colour is off is exactly what the commands printed before colour existed, so
scripts and the documented examples read the same bytes.
"""

from __future__ import annotations

import functools
import os
import secrets
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar, cast

import click

from .._json import JsonValue, dumps

F = TypeVar("F", bound=Callable[..., Any])

COLOR_CHOICES = ("auto", "always", "never")

_STATE_COLORS = {"verified": "green", "unverified": "yellow", "refuted": "red"}


@dataclass(frozen=True)
class Output:
    """The global output options, as the ``claim`` group received them."""

    color: bool = False
    quiet: bool = False
    verbose: bool = False


def use_color(choice: str, isatty: bool, environ: dict[str, str] | os._Environ[str]) -> bool:
    """``always`` and ``never`` are obeyed as given; ``auto`` colours a terminal unless NO_COLOR
    is set to anything but the empty string (https://no-color.org)."""
    if choice == "always":
        return True
    if choice == "never":
        return False
    return isatty and not environ.get("NO_COLOR")


def output() -> Output:
    """The options of the running ``claim``; defaults when a command runs outside the group."""
    context = click.get_current_context(silent=True)
    found = context.find_root().obj if context is not None else None
    return found if isinstance(found, Output) else Output()


def json_option(help_text: str) -> Callable[[F], F]:
    """``--json``: print one JSON object on stdout instead of prose. Errors then reach stderr as
    one JSON object too; ``cli.run`` sees the flag in the arguments and does that."""
    return click.option("--json", "as_json", is_flag=True, help=help_text)


def emit_json(value: JsonValue) -> None:
    click.echo(dumps(value, indent=2))


@contextmanager
def quoting_agent_text(*, err: bool = False) -> Iterator[None]:
    """Print what a report quotes of the agent (an outcome, a file name, a test's message) with
    GitHub Actions' workflow commands off: there a printed line reading ``::error ...`` or
    ``::add-mask::...`` is a command to the runner, and a file name may hold a newline. The
    token that turns them back on is fresh and random, printed on the same stream after the
    text, so the text cannot hold it."""
    if os.environ.get("GITHUB_ACTIONS") != "true":
        yield
        return
    token = secrets.token_hex(16)
    click.echo(f"::stop-commands::{token}", err=err)
    try:
        yield
    finally:
        click.echo(f"::{token}::", err=err)


def quotes_agent_text(command: F) -> F:
    """A command whose prose quotes the agent, printed as :func:`quoting_agent_text` says (its
    ``--json`` object is printed as it is: it is no line a runner reads as a command)."""

    @functools.wraps(command)
    def quoting(*args: Any, **kwargs: Any) -> Any:
        if kwargs.get("as_json"):
            return command(*args, **kwargs)
        with quoting_agent_text():
            return command(*args, **kwargs)

    return cast(F, quoting)


def say(text: str) -> None:
    """A confirmation ("recorded e1: ..."): what ``-q`` silences."""
    if not output().quiet:
        click.echo(text)


def paint_state(text: str, state: str) -> str:
    """Colours the verdict's word wherever it starts ``text`` (a report's first line)."""
    word = state.upper()
    if not output().color or not text.startswith(word):
        return text
    return click.style(word, fg=_STATE_COLORS.get(state), bold=True) + text[len(word) :]


def print_table(title: str, columns: Sequence[str], rows: Sequence[Sequence[str]]) -> None:
    """A table rendered by rich: ruled and coloured on a terminal, plain ASCII otherwise."""
    # Imported here: only the commands that print tables pay for rich's import.
    from rich import box  # noqa: PLC0415
    from rich.console import Console  # noqa: PLC0415
    from rich.table import Table  # noqa: PLC0415

    color = output().color
    console = Console(
        file=sys.stdout,
        force_terminal=color,
        no_color=not color,
        highlight=False,
        width=None if color else 120,
        soft_wrap=False,
    )
    table = Table(
        box=box.SIMPLE_HEAD if color else box.ASCII,
        header_style="bold" if color else "",
    )
    for column in columns:
        table.add_column(column, overflow="fold")
    for row in rows:
        table.add_row(*(_cell(text, color) for text in row))
    click.echo(click.style(title, bold=True) if color else title)
    console.print(table)


def _cell(text: str, color: bool) -> str:
    """The cell as rich markup: the text escaped (a claim's "[x]" is text, not a style), a
    verdict's word coloured."""
    from rich.markup import escape  # noqa: PLC0415

    state_color = _STATE_COLORS.get(text.lower())
    if color and text.isupper() and state_color is not None:
        return f"[bold {state_color}]{escape(text)}[/]"
    return escape(text)
