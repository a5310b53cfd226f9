"""The ``claim`` command. Commands stay thin; this module alone maps errors to exit codes."""

from __future__ import annotations

import atexit
import contextlib
import difflib
import gc
import importlib
import os
import sys
import threading
from collections.abc import Sequence
from typing import NoReturn

import click

from .._json import dumps
from ..errors import ClaimError, InvalidDocument, ObservationFailed, UsageError
from ._output import COLOR_CHOICES, Output, use_color

EXIT_VERIFIED = 0
EXIT_UNVERIFIED = 1
EXIT_REFUTED = 2
EXIT_INVALID = 3
EXIT_USAGE = 4
EXIT_OBSERVATION_FAILED = 5

_COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "capture-git": ("capture_cmd",),
    "check-verdict": ("trust_cmd",),
    "export": ("trust_cmd",),
    "gate": ("gate_cmd",),
    "help": ("help_cmd",),
    "hook": ("hook_cmd",),
    "hooks": ("hook_cmd",),
    "init": ("gate_cmd",),
    "keygen": ("trust_cmd",),
    "ledger": ("ledger_cmd",),
    "mutate": ("claim_cmd",),
    "new": ("claim_cmd",),
    "observe": (
        "observe_cmd",
        "observe_dom_cmd",
        "observe_endpoint_cmd",
        "observe_readback_cmd",
        "observe_test_run_cmd",
    ),
    "pubkey": ("trust_cmd",),
    "report": ("report_cmd",),
    "run": ("run_cmd",),
    "schema": ("verify_cmd",),
    "serve": ("serve_cmd",),
    "show": ("show_cmd",),
    "explain": ("show_cmd",),
    "token": ("serve_cmd",),
    "verify": ("verify_cmd",),
}
"""Which modules define each command: a command's module is imported when the command runs, so
that ``claim verify --batch`` does not load the service, the gate and every observer first."""


class _CommandsOnDemand(click.Group):
    def list_commands(self, _ctx: click.Context) -> list[str]:
        return sorted(_COMMAND_MODULES)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        for module in _COMMAND_MODULES.get(cmd_name, ()):
            importlib.import_module(f"{__name__}.{module}")
        return super().get_command(ctx, cmd_name)

    def resolve_command(
        self, ctx: click.Context, args: list[str]
    ) -> tuple[str | None, click.Command | None, list[str]]:
        name = args[0] if args else ""
        if name and not name.startswith("-") and name not in _COMMAND_MODULES:
            close = difflib.get_close_matches(name, list(_COMMAND_MODULES), n=1)
            if close:
                ctx.fail(f"No such command {name!r}: did you mean {close[0]!r}?")
        return super().resolve_command(ctx, args)


def _exit_for_error() -> tuple[tuple[type[Exception], int], ...]:
    """Most specific first. Imported when an error occurs: the gate's and the ledger's error
    types are not worth loading for a run that has none."""
    from ..gate.baseline import StartExists  # noqa: PLC0415
    from ..gate.config import ConfigError, InvalidPolicy  # noqa: PLC0415
    from ..service.ledger_errors import LedgerError, LedgerTampered  # noqa: PLC0415

    return (
        (InvalidDocument, EXIT_INVALID),
        (InvalidPolicy, EXIT_INVALID),
        (ConfigError, EXIT_USAGE),
        (StartExists, EXIT_USAGE),  # a session's start is taken once (gate --start --restart)
        (ObservationFailed, EXIT_OBSERVATION_FAILED),
        (LedgerTampered, EXIT_REFUTED),
        (LedgerError, EXIT_OBSERVATION_FAILED),
        (UsageError, EXIT_USAGE),
        (ClaimError, EXIT_USAGE),
        (click.UsageError, EXIT_USAGE),
        (click.ClickException, EXIT_USAGE),
        (click.Abort, EXIT_USAGE),
    )


@click.group(cls=_CommandsOnDemand, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="completion-claim", prog_name="claim")
@click.option(
    "--color",
    type=click.Choice(COLOR_CHOICES),
    default="auto",
    show_default=True,
    help="Colour the verdict (green, yellow, red) and tables; auto: on a terminal, unless "
    "NO_COLOR is set.",
)
@click.option("-q", "--quiet", is_flag=True, help="Only the verdict line; nothing on success.")
@click.option("-v", "--verbose", is_flag=True, help="More detail (verify: every rule per item).")
@click.pass_context
def app(context: click.Context, color: str, quiet: bool, verbose: bool) -> None:
    """Decide whether an agent's claim of completion is proven by observations of the world.

    \b
    Exit codes: 0 verified (or the command succeeded), 1 unverified, 2 refuted (or a
    ledger contradicts its signed tree heads), 3 invalid claim or policy, 4 usage or
    internal error, 5 observation failed (or a ledger cannot be reached or read).
    With --json, a command prints one JSON object, and an error is one JSON object on
    stderr: {"error": "...", "exit_code": N}.

    `claim help` lists the topics that explain the concepts; `claim help TOPIC` prints one.
    """
    if quiet and verbose:
        raise UsageError("-q and -v: choose one")
    context.obj = Output(
        color=use_color(color, sys.stdout.isatty(), os.environ), quiet=quiet, verbose=verbose
    )
    # click.echo strips colour codes unless told otherwise; now told, for every command.
    context.color = context.obj.color


def run(argv: Sequence[str] | None = None) -> int:
    """Run the command line and return its exit code; never raises, never prints a traceback."""
    args = list(argv) if argv is not None else sys.argv[1:]
    try:
        result = app.main(args=args, prog_name="claim", standalone_mode=False)
    except click.exceptions.Exit as done:  # --help, --version
        return done.exit_code
    except click.exceptions.NoArgsIsHelpError as bare:  # `claim`, `claim observe`: no command
        click.echo(bare.ctx.get_help(), err=True)
        return EXIT_USAGE
    except Exception as error:  # the one place errors become exit codes
        code = next((c for kind, c in _exit_for_error() if isinstance(error, kind)), None)
        if code is None:
            if os.environ.get("CLAIM_DEBUG"):
                raise
            code = EXIT_USAGE
            message = f"internal error: {type(error).__name__}: {error}"
        elif isinstance(error, click.NoSuchOption) and _is_global(error):
            message = _global_option_hint(error)
        elif isinstance(error, click.ClickException):
            message = error.format_message()
        else:
            message = str(error) or type(error).__name__
        if _wants_json(args):
            click.echo(dumps({"error": _one_line(message), "exit_code": code}), err=True)
        else:
            click.echo(f"claim: {_one_line(message)}", err=True)
        return code
    return result if isinstance(result, int) else 0


def main() -> None:
    # A command runs once and exits, and its memory goes back with the process: the cycle
    # collector would only cost time (a gate over a monorepo keeps 100,000s of objects, which
    # each collection walks again). ``claim serve`` runs for days and turns it back on.
    gc.disable()
    _exit(run())


def _exit(code: int) -> NoReturn:
    """Exit as the interpreter would, less freeing every object one at a time (a gate over a
    monorepo holds 100,000s of them: tens of milliseconds at every stop): exit handlers run,
    the standard streams are flushed. While a thread that is no daemon runs, the interpreter
    exits itself: it first tells such threads to end (a thread pool's idle workers), then
    waits for them."""
    main = threading.main_thread()
    if any(thread is not main and not thread.daemon for thread in threading.enumerate()):
        sys.exit(code)
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):  # a reader gone: nothing more to say
            stream.flush()
    os._exit(code)


def _wants_json(args: list[str]) -> bool:
    """Whether ``--json`` is among the options: read from the arguments themselves, so that an
    error found before the command reads its options (an unknown option) is JSON too. What
    follows ``--`` is a command to run (``observe test-run``), not an option of ours."""
    own = args[: args.index("--")] if "--" in args else args
    return "--json" in own


def _is_global(error: click.NoSuchOption) -> bool:
    """Whether the unknown option is one of ``claim``'s own, given after a command."""
    names = {name for param in app.params for name in param.opts + param.secondary_opts}
    return error.option_name.partition("=")[0] in names and error.ctx is not None


def _global_option_hint(error: click.NoSuchOption) -> str:
    option = error.option_name.partition("=")[0]
    command = error.ctx.command_path.partition(" ")[2] if error.ctx is not None else ""
    return f"{option} is a global option: put it before the command (claim {option} {command} ...)"


def _one_line(message: str) -> str:
    return " ".join(message.split())
